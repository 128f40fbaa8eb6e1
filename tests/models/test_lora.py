"""LoRA: enable_lora, adapter-only save/load, merged saves and exports (keras_bert/models/lora.py)."""

import json
import os
import subprocess
import sys

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_bert.export import export_model
from keras_bert.layers import LoraDense
from keras_bert.models import BertEncoder
from keras_bert.models.lora import LORA_FILE, merged_copy
from keras_bert.tasks.classification.model import BertClassifier
from keras_bert.training.finetune import FinetuneOptions
from tests.conftest import run_tool
from tests.models.conftest import tiny_config
from tests.test_case import assert_all_close, to_numpy
from tests.training.finetune_fixtures import write_sentiment_splits

RANK = 2


def classifier(seed=0, num_layers=1, num_classes=3, dtype=None, **config):
    """A tiny classifier without dropout; one block unless told (a block costs time)."""
    keras.utils.set_random_seed(seed)
    encoder = BertEncoder(**tiny_config(dropout_rate=0.0, attention_dropout_rate=0.0,
                                        num_layers=num_layers, **config).to_dict(), dtype=dtype)
    return BertClassifier(encoder, num_classes=num_classes, dropout_rate=0.0)


def outputs(model, batch):
    """The logits (small at init) and the encoder's last layer (order 1), as numpy."""
    return to_numpy({"logits": model(batch),
                     "sequence": model.encoder(batch)["sequence_output"]})


def move_adapters(model, scale=0.5, seed=1):
    """Random B matrices (zeros at enable): the adapters then change the outputs."""
    rng = np.random.default_rng(seed)
    for block in model.encoder.encoder_blocks:
        for _, b in block.qkv_dense._adapters.values():
            b.assign(rng.normal(scale=scale, size=b.shape).astype("float32"))


def test_enable_lora_keeps_outputs_and_trains_only_adapters_and_head(batch):
    model = classifier(num_layers=2)
    before = to_numpy(model(batch))
    model.enable_lora(RANK)
    assert_all_close(model(batch), before, atol=0)  # B starts at zero

    hidden, layers = model.encoder.hidden_size, model.encoder.num_layers
    trainable = {w.path: tuple(w.shape) for w in model.trainable_weights}
    adapters = {p: s for p, s in trainable.items() if "lora_" in p}
    # query and value of each block: A [H, r] and B [r, H].
    assert len(adapters) == 2 * 2 * layers
    assert sorted(set(adapters.values())) == [(RANK, hidden), (hidden, RANK)]
    assert set(trainable) - set(adapters) == {"logits/kernel", "logits/bias"}
    assert model.lora_enabled and model.encoder.lora_enabled


def test_merged_weights_equal_adapters_in_every_save_path(batch, tmp_path):
    model = classifier()
    model.enable_lora(RANK, alpha=4, targets=("query", "key", "value"))
    move_adapters(model)
    expected = outputs(model, batch)
    plain_outputs = outputs(classifier(), batch)
    assert np.max(np.abs(expected["sequence"] - plain_outputs["sequence"])) > 0.1

    # The export's copy: no adapter variable, the same outputs.
    copy = merged_copy(model)
    assert not copy.lora_enabled
    assert not any("lora_" in w.path for w in copy.weights)
    assert_all_close(outputs(copy, batch), expected, atol=1e-5)

    # A Keras weights file holds the merged weights, in the plain model's layout.
    path = str(tmp_path / "merged.weights.h5")
    model.save_weights(path)
    plain = classifier(seed=5)
    plain.load_weights(path)
    assert_all_close(outputs(plain, batch), expected, atol=1e-5)
    # ... and loading it back into the LoRA model resets the adapters, not the outputs.
    model.load_weights(path)
    assert_all_close(outputs(model, batch), expected, atol=1e-5)

    move_adapters(model, seed=2)
    expected = outputs(model, batch)
    model.merge_lora()
    assert not model.lora_enabled
    assert len(model.trainable_weights) == len(classifier().trainable_weights)
    assert_all_close(outputs(model, batch), expected, atol=1e-5)


def test_adapters_save_and_load_alone(batch, tmp_path):
    model = classifier()
    model.enable_lora(RANK)
    move_adapters(model)
    expected = outputs(model, batch)
    path = str(tmp_path / "sentiment.lora.h5")
    model.save_lora_weights(path)
    assert os.path.getsize(path) < 40_000

    # Onto the same base encoder, without LoRA, with another head: LoRA is
    # enabled from the file's settings, and the trained head comes with it.
    fresh = classifier(seed=3)
    fresh.encoder.set_weights([w.numpy() for w in model.encoder.weights if "lora_" not in w.path])
    assert np.max(np.abs(outputs(fresh, batch)["logits"] - expected["logits"])) > 1e-4
    fresh.load_lora_weights(path)
    assert fresh.encoder.encoder_blocks[0].qkv_dense.lora_targets == ("query", "value")
    assert_all_close(outputs(fresh, batch), expected, atol=1e-6)


