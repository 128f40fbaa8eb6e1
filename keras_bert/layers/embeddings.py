"""BertEmbeddings: token + segment + position embeddings, LayerNorm, dropout."""

import keras
from keras import ops

from keras_bert.config import check_count, check_rate
from keras_bert.layers.activations import initializer
from keras_bert.layers.dropout import Dropout


@keras.saving.register_keras_serializable(package="keras_bert")
class BertEmbeddings(keras.layers.Layer):
    """The input layer of BERT: the sum of three embeddings, normalized.

    Args:
        vocab_size: int, rows of the token embedding table.
        hidden_size: int, embedding width H.
        max_position_embeddings: int, longest sequence; longer input is an error.
        type_vocab_size: int, number of segment ids; 0 for no segment
            embeddings (DistilBERT): `segment_ids` are then ignored, as they
            are with 1 (RoBERTa, XLM-R: every token adds the one row).
        dropout_rate: float, dropout after the LayerNorm.
        initializer_range: float, stddev of the truncated normal initializer.
        layer_norm_epsilon: float, LayerNorm epsilon.

    Call arguments:
        token_ids: int Tensor of shape [batch_size, seq_length].
        segment_ids: int Tensor of shape [batch_size, seq_length], or None for
            all zeros; unused when `type_vocab_size` is 0.
        training: bool, whether dropout is active.

    Returns:
        Float Tensor of shape [batch_size, seq_length, hidden_size].

    Example:
    >>> layer = BertEmbeddings(vocab_size=100, hidden_size=8)
    >>> layer(np.array([[2, 5, 3]])).shape
    (1, 3, 8)
    """

    def __init__(
        self,
        vocab_size,
        hidden_size,
        max_position_embeddings=512,
        type_vocab_size=2,
        dropout_rate=0.1,
        initializer_range=0.02,
        layer_norm_epsilon=1e-12,
        **kwargs,
    ):
        super().__init__(**kwargs)
        for name, value in (
            ("vocab_size", vocab_size),
            ("hidden_size", hidden_size),
            ("max_position_embeddings", max_position_embeddings),
        ):
            check_count(name, value)
        if not isinstance(type_vocab_size, int) or type_vocab_size < 0:
            raise ValueError(f"Expected type_vocab_size >= 0. Received: "
                             f"type_vocab_size={type_vocab_size!r}")
        check_rate("dropout_rate", dropout_rate)
        self.vocab_size = vocab_size
        self.hidden_size = hidden_size
        self.max_position_embeddings = max_position_embeddings
        self.type_vocab_size = type_vocab_size
        self.dropout_rate = dropout_rate
        self.initializer_range = initializer_range
        self.layer_norm_epsilon = layer_norm_epsilon

    def build(self, token_ids_shape=None):
        init = initializer(self.initializer_range)
        self.token_embeddings = self.add_weight(
            name="token_embeddings",
            shape=(self.vocab_size, self.hidden_size),
            initializer=init,
        )
        # None without segments: no table, rather than a zero one that would
        # be trained and saved.
        self.segment_embeddings = None if not self.type_vocab_size else self.add_weight(
            name="segment_embeddings",
            shape=(self.type_vocab_size, self.hidden_size),
            initializer=init,
        )
        self.position_embeddings = self.add_weight(
            name="position_embeddings",
            shape=(self.max_position_embeddings, self.hidden_size),
            initializer=init,
        )
        self.layer_norm = keras.layers.LayerNormalization(
            epsilon=self.layer_norm_epsilon, dtype=self.dtype_policy, name="layer_norm"
        )
        self.layer_norm.build((None, None, self.hidden_size))
        self.dropout = Dropout(
            self.dropout_rate, dtype=self.dtype_policy, name="dropout"
        )
        self.built = True

    def _check_length(self, token_ids):
        seq_length = token_ids.shape[1]
        if seq_length is not None and seq_length > self.max_position_embeddings:
            raise ValueError(
                f"Sequence length {seq_length} exceeds max_position_embeddings="
                f"{self.max_position_embeddings}. Truncate the input (the "
                f"preprocessor's sequence_length) to at most that many tokens."
            )

    def call(self, token_ids, segment_ids=None, training=None):
        self._check_length(token_ids)
        x = ops.take(self.token_embeddings, token_ids, axis=0)  # (B, T, H)
        if self.segment_embeddings is None:
            pass  # DistilBERT: token + position only.
        elif segment_ids is not None and self.type_vocab_size > 1:
            x = x + ops.take(self.segment_embeddings, segment_ids, axis=0)
        else:
            x = x + self.segment_embeddings[0]
        positions = self.position_embeddings[: ops.shape(token_ids)[1]]  # (T, H)
        x = x + ops.expand_dims(positions, 0)
        x = self.layer_norm(x)
        return self.dropout(x, training=training)

    def compute_output_spec(self, token_ids, segment_ids=None, training=None):
        # What `call` returns, without tracing it (a functional model calls
        # every layer on symbolic inputs; build() makes every weight).
        self._check_length(token_ids)
        return keras.KerasTensor((*token_ids.shape, self.hidden_size), dtype=self.compute_dtype)

    def get_config(self):
        config = super().get_config()
        config.update(
            vocab_size=self.vocab_size,
            hidden_size=self.hidden_size,
            max_position_embeddings=self.max_position_embeddings,
            type_vocab_size=self.type_vocab_size,
            dropout_rate=self.dropout_rate,
            initializer_range=self.initializer_range,
            layer_norm_epsilon=self.layer_norm_epsilon,
        )
        return config
