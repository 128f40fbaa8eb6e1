"""The conversion cache keys on content; damaged entries are rebuilt; cache errors say so.

Also: NaN or inf in a source's weights is refused with the tensor's name, and
the numeric check names hidden_act only when it is the cause.
"""

import json
import os
import shutil
import stat

import numpy as np
import pytest

from keras_bert import sources
from keras_bert.checkpoints import CheckpointError, convert_checkpoint
from keras_bert.checkpoints import convert as convert_lib
from keras_bert.checkpoints import resolve
from keras_bert.checkpoints.convert import build_model, check_model, read_checkpoint
from keras_bert.models import BertEncoder
from tests.checkpoints.conftest import (
    huggingface_config,
    random_weights,
    tiny_config,
    to_huggingface,
    write_huggingface,
)


@pytest.fixture(autouse=True)
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("KERAS_BERT_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    return tmp_path / "cache"


def _hf_folder(path, seed=0, config=None, extra_config=None):
    config = config or tiny_config(hidden_act="gelu")
    weights = random_weights(config, seed=seed)
    write_huggingface(str(path), to_huggingface(weights, config),
                      {**huggingface_config(config), **(extra_config or {})})
    return str(path), weights


def _count_conversions(monkeypatch):
    calls = []
    real = resolve.convert_checkpoint

    def counting(*args, **kwargs):
        calls.append(args[1])
        return real(*args, **kwargs)

    monkeypatch.setattr(resolve, "convert_checkpoint", counting)
    return calls


def _embeddings(model_dir):
    return np.asarray(BertEncoder.from_pretrained(model_dir).embeddings.token_embeddings)


def test_a_same_size_same_mtime_weight_swap_is_converted_anew(tmp_path, monkeypatch):
    folder, first = _hf_folder(tmp_path / "hf", seed=0)
    _hf_folder(tmp_path / "other", seed=1)  # Same shapes: a file of the same size.
    calls = _count_conversions(monkeypatch)
    target = sources.resolve_source(folder)
    assert sources.resolve_source(folder) == target and len(calls) == 1  # Cached.
    weights = os.path.join(folder, "model.safetensors")
    before = os.stat(weights)
    shutil.copy2(tmp_path / "other" / "model.safetensors", weights)  # What `cp -p` does.
    os.utime(weights, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = os.stat(weights)
    assert (after.st_size, after.st_mtime_ns) == (before.st_size, before.st_mtime_ns)
    swapped = sources.resolve_source(folder)
    assert len(calls) == 2 and swapped != target
    expected = random_weights(tiny_config(hidden_act="gelu"), seed=1)
    np.testing.assert_allclose(_embeddings(swapped),
                               expected["bert/embeddings/word_embeddings"], atol=1e-6)
    # Touching a file without changing it converts nothing again.
    os.utime(weights, ns=(1, 1))
    assert sources.resolve_source(folder) == swapped and len(calls) == 2


def test_a_same_length_config_edit_is_converted_anew(tmp_path, monkeypatch):
    folder, _ = _hf_folder(tmp_path / "hf", extra_config={"layer_norm_eps": 1e-12})
    calls = _count_conversions(monkeypatch)
    first = sources.resolve_source(folder)
    config_file = os.path.join(folder, "config.json")
    text = open(config_file).read()
    assert "1e-12" in text
    edited = text.replace("1e-12", "1e-10")  # Same length.
    mtime = os.stat(config_file).st_mtime_ns
    with open(config_file, "w") as f:
        f.write(edited)
    os.utime(config_file, ns=(mtime, mtime))
    second = sources.resolve_source(folder)
    assert len(calls) == 2 and second != first
    with open(os.path.join(second, "config.json")) as f:
        assert json.load(f)["layer_norm_epsilon"] == pytest.approx(1e-10)


def test_a_damaged_cache_entry_is_rebuilt(tmp_path, monkeypatch):
    folder, weights = _hf_folder(tmp_path / "hf")
    calls = _count_conversions(monkeypatch)
    target = sources.resolve_source(folder)
    # Truncated weights: the directory still looks like a model directory.
    with open(os.path.join(target, "model.weights.h5"), "r+b") as f:
        f.truncate(100)
    assert sources.resolve_source(folder) == target and len(calls) == 2
    np.testing.assert_allclose(_embeddings(target), weights["bert/embeddings/word_embeddings"],
                               atol=1e-6)
    # A file gone, and the entry's manifest lost: rebuilt both times.
    os.remove(os.path.join(target, "model.weights.h5"))
    assert sources.resolve_source(folder) == target and len(calls) == 3
    os.remove(resolve.manifest_path(target))
    assert sources.resolve_source(folder) == target and len(calls) == 4
    assert os.path.exists(resolve.manifest_path(target))


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only folders")
def test_an_unwritable_cache_is_reported_as_the_cache(tmp_path, cache):
    folder, _ = _hf_folder(tmp_path / "hf")
    cache.mkdir()
    cache.chmod(stat.S_IRUSR | stat.S_IXUSR)
    try:
        with pytest.raises(resolve.CacheError) as error:
            sources.resolve_source(folder)
    finally:
        cache.chmod(stat.S_IRWXU)
    message = str(error.value)
    assert f"The conversion cache {cache} cannot be used" in message
    assert "KERAS_BERT_CACHE" in message


def test_an_unwritable_cache_is_reported_as_the_cache_for_root_too(tmp_path, monkeypatch):
    # Root writes anywhere: a file where the cache folder should be stands
    # in for an unwritable one.
    folder, _ = _hf_folder(tmp_path / "hf")
    blocked = tmp_path / "blocked"
    blocked.write_text("a file, not a folder")
    monkeypatch.setenv("KERAS_BERT_CACHE", str(blocked))
    with pytest.raises(resolve.CacheError) as error:
        sources.resolve_source(folder)
    message = str(error.value)
    assert f"The conversion cache {blocked} cannot be used" in message
    assert "Point KERAS_BERT_CACHE at a writable folder" in message


def test_content_hashes_are_reused_until_the_file_changes(tmp_path, monkeypatch):
    path = tmp_path / "weights.bin"
    path.write_bytes(b"a" * 1000)
    first = resolve.file_sha256(str(path))
    opened = []
    real_open = open

    def spy(name, *args, **kwargs):
        if os.fspath(name) == str(path):
            opened.append(name)
        return real_open(name, *args, **kwargs)

    monkeypatch.setattr("builtins.open", spy)
    assert resolve.file_sha256(str(path)) == first and not opened  # The sidecar's.
    mtime = os.stat(path).st_mtime_ns
    path.write_bytes(b"b" * 1000)
    os.utime(path, ns=(mtime, mtime))
    assert resolve.file_sha256(str(path)) != first and opened


# === Finite weights and the numeric check's message ===


def test_a_nan_source_weight_is_refused_with_its_name(tmp_path):
    config = tiny_config(hidden_act="gelu")
    weights = random_weights(config)
    # A rare token's row: the check sentences would never read it.
    weights["bert/embeddings/word_embeddings"][-1, 3] = np.nan
    write_huggingface(str(tmp_path / "hf"), to_huggingface(weights, config),
                      huggingface_config(config))
    with pytest.raises(CheckpointError) as error:
        convert_checkpoint(str(tmp_path / "hf"), str(tmp_path / "out"))
    message = str(error.value)
    assert "bert.embeddings.word_embeddings.weight holds 1 NaN or infinite value(s)" in message
    assert f"index [{config.vocab_size - 1}, 3]" in message
    assert not (tmp_path / "out").exists()


def test_the_numeric_check_blames_hidden_act_only_when_it_is_the_cause(tmp_path, monkeypatch):
    folder, _ = _hf_folder(tmp_path / "hf")
    source = read_checkpoint(folder)
    model, _ = build_model(source)
    inputs = convert_lib.check_inputs(source.vocab_file, True)
    # A misplaced weight: the numpy reference (same config) differs, and
    # hidden_act is not named.
    kernel = model.encoder.encoder_blocks[0].output_dense.kernel
    kernel.assign(np.asarray(kernel)[::-1])
    monkeypatch.setattr(convert_lib.reference, "transformers_available", lambda: False)
    with pytest.raises(CheckpointError) as error:
        check_model(model, source, inputs=inputs)
    assert "hidden_act" not in str(error.value) and "No single cause" in str(error.value)
    # A NaN in the converted model is named as such.
    kernel.assign(np.full(kernel.shape, np.nan, "float32"))
    with pytest.raises(CheckpointError, match=rf"the weight\(s\) {kernel.path} hold NaN"):
        check_model(model, source, inputs=inputs)
    # An outside reference that computes the other GELU: hidden_act is named.
    model, _ = build_model(source)

    def other_gelu(folder, token_ids, segment_ids, padding_mask):
        import dataclasses

        config = dataclasses.replace(source.config, hidden_act="gelu_approx")
        out = convert_lib.reference.numpy_forward(source.weights, config, token_ids,
                                                  segment_ids, padding_mask)
        return {"sequence_output": out["sequence_output"]}

    monkeypatch.setattr(convert_lib.reference, "transformers_available", lambda: True)
    monkeypatch.setattr(convert_lib.reference, "transformers_forward", other_gelu)
    with pytest.raises(CheckpointError, match="The reference matches hidden_act='gelu_approx'"):
        check_model(model, source, inputs=inputs, tolerance=1e-6)
