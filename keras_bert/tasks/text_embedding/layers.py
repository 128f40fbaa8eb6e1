"""The embedder's math: pooling over real tokens and L2 normalization (keras.ops only)."""

import keras
from keras import ops

#: The pooling modes of `EmbeddingPooling` (sentence-transformers' names:
#: pooling_mode_mean_tokens, pooling_mode_cls_token, pooling_mode_max_tokens).
POOLING_MODES = ("mean", "cls", "max")


def check_pooling(pooling):
    if pooling not in POOLING_MODES:
        raise ValueError(f"Expected pooling to be one of {POOLING_MODES}. "
                         f"Received: pooling={pooling!r}")
    return pooling


@keras.saving.register_keras_serializable(package="keras_bert")
class EmbeddingPooling(keras.layers.Layer):
    """One vector per text from the encoder's sequence output, over its real tokens.

    Args:
        pooling: "mean" (the mean over tokens whose padding_mask is 1,
            [CLS] and [SEP] included, as sentence-transformers averages),
            "cls" (the [CLS] position's vector, not the tanh pooler) or
            "max" (the per-feature maximum over real tokens).

    Call arguments:
        sequence_output: float Tensor [batch_size, seq_length, hidden_size].
        padding_mask: int or bool Tensor [batch_size, seq_length], 1 = real token.

    Returns:
        float32 Tensor [batch_size, hidden_size].
    """

    def __init__(self, pooling="mean", **kwargs):
        super().__init__(**kwargs)
        self.pooling = check_pooling(pooling)

    def call(self, sequence_output, padding_mask):
        x = ops.cast(sequence_output, "float32")  # (B, S, H)
        if self.pooling == "cls":
            return x[:, 0, :]
        # expand_dims, not [:, :, None]: LiteRT has no strided slice with new axes.
        mask = ops.expand_dims(ops.cast(padding_mask, "float32"), -1)  # (B, S, 1)
        if self.pooling == "max":
            # Padding never wins: it is pushed to the float32 minimum first.
            return ops.max(ops.where(mask > 0, x, -3.4e38), axis=1)
        # A packed row has [CLS] and [SEP]; the floor only guards an all-padding row.
        count = ops.maximum(ops.sum(mask, axis=1), 1e-9)  # (B, 1)
        return ops.sum(x * mask, axis=1) / count

    def compute_output_shape(self, sequence_output_shape, padding_mask_shape=None):
        return (sequence_output_shape[0], sequence_output_shape[-1])

    def get_config(self):
        return {**super().get_config(), "pooling": self.pooling}


@keras.saving.register_keras_serializable(package="keras_bert")
class L2Normalize(keras.layers.Layer):
    """x / max(||x||_2, 1e-12) along the last axis (torch's F.normalize, which
    sentence-transformers' Normalize module applies).

    Call arguments:
        x: float Tensor [batch_size, dim].

    Returns:
        float32 Tensor [batch_size, dim] of unit rows (a zero row stays zero).
    """

    def call(self, x):
        x = ops.cast(x, "float32")
        norm = ops.sqrt(ops.sum(ops.square(x), axis=-1, keepdims=True))  # (B, 1)
        return x / ops.maximum(norm, 1e-12)

    def compute_output_shape(self, shape):
        return shape
