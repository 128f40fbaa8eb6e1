"""Trains on one device and on 2 logical CPU devices (MirroredStrategy, XLA); dumps both.

Run by tests/training/test_multi_device_xla.py as a script, one process per
test: `tf.config.set_logical_device_configuration` must run before
TensorFlow initializes its devices. In that process "one device" is the
default strategy (everything on /cpu:0) and "mirrored" is MirroredStrategy
over /cpu:0 and /cpu:1; both runs start from the same seed and data.

Usage: python multi_device_worker.py '{"path": "pretrain" | "finetune" | "fit",
                                        "dtype": "float32" | "mixed_bfloat16",
                                        "out": DIR, ...}'
Writes DIR/{one,mirrored}/result.npz (weights) and result.json (losses,
metrics, replicas, and the kinds of the embedding tables' gradients that
reached the optimizer).
"""

import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, ROOT)

# {embedding table: kinds of gradient ("IndexedSlices", "SymbolicTensor")}
# that the optimizer was given, recorded when the step is traced.
EMBEDDING_GRADIENTS = {}


def _record_embedding_gradient(grads, variables):
    for grad, variable in zip(grads, variables):
        table = variable.path.rsplit("/", 1)[-1]
        if table in ("token_embeddings", "segment_embeddings"):
            EMBEDDING_GRADIENTS.setdefault(table, set()).add(type(grad).__name__)


def _patch_bert_optimizers():
    """Records what keras_bert's optimizers receive (before they make it dense)."""
    from keras_bert.training import optimizers

    apply = optimizers._BertOptimizerMixin.apply

    def recording_apply(self, grads, trainable_variables=None):
        grads = list(grads)
        _record_embedding_gradient(grads, trainable_variables or self._trainable_variables)
        return apply(self, grads, trainable_variables)

    optimizers._BertOptimizerMixin.apply = recording_apply


def run_pretrain(settings, strategy, out):
    from keras_bert.config import BertConfig
    from keras_bert.training import PretrainingConfig, run_pretraining
    import keras

    losses = []

    class Record(keras.callbacks.Callback):
        def on_train_batch_end(self, batch, logs=None):
            losses.append(float(logs["loss"]))

    config = PretrainingConfig(
        num_train_steps=4, batch_size=8, learning_rate=1e-2, warmup_steps=0,
        global_clipnorm=1.0, log_every=1, checkpoint_every=100, shuffle_buffer_size=1,
        seed=2, dtype=settings["dtype"], jit_compile="on")
    result = run_pretraining(settings["data_dir"], os.path.join(out, "run"), config,
                             bert_config=BertConfig.from_dict(settings["bert_config"]),
                             strategy=strategy, callbacks=[Record()], verbose=0,
                             tensorboard=False)
    model = result["model"]
    return model.get_weights(), {"losses": losses}, model.distribute_strategy


def run_finetune(settings, strategy, out):
    """tools/finetune.py's main, with --strategy naming the run's strategy."""
    import importlib.util

    from keras_bert.models import load_model_dir, BertEncoder

    spec = importlib.util.spec_from_file_location("finetune_tool",
                                                  os.path.join(ROOT, "tools", "finetune.py"))
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    output = os.path.join(out, "model")
    tool.main([
        "--task", "classification", "--model", settings["model_dir"],
        "--train", settings["train"], "--eval", settings["dev"], "--output", output,
        "--epochs", "1", "--batch-size", "8", "--learning-rate", "1e-2",
        "--warmup-fraction", "0", "--dropout-rate", "0", "--log-every", "1",
        "--max-seq-length", "32", "--dtype", settings["dtype"], "--jit-compile", "on",
        "--strategy", strategy,
    ])
    with open(os.path.join(output, "task.json"), encoding="utf-8") as f:
        metrics = json.load(f).get("eval_metrics", {})
    model = load_model_dir(output, BertEncoder)
    return model.get_weights(), {"metrics": metrics}, None


def run_fit(settings, strategy, out):
    """BertClassifier.fit / evaluate / predict on raw strings, jit_compile=True."""
    import keras
    import numpy as np

    from keras_bert.tasks import BertClassifier
    from tests.training.finetune_fixtures import sentiment_rows

    # SGD: unlike Adam, its step is proportional to the gradient, so a
    # wrong cross-replica sum (a missing or doubled half) would show.
    class RecordingSGD(keras.optimizers.SGD):
        def apply_gradients(self, grads_and_vars):
            grads_and_vars = list(grads_and_vars)
            _record_embedding_gradient([g for g, _ in grads_and_vars],
                                       [v for _, v in grads_and_vars])
            return super().apply_gradients(grads_and_vars)

    rows = sentiment_rows(32, seed=3)
    # 3 of 4 labels positive: the head's bias has a gradient that does not
    # cancel over a balanced batch, so a few SGD steps move the loss.
    texts, labels = [t for t, _ in rows], np.array([int(i % 4 != 3) for i in range(32)])
    dtype = None if settings["dtype"] == "float32" else settings["dtype"]
    with strategy.scope():
        keras.utils.set_random_seed(0)  # The same head in both runs.
        model = BertClassifier.from_pretrained(settings["model_dir"], num_classes=2,
                                               dropout_rate=0.0, dtype=dtype)
        model.compile(optimizer=RecordingSGD(0.5, momentum=0.9),
                      loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                      metrics=["accuracy"], jit_compile=True)
    initial = model.get_weights()
    history = model.fit(texts, labels, batch_size=8, epochs=2, shuffle=False, verbose=0)
    evaluation = model.evaluate(texts[:16], labels[:16], batch_size=8, return_dict=True,
                                verbose=0)
    logits = model.predict(texts[:16], batch_size=8, verbose=0)
    np.save(os.path.join(out, "logits.npy"), np.asarray(logits, np.float32))
    return model.get_weights(), {
        "losses": [float(x) for x in history.history["loss"]],
        "evaluate": {k: float(v) for k, v in evaluation.items()},
        "replica_jit_compile": bool(getattr(model, "replica_jit_compile", False)),
        "keras_jit_compile": bool(model.jit_compile),
        "moved": max(float(np.max(np.abs(np.asarray(w, np.float32) - np.asarray(w0, np.float32))))
                     for w, w0 in zip(model.get_weights(), initial)),
    }, model.distribute_strategy


RUNS = {"pretrain": run_pretrain, "finetune": run_finetune, "fit": run_fit}


def main():
    settings = json.loads(sys.argv[1])
    import tensorflow as tf

    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(
        cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
    import numpy as np

    _patch_bert_optimizers()
    for name in ("one", "mirrored"):
        out = os.path.join(settings["out"], name)
        os.makedirs(out, exist_ok=True)
        EMBEDDING_GRADIENTS.clear()
        if settings["path"] == "finetune":
            # tools/finetune.py resolves --strategy itself: "auto" is one device here.
            strategy = "auto" if name == "one" else "mirrored"
            replicas = 1 if name == "one" else 2
        else:
            strategy = (tf.distribute.get_strategy() if name == "one"
                        else tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"]))
            replicas = strategy.num_replicas_in_sync
        weights, record, _ = RUNS[settings["path"]](settings, strategy, out)
        record["replicas"] = replicas
        record["embedding_gradients"] = {k: sorted(v) for k, v in EMBEDDING_GRADIENTS.items()}
        np.savez(os.path.join(out, "result.npz"), *[np.asarray(w, np.float32) for w in weights])
        with open(os.path.join(out, "result.json"), "w", encoding="utf-8") as f:
            json.dump(record, f)


if __name__ == "__main__":
    main()
