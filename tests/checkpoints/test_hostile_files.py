"""Checkpoint files written by someone else: names that leave their folder, sizes that lie.

A shard index may only name weights files inside its folder, and every h5 /
TF checkpoint reader compares each array's declared size with its config and
with the bytes the file holds before it reads one (keras_bert/names.py,
models/model_dir.py `h5_shapes`, checkpoints/source.py `check_declared_sizes`).
"""

import json
import os
import shutil
import subprocess
import sys
import textwrap

import h5py
import numpy as np
import pytest

from keras_bert.checkpoints import CheckpointError
from keras_bert.checkpoints.huggingface import load_tensors
from keras_bert.names import DamagedFileError
from tests.checkpoints.conftest import hf_folder
from tests.conftest import ROOT, tiny_config

HUGE = (1 << 34,)  # 64 GiB of float32 declared, never written: nothing on disk.


def _index(folder, shard, tensors=("x",)):
    path = os.path.join(folder, "model.safetensors.index.json")
    with open(path, "w") as f:
        json.dump({"weight_map": {t: shard for t in tensors}}, f)
    return path


@pytest.mark.parametrize("shard", ["../outside/x.safetensors", "{outside}/x.safetensors",
                                   "file:x.safetensors", "C:x.safetensors", "x\x00.safetensors",
                                   "sub/../../outside/x.safetensors"])
def test_a_shard_named_outside_the_folder_is_refused_and_never_read(tmp_path, shard):
    from safetensors.numpy import save_file

    outside, folder = tmp_path / "outside", tmp_path / "model"
    outside.mkdir()
    folder.mkdir()
    save_file({"x": np.full((2,), 7.0, np.float32)}, str(outside / "x.safetensors"))
    shard = shard.format(outside=outside)
    index = _index(str(folder), shard)
    with pytest.raises(DamagedFileError) as raised:
        load_tensors(index)
    message = str(raised.value)
    assert index in message and repr(shard) in message and "a shard" in message


@pytest.mark.parametrize("shard", ["model.safetensors.index.json", "other.index.json"])
def test_an_index_naming_an_index_is_refused_naming_the_file(tmp_path, shard):
    index = _index(str(tmp_path), shard)
    if shard != "model.safetensors.index.json":  # A loop back, had it been followed.
        with open(tmp_path / shard, "w") as f:
            json.dump({"weight_map": {"x": "model.safetensors.index.json"}}, f)
    with pytest.raises(CheckpointError, match=f"{index} is damaged: shard '{shard}' is an index"):
        load_tensors(index)


def test_a_good_index_still_reads_its_shards(tmp_path):
    from safetensors.numpy import save_file

    save_file({"x": np.arange(3, dtype=np.float32)}, str(tmp_path / "part-1.safetensors"))
    tensors = load_tensors(_index(str(tmp_path), "part-1.safetensors"))
    np.testing.assert_array_equal(tensors["x"], [0, 1, 2])


def _add_unwritten(h5_file, name="unused", shape=HUGE):
    with h5py.File(h5_file, "a") as f:
        f.create_dataset(name, shape=shape, dtype="f4")  # Declared; no byte written.


def _keras_hub_preset(folder, shape=HUGE):
    os.makedirs(folder)
    config = tiny_config()
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump({"class_name": "BertBackbone", "config": {
            "vocabulary_size": config.vocab_size, "num_layers": config.num_layers,
            "num_heads": config.num_heads, "hidden_dim": config.hidden_size,
            "intermediate_dim": config.intermediate_size}}, f)
    weights = os.path.join(folder, "model.weights.h5")
    with h5py.File(weights, "w") as f:
        f.create_dataset("layers/token_embedding/vars/0", data=np.zeros((30, 16), np.float32))
    _add_unwritten(weights, shape=shape)
    return weights


def test_keras_hub_preset_with_a_huge_unwritten_dataset_is_refused_naming_it(tmp_path):
    from keras_bert.checkpoints.keras_hub_preset import read_keras_hub_preset

    weights = _keras_hub_preset(str(tmp_path / "preset"))
    with pytest.raises(CheckpointError) as raised:
        read_keras_hub_preset(str(tmp_path / "preset"))
    message = str(raised.value)
    assert f"{weights}: dataset 'unused' declares shape {HUGE}" in message
    # The most a model of this config holds: 512 positions (keras-hub's default) x 48
    # (3 x hidden 16: the fused query/key/value kernel's width).
    assert "at most 24,576 values" in message


def test_an_unwritten_dataset_within_the_config_is_refused_by_the_bytes_it_lacks(tmp_path):
    from keras_bert.checkpoints.keras_hub_preset import read_keras_hub_preset

    _keras_hub_preset(str(tmp_path / "preset"), shape=(30, 16))
    with pytest.raises(CheckpointError, match=r"declares shape \(30, 16\) \(480 values, 0 of "
                                              r"its 1,920 bytes stored\)"):
        read_keras_hub_preset(str(tmp_path / "preset"))


def test_transformers_tf_h5_with_a_huge_unwritten_dataset_is_refused(tmp_path):
    from keras_bert.checkpoints.transformers_tf import read_transformers_tf_checkpoint

    folder = shutil.copytree(os.path.join(ROOT, "tests", "fixtures", "transformers_tf", "model"),
                             tmp_path / "tf")
    _add_unwritten(str(folder / "tf_model.h5"), "tf_bert_model/bert/extra:0")
    with pytest.raises(CheckpointError, match=r"dataset 'tf_bert_model/bert/extra:0' declares "
                                              r"shape \(17179869184,\)"):
        read_transformers_tf_checkpoint(str(folder))


