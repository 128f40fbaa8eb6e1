"""Remote outputs and readers beyond model directories (issue 38 item 4, the rest).

On TF's in-memory ram:// file system, in process: the checkpoint conversion
output, a LiteRT export, the text-embedding output, TF Serving's config files
and warmup requests, a tokenizer's assets, a sentence-transformers folder,
the imbalanced-tweets writer and the tuning texts. Each is written (or read)
on ram:// and read back through keras_bert, compared with what the same call
gives on a local path.
"""

import io
import json
import os
import secrets

import numpy as np
import pytest
import tensorflow as tf

from keras_bert import storage


@pytest.fixture
def ram():
    return f"ram://outputs-{secrets.token_hex(4)}"


def text(path):
    return storage.read_bytes(path).decode("utf-8")


# === Checkpoint conversion ===

def test_a_conversion_writes_a_remote_model_directory_and_refuses_a_remote_source(
        ram, tmp_path):
    from keras_bert.checkpoints import CheckpointError, convert_checkpoint
    from keras_bert.models import BertEncoder
    from tests.checkpoints.conftest import hf_folder

    folder = hf_folder(tmp_path)
    target = f"{ram}/models/converted"
    report = convert_checkpoint(folder, target, check=True)
    assert report.output == target  # As given: not made absolute as a local path.
    assert storage.committed_manifest(target) is not None
    assert {"config.json", "model.weights.h5", "vocab.txt"} <= set(storage.listdir(target))
    local = convert_checkpoint(folder, str(tmp_path / "local"))
    remote_weights = BertEncoder.from_pretrained(target).get_weights()
    for got, want in zip(remote_weights, BertEncoder.from_pretrained(local.output).get_weights()):
        np.testing.assert_array_equal(got, want)
    with pytest.raises(CheckpointError, match="already exists.*--overwrite"):
        convert_checkpoint(folder, target)
    convert_checkpoint(folder, target, overwrite=True)
    with pytest.raises(CheckpointError, match=r"ram://.* is remote: checkpoints are read from "
                                              r"local paths only.*Copy it to a local folder"):
        convert_checkpoint(f"{ram}/models/converted", str(tmp_path / "other"))
    assert not (tmp_path / "other").exists()


# === LiteRT export ===

@pytest.mark.slow  # A LiteRT conversion: about 10 s.
def test_a_litert_export_to_a_remote_path_is_committed_and_runs(classifier_export, ram):
    from keras_bert.export import export_model
    from keras_bert.export.predict import load_export, read_export_info, run_signature

    base = f"{ram}/exports/lite"
    version = export_model(classifier_export["model_dir"], base, format="tflite")
    assert version == f"{base}/1"  # As given: not made absolute as a local path.
    manifest = storage.committed_manifest(version)
    assert manifest is not None and "model.tflite" in manifest["files"]
    assert read_export_info(base)["format"] == "tflite"
    texts = ["a good movie", "an awful film", "the film was great"]
    lite = run_signature(load_export(base), {"text": texts})  # Read from ram:// into memory.
    saved = run_signature(load_export(classifier_export["export_dir"]), {"text": texts})
    np.testing.assert_array_equal(lite["label"], saved["label"])
    assert np.abs(lite["probabilities"] - saved["probabilities"]).max() <= 1e-4
    with pytest.raises(FileExistsError, match="exists.*overwrite"):
        export_model(classifier_export["model_dir"], version, format="tflite")


# === Text-embedding output ===

def test_embeddings_go_to_a_remote_npy_or_json_lines_file(ram):
    from keras_bert.tasks.text_embedding.output import write_embeddings

    texts = ["a cat", "ünïcode"]
    embeddings = np.arange(8, dtype="float32").reshape(2, 4) / 3
    summary = write_embeddings(texts, embeddings, f"{ram}/out/x.npy")
    assert summary == f"wrote 2 embeddings of 4 floats to {ram}/out/x.npy"
    np.testing.assert_array_equal(np.load(io.BytesIO(storage.read_bytes(f"{ram}/out/x.npy"))),
                                  embeddings)
    write_embeddings(texts, embeddings, f"{ram}/out/x.jsonl")
    rows = [json.loads(line) for line in text(f"{ram}/out/x.jsonl").splitlines()]
    assert [r["text"] for r in rows] == texts
    np.testing.assert_array_equal(np.asarray([r["embedding"] for r in rows], "float32"),
                                  embeddings)
    with pytest.raises(ValueError, match="is a folder; name a file"):
        write_embeddings(texts, embeddings, f"{ram}/out")


