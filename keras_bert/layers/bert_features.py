"""BertFeatures: token and sentence features from a (frozen) BERT encoder."""

import keras
from keras import ops

_LAYER_MODES = ("last", "sum_last_four", "concat_last_four", "weighted_sum")
_POOLING = (None, "cls", "mean", "max")


@keras.saving.register_keras_serializable(package="keras_bert")
class BertFeatures(keras.layers.Layer):
    """Feature-based BERT (the paper's CoNLL-2003 ablation) as a Keras layer.

    Runs `encoder` (frozen unless `trainable_encoder=True`) and combines its
    per-layer outputs into token features, optionally pooled to one vector
    per text.

    Args:
        encoder: a `BertEncoder` (any model with the encoder's input and
            output dicts).
        layers: which hidden layers:
            an int (index into the encoder blocks, negative from the top,
            e.g. -2 = second-to-last);
            "last" (the last layer);
            "sum_last_four" / "concat_last_four" (the last four layers,
            summed, or concatenated to 4 x hidden_size channels);
            "weighted_sum" (a learned softmax-weighted sum of every layer
            times a learned scale, Peters et al. 2018).
        pooling: None (token features), "cls" (the [CLS] position), "mean"
            or "max" over the real (non-padded) tokens.
        trainable_encoder: bool, fine-tune the encoder too (default False).

    Call arguments:
        inputs: the encoder input dict (token_ids, segment_ids, padding_mask).

    Returns:
        Float Tensor [batch_size, seq_length, channels] (pooling=None) or
        [batch_size, channels]; channels = 4 x hidden_size for
        "concat_last_four", else hidden_size.

    Example:
    >>> features = BertFeatures(encoder, layers="concat_last_four", pooling="mean")
    >>> inputs = {k: keras.Input((None,), dtype="int32", name=k)
    ...           for k in ("token_ids", "segment_ids", "padding_mask")}
    >>> logits = keras.layers.Dense(3)(features(inputs))
    >>> model = keras.Model(inputs, logits)  # only the Dense layer trains
    """

    def __init__(self, encoder, layers="last", pooling=None, trainable_encoder=False, **kwargs):
        super().__init__(**kwargs)
        num_layers = len(encoder.output["encoder_outputs"])
        if isinstance(layers, int) and not isinstance(layers, bool):
            if not -num_layers <= layers < num_layers:
                raise ValueError(
                    f"layers={layers} is out of range for an encoder with {num_layers} "
                    f"layers. Use 0..{num_layers - 1} or -{num_layers}..-1."
                )
        elif layers not in _LAYER_MODES:
            raise ValueError(
                f"Expected layers to be an int or one of {_LAYER_MODES}. "
                f"Received: layers={layers!r}"
            )
        if layers in ("sum_last_four", "concat_last_four") and num_layers < 4:
            raise ValueError(
                f"layers={layers!r} needs at least 4 encoder layers; this encoder has "
                f"{num_layers}."
            )
        if pooling not in _POOLING:
            raise ValueError(f"Expected pooling in {_POOLING}. Received: pooling={pooling!r}")
        self.encoder = encoder
        self.encoder.trainable = trainable_encoder
        self.layers_mode = layers
        self.pooling = pooling
        self.trainable_encoder = trainable_encoder
        self.num_encoder_layers = num_layers

    def build(self, input_shape=None):
        if self.layers_mode == "weighted_sum":
            self.layer_weights = self.add_weight(
                name="layer_weights", shape=(self.num_encoder_layers,), initializer="zeros"
            )
            self.scale = self.add_weight(name="scale", shape=(), initializer="ones")
        self.built = True

    def _combine(self, hidden):
        mode = self.layers_mode
        if isinstance(mode, int):
            return hidden[mode]
        if mode == "last":
            return hidden[-1]
        if mode == "sum_last_four":
            return ops.sum(ops.stack(hidden[-4:], axis=0), axis=0)
        if mode == "concat_last_four":
            return ops.concatenate(hidden[-4:], axis=-1)
        weights = ops.cast(ops.softmax(self.layer_weights), hidden[0].dtype)
        stacked = ops.stack(hidden, axis=-1)  # (B, T, H, L)
        return ops.cast(self.scale, stacked.dtype) * ops.sum(stacked * weights, axis=-1)

    def call(self, inputs, training=None):
        outputs = self.encoder(inputs, training=training and self.trainable_encoder)
        features = self._combine(outputs["encoder_outputs"])  # (B, T, C)
        if self.pooling is None:
            return features
        if self.pooling == "cls":
            return features[:, 0]
        mask = ops.cast(inputs["padding_mask"], features.dtype)[:, :, None]  # (B, T, 1)
        if self.pooling == "mean":
            return ops.sum(features * mask, axis=1) / ops.maximum(ops.sum(mask, axis=1), 1.0)
        lowest = ops.cast(-1e4 if features.dtype == "float16" else -1e9, features.dtype)
        return ops.max(ops.where(mask > 0, features, lowest), axis=1)

    def get_config(self):
        config = super().get_config()
        config.update(
            encoder=keras.saving.serialize_keras_object(self.encoder),
            layers=self.layers_mode,
            pooling=self.pooling,
            trainable_encoder=self.trainable_encoder,
        )
        return config

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        config["encoder"] = keras.saving.deserialize_keras_object(config["encoder"])
        return cls(**config)
