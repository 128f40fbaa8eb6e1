"""NextSentenceHead: IsNext / NotNext logits from the pooled output."""

import keras
from keras import ops

from keras_bert.layers.activations import initializer


@keras.saving.register_keras_serializable(package="keras_bert")
class NextSentenceHead(keras.layers.Layer):
    """Two-way classifier for BERT's next-sentence prediction.

    Label 0 means "B is the real next segment", 1 means "B is random", as in
    google-research/bert.

    Args:
        initializer_range: float, stddev of the truncated normal initializer.

    Call arguments:
        pooled_output: float Tensor of shape [batch_size, hidden_size].

    Returns:
        float32 Tensor of shape [batch_size, 2] of logits.

    Example:
    >>> NextSentenceHead()(np.zeros((3, 8))).shape
    (3, 2)
    """

    def __init__(self, initializer_range=0.02, **kwargs):
        super().__init__(**kwargs)
        self.initializer_range = initializer_range

    def build(self, input_shape):
        self.dense = keras.layers.Dense(
            2,
            kernel_initializer=initializer(self.initializer_range),
            dtype=self.dtype_policy,
            name="dense",
        )
        self.dense.build(input_shape)
        self.built = True

    def call(self, pooled_output):
        return ops.cast(self.dense(pooled_output), "float32")

    def get_config(self):
        config = super().get_config()
        config.update(initializer_range=self.initializer_range)
        return config