def test_a_text_embedder_round_trips_through_a_remote_model_directory(ram, tmp_path):
    from keras_bert.models import BertEncoder
    from keras_bert.tasks.text_embedding.model import BertTextEmbedder
    from keras_bert.export.export import model_signatures
    from tests.training.finetune_fixtures import make_model_dir

    local = make_model_dir(str(tmp_path / "encoder"))
    embedder = BertTextEmbedder(BertEncoder.from_pretrained(local), pooling="max",
                                normalize=False)
    embedder.save_pretrained(f"{ram}/embedder", vocab_file=os.path.join(tmp_path,
                                                                        "tiny_vocab.txt"))
    texts = ["the movie was good", "a bad film"]
    again = BertTextEmbedder.from_pretrained(f"{ram}/embedder")  # Not taken for a Hub id.
    assert (again.pooling, again.normalize) == ("max", False)
    embedder.save_pretrained(str(tmp_path / "embedder"))
    remote, local = (model_signatures(path)[0]["serving_default"](tf.constant(texts))
                     for path in (f"{ram}/embedder", str(tmp_path / "embedder")))
    np.testing.assert_allclose(remote["embedding"], local["embedding"], atol=1e-6)


# === TF Serving files ===

def _remote_export(classifier_export, base):
    """The classifier fixture's export committed to `base`/1 as an object store holds it."""
    storage.commit_dir(classifier_export["export_dir"], f"{base}/1")
    return base


def test_serving_config_and_warmup_requests_read_and_write_a_remote_export(
        classifier_export, ram, tmp_path):
    from keras_bert.export.tf_serving import (
        read_warmup_requests,
        warmup_inputs,
        write_operator_files,
        write_serving_config,
        write_warmup_requests,
    )
    from keras_bert.files import OutputError

    base = _remote_export(classifier_export, f"{ram}/exports/sentiment")
    assert warmup_inputs(f"{base}/1") == warmup_inputs(classifier_export["export_dir"])
    assert [log.predict_log.request.model_spec.name for log in read_warmup_requests(
        f"{base}/1")] == ["sentiment"] * len(warmup_inputs(f"{base}/1"))
    with pytest.raises(ValueError, match="committed remote export: its files are not changed "
                                         "in place.*warmup=True"):
        write_warmup_requests(f"{base}/1")
    assert storage.committed_manifest(f"{base}/1") is not None
    local = str(tmp_path / "config")
    want = write_serving_config([classifier_export["export_dir"].rsplit("/", 1)[0]], local)
    got = write_serving_config([base], f"{ram}/config")
    assert got == (f"{ram}/config/models.config", f"{ram}/config/batching_parameters.txt")
    for remote, path in zip(got, want):
        assert text(remote) == open(path, encoding="utf-8").read()
    assert "versions: 1" in text(got[0])
    # A version 2 whose upload was cut short (files, no marker) is not served.
    storage.write_bytes(f"{base}/2/saved_model.pb", b"half an upload")
    write_serving_config([base], f"{ram}/config")
    assert "versions: 1" in text(got[0]) and "versions: 2" not in text(got[0])
    write_serving_config([base], f"{ram}/config")  # Its own files: replaced.
    paths = write_operator_files([base], f"{ram}/config")
    assert "prometheus_config" in text(paths[0])
    storage.write_bytes(f"{ram}/other/models.config", b"the user's own config\n")
    with pytest.raises(OutputError, match="was not written by tools/serving_config.py"):
        write_serving_config([base], f"{ram}/other")
    assert text(f"{ram}/other/models.config") == "the user's own config\n"
    with pytest.raises(ValueError, match="nosuchfs://.*no file system is registered"):
        write_serving_config([base], "nosuchfs://bucket/config")


# === Readers: tokenizer assets, sentence-transformers folders, tuning texts ===

@pytest.mark.parametrize("tokens", [
    ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "cat", "##s"],
    ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", " spaced ", "cat"],  # vocabulary.json
])
def test_a_tokenizers_assets_round_trip_on_a_remote_folder(tokens, ram):
    from keras_bert.text.tokenizer import BertTokenizer

    tokenizer = BertTokenizer(tokens)
    tokenizer.save_assets(f"{ram}/assets")
    json_written = storage.exists(f"{ram}/assets/vocabulary.json")
    assert json_written == (" spaced " in tokens)
    again = BertTokenizer(None)
    again.load_assets(f"{ram}/assets")
    assert list(again.vocabulary) == tokens


