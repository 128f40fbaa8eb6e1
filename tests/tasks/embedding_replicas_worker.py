"""MultipleNegativesRankingLoss on 2 logical CPU devices against one device.

Run by tests/tasks/test_embedding_replicas.py in its own process (the logical
devices must be set before TensorFlow starts). Prints one JSON line: the loss
and gradient of one device (a batch of 8 pairs) and of MirroredStrategy (4
pairs a replica), eager and XLA-compiled per replica, and of the two halves
alone on one device (what a replica that does not gather computes).
"""

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

cpu = tf.config.list_physical_devices("CPU")[0]
tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)

from keras_bert.tasks.text_embedding.losses import MultipleNegativesRankingLoss  # noqa: E402

rng = np.random.default_rng(0)
# 8 pairs with one hard negative each: (anchor, positive, negative) inputs and text keys.
inputs = rng.normal(size=(8, 3 * 5)).astype("float32")
keys = rng.integers(1, 1000, size=(8, 3)).astype("float32")
keys[5, 1] = keys[2, 1]  # One repeated positive text: a false negative left out.
loss_fn = MultipleNegativesRankingLoss()


def loss_and_gradient(weights, x, y):
    with tf.GradientTape() as tape:
        embeddings = tf.concat([x[:, 5 * i:5 * (i + 1)] @ weights for i in range(3)], -1)
        loss = tf.reduce_mean(loss_fn.call(y, embeddings))
        context = tf.distribute.get_replica_context()
        scaled = loss / context.num_replicas_in_sync
    return loss, tape.gradient(scaled, weights)


result = {}
weights = tf.Variable(rng.normal(size=(5, 4)).astype("float32"))
loss, grad = loss_and_gradient(weights, tf.constant(inputs), tf.constant(keys))
result["one"] = {"loss": float(loss), "gradient": grad.numpy().tolist()}
# What each replica computed before it gathered: only its own 4 pairs' candidates.
halves = [loss_and_gradient(weights, tf.constant(inputs[i:i + 4]), tf.constant(keys[i:i + 4]))
          for i in (0, 4)]
result["halves"] = {"loss": float(sum(h[0] for h in halves) / 2),
                    "gradient": (sum(h[1] for h in halves) / 2).numpy().tolist()}

strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
with strategy.scope():
    mirrored = tf.Variable(weights.numpy())
for name, jit in (("mirrored", False), ("mirrored_xla", True)):
    replica_fn = tf.function(loss_and_gradient, jit_compile=True) if jit else loss_and_gradient

    @tf.function
    def step():
        def fn():
            first = 4 * tf.distribute.get_replica_context().replica_id_in_sync_group
            return replica_fn(mirrored, tf.constant(inputs)[first:first + 4],
                              tf.constant(keys)[first:first + 4])

        losses, grads = strategy.run(fn)
        return (strategy.reduce("MEAN", losses, axis=None),
                strategy.reduce("SUM", grads, axis=None))

    try:
        loss, grad = step()
        result[name] = {"loss": float(loss), "gradient": grad.numpy().tolist()}
    except Exception as error:  # Reported, not raised: the test says what failed.
        result[name] = {"error": f"{type(error).__name__}: {str(error)[-700:]}"}
print(json.dumps(result))
