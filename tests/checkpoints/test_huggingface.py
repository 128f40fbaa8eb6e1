import json
import os
import sys

import numpy as np
import pytest

from keras_bert.checkpoints import CheckpointError, convert_checkpoint, read_huggingface_checkpoint
from keras_bert.checkpoints.huggingface import config_from_huggingface
from keras_bert.checkpoints.reference import numpy_forward
from keras_bert.models import BertEncoder, BertPretrainer
from tests.checkpoints.conftest import (
    hf_folder,
    huggingface_config,
    random_weights,
    tiny_config,
    to_huggingface,
    write_huggingface,
)


def _assert_encoder_matches(encoder, weights, config, batch, pooler=True):
    out = encoder(batch)
    want = numpy_forward(weights, config, **batch)
    real = batch["padding_mask"].astype(bool)
    np.testing.assert_allclose(
        np.asarray(out["sequence_output"])[real], want["sequence_output"][real], atol=1e-4
    )
    if pooler:
        np.testing.assert_allclose(out["pooled_output"], want["pooled_output"], atol=1e-4)
    return want


def test_pretraining_folder_with_prefix_and_heads(tmp_path, batch):
    config = tiny_config(hidden_act="gelu")
    weights = random_weights(config)
    tensors = to_huggingface(weights, config, prefix="bert.")
    tensors["classifier.weight"] = np.zeros((3, config.hidden_size), np.float32)
    tensors["classifier.bias"] = np.zeros((3,), np.float32)
    folder = write_huggingface(str(tmp_path / "hf"), tensors, huggingface_config(config))
    out = str(tmp_path / "model")

    report = convert_checkpoint(folder, out, check=True)
    assert report.format == "huggingface"
    assert report.loaded_parts == ["encoder", "pooler", "mlm_head", "nsp_head"]
    assert report.unused == ["classifier.bias", "classifier.weight"]
    assert sorted(report.ignored) == [
        "bert.embeddings.position_ids",
        "cls.predictions.decoder.bias",
        "cls.predictions.decoder.weight",
    ]
    assert report.num_source_tensors == len(tensors)
    assert report.warnings == []

    model = BertPretrainer.from_pretrained(out)
    assert model.encoder.get_bert_config() == config
    want = _assert_encoder_matches(model.encoder, weights, config, batch)
    positions = np.array([[0, 3, 6], [1, 5, 9]], np.int32)
    got = model({**batch, "masked_positions": positions})
    want_mlm = np.take_along_axis(want["mlm_logits"], positions[:, :, None], axis=1)
    np.testing.assert_allclose(got["mlm_logits"], want_mlm, atol=1e-4)
    np.testing.assert_allclose(got["nsp_logits"], want["nsp_logits"], atol=1e-4)


def test_bare_model_without_prefix_old_layer_norm_names(tmp_path, batch):
    config = tiny_config(hidden_act="gelu_approx")  # written as "gelu_new"
    weights = random_weights(config, heads=False)
    tensors = to_huggingface(weights, config, prefix="", old_layer_norm_names=True)
    folder = write_huggingface(str(tmp_path / "hf"), tensors, huggingface_config(config))
    out = str(tmp_path / "model")

    report = convert_checkpoint(folder, out)
    assert report.loaded_parts == ["encoder", "pooler"]
    assert report.missing_parts == ["mlm_head", "nsp_head"]
    assert "mlm_head" in report.summary() and "not created" in report.summary()
    assert sorted(os.listdir(out)) == ["config.json", "model.weights.h5", "task.json",
                                       "vocab.txt"]  # task.json: the text settings
    encoder = BertEncoder.from_pretrained(out)
    assert encoder.get_bert_config().hidden_act == "gelu_approx"
    _assert_encoder_matches(encoder, weights, config, batch)


def test_masked_lm_without_pooler_and_nsp_is_reported(tmp_path, batch):
    config = tiny_config(hidden_act="gelu")
    weights = random_weights(config)
    for name in ("bert/pooler/dense/kernel", "bert/pooler/dense/bias",
                 "cls/seq_relationship/output_weights", "cls/seq_relationship/output_bias"):
        del weights[name]
    folder = write_huggingface(
        str(tmp_path / "hf"), to_huggingface(weights, config), huggingface_config(config)
    )
    report = convert_checkpoint(folder, str(tmp_path / "model"), check=True)
    assert report.loaded_parts == ["encoder", "mlm_head"]
    assert report.missing_parts == ["pooler", "nsp_head"]
    assert any("no pooler" in w for w in report.warnings)
    assert any("nsp_head is freshly initialized" in w for w in report.warnings)
    assert "pooled_output" not in report.max_abs_diff
    model = BertPretrainer.from_pretrained(str(tmp_path / "model"))
    _assert_encoder_matches(model.encoder, weights, config, batch, pooler=False)