def test_bad_settings_and_mismatched_files_name_the_difference(tmp_path):
    model = classifier()
    with pytest.raises(ValueError, match="rank=0"):
        model.enable_lora(0)
    with pytest.raises(ValueError, match="'output'"):
        model.enable_lora(RANK, targets=("query", "output"))
    with pytest.raises(ValueError, match="alpha=-1"):
        model.enable_lora(RANK, alpha=-1)
    with pytest.raises(ValueError, match="no LoRA adapters"):
        model.save_lora_weights(str(tmp_path / "none.lora.h5"))
    model.enable_lora(RANK)
    with pytest.raises(ValueError, match="already enabled"):
        model.enable_lora(RANK)
    path = str(tmp_path / "r2.lora.h5")
    model.save_lora_weights(path)

    other_rank = classifier()
    other_rank.enable_lora(4)
    with pytest.raises(ValueError, match="rank=2.*rank=4"):
        other_rank.load_lora_weights(path)
    other_targets = classifier()
    other_targets.enable_lora(RANK, targets=("query",))
    with pytest.raises(ValueError, match="targets"):
        other_targets.load_lora_weights(path)
    with pytest.raises(ValueError, match=r"'logits/kernel' has shape \(16, 3\).*\(16, 5\)"):
        classifier(num_classes=5).load_lora_weights(path)
    wider = classifier(hidden_size=8, num_heads=2)
    with pytest.raises(ValueError, match="hidden_size=16.*hidden_size=8"):
        wider.load_lora_weights(path)
    with pytest.raises(FileNotFoundError, match="missing.lora.h5"):
        model.load_lora_weights(str(tmp_path / "missing.lora.h5"))
    not_h5 = tmp_path / "notes.lora.h5"
    not_h5.write_text("hello")
    with pytest.raises(ValueError, match="not an h5 file"):
        model.load_lora_weights(str(not_h5))


def test_lora_dense_adapts_its_named_parts_only():
    layer = LoraDense(6, parts=("query", "key", "value"))
    layer.build((None, 4))
    with pytest.raises(ValueError, match="divide units=6"):
        LoraDense(6, parts=("a", "b", "c", "d"))
    x = np.random.default_rng(0).normal(size=(3, 4)).astype("float32")
    plain = to_numpy(layer(x))
    layer.enable_lora(1, targets=("key",))
    layer._adapters["key"][1].assign(np.ones((1, 2), "float32"))
    out = to_numpy(layer(x))
    np.testing.assert_array_equal(out[:, [0, 1, 4, 5]], plain[:, [0, 1, 4, 5]])
    assert np.max(np.abs(out[:, 2:4] - plain[:, 2:4])) > 1e-3
    np.testing.assert_allclose(x @ layer.merged_kernel() + layer.bias.numpy(), out, atol=1e-5)
    with pytest.raises(ValueError, match="activation='relu'"):
        relu = LoraDense(4, activation="relu")
        relu.build((None, 4))
        relu.enable_lora(1)


def test_mixed_precision_keeps_float32_adapters(batch):
    keras.utils.set_random_seed(0)
    encoder = BertEncoder(**tiny_config().to_dict(), dtype="mixed_bfloat16")
    encoder.enable_lora(RANK)
    adapters = [w for w in encoder.weights if "lora_" in w.path]
    assert adapters and {w.dtype for w in adapters} == {"float32"}
    out = encoder(batch)["sequence_output"]
    assert keras.backend.standardize_dtype(out.dtype) == "bfloat16"


def test_finetune_options_check_lora_rank():
    with pytest.raises(ValueError, match="lora_rank=-1"):
        FinetuneOptions(lora_rank=-1)
    with pytest.raises(ValueError, match="freeze_layers"):
        FinetuneOptions(lora_rank=4, freeze_layers=1)


# === Slow: whole paths (model directories, exports, XLA on two devices, the tool) ===


