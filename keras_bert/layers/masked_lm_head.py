"""MaskedLMHead: predicts the original tokens at the masked positions."""

import keras
import tensorflow as tf
from keras import ops

from keras_bert.config import check_count
from keras_bert.layers.activations import get_activation, initializer


@keras.saving.register_keras_serializable(package="keras_bert")
class MaskedLMHead(keras.layers.Layer):
    """BERT's masked-LM head, evaluated only at the positions it is given.

    logits = LayerNorm(act(W h + b)) E^T + output_bias, where E is the token
    embedding matrix of `embeddings` (weights tied, one variable) or, when no
    embeddings layer is given, an own [hidden_size, vocab_size] matrix.
    Gathering the masked positions first means the [hidden, vocab] projection
    runs over max_predictions_per_seq rows instead of the whole sequence.

    Args:
        vocab_size: int, number of output classes.
        hidden_act: "gelu", "gelu_approx" or "relu" for the transform.
        initializer_range: float, stddev of the truncated normal initializer.
        layer_norm_epsilon: float, LayerNorm epsilon.
        embeddings: a `BertEmbeddings` layer whose `token_embeddings` variable
            is reused as the output projection, or None.

    Call arguments:
        sequence_output: float Tensor of shape [batch_size, seq_length, hidden_size].
        masked_positions: int Tensor of shape [batch_size, num_predictions].

    Returns:
        float32 Tensor of shape [batch_size, num_predictions, vocab_size] of logits.

    Example:
    >>> head = MaskedLMHead(vocab_size=100)
    >>> head(np.zeros((2, 6, 8)), np.array([[1, 2], [3, 0]])).shape
    (2, 2, 100)
    """

    def __init__(
        self,
        vocab_size,
        hidden_act="gelu",
        initializer_range=0.02,
        layer_norm_epsilon=1e-12,
        embeddings=None,
        **kwargs,
    ):
        super().__init__(**kwargs)
        check_count("vocab_size", vocab_size)
        get_activation(hidden_act)
        if embeddings is not None and getattr(embeddings, "vocab_size", vocab_size) != vocab_size:
            raise ValueError(
                f"The tied embeddings have vocab_size={embeddings.vocab_size}, "
                f"but MaskedLMHead got vocab_size={vocab_size}. Use the same vocabulary."
            )
        self.vocab_size = vocab_size
        self.hidden_act = hidden_act
        self.initializer_range = initializer_range
        self.layer_norm_epsilon = layer_norm_epsilon
        self.embeddings = embeddings

    def build(self, sequence_output_shape):
        hidden_size = sequence_output_shape[-1]
        # Tied to narrower tables (ELECTRA's E < H), the transform maps H -> E,
        # as ELECTRA's generator head does; BERT's is H -> H.
        width = hidden_size if self.embeddings is None else self.embeddings.hidden_size
        self.transform_dense = keras.layers.Dense(
            width,
            activation=get_activation(self.hidden_act),
            kernel_initializer=initializer(self.initializer_range),
            dtype=self.dtype_policy,
            name="transform_dense",
        )
        self.transform_dense.build((None, None, hidden_size))
        self.layer_norm = keras.layers.LayerNormalization(
            epsilon=self.layer_norm_epsilon, dtype=self.dtype_policy, name="layer_norm"
        )
        self.layer_norm.build((None, None, width))
        if self.embeddings is None:
            self.output_kernel = self.add_weight(
                name="output_kernel",
                shape=(hidden_size, self.vocab_size),
                initializer=initializer(self.initializer_range),
            )
        self.output_bias = self.add_weight(
            name="output_bias", shape=(self.vocab_size,), initializer="zeros"
        )
        self.built = True

    def call(self, sequence_output, masked_positions):
        positions = ops.cast(masked_positions, "int32")[:, :, None]  # (B, P, 1)
        x = ops.take_along_axis(sequence_output, positions, axis=1)  # (B, P, H)
        x = self.layer_norm(self.transform_dense(x))
        if self.embeddings is None:
            logits = ops.matmul(x, self.output_kernel)
        else:
            table = ops.cast(self.embeddings.token_embeddings, self.compute_dtype)
            # x @ table^T as one 2-D MatMul with transpose_b: its gradient for
            # the [V, H] table comes out in that layout, with no transpose of
            # the largest matrix in the model.
            flat = tf.matmul(ops.reshape(x, (-1, ops.shape(x)[-1])), table, transpose_b=True)
            logits = ops.reshape(flat, (ops.shape(x)[0], ops.shape(x)[1], self.vocab_size))
        logits = logits + ops.cast(self.output_bias, logits.dtype)
        return ops.cast(logits, "float32")

    def compute_output_spec(self, sequence_output, masked_positions):
        # What `call` returns, without tracing it (a functional model calls
        # every layer on symbolic inputs; build() makes every weight).
        return keras.KerasTensor(
            (sequence_output.shape[0], masked_positions.shape[1], self.vocab_size),
            dtype="float32")

    def get_config(self):
        config = super().get_config()
        config.update(
            vocab_size=self.vocab_size,
            hidden_act=self.hidden_act,
            initializer_range=self.initializer_range,
            layer_norm_epsilon=self.layer_norm_epsilon,
            embeddings=(
                None
                if self.embeddings is None
                else keras.saving.serialize_keras_object(self.embeddings)
            ),
        )
        return config

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        if config.get("embeddings") is not None:
            config["embeddings"] = keras.saving.deserialize_keras_object(config["embeddings"])
        return cls(**config)
