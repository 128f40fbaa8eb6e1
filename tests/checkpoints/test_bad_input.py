"""The converter on bad input: a CheckpointError that names the file, or a model
directory that works; never a raw KeyError / AttributeError / HashTable error."""

import json
import os

import numpy as np
import pytest

from keras_bert.checkpoints import convert_checkpoint
from keras_bert.text import BertTokenizer
from tests.checkpoints.conftest import (
    WORDS,
    assert_convert_fails,
    google_config,
    hf_folder,
    huggingface_config,
    random_weights,
    tiny_config,
    write_google,
)


@pytest.mark.parametrize("layers", [1, 0])
def test_config_with_fewer_layers_than_the_weights(tmp_path, layers):
    values = huggingface_config(tiny_config(hidden_act="gelu"))
    values["num_hidden_layers"] = layers
    assert_convert_fails(tmp_path, hf_folder(tmp_path, config_values=values),
           rf"bert\.encoder\.layer\.{layers}\..* no place .*num_layers={layers}")


def test_huggingface_config_that_is_a_json_list(tmp_path):
    folder = hf_folder(tmp_path)
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump([1, 2], f)
    assert_convert_fails(tmp_path, folder, r"config\.json must hold a JSON object")


def test_google_config_that_is_a_json_list(tmp_path):
    config = tiny_config()
    folder = write_google(str(tmp_path / "google"), random_weights(config),
                          google_config(config))
    with open(os.path.join(folder, "bert_config.json"), "w") as f:
        json.dump(["hidden_size", 16], f)
    assert_convert_fails(tmp_path, folder, r"bert_config\.json must hold a JSON object")


def test_shard_index_that_is_a_json_list(tmp_path):
    folder = hf_folder(tmp_path)
    os.remove(os.path.join(folder, "model.safetensors"))
    with open(os.path.join(folder, "model.safetensors.index.json"), "w") as f:
        json.dump(["model-00001.safetensors"], f)
    assert_convert_fails(tmp_path, folder, r"Cannot read shard index")


def test_tokenizer_config_that_is_a_json_list_is_ignored(tmp_path):
    folder = hf_folder(tmp_path)
    with open(os.path.join(folder, "tokenizer_config.json"), "w") as f:
        json.dump(["do_lower_case"], f)
    convert_checkpoint(folder, str(tmp_path / "model"))
    assert os.path.isfile(tmp_path / "model" / "model.weights.h5")


def test_vocab_with_a_byte_order_mark_gives_a_working_model_dir(tmp_path):
    folder = hf_folder(tmp_path)
    with open(os.path.join(folder, "vocab.txt"), "wb") as f:
        f.write(b"\xef\xbb\xbf" + ("\n".join(WORDS) + "\n").encode("utf-8"))
    convert_checkpoint(folder, str(tmp_path / "model"), check=True)
    tokenizer = BertTokenizer(str(tmp_path / "model" / "vocab.txt"))
    assert tokenizer.pad_token_id == 0 and tokenizer.cls_token_id == 2


@pytest.mark.parametrize("change", ["duplicate", "blank"])
def test_check_accepts_the_vocabularies_model_directories_accept(tmp_path, change):
    words = list(WORDS)
    words[words.index("lazy")] = "the" if change == "duplicate" else ""
    folder = hf_folder(tmp_path, words=words)
    report = convert_checkpoint(folder, str(tmp_path / "model"), check=True)
    assert report.output == str(tmp_path / "model")
    tokenizer = BertTokenizer(str(tmp_path / "model" / "vocab.txt"))
    assert tokenizer.vocab_size == len(WORDS)


def test_pickle_that_runs_code_is_refused_for_safety(tmp_path):
    torch = pytest.importorskip("torch")
    folder = hf_folder(tmp_path)
    os.remove(os.path.join(folder, "model.safetensors"))

    class Payload:
        def __reduce__(self):
            return (os.getcwd, ())

    torch.save({"bert.pooler.dense.bias": Payload(), "x": torch.from_numpy(np.zeros(2))},
               os.path.join(folder, "pytorch_model.bin"))
    assert_convert_fails(tmp_path, folder, r"pytorch_model\.bin is not a plain tensor file.*refused for "
                             r"safety")