@pytest.mark.slow
def test_save_pretrained_and_export_hold_merged_weights(tiny_model_dir, tmp_path):
    keras.utils.set_random_seed(0)  # The new head's weights: the difference below is not luck.
    model = BertClassifier.from_pretrained(tiny_model_dir, num_classes=3)
    model.enable_lora(RANK)
    move_adapters(model, scale=2.0)
    texts = ["the fox", "a dog jumped over", ""]
    expected = model.predict(texts, verbose=0)
    plain = BertClassifier.from_pretrained(tiny_model_dir, num_classes=3)
    plain.set_weights([w.numpy() for w in model.weights if "lora_" not in w.path])
    assert np.max(np.abs(plain.predict(texts, verbose=0) - expected)) > 1e-4

    out = str(tmp_path / "sentiment")
    model.save_pretrained(out)
    assert os.path.isfile(os.path.join(out, LORA_FILE))
    loaded = BertClassifier.from_pretrained(out)
    assert not loaded.lora_enabled
    np.testing.assert_allclose(loaded.predict(texts, verbose=0), expected, atol=1e-5)

    export_dir = export_model(model, str(tmp_path / "exports" / "sentiment"))
    names = [name for name, _ in tf.train.list_variables(
        os.path.join(export_dir, "variables", "variables"))]
    assert not [n for n in names if "lora" in n]
    serve = tf.saved_model.load(export_dir).signatures["serving_default"]
    probabilities = serve(text=tf.constant(texts))["probabilities"].numpy()
    np.testing.assert_allclose(probabilities, tf.nn.softmax(expected).numpy(), atol=1e-5)


# Trains a LoRA classifier with XLA on one device, mirrored over two logical
# CPUs, and in mixed_bfloat16; prints one JSON line. A process of its own: the
# logical devices must be set before TensorFlow starts.
_WORKER = r"""
import json, sys
import tensorflow as tf
cpu = tf.config.list_physical_devices("CPU")[0]
tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
sys.path.insert(0, sys.argv[1])
import keras, numpy as np
from tests.models.test_lora import classifier, move_adapters

ids = np.array([[2, 5, 7, 9, 3, 0], [2, 11, 12, 3, 13, 3], [2, 8, 3, 0, 0, 0], [2, 6, 6, 3, 0, 0]],
               "int32")
x = {"token_ids": ids, "segment_ids": 0 * ids, "padding_mask": (ids > 0).astype("int32")}
y = np.array([0, 2, 1, 2])
result = {}
for name, dtype in (("one", None), ("mirrored", None), ("one_bf16", "mixed_bfloat16")):
    strategy = (tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"]) if name == "mirrored"
                else tf.distribute.get_strategy())
    with strategy.scope():
        model = classifier(dtype=dtype)
        model.enable_lora(2)
        move_adapters(model)  # nonzero B: A gets gradients too, of a measurable size
        model.compile(optimizer=keras.optimizers.SGD(0.5), jit_compile=True,
                      loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    frozen = {w.path: w.numpy().copy() for w in model.weights
              if not any(w is t for t in model.trainable_weights)}
    start = {w.path: w.numpy().copy() for w in model.trainable_weights}
    history = model.fit(x, y, batch_size=4, epochs=2, shuffle=False, verbose=0)
    result[name] = {
        "losses": [float(v) for v in history.history["loss"]],
        "frozen_changed": [p for p, v in frozen.items()
                           if not np.array_equal(v, next(w for w in model.weights
                                                         if w.path == p).numpy())],
        "trainable": {w.path: w.numpy().tolist() for w in model.trainable_weights},
        "moved": {w.path: float(np.abs(w.numpy() - start[w.path]).max())
                  for w in model.trainable_weights},
        "replicas": strategy.num_replicas_in_sync,
    }
print(json.dumps(result))
"""


@pytest.mark.slow
def test_lora_trains_under_xla_on_two_devices_and_in_mixed_precision():
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    done = subprocess.run([sys.executable, "-c", _WORKER, root], capture_output=True,
                          text=True, timeout=600, env={**os.environ, "PYTHONPATH": root})
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    one, mirrored, bf16 = result["one"], result["mirrored"], result["one_bf16"]
    assert mirrored["replicas"] == 2
    for run in (one, mirrored, bf16):
        assert run["frozen_changed"] == []  # only the adapters and the head train
        assert all(np.isfinite(run["losses"])) and run["losses"][-1] < run["losses"][0]
        assert run["moved"]["encoder_block_0/qkv_dense/lora_a_value"] > 1e-5
        assert run["moved"]["logits/kernel"] > 1e-4
    assert sorted(one["trainable"]) == sorted(mirrored["trainable"])
    for path, value in one["trainable"].items():
        # float32: the replicas' gradient sum differs from one device's in rounding only.
        np.testing.assert_allclose(mirrored["trainable"][path], value, rtol=1e-4, atol=1e-6,
                                   err_msg=path)