def test_a_remote_sentence_transformers_folder_is_read(ram):
    from keras_bert.tasks.text_embedding.sentence_transformers import (
        is_sentence_transformers_folder,
        read_sentence_transformers,
    )

    folder = f"{ram}/st"
    modules = [{"type": "sentence_transformers.models.Transformer", "path": ""},
               {"type": "sentence_transformers.models.Pooling", "path": "1_Pooling"},
               {"type": "sentence_transformers.models.Normalize", "path": "2_Normalize"}]
    storage.write_bytes(f"{folder}/modules.json", json.dumps(modules).encode())
    storage.write_bytes(f"{folder}/sentence_bert_config.json", b'{"max_seq_length": 77}')
    assert is_sentence_transformers_folder(folder)
    assert not is_sentence_transformers_folder(f"{ram}/missing")
    with pytest.raises(ValueError, match=r"1_Pooling/config.json is missing: modules.json "
                                         r"names it"):
        read_sentence_transformers(folder)
    storage.write_bytes(f"{folder}/1_Pooling/config.json", b'{"pooling_mode_cls_token": true}')
    assert read_sentence_transformers(folder) == {"pooling": "cls", "normalize": True,
                                                  "max_seq_length": 77}


def test_tuning_texts_are_read_from_a_remote_file_or_named_when_missing(ram):
    from keras_bert.export.tuning import read_tune_texts

    storage.write_bytes(f"{ram}/texts.txt", "a good movie\r\n\n  \nünï\rold mac\ra\u2028b\n".encode())
    # Line ends as open() reads them: \r alone ends a line, U+2028 does not.
    assert read_tune_texts(f"{ram}/texts.txt") == ["a good movie", "ünï", "old mac", "a\u2028b"]
    with pytest.raises(FileNotFoundError, match=r"Cannot read the tuning texts ram://.*missing"
                                                r".txt \(No such file"):
        read_tune_texts(f"{ram}/missing.txt")


def test_the_imbalanced_tweets_go_to_a_remote_folder(ram, tmp_path):
    from keras_bert.tasks.classification.reader import read_classification_file
    from keras_bert.tasks.classification.tweets import write_imbalanced_tweets

    source = tmp_path / "tweets.csv"
    rows = [("positive", f"so good, day {i}") if i % 3 == 0 else
            ("negative", f"so bad, day {i}") if i % 3 == 1 else ("neutral", f"a day {i}")
            for i in range(60)]
    source.write_text("sentiment,confidence,text\n" + "".join(
        f'{label},1.0,"{tweet}"\n' for label, tweet in rows), encoding="utf-8")
    kwargs = dict(minority="positive", keep_fraction=0.5, train_size=30, eval_size=10,
                  path=str(source))
    counts = write_imbalanced_tweets(f"{ram}/tweets", **kwargs)
    assert write_imbalanced_tweets(str(tmp_path / "tweets"), **kwargs) == counts
    for name in ("train", "eval"):
        assert text(f"{ram}/tweets/{name}.csv") == (tmp_path / "tweets" / f"{name}.csv") \
            .read_bytes().decode("utf-8")
        data = read_classification_file(f"{ram}/tweets/{name}.csv", text_column="text",
                                        label_column="sentiment")
        assert sum(counts[name].values()) == len(data.texts)


def test_a_google_checkpoint_is_written_to_a_remote_folder(ram, tmp_path):
    import tensorflow as tf

    from keras_bert.checkpoints import write_google_checkpoint
    from tests.checkpoints.conftest import WORDS, random_weights, tiny_config

    config = tiny_config()
    weights = random_weights(config, heads=False)
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("".join(w + "\n" for w in WORDS), encoding="utf-8")
    write_google_checkpoint(f"{ram}/google", weights, config, str(vocab))
    # By its prefix: ram:// takes "bert_model.ckpt" for a folder (its files start with it).
    reader = tf.compat.v1.train.NewCheckpointReader(f"{ram}/google/bert_model.ckpt")
    for name, value in weights.items():
        np.testing.assert_array_equal(reader.get_tensor(name), value)
    assert json.loads(text(f"{ram}/google/bert_config.json"))["hidden_size"] == config.hidden_size
    assert text(f"{ram}/google/vocab.txt") == vocab.read_text(encoding="utf-8")
