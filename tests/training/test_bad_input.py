"""Pretraining data on bad input: metadata.json is checked against the records, the
vocabulary and the shard files before training; an empty set is refused."""

import json
import os
import shutil
import threading

import keras
import pytest

from keras_bert.data import PretrainingDataConfig, create_pretraining_data, read_metadata
from keras_bert.models import BertEncoder, BertPretrainer
from keras_bert.training import PretrainingConfig, run_pretraining
from keras_bert.training.pretrain import evaluate_pretraining
from tests.training.conftest import tiny_bert_config


@pytest.fixture(scope="module")
def data(corpus, tmp_path_factory):
    """Static (seq 64, 2 shards) and dynamic (seq 64) data from the held-out corpus."""
    root = tmp_path_factory.mktemp("bad_input_data")
    dirs = {}
    for masking in ("static", "dynamic"):
        dirs[masking] = str(root / masking)
        create_pretraining_data(
            [corpus["held"]], dirs[masking], corpus["vocab"],
            PretrainingDataConfig(max_seq_length=64, max_predictions_per_seq=10,
                                  masking=masking, dupe_factor=1, short_seq_prob=0.0,
                                  document_pool_size=4),  # Windows for both shards.
            num_shards=2 if masking == "static" else 1)
    return dirs


@pytest.fixture
def copy(data, tmp_path):
    def copy(masking="static"):
        target = str(tmp_path / masking)
        shutil.copytree(data[masking], target)
        return target
    return copy


def edit_metadata(data_dir, **changes):
    path = os.path.join(data_dir, "metadata.json")
    with open(path) as f:
        metadata = json.load(f)
    metadata.update(changes)
    with open(path, "w") as f:
        json.dump(metadata, f)
    return metadata


def test_max_seq_length_shorter_than_the_records_is_refused(copy):
    data_dir = copy()
    edit_metadata(data_dir, max_seq_length=32)
    with pytest.raises(ValueError, match="tokens, more than max_seq_length 32"):
        read_metadata(data_dir)


@pytest.mark.parametrize("masking, told", [("dynamic", "static"), ("static", "dynamic")])
def test_masking_that_is_not_the_records_is_refused(copy, masking, told):
    data_dir = copy(masking)
    edit_metadata(data_dir, masking=told)
    with pytest.raises(ValueError, match=f"records were made with masking {masking}"):
        read_metadata(data_dir)


def test_an_empty_shard_is_refused(copy):
    data_dir = copy()
    shard = os.path.join(data_dir, read_metadata(data_dir)["shards"][1]["file"])
    open(shard, "wb").close()
    with pytest.raises(ValueError, match=f"{shard} is empty"):
        read_metadata(data_dir)


def test_a_wrong_vocab_size_is_refused(copy):
    data_dir = copy()
    edit_metadata(data_dir, vocab_size=1200)
    with pytest.raises(ValueError, match="vocab.txt has 1000 tokens.*vocab_size 1200"):
        read_metadata(data_dir)


def test_an_edited_vocabulary_is_refused(copy):
    data_dir = copy()
    path = os.path.join(data_dir, "vocab.txt")
    tokens = open(path, encoding="utf-8").read().split("\n")
    tokens[10], tokens[11] = tokens[11], tokens[10]
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(tokens))
    with pytest.raises(ValueError, match="vocab.txt is not the vocabulary"):
        read_metadata(data_dir)


def test_a_corrupt_shard_is_named(copy):
    data_dir = copy()
    shard = os.path.join(data_dir, read_metadata(data_dir)["shards"][0]["file"])
    raw = bytearray(open(shard, "rb").read())
    raw[40:48] = b"\xff" * 8  # Inside the first record: its CRC fails.
    open(shard, "wb").write(bytes(raw))
    with pytest.raises(ValueError, match=f"{shard} is not a readable TFRecord file"):
        read_metadata(data_dir)


def test_corruption_found_while_reading_names_the_file(copy):
    data_dir = copy("dynamic")
    metadata = read_metadata(data_dir)
    shard = os.path.join(data_dir, metadata["shards"][0]["file"])
    raw = bytearray(open(shard, "rb").read())
    raw[-30:-20] = b"\xff" * 10  # In the last record, past the ones checked up front.
    open(shard, "wb").write(bytes(raw))
    read_metadata(data_dir)
    keras.utils.set_random_seed(0)
    model = BertPretrainer(BertEncoder(**tiny_bert_config(64).to_dict()))
    with pytest.raises(ValueError, match=f"{shard} is corrupt"):
        evaluate_pretraining(model, data_dir, batch_size=64)


@pytest.mark.parametrize("text", ["", "\n\n  \n\n"])
def test_an_empty_corpus_writes_no_data(corpus, tmp_path, text):
    path = tmp_path / "corpus.txt"
    path.write_text(text)
    out = tmp_path / "out"
    with pytest.raises(ValueError, match="gave no pretraining instances"):
        create_pretraining_data([str(path)], str(out), corpus["vocab"],
                                PretrainingDataConfig(max_seq_length=32, dupe_factor=1))
    assert not (out / "metadata.json").exists()
    assert not [n for n in os.listdir(out) if n.endswith(".tfrecord")]


def test_pretraining_on_no_instances_is_refused_at_once(copy, tmp_path):
    data_dir = copy()
    metadata = read_metadata(data_dir)
    for shard in metadata["shards"]:
        open(os.path.join(data_dir, shard["file"]), "wb").close()
        shard["num_instances"] = 0
    edit_metadata(data_dir, num_instances=0, shards=metadata["shards"])
    outcome = []

    def pretrain():
        try:
            run_pretraining(data_dir, str(tmp_path / "run"),
                            PretrainingConfig(num_train_steps=2, batch_size=2, warmup_steps=0),
                            bert_config=tiny_bert_config(64), verbose=0, tensorboard=False)
            outcome.append("trained")
        except Exception as e:  # noqa: BLE001 (checked below)
            outcome.append(e)

    # A thread with a deadline: training on empty files used to spin forever.
    thread = threading.Thread(target=pretrain, daemon=True)
    thread.start()
    thread.join(timeout=120)
    assert outcome, "run_pretraining did not return on data without instances"
    assert isinstance(outcome[0], ValueError) and "no pretraining instances" in str(outcome[0])