@pytest.mark.slow
def test_finetune_tool_lora_rank_changes_only_low_rank_query_value(tiny_model_dir, tmp_path):
    root = tmp_path / "data"
    root.mkdir()
    write_sentiment_splits(root, 24, 8, model_dir=tiny_model_dir)
    output = tmp_path / "out"
    code, out, err = run_tool(
        "finetune", "--jit-compile", "off", "--task", "classification", "--model",
        root / "tiny", "--train", root / "train.csv", "--eval", root / "dev.csv", "--output",
        output, "--epochs", "2", "--batch-size", "8", "--max-seq-length", "16",
        "--early-stopping-patience", "0", "--learning-rate", "1e-2", "--lora-rank", RANK)
    assert code == 0, err
    assert os.path.isfile(output / LORA_FILE)
    base = BertEncoder.from_pretrained(str(tiny_model_dir))
    tuned = BertClassifier.from_pretrained(str(output))
    hidden = base.hidden_size
    for before, after in zip(base.weights, tuned.encoder.weights):
        assert before.path == after.path
        delta = after.numpy() - before.numpy()
        if not before.path.endswith("qkv_dense/kernel"):
            np.testing.assert_array_equal(delta, 0, err_msg=before.path)  # frozen
            continue
        query, key, value = np.split(delta, 3, axis=1)
        np.testing.assert_array_equal(key, 0)
        for part in (query, value):  # a rank-RANK update, and a real one
            assert np.linalg.matrix_rank(part, tol=1e-7) == RANK <= hidden
    # The base model plus the adapter file (adapters and head) is the tuned model.
    again = BertClassifier.from_pretrained(str(tiny_model_dir), num_classes=len(
        tuned.label_names))
    again.load_lora_weights(str(output / LORA_FILE))
    texts = ["good movie", "awful film"]
    np.testing.assert_allclose(again.predict(texts, verbose=0), tuned.predict(texts, verbose=0),
                               atol=1e-5)


def test_a_lora_model_dir_is_replaced_by_the_next_save(tiny_model_dir, tmp_path):
    # save_pretrained writes model.lora.h5 beside the merged weights; a second
    # save (a rerun of the tool, a later epoch) must recognize it as its own.
    model = BertClassifier.from_pretrained(tiny_model_dir, num_classes=3)
    model.enable_lora(RANK)
    out = str(tmp_path / "sentiment")
    model.save_pretrained(out)
    move_adapters(model)
    model.save_pretrained(out)
    reloaded = BertClassifier.from_pretrained(tiny_model_dir, num_classes=3)
    reloaded.load_lora_weights(os.path.join(out, LORA_FILE))
    texts = ["the fox", "a dog jumped over"]
    np.testing.assert_allclose(reloaded.predict(texts, verbose=0),
                               model.predict(texts, verbose=0), atol=1e-5)
    (tmp_path / "sentiment" / "notes.txt").write_text("mine")
    with pytest.raises(ValueError, match="notes.txt, which keras_bert did not write"):
        model.save_pretrained(out)


def test_adapters_refuse_a_model_they_do_not_fit(tiny_model_dir, tmp_path):
    # Issue 46: each of these loaded without a word (flipped, doubled or NaN predictions).
    import h5py

    names = ["neg", "neu", "pos"]
    model = BertClassifier.from_pretrained(tiny_model_dir, num_classes=3, label_names=names)
    model.enable_lora(RANK)
    move_adapters(model)
    out = str(tmp_path / "sentiment")
    model.save_pretrained(out)
    path = os.path.join(out, LORA_FILE)

    def refused(target, match, file=path):
        with pytest.raises(ValueError, match=match) as caught:
            target.load_lora_weights(file)
        assert file in str(caught.value)
        assert not target.lora_enabled  # Refused before anything changed.

    flipped = BertClassifier.from_pretrained(tiny_model_dir, num_classes=3,
                                             label_names=names[::-1])
    refused(flipped, r"head trained for label_names=\['neg', 'neu', 'pos'\]; this model's "
                     r"are \['pos', 'neu', 'neg'\]")
    merged = BertClassifier.from_pretrained(out)
    refused(merged, "already hold these adapters, merged")
    other_base = BertClassifier.from_pretrained(tiny_model_dir, num_classes=3, label_names=names)
    other_base.encoder.weights[0].assign(other_base.encoder.weights[0] * 1.01)
    refused(other_base, "trained on other encoder weights")
    damaged = str(tmp_path / "nan.lora.h5")
    with open(path, "rb") as f, open(damaged, "wb") as g:
        g.write(f.read())
    with h5py.File(damaged, "a") as f:
        block = model.encoder.encoder_blocks[0].name
        f[f"{block}/value/B"][0, 0] = np.nan
    base = BertClassifier.from_pretrained(tiny_model_dir, num_classes=3, label_names=names)
    refused(base, f"{block}/value/B holds NaN or infinite values", file=damaged)
    # The fitting base takes them and answers as the trained model.
    base.load_lora_weights(path)
    texts = ["the fox", "a dog jumped over"]
    np.testing.assert_allclose(base.predict(texts, verbose=0), model.predict(texts, verbose=0),
                               atol=1e-6)
