"""Fine-tuning controls: freezing, layer-wise learning-rate decay, gradual unfreezing."""

import keras

from keras_bert.config import check_count
from keras_bert.training.optimizers import _LearningRateMultipliers


def _encoder_of(model):
    return getattr(model, "encoder", model)


def freeze_encoder_layers(model, num_layers, embeddings=True):
    """Freezes the embeddings (optional) and the bottom `num_layers` encoder blocks.

    Recompile the model afterwards (Keras fixes the trainable set at compile).

    Args:
        model: a `BertEncoder` or a task model with `.encoder`.
        num_layers: int, how many blocks to freeze from the bottom (0..L).
        embeddings: bool, also freeze the embedding layer.
    """
    encoder = _encoder_of(model)
    total = len(encoder.encoder_blocks)
    if not isinstance(num_layers, int) or not 0 <= num_layers <= total:
        raise ValueError(
            f"Expected num_layers in [0, {total}] (the encoder has {total} blocks). "
            f"Received: num_layers={num_layers!r}"
        )
    encoder.embeddings.trainable = not embeddings
    for i, block in enumerate(encoder.encoder_blocks):
        block.trainable = i >= num_layers


def layerwise_lr_multipliers(model, decay=1.0, encoder_multiplier=1.0):
    """Learning-rate multipliers per variable for layer-wise decay.

    Block k (0 = bottom) of an L-block encoder gets encoder_multiplier *
    decay ** (L - 1 - k), the embeddings decay ** L times it; the pooler
    takes `encoder_multiplier`, the task head 1.

    Args:
        model: a task model with `.encoder` (or a bare encoder).
        decay: float in (0, 1], per-layer decay.
        encoder_multiplier: float > 0, extra factor for every encoder weight
            (a lower rate for the pretrained encoder than for the new head).

    Returns:
        dict {variable path: multiplier} for every trainable variable that
        does not get 1.0.
    """
    if not 0 < decay <= 1:
        raise ValueError(f"Expected decay in (0, 1]. Received: decay={decay!r}")
    if not encoder_multiplier > 0:
        raise ValueError(
            f"Expected encoder_multiplier > 0. Received: encoder_multiplier={encoder_multiplier!r}"
        )
    encoder = _encoder_of(model)
    total = len(encoder.encoder_blocks)
    multipliers = {}

    def assign(layer, value):
        for variable in layer.weights:
            if value != 1.0:
                multipliers[variable.path] = value

    assign(encoder.embeddings, encoder_multiplier * decay**total)
    for k, block in enumerate(encoder.encoder_blocks):
        assign(block, encoder_multiplier * decay ** (total - 1 - k))
    if encoder.embeddings_project is not None:  # ELECTRA: with the embeddings.
        assign(encoder.embeddings_project, encoder_multiplier * decay**total)
    if encoder.pooler is not None:
        assign(encoder.pooler, encoder_multiplier)
    return multipliers


def _with_multipliers_class(base):
    """`base` with `lr_multipliers` (a subclass, made once per class)."""
    if issubclass(base, _LearningRateMultipliers):
        return base
    if base not in _MULTIPLIER_CLASSES:
        _MULTIPLIER_CLASSES[base] = type(base.__name__, (_LearningRateMultipliers, base), {})
    return _MULTIPLIER_CLASSES[base]


_MULTIPLIER_CLASSES = {}


def with_lr_multipliers(optimizer, multipliers):
    """A copy of `optimizer` that scales its learning rate per variable.

    Works with any Keras optimizer: the copy (`from_config`) multiplies each
    variable's update and decoupled weight decay. With `create_optimizer`,
    pass it `lr_multipliers=` instead. `exclude_from_weight_decay()` is not in
    a Keras optimizer's config: set it on the copy.

    Args:
        optimizer: an unbuilt Keras optimizer (not a LossScaleOptimizer).
        multipliers: dict {variable path: float}, e.g. from
            `layerwise_lr_multipliers`.

    Returns:
        A new, unbuilt optimizer.

    Example:
    >>> opt = with_lr_multipliers(keras.optimizers.AdamW(3e-5),
    ...                           layerwise_lr_multipliers(classifier, decay=0.9))
    >>> classifier.compile(optimizer=opt, loss=...)
    """
    if isinstance(optimizer, keras.optimizers.LossScaleOptimizer):
        raise ValueError(
            "with_lr_multipliers needs the optimizer inside the LossScaleOptimizer: pass "
            "lr_multipliers to create_optimizer, or wrap the result of with_lr_multipliers "
            "in keras.optimizers.LossScaleOptimizer."
        )
    if getattr(optimizer, "built", False):
        raise ValueError("with_lr_multipliers needs an optimizer that has not been built yet.")
    config = optimizer.get_config()
    config["lr_multipliers"] = dict(multipliers)
    return _with_multipliers_class(type(optimizer)).from_config(config)


class GradualUnfreezing(keras.callbacks.Callback):
    """Unfreezes the encoder from the top, a few blocks per epoch (ULMFiT-style).

    In epoch e (0-based) the top `blocks_per_epoch * e` blocks are trainable,
    as are the pooler and the head; the embeddings thaw with the bottom block.
    Create it after `compile` and before the first `fit`: it builds the
    optimizer over every weight so that weights thawed later have slots.

    Args:
        model: a compiled task model with `.encoder`, not yet trained.
        blocks_per_epoch: int >= 1.

    Example:
    >>> classifier.compile(optimizer="adam", loss=...)
    >>> classifier.fit(x, y, epochs=4, callbacks=[GradualUnfreezing(classifier)])
    """

    def __init__(self, model, blocks_per_epoch=1):
        super().__init__()
        check_count("blocks_per_epoch", blocks_per_epoch)
        optimizer = getattr(model, "optimizer", None)
        if optimizer is None or optimizer.built:
            raise ValueError(
                "GradualUnfreezing needs a model that is compiled but not yet trained: "
                "create it after compile() and before the first fit()."
            )
        self.blocks_per_epoch = blocks_per_epoch
        _encoder_of(model)  # Raises unless the model has a BertEncoder.
        freeze_encoder_layers(model, 0, embeddings=False)
        optimizer.build(model.trainable_variables)
        self._thawed = self._apply(model, 0)

    def _apply(self, model, epoch):
        encoder = _encoder_of(model)
        total = len(encoder.encoder_blocks)
        thawed = min(total, self.blocks_per_epoch * epoch)
        freeze_encoder_layers(model, total - thawed, embeddings=thawed < total)
        return thawed

    def on_epoch_begin(self, epoch, logs=None):
        thawed = self._apply(self.model, epoch)
        if thawed != self._thawed:
            self._thawed = thawed
            # Retrace the train step so that it updates the new trainable set.
            self.model.make_train_function(force=True)