def test_lora_file_with_a_huge_unwritten_dataset_is_refused(tmp_path):
    from keras_bert.models import BertEncoder

    encoder = BertEncoder.from_bert_config(tiny_config())
    encoder.enable_lora(2)
    path = str(tmp_path / "model.lora.h5")
    encoder.save_lora_weights(path)
    encoder.load_lora_weights(path)  # The file as written loads.
    _add_unwritten(path)
    with pytest.raises(ValueError, match=rf"{path}: dataset 'unused' declares shape"):
        BertEncoder.from_bert_config(tiny_config()).load_lora_weights(path)


def test_model_dir_refuses_the_same_file_with_the_same_check(tmp_path, tiny_model_dir):
    from keras_bert.models import BertEncoder

    folder = shutil.copytree(tiny_model_dir, tmp_path / "model")
    _add_unwritten(str(folder / "model.weights.h5"))
    with pytest.raises(ValueError, match=r"dataset 'unused' declares shape \(17179869184,\)"):
        BertEncoder.from_pretrained(str(folder))


def test_a_model_whose_largest_array_is_the_fused_qkv_kernel_loads(tmp_path):
    # vocab, positions and intermediate all under 3 * hidden: the [hidden, 3 * hidden]
    # query/key/value kernel is the largest array and still within the bound.
    from keras_bert.models import BertEncoder

    config = tiny_config(vocab_size=20, max_position_embeddings=16, hidden_size=16,
                         intermediate_size=20)
    encoder = BertEncoder.from_bert_config(config)
    encoder.save_pretrained(str(tmp_path / "model"))
    loaded = BertEncoder.from_pretrained(str(tmp_path / "model"))
    np.testing.assert_array_equal(loaded.get_weights()[0], encoder.get_weights()[0])


def test_google_checkpoint_declaring_more_than_its_data_holds_is_refused(tmp_path):
    import tensorflow as tf

    from keras_bert.checkpoints.google import read_google_checkpoint
    from tests.checkpoints.conftest import google_config, write_vocab
    from tests.checkpoints.conftest import tiny_config as words_config

    folder = tmp_path / "google"
    folder.mkdir()
    table = tf.Variable(np.ones((4096, 16), np.float32))
    prefix = tf.train.Checkpoint(embeddings=table).write(str(folder / "bert_model.ckpt"))
    (data,) = [str(p) for p in folder.glob("bert_model.ckpt.data-*")]
    with open(data, "r+b") as f:
        f.truncate(1000)  # The .index still declares 4096 x 16 floats.
    with open(folder / "bert_config.json", "w") as f:
        json.dump(google_config(words_config()), f)
    write_vocab(str(folder / "vocab.txt"))
    with pytest.raises(CheckpointError, match=r"variable embeddings/.ATTRIBUTES/VARIABLE_VALUE "
                                              r"declares shape \(4096, 16\) \(262,144 bytes\), "
                                              r"but the checkpoint's data files hold"):
        read_google_checkpoint(prefix)


def test_refusal_allocates_nothing_near_the_declared_size(tmp_path):
    """Peak memory, in a fresh process: a 1 GiB unwritten dataset would add 1 GiB."""
    folder = str(tmp_path / "preset")
    _keras_hub_preset(folder, shape=(1 << 28,))
    script = textwrap.dedent(f"""
        import resource
        from keras_bert.checkpoints.keras_hub_preset import read_keras_hub_preset
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        try:
            read_keras_hub_preset({folder!r})
        except ValueError as e:
            print("refused" if "declares shape" in str(e) else e)
        print((resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) // 1024)
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         cwd=ROOT, check=True).stdout.split()
    assert out[-2] == "refused" and int(out[-1]) < 64, out  # MiB of peak growth.


def test_google_checkpoint_file_naming_a_prefix_outside_the_folder_is_refused(tmp_path):
    import tensorflow as tf

    from keras_bert.checkpoints.google import find_google_checkpoint

    folder, outside = tmp_path / "release", tmp_path / "outside"
    for where in (folder / "a.ckpt", folder / "b.ckpt", outside / "model.ckpt"):
        tf.train.Checkpoint(v=tf.Variable([1.0])).write(str(where))
    # Two checkpoints inside: the `checkpoint` file decides, and it points outside.
    (folder / "checkpoint").write_text(f'model_checkpoint_path: "{outside}/model.ckpt"\n')
    with pytest.raises(DamagedFileError, match=rf"{folder}/checkpoint is damaged: the latest "
                                               rf"checkpoint '../outside/model.ckpt' climbs"):
        find_google_checkpoint(str(folder))
    (folder / "checkpoint").write_text(f'model_checkpoint_path: "{folder}/b.ckpt"\n')
    assert find_google_checkpoint(str(folder)) == (str(folder), str(folder / "b.ckpt"))


def test_safetensors_declaring_more_than_the_file_holds_is_refused(tmp_path):
    import struct

    header = json.dumps({"x": {"dtype": "F32", "shape": list(HUGE),
                               "data_offsets": [0, 4 * HUGE[0]]}}).encode()
    path = tmp_path / "model.safetensors"
    path.write_bytes(struct.pack("<Q", len(header)) + header + bytes(16))
    with pytest.raises(CheckpointError, match=rf"Cannot read {path}: .*not fully covered"):
        load_tensors(str(path))