def test_sharded_safetensors(tmp_path, batch):
    from safetensors.numpy import save_file

    config = tiny_config(hidden_act="gelu")
    weights = random_weights(config, heads=False)
    tensors = to_huggingface(weights, config, prefix="")
    folder = write_huggingface(str(tmp_path / "hf"), {}, huggingface_config(config))
    os.remove(os.path.join(folder, "model.safetensors"))
    names = sorted(tensors)
    shards = {"model-00001-of-00002.safetensors": names[::2],
              "model-00002-of-00002.safetensors": names[1::2]}
    for shard, keys in shards.items():
        save_file({k: np.ascontiguousarray(tensors[k]) for k in keys}, os.path.join(folder, shard))
    with open(os.path.join(folder, "model.safetensors.index.json"), "w") as f:
        json.dump({"weight_map": {k: s for s, ks in shards.items() for k in ks}}, f)
    source = read_huggingface_checkpoint(folder)
    assert sorted(source.weights) == sorted(weights)
    np.testing.assert_array_equal(
        source.weights["bert/encoder/layer_1/output/dense/kernel"],
        weights["bert/encoder/layer_1/output/dense/kernel"],
    )


def test_pytorch_bin_without_torch_says_how_to_fix(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)  # `import torch` raises ImportError
    config = tiny_config()
    folder = write_huggingface(str(tmp_path / "hf"), {}, huggingface_config(config))
    os.remove(os.path.join(folder, "model.safetensors"))
    with open(os.path.join(folder, "pytorch_model.bin"), "wb") as f:
        f.write(b"PK\x03\x04 not really a zip")
    with pytest.raises(CheckpointError, match=r"pytorch_model\.bin.*pip install torch"):
        convert_checkpoint(folder, str(tmp_path / "model"))
    assert not os.path.exists(tmp_path / "model")


def test_pytorch_bin_when_torch_is_installed(tmp_path, batch):
    torch = pytest.importorskip("torch")
    config = tiny_config(hidden_act="gelu")
    weights = random_weights(config)
    tensors = to_huggingface(weights, config)
    folder = write_huggingface(str(tmp_path / "hf"), {}, huggingface_config(config))
    os.remove(os.path.join(folder, "model.safetensors"))
    state = {k: torch.from_numpy(np.ascontiguousarray(v)) for k, v in tensors.items()}
    state["bert.pooler.dense.bias"] = state["bert.pooler.dense.bias"].to(torch.bfloat16)
    torch.save(state, os.path.join(folder, "pytorch_model.bin"))
    source = read_huggingface_checkpoint(folder)
    assert sorted(source.weights) == sorted(weights)
    np.testing.assert_array_equal(
        source.weights["bert/pooler/dense/kernel"], weights["bert/pooler/dense/kernel"]
    )
    assert source.weights["bert/pooler/dense/bias"].dtype == np.float32


@pytest.mark.parametrize(
    "hf_act, expected",
    [("gelu", "gelu"), ("gelu_new", "gelu_approx"), ("gelu_pytorch_tanh", "gelu_approx"),
     ("relu", "relu")],
)
def test_config_activation_names(hf_act, expected):
    values = huggingface_config(tiny_config())
    values["hidden_act"] = hf_act
    assert config_from_huggingface(values).hidden_act == expected


@pytest.mark.parametrize(
    "key, value, message",
    [("model_type", "deberta", "model_type='deberta' is not BERT"),
     ("position_embedding_type", "relative_key", "relative_key"),
     ("hidden_act", "silu", "hidden_act='silu'")],
)
def test_config_rejects_what_is_not_bert(key, value, message):
    values = huggingface_config(tiny_config())
    values[key] = value
    with pytest.raises(CheckpointError, match=message):
        config_from_huggingface(values)


def test_tokenizer_settings_of_the_folder_are_kept(tmp_path):
    # transformers' tokenizer_config.json: lower-casing that keeps accents, CJK not split.
    folder = hf_folder(tmp_path)
    with open(os.path.join(folder, "tokenizer_config.json"), "w") as f:
        json.dump({"do_lower_case": True, "strip_accents": False,
                   "tokenize_chinese_chars": False, "never_split": ["[X]"],
                   "remove_control_chars": False}, f)
    out = str(tmp_path / "model")
    report = convert_checkpoint(folder, out, check=False)
    assert report.text_settings["tokenizer_options"] == {
        "strip_accents": False, "tokenize_chinese_chars": False, "never_split": ["[X]"],
        "remove_control_chars": False}
    tokenizer = BertEncoder.from_pretrained(out).preprocessor.tokenizer
    assert (tokenizer.lowercase, tokenizer.strip_accents, tokenizer.tokenize_chinese_chars,
            list(tokenizer.never_split), tokenizer.remove_control_chars) == (
        True, False, False, ["[X]"], False)


