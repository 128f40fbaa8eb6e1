"""Trains a tiny BertPretrainer a few steps and dumps its weights and losses.

Run by tests/training/test_distribute.py as a script, once per worker
(TF_CONFIG set by the test) or with two logical CPU devices; the test also
imports `train_and_dump` for the single-process reference run.

Usage: python distributed_worker.py '{"out": ..., "data_dir": ..., "strategy": ...}'
"""

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

STEPS = 5


def train_and_dump(settings, strategy=None):
    import keras
    import numpy as np

    from keras_bert.config import BertConfig
    from keras_bert.training import PretrainingConfig, run_pretraining, worker_info

    losses = []

    class Record(keras.callbacks.Callback):
        def on_train_batch_end(self, batch, logs=None):
            losses.append(logs["loss"])

    bert_config = BertConfig.from_dict(settings["bert_config"])
    config = PretrainingConfig(
        num_train_steps=STEPS, batch_size=16, learning_rate=1e-2, warmup_steps=0,
        # Small enough that clipping is active on every step.
        global_clipnorm=0.1, log_every=1, checkpoint_every=100,
        shuffle_buffer_size=1, seed=2, jit_compile=settings.get("jit_compile", "auto"))
    result = run_pretraining(settings["data_dir"], os.path.join(settings["out"], "run"),
                             config, bert_config=bert_config, strategy=strategy,
                             callbacks=[Record()], verbose=0, tensorboard=False)
    task_id, _, _ = worker_info(strategy or __import__("tensorflow").distribute.get_strategy())
    weights = [np.asarray(w) for w in result["model"].get_weights()]
    np.savez(os.path.join(settings["out"], f"weights-{task_id}.npz"), *weights)
    with open(os.path.join(settings["out"], f"losses-{task_id}.json"), "w") as f:
        json.dump({"losses": losses, "replicas": result["model"].distribute_strategy
                   .num_replicas_in_sync}, f)


def main():
    settings = json.loads(sys.argv[1])
    import tensorflow as tf

    if settings.get("logical_cpus"):
        cpu = tf.config.list_physical_devices("CPU")[0]
        tf.config.set_logical_device_configuration(
            cpu, [tf.config.LogicalDeviceConfiguration()] * settings["logical_cpus"])
    from keras_bert.training import resolve_strategy

    strategy = resolve_strategy(settings["strategy"])
    train_and_dump(settings, strategy)


if __name__ == "__main__":
    main()
