"""Pooler: dense + tanh over the [CLS] position."""

import keras

from keras_bert.layers.activations import get_activation, initializer


@keras.saving.register_keras_serializable(package="keras_bert")
class Pooler(keras.layers.Layer):
    """BERT's pooled output: tanh(W h_[CLS] + b).

    Args:
        initializer_range: float, stddev of the truncated normal initializer.
        activation: "tanh" (BERT), or a `hidden_act` name ("relu", "gelu"): the
            dense on [CLS] of DistilBERT's and ELECTRA's sequence classifiers.

    Call arguments:
        sequence_output: float Tensor of shape [batch_size, seq_length, hidden_size].

    Returns:
        Float Tensor of shape [batch_size, hidden_size].

    Example:
    >>> Pooler()(np.zeros((2, 5, 8))).shape
    (2, 8)
    """

    def __init__(self, initializer_range=0.02, activation="tanh", **kwargs):
        super().__init__(**kwargs)
        if activation != "tanh":
            get_activation(activation)  # Raises naming the choices.
        self.initializer_range = initializer_range
        self.activation = activation

    def build(self, input_shape):
        self.dense = keras.layers.Dense(
            input_shape[-1],
            activation="tanh" if self.activation == "tanh" else get_activation(self.activation),
            kernel_initializer=initializer(self.initializer_range),
            dtype=self.dtype_policy,
            name="dense",
        )
        self.dense.build((None, input_shape[-1]))
        self.built = True

    def call(self, sequence_output):
        return self.dense(sequence_output[:, 0])

    def compute_output_spec(self, sequence_output):
        # What `call` returns, without tracing it (build() makes every weight).
        return keras.KerasTensor((sequence_output.shape[0], sequence_output.shape[-1]),
                                 dtype=self.compute_dtype)

    def get_config(self):
        config = super().get_config()
        config.update(initializer_range=self.initializer_range, activation=self.activation)
        return config