def _write_tokenizer_json(folder, words, lowercase=True, strip_accents=None):
    """tokenizer.json as transformers 5 writes a BertTokenizer's (no vocab.txt beside it)."""
    with open(os.path.join(folder, "tokenizer.json"), "w", encoding="utf-8") as f:
        json.dump({
            "version": "1.0",
            "added_tokens": [{"id": i, "content": t, "special": True}
                             for i, t in enumerate(words[:5])],
            "normalizer": {"type": "BertNormalizer", "clean_text": True,
                           "handle_chinese_chars": True, "strip_accents": strip_accents,
                           "lowercase": lowercase},
            "pre_tokenizer": {"type": "BertPreTokenizer"},
            "decoder": {"type": "WordPiece", "prefix": "##", "cleanup": True},
            "model": {"type": "WordPiece", "unk_token": "[UNK]",
                      "continuing_subword_prefix": "##", "max_input_chars_per_word": 100,
                      # Written out of id order: the ids, not the order, give the line.
                      "vocab": dict(reversed([(t, i) for i, t in enumerate(words)]))},
        }, f)


def test_tokenizer_json_without_vocab_txt_loads(tmp_path):
    # A transformers-5 folder: tokenizer.json holds the vocabulary and the casing.
    from tests.checkpoints.conftest import WORDS

    folder = hf_folder(tmp_path)
    os.remove(os.path.join(folder, "vocab.txt"))
    cased = [w.capitalize() if w.isalpha() else w for w in WORDS]  # Not what vocab.txt had.
    _write_tokenizer_json(folder, cased, lowercase=False, strip_accents=True)
    out = str(tmp_path / "model")
    report = convert_checkpoint(folder, out, check=False)
    assert report.text_settings["lowercase"] is False
    assert report.text_settings["tokenizer_options"] == {"strip_accents": True}
    with open(os.path.join(out, "vocab.txt"), encoding="utf-8") as f:
        assert f.read().splitlines() == cased
    tokenizer = BertEncoder.from_pretrained(out).preprocessor.tokenizer
    assert tokenizer("The Fox").numpy().tolist() == [cased.index("The"), cased.index("Fox")]


def test_tokenizer_json_wins_over_a_disagreeing_vocab_txt(tmp_path, caplog):
    from tests.checkpoints.conftest import WORDS

    folder = hf_folder(tmp_path)
    swapped = list(WORDS)
    swapped[5], swapped[6] = swapped[6], swapped[5]
    _write_tokenizer_json(folder, swapped)
    source = read_huggingface_checkpoint(folder)
    with open(source.vocab_file, encoding="utf-8") as f:
        assert f.read().splitlines() == swapped
    assert any("vocab.txt differs from the WordPiece vocabulary" in w
               and "first difference at id 5" in w for w in source.warnings)
    # An agreeing vocab.txt is used as it is, without a note.
    _write_tokenizer_json(folder, WORDS)
    source = read_huggingface_checkpoint(folder)
    assert source.vocab_file == os.path.join(folder, "vocab.txt") and not source.warnings


def test_tokenizer_json_that_bert_cannot_use_is_refused(tmp_path):
    from tests.checkpoints.conftest import WORDS

    folder = hf_folder(tmp_path)
    os.remove(os.path.join(folder, "vocab.txt"))
    _write_tokenizer_json(folder, WORDS)
    with open(os.path.join(folder, "tokenizer.json"), encoding="utf-8") as f:
        values = json.load(f)
    values["model"]["vocab"]["extra"] = 99  # An id gap: ids are not 0..N-1.
    with open(os.path.join(folder, "tokenizer.json"), "w", encoding="utf-8") as f:
        json.dump(values, f)
    with pytest.raises(CheckpointError, match=r"not a map of tokens to the ids 0\.\.N-1"):
        read_huggingface_checkpoint(folder)
    values["model"] = {"type": "BPE", "vocab": {}, "merges": []}
    with open(os.path.join(folder, "tokenizer.json"), "w", encoding="utf-8") as f:
        json.dump(values, f)
    with pytest.raises(CheckpointError, match="no WordPiece model .* no vocab.txt"):
        read_huggingface_checkpoint(folder)


def test_tokenizer_json_of_another_size_names_tokenizer_json(tmp_path):
    from tests.checkpoints.conftest import WORDS

    folder = hf_folder(tmp_path)
    os.remove(os.path.join(folder, "vocab.txt"))
    _write_tokenizer_json(folder, WORDS[:-1])
    with pytest.raises(CheckpointError, match=r"tokenizer\.json has \d+ tokens, .*config\.json "
                                              r"says vocab_size=\d+"):
        read_huggingface_checkpoint(folder)
