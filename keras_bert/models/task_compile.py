"""DefaultCompile: a task model is compiled with its fine-tuning recipe unless told otherwise."""

import keras

from keras_bert.models.registry import get_task

# Losses that read probabilities by default; a task model outputs logits.
_PROBABILITY_LOSSES = frozenset(
    name for base in ("sparse_categorical", "categorical", "binary",
                      "binary_focal", "categorical_focal")
    for name in (f"{base}_crossentropy",
                 "".join(p.capitalize() for p in base.split("_")) + "Crossentropy")
) | {"bce", "BCE"}


def _is_auto(value):
    return isinstance(value, str) and value == "auto"


def _check_logits_loss(loss):
    """Raises ValueError for a loss in `loss` (any nesting) that reads its
    input as probabilities: the model outputs logits."""
    for item in keras.tree.flatten(loss) if isinstance(loss, (dict, list, tuple)) else [loss]:
        if isinstance(item, str):
            probabilities = item in _PROBABILITY_LOSSES
            name = item
        elif isinstance(item, keras.losses.Loss):
            probabilities = item.get_config().get("from_logits") is False
            name = type(item).__name__
        else:
            probabilities = getattr(item, "__name__", None) in _PROBABILITY_LOSSES
            name = getattr(item, "__name__", repr(item))
        if probabilities:
            raise ValueError(
                f"loss={name!r} reads probabilities, but this model outputs logits. Pass "
                f"compile() for the task's default loss, or a loss object with "
                f"from_logits=True, e.g. "
                f"keras.losses.SparseCategoricalCrossentropy(from_logits=True)."
            )


class DefaultCompile:
    """Mixin of `BertTask`: `compile()` fills what it is not given with the task's
    fine-tuning defaults, and a `.keras` file keeps the compile configuration.

    Subclasses define `default_loss` (and `default_metrics`,
    `default_loss_weights`); the optimizer is the registered task's
    (`FinetuneTask.default_optimizer`).
    """

    def compile(self, optimizer="auto", loss="auto", metrics="auto", loss_weights="auto",
                **kwargs):
        """Configures the model for training; every "auto" argument gets the task's default.

        The defaults are the library's fine-tuning recipe, so `compile()` trains
        as `keras_bert.training.finetune` does (at a constant learning rate).
        The model outputs logits: a loss that takes probabilities
        (`"sparse_categorical_crossentropy"`) is refused with a ValueError.

        Args:
            optimizer, loss, metrics, loss_weights: as in `keras.Model.compile`,
                or "auto" for the task's default. With a `loss` of one's own,
                "auto" metrics and loss weights are none (Keras' defaults).
            **kwargs: other `keras.Model.compile` arguments (`jit_compile`,
                `weighted_metrics`, `steps_per_execution`, ...).
        """
        if _is_auto(optimizer):
            optimizer = self.default_optimizer()
        # The default metrics and loss weights go with the default loss: with
        # a loss of one's own, `evaluate` returns just the loss, as in Keras.
        own_loss = not _is_auto(loss)
        if _is_auto(loss):
            loss = self.default_loss()
        if _is_auto(metrics):
            metrics = None
            if not own_loss and kwargs.get("weighted_metrics") is None:
                # Weighted: `sample_weight` (padding, unlabeled pieces) counts.
                kwargs["weighted_metrics"] = self.default_metrics()
        if (self.compiled and metrics is None and kwargs.get("weighted_metrics") is None
                and self._has_default_recipe()):
            # None means no metrics: Keras would keep an earlier compile's
            # (from_pretrained's defaults) when both are None.
            metrics = []
        if _is_auto(loss_weights):
            loss_weights = None if own_loss else self.default_loss_weights()
        _check_logits_loss(loss)
        super().compile(optimizer=optimizer, loss=loss, metrics=metrics,
                        loss_weights=loss_weights, **kwargs)
        # What `get_compile_config` saves in a .keras file: the arguments, resolved.
        object.__setattr__(self, "_task_compile_args", dict(
            optimizer=self.optimizer, loss=loss, metrics=metrics, loss_weights=loss_weights,
            **kwargs))

    def get_compile_config(self):
        """The `compile` arguments, serialized (a .keras file keeps them); without
        it Keras would load the model uncompiled, as `compile` is overridden."""
        args = getattr(self, "_task_compile_args", None)
        if not self.compiled or args is None:
            return {}
        config = dict(keras.saving.serialize_keras_object(args))
        # An optimizer that never stepped has no slots in the file: building
        # one on load would make Keras warn that the variable counts differ.
        config["optimizer_built"] = bool(self.optimizer.built)
        return config

    def compile_from_config(self, config):
        """Compiles the model from `get_compile_config`'s output (a .keras load calls this)."""
        config = dict(config)
        optimizer_built = config.pop("optimizer_built", True)
        self.compile(**keras.saving.deserialize_keras_object(config))
        if self.built and optimizer_built:
            # The optimizer's variables must exist before Keras loads their values.
            self.optimizer.build(self.trainable_variables)

    def default_optimizer(self):
        """The registered task's `FinetuneTask.default_optimizer()`."""
        spec = get_task(self.task_name) if self.task_name else None
        if spec is None or spec.finetune is None:
            raise ValueError(
                f"{type(self).__name__} has no default optimizer (it is not a registered "
                f"fine-tunable task): pass compile(optimizer=...)."
            )
        return spec.finetune.default_optimizer()

    def default_loss(self):
        """The task's loss on this model's outputs (logits); subclasses define it."""
        raise ValueError(
            f"{type(self).__name__} has no default loss: pass compile(loss=...)."
        )

    def default_metrics(self):
        """The metrics `compile()` adds by default, as `weighted_metrics` (or None)."""
        return None

    def default_loss_weights(self):
        """The weights of a multi-output loss (None: Keras' default)."""
        return None

    def _has_default_recipe(self):
        """True when `compile()` with no arguments works (a registered fine-tunable task)."""
        if not self.task_name:
            return False
        return get_task(self.task_name).finetune is not None

