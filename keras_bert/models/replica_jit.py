"""XLA under a multi-device tf.distribute strategy in `fit`/`evaluate`/`predict`.

Keras 3 XLA-compiles a step as one program around `strategy.run`, which fails
with several devices (`CollectiveGatherV2` has no XLA kernel: tf-keras#99,
keras#18110). `ReplicaJitCompile` compiles each replica's forward and backward
pass on its own device, and runs the all-reduce and the optimizer update
outside XLA, as `keras_bert.training.Trainer` does.
"""

import keras
import tensorflow as tf


class ReplicaJitCompile:
    """Mixin for a `keras.Model`: per-replica XLA under a multi-device strategy.

    After `compile(jit_compile=True)` inside a strategy's scope with several
    replicas, `replica_jit_compile` is True and Keras' `jit_compile` False.

    Example:
    >>> with tf.distribute.MirroredStrategy().scope():
    ...     model = BertClassifier.from_pretrained("models/minilm", num_classes=2)
    ...     model.compile(optimizer="adam", loss=..., jit_compile=True)
    >>> model.replica_jit_compile   # with 2 GPUs
    True
    >>> model.fit(["great", "awful"], [1, 0])
    """

    def compile(self, *args, jit_compile="auto", **kwargs):
        replicas = self.distribute_strategy.num_replicas_in_sync
        per_replica = jit_compile is True and replicas > 1
        super().compile(*args, jit_compile=False if per_replica else jit_compile, **kwargs)
        # object.__setattr__: plain Python state, not tracked by Keras.
        object.__setattr__(self, "replica_jit_compile", per_replica)
        object.__setattr__(self, "_replica_functions", {})

    def _replica_function(self, name, python_function):
        """`python_function` as an XLA-compiled tf.function, built once per model."""
        functions = self._replica_functions
        if name not in functions:
            functions[name] = tf.function(python_function, jit_compile=True, autograph=False)
        return functions[name]

    def _forward_backward(self, x, y, sample_weight):
        """One replica's loss and gradients (traced into one XLA program)."""
        with tf.GradientTape() as tape:
            y_pred = self(x, training=True)
            loss = self._compute_loss(x=x, y=y, y_pred=y_pred, sample_weight=sample_weight,
                                      training=True)
            scaled = self.optimizer.scale_loss(loss)
        return y_pred, loss, tape.gradient(scaled, self.trainable_weights)

    def _track_loss(self, loss, x):
        # Keras divides a replica's loss by the replica count (gradients are
        # summed over replicas); the reported loss is the undivided one.
        replicas = self.distribute_strategy.num_replicas_in_sync
        batch = tf.shape(next(t for t in tf.nest.flatten(x) if t is not None))[0]
        self._loss_tracker.update_state(loss * tf.cast(replicas, loss.dtype),
                                        sample_weight=batch)

    def train_step(self, data):
        if not getattr(self, "replica_jit_compile", False):
            return super().train_step(data)
        x, y, sample_weight = keras.utils.unpack_x_y_sample_weight(data)
        y_pred, loss, gradients = self._replica_function("train", self._forward_backward)(
            x, y, sample_weight)
        self._track_loss(loss, x)
        # Outside XLA: the cross-replica sum of dense and IndexedSlices
        # gradients (the token embedding's), then the update.
        self.optimizer.apply_gradients(zip(gradients, self.trainable_weights))
        return self.compute_metrics(x, y, y_pred, sample_weight=sample_weight)

    def _forward(self, x):
        return self(x, training=False)

    def test_step(self, data):
        if not getattr(self, "replica_jit_compile", False):
            return super().test_step(data)
        x, y, sample_weight = keras.utils.unpack_x_y_sample_weight(data)
        y_pred = self._replica_function("forward", self._forward)(x)
        loss = self._compute_loss(x=x, y=y, y_pred=y_pred, sample_weight=sample_weight,
                                  training=False)
        self._track_loss(loss, x)
        return self.compute_metrics(x, y, y_pred, sample_weight=sample_weight)

    def predict_step(self, data):
        if not getattr(self, "replica_jit_compile", False):
            return super().predict_step(data)
        x, _, _ = keras.utils.unpack_x_y_sample_weight(data)
        return self._replica_function("forward", self._forward)(x)
