"""TransformerEncoderBlock: BERT's post-LayerNorm self-attention + feed-forward block."""

import math

import keras
import tensorflow as tf
from keras import ops

from keras_bert.config import check_count, check_rate
from keras_bert.layers.activations import get_activation, initializer
from keras_bert.layers.dropout import Dropout
from keras_bert.layers.lora import LoraDense

# Added to attention scores of padded keys; exp() of it underflows to exactly 0
# in float32, so padded keys get zero weight.
_MASK_VALUE = -1e9
#: The projections `enable_lora` can adapt: the parts of the fused q/k/v
#: projection, in the order of its output columns.
LORA_TARGETS = ("query", "key", "value")


@keras.saving.register_keras_serializable(package="keras_bert")
class TransformerEncoderBlock(keras.layers.Layer):
    """One BERT encoder layer (Vaswani et al., 2017 with post-LayerNorm).

    h = LayerNorm(x + Dropout(SelfAttention(x)))
    y = LayerNorm(h + Dropout(W2 act(W1 h)))

    Query, key and value come from one fused [H, 3H] projection (`qkv_dense`):
    one large matmul is faster than three small ones; `enable_lora` gives
    each of the three its own low-rank adapter. Attention scores,
    softmax and LayerNorm run in float32 under mixed precision.

    Args:
        num_heads: int, attention heads; must divide the input width.
        intermediate_size: int, width of the feed-forward inner layer.
        hidden_act: "gelu", "gelu_approx" or "relu".
        dropout_rate: float, dropout on the two sub-layer outputs.
        attention_dropout_rate: float, dropout on attention probabilities.
        initializer_range: float, stddev of the truncated normal initializer.
        layer_norm_epsilon: float, LayerNorm epsilon.

    Call arguments:
        x: float Tensor of shape [batch_size, seq_length, hidden_size].
        padding_mask: int or bool Tensor of shape [batch_size, seq_length],
            1 for real tokens, 0 for padding. Padded keys get no attention.
        training: bool, whether dropout is active.
        return_attention_probs: bool, also return the attention probabilities.

    Returns:
        Float Tensor of shape [batch_size, seq_length, hidden_size]; with
        `return_attention_probs`, also a float32 Tensor of shape
        [batch_size, num_heads, seq_length, seq_length].

    Example:
    >>> block = TransformerEncoderBlock(num_heads=2, intermediate_size=32)
    >>> block(np.zeros((1, 4, 8)), padding_mask=np.array([[1, 1, 1, 0]])).shape
    (1, 4, 8)
    """

    def __init__(
        self,
        num_heads,
        intermediate_size,
        hidden_act="gelu",
        dropout_rate=0.1,
        attention_dropout_rate=0.1,
        initializer_range=0.02,
        layer_norm_epsilon=1e-12,
        **kwargs,
    ):
        super().__init__(**kwargs)
        check_count("num_heads", num_heads)
        check_count("intermediate_size", intermediate_size)
        get_activation(hidden_act)
        check_rate("dropout_rate", dropout_rate)
        check_rate("attention_dropout_rate", attention_dropout_rate)
        self.num_heads = num_heads
        self.intermediate_size = intermediate_size
        self.hidden_act = hidden_act
        self.dropout_rate = dropout_rate
        self.attention_dropout_rate = attention_dropout_rate
        self.initializer_range = initializer_range
        self.layer_norm_epsilon = layer_norm_epsilon

    def build(self, input_shape):
        hidden_size = input_shape[-1]
        if hidden_size % self.num_heads:
            raise ValueError(
                f"The input width must be divisible by num_heads. Received: "
                f"hidden_size={hidden_size}, num_heads={self.num_heads}."
            )
        self.head_size = hidden_size // self.num_heads

        def built(layer, width=hidden_size):
            layer.build((None, None, width))
            return layer

        def dense(units, name, activation=None, cls=keras.layers.Dense, **kwargs):
            return cls(
                units,
                activation=activation,
                kernel_initializer=initializer(self.initializer_range),
                dtype=self.dtype_policy,
                name=name,
                **kwargs,
            )

        def layer_norm(name):
            return built(keras.layers.LayerNormalization(
                epsilon=self.layer_norm_epsilon, dtype=self.dtype_policy, name=name
            ))

        # Its output parts are the query, key and value projections, each of
        # which may carry a LoRA adapter of its own (`enable_lora`).
        self.qkv_dense = built(
            dense(3 * hidden_size, "qkv_dense", cls=LoraDense, parts=LORA_TARGETS))
        self.attention_output_dense = built(dense(hidden_size, "attention_output_dense"))
        self.attention_layer_norm = layer_norm("attention_layer_norm")
        self.intermediate_dense = built(dense(
            self.intermediate_size, "intermediate_dense", get_activation(self.hidden_act)))
        self.output_dense = built(dense(hidden_size, "output_dense"), self.intermediate_size)
        self.output_layer_norm = layer_norm("output_layer_norm")
        self.attention_dropout = Dropout(
            self.attention_dropout_rate, dtype=self.dtype_policy
        )
        self.dropout = Dropout(self.dropout_rate, dtype=self.dtype_policy)
        self.built = True

    def call(self, x, padding_mask=None, training=None, return_attention_probs=False):
        batch_size, seq_length = ops.shape(x)[0], ops.shape(x)[1]
        hidden_size = self.num_heads * self.head_size

        # Every dense of the block runs on one (B*T, H) matrix: a 2-D MatMul
        # followed by BiasAdd (and exact GELU) is what TensorFlow's oneDNN
        # Grappler remapper fuses into one kernel. On 3-D input Keras' Dense
        # puts reshapes around each MatMul and nothing fuses.
        rows = ops.reshape(x, (-1, hidden_size))  # (B*T, H)
        bias = None
        if padding_mask is not None:
            # (B, 1, 1, T): 0 for real keys, a large negative for padded keys.
            bias = (1.0 - ops.cast(padding_mask, "float32")) * _MASK_VALUE
            # A reshape, not bias[:, None, None, :]: a strided slice with new
            # axes has no LiteRT builtin (the --format tflite export).
            bias = ops.reshape(bias, (batch_size, 1, 1, seq_length))
        attention_output, probs = self.self_attention(rows, batch_size, seq_length, bias,
                                                      training=training)
        attention_output = self.dropout(attention_output, training=training)
        h = self.attention_layer_norm(rows + attention_output)  # (B*T, H)
        y = self.output_layer_norm(h + self.dropout(self.feed_forward(h), training=training))
        y = ops.reshape(y, (batch_size, seq_length, hidden_size))
        if return_attention_probs:
            return y, probs
        return y

    def compute_output_spec(self, x, padding_mask=None, training=None,
                            return_attention_probs=False):
        # What `call` returns, without tracing it: a functional model's
        # construction calls every layer on symbolic inputs, and tracing this
        # block's ops for that was most of an encoder's build time (build()
        # makes every weight, so nothing is left for a first call to build).
        y = keras.KerasTensor(x.shape, dtype=self.compute_dtype)
        if not return_attention_probs:
            return y
        batch_size, seq_length = x.shape[0], x.shape[1]
        probs = keras.KerasTensor((batch_size, self.num_heads, seq_length, seq_length),
                                  dtype="float32")
        return y, probs

    def enable_lora(self, rank, alpha=None, targets=("query", "value")):
        """Adds a LoRA adapter to each projection in `targets` (a subset of
        `LORA_TARGETS`): see `LoraDense.enable_lora`. Freezes nothing else:
        `BertEncoder.enable_lora` freezes the rest of the encoder."""
        self.qkv_dense.enable_lora(rank, lora_alpha=alpha, targets=targets)

    def self_attention(self, rows, batch_size, seq_length, bias=None, training=None):
        """The attention sub-layer before its dropout: (output rows [batch_size *
        seq_length, hidden_size], float32 probabilities [batch_size, num_heads,
        seq_length, seq_length]) of `rows` (the block's input as rows) and `bias` (as
        `attend` takes it). A SavedModel export traces it in two groups of heads
        (`keras_bert.export.serving_kernels`)."""
        qkv = ops.reshape(
            self.qkv_dense(rows), (batch_size, seq_length, 3 * self.num_heads, self.head_size)
        )
        context, probs = self.attend(qkv, bias, training=training)  # (B, T, N, D)
        context = ops.reshape(context, (-1, self.num_heads * self.head_size))
        return self.attention_output_dense(context), probs

    def feed_forward(self, h):
        """W2 act(W1 h + b1) + b2 of rows `h` [rows, hidden_size]: the block's
        feed-forward part (a SavedModel export traces it in two halves,
        `keras_bert.export.serving_kernels`)."""
        return self.output_dense(self.intermediate_dense(h))

    def attend(self, qkv, bias=None, training=None):
        """Scaled-dot-product attention over the heads of the q/k/v projection.

        A SavedModel export traces an equivalent in its place, with kernels
        chosen by size (`keras_bert.export.serving_kernels`).

        Args:
            qkv: Tensor of shape [batch_size, seq_length, 3 * num_heads,
                head_size]: the query, key and value heads, in that order.
            bias: None or float32 Tensor of shape [batch_size, 1, 1,
                seq_length], added to the scores.
            training: bool, whether dropout is active.

        Returns:
            (context of shape [batch_size, seq_length, num_heads, head_size],
            float32 attention probabilities [batch_size, num_heads,
            seq_length, seq_length]).
        """
        # One transpose for query, key and value together (einsum would
        # transpose each of them, and the context, on its own). Split (whose
        # gradient is one concat) rather than slice (whose gradients are three
        # zero-padded full-size tensors summed).
        query, key, value = ops.split(ops.transpose(qkv, (0, 2, 1, 3)), 3, axis=1)  # (B, N, T, D)
        query = query * ops.cast(1.0 / math.sqrt(self.head_size), query.dtype)
        # tf.matmul's adj_y: no separate transpose of the key.
        scores = ops.cast(tf.matmul(query, key, transpose_b=True), "float32")  # (B, N, T, T)
        if bias is not None:
            scores = scores + bias
        probs = ops.softmax(scores, axis=-1)
        attended = self.attention_dropout(ops.cast(probs, self.compute_dtype), training=training)
        return ops.transpose(tf.matmul(attended, value), (0, 2, 1, 3)), probs  # (B, T, N, D)

    def get_config(self):
        config = super().get_config()
        config.update(
            num_heads=self.num_heads,
            intermediate_size=self.intermediate_size,
            hidden_act=self.hidden_act,
            dropout_rate=self.dropout_rate,
            attention_dropout_rate=self.attention_dropout_rate,
            initializer_range=self.initializer_range,
            layer_norm_epsilon=self.layer_norm_epsilon,
        )
        return config
