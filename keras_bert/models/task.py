"""BertTask: the base of every model that puts a head on a `BertEncoder`."""


import warnings

import keras
import numpy as np
import tensorflow as tf

from keras_bert.config import check_rate
from keras_bert.layers.activations import initializer
from keras_bert.models import model_dir as model_dir_lib
from keras_bert.models.keras_file import AtomicKerasSave
from keras_bert.models.registry import get_task
from keras_bert.models.replica_jit import ReplicaJitCompile

# Loss names (as `keras.losses.get` takes them) that expect probabilities by
# default; a task model outputs logits.
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


def _is_text(value):
    """True for a batch of strings: a list/tuple of str/bytes, a numpy str or
    object array of them, or a tf.string Tensor."""
    if isinstance(value, (tf.Tensor, tf.RaggedTensor)):
        return value.dtype == tf.string
    if isinstance(value, np.ndarray):
        if value.dtype.kind in "US":
            return True
        return value.dtype == object and value.size > 0 and isinstance(
            value.flat[0], (str, bytes))
    if isinstance(value, (list, tuple)):
        return len(value) > 0 and all(isinstance(v, (str, bytes)) for v in value)
    return False


def text_inputs(x):
    """The string batches in `x`: a tuple of one (texts) or two (pairs), else None.

    Pairs are a tuple or list of two string batches, `(texts_a, texts_b)`.
    """
    if _is_text(x):
        return (x,)
    if isinstance(x, (list, tuple)) and len(x) == 2 and all(_is_text(v) for v in x):
        return tuple(x)
    return None


def _to_string_tensor(value):
    if isinstance(value, (tf.Tensor, tf.RaggedTensor)):
        return value
    if isinstance(value, np.ndarray) and value.dtype.kind == "U":
        value = np.char.encode(value, "utf-8")
    elif not isinstance(value, np.ndarray):
        value = np.array([v.encode("utf-8") if isinstance(v, str) else v for v in value],
                         dtype=object)
    return tf.constant(value, tf.string)


def _dataset_has_text(dataset):
    spec = dataset.element_spec
    features = spec[0] if isinstance(spec, tuple) and not _is_pair_spec(spec) else spec
    flat = tf.nest.flatten(features)
    return bool(flat) and all(
        isinstance(s, (tf.TensorSpec, tf.RaggedTensorSpec)) and s.dtype == tf.string for s in flat
    )


def _is_pair_spec(spec):
    """A dataset element that is itself (texts_a, texts_b), with no labels."""
    return (isinstance(spec, tuple) and len(spec) == 2
            and all(isinstance(s, tf.TensorSpec) and s.dtype == tf.string for s in spec))


class BertTask(AtomicKerasSave, ReplicaJitCompile, keras.Model):
    """A functional model made of `encoder` plus a task head, optionally with
    a `BertPreprocessor` that lets `fit`, `evaluate` and `predict` take raw text.

    Subclasses build their graph in `__init__`, keep the encoder as
    `self.encoder`, pass `preprocessor` and other Keras arguments through
    `**kwargs`, and list their own constructor arguments in `task_config()`.
    Saving, loading, serialization and raw-text inputs are shared here.

    With a preprocessor, `x` may be strings: a list of str, a numpy str or
    object array, a tf.string Tensor, a pair `(texts_a, texts_b)` of them, or
    a `tf.data.Dataset` of batched `(texts, labels)` / `((a, b), labels)`.
    They are tokenized and packed in the tf.data pipeline (in parallel, each
    batch padded to its longest text), not in the model's graph. The integer
    input dict (token_ids, segment_ids, padding_mask) works as ever.

    `compile()` fills every argument left out with the task's fine-tuning
    defaults (`default_optimizer`, `default_loss`, `default_metrics`), and
    `from_pretrained` returns the model compiled with them; a `.keras` file
    keeps the compile configuration (`get_compile_config`). `save` writes
    `.keras` files atomically (`AtomicKerasSave`).

    `compile(jit_compile=True)` under a multi-device strategy compiles each
    replica's step with XLA and sums gradients outside it (`ReplicaJitCompile`).
    """

    task_name = None
    #: False for heads that read sequence_output only (taggers, span QA).
    uses_pooler = True

    def __init__(self, *args, preprocessor=None, **kwargs):
        from keras_bert.models.encoder import check_kwargs

        check_kwargs(type(self).__name__, {k: v for k, v in kwargs.items()
                                           if k not in ("inputs", "outputs")})
        super().__init__(*args, **kwargs)
        self.preprocessor = preprocessor

    @property
    def trainable_weights(self):
        """The model's trainable weights, less the pooler's when the head
        does not read it: it would get no gradient, and Keras would warn
        "Gradients do not exist for variables ['pooler/dense/kernel', ...]".
        The pooler's weights are still saved and loaded; the encoder object
        itself is left as it is."""
        return self._without_unused_pooler(super().trainable_weights)

    @property
    def trainable_variables(self):
        return self._without_unused_pooler(super().trainable_variables)

    def _without_unused_pooler(self, weights):
        if self.uses_pooler:
            return weights
        pooler = {id(w) for w in self.encoder.pooler.weights}
        return [w for w in weights if id(w) not in pooler]

    def task_config(self):
        """The constructor arguments other than `encoder` (JSON-able)."""
        return {}

    def get_config(self):
        config = {
            "name": self.name,
            "trainable": self.trainable,
            "encoder": keras.saving.serialize_keras_object(self.encoder),
            **self.task_config(),
        }
        if self.preprocessor is not None:
            config["preprocessor"] = keras.saving.serialize_keras_object(self.preprocessor)
        return config

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        for key in ("encoder", "preprocessor"):
            if isinstance(config.get(key), dict):
                config[key] = keras.saving.deserialize_keras_object(config[key])
        return cls(**config)

    # === Compiled by default ===

    def compile(self, optimizer="auto", loss="auto", metrics="auto", loss_weights="auto",
                **kwargs):
        """Configures the model for training; every "auto" argument gets the task's default.

        The defaults are the library's fine-tuning recipe (`default_optimizer`,
        `default_loss`, `default_metrics`, `default_loss_weights`), so
        `compile()` with no arguments, or no `compile` at all after
        `from_pretrained`, trains as `keras_bert.training.finetune` does
        (at a constant learning rate).

        The model outputs logits: a loss that takes probabilities
        (`"sparse_categorical_crossentropy"`, or a loss object with
        `from_logits=False`) is refused with a ValueError that names the
        fix, rather than trained on silently.

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
        """The `compile` arguments, serialized (a .keras file keeps them).

        Overridden with `compile_from_config` because `compile` is: Keras
        would otherwise load the model uncompiled, with a warning.
        """
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
        """The default fine-tuning optimizer: the registered task's
        `FinetuneTask.default_optimizer()` (keras_bert's AdamW, learning rate
        5e-5, weight decay 0.01, epsilon 1e-6, global clipnorm 1.0)."""
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
        """The metrics `compile()` adds by default, as `weighted_metrics`
        (None: none)."""
        return None

    def default_loss_weights(self):
        """The weights of a multi-output loss (None: Keras' default)."""
        return None

    # === Raw text in fit / evaluate / predict ===

    def _require_preprocessor(self):
        if self.preprocessor is None:
            raise ValueError(
                f"This {type(self).__name__} has no preprocessor, so it takes the integer "
                f"input dict (token_ids, segment_ids, padding_mask), not strings. Load it "
                f"with {type(self).__name__}.from_pretrained(MODEL_DIR) from a model "
                f"directory that has a vocab.txt, or pass "
                f"preprocessor=keras_bert.text.BertPreprocessor.from_vocab_file('vocab.txt')."
            )
        return self.preprocessor

    def _preprocess_element(self, *element):
        """(texts[, labels[, sample_weight]]) -> (encoder inputs, ...)."""
        x, rest = element[0], element[1:]
        texts = x if isinstance(x, tuple) else (x,)
        return (self.preprocessor(texts),) + rest

    def _text_dataset(self, x, y=None, sample_weight=None, batch_size=None, shuffle=False):
        """A batched, preprocessed tf.data.Dataset for string `x`, or None if
        `x` holds no strings (then Keras takes it as it is)."""
        if isinstance(x, tf.data.Dataset):
            if not _dataset_has_text(x):
                return None
            self._require_preprocessor()
            spec = x.element_spec
            features = spec if _is_pair_spec(spec) or not isinstance(spec, tuple) else spec[0]
            if any(s.shape.rank == 0 for s in tf.nest.flatten(features)):
                raise ValueError(
                    "The dataset yields single strings; batch it first, e.g. "
                    "dataset.batch(32), as Keras takes one batch per element."
                )
            if _is_pair_spec(spec) or not isinstance(spec, tuple):
                return x.map(lambda *t: self.preprocessor(t),
                             num_parallel_calls=tf.data.AUTOTUNE).prefetch(tf.data.AUTOTUNE)
            return x.map(self._preprocess_element,
                         num_parallel_calls=tf.data.AUTOTUNE).prefetch(tf.data.AUTOTUNE)
        texts = text_inputs(x)
        if texts is None:
            return None
        self._require_preprocessor()
        texts = tuple(_to_string_tensor(t) for t in texts)
        count = int(texts[0].shape[0])
        if len(texts) == 2 and int(texts[1].shape[0]) != count:
            raise ValueError(
                f"Sentence pairs need as many second texts as first texts. Received: "
                f"{count} and {int(texts[1].shape[0])}."
            )
        columns = [texts if len(texts) == 2 else texts[0]]
        for name, value in (("y", y), ("sample_weight", sample_weight)):
            if value is None:
                continue
            if len(keras.tree.flatten(value)[0]) != count:
                raise ValueError(
                    f"Expected {name} to have one row per text ({count}). Received: "
                    f"{len(keras.tree.flatten(value)[0])} rows."
                )
            columns.append(value)
        dataset = tf.data.Dataset.from_tensor_slices(tuple(columns))
        if shuffle:
            dataset = dataset.shuffle(max(count, 1), reshuffle_each_iteration=True)
        dataset = dataset.batch(batch_size or 32)
        return dataset.map(self._preprocess_element,
                           num_parallel_calls=tf.data.AUTOTUNE).prefetch(tf.data.AUTOTUNE)

    def fit(self, x=None, y=None, batch_size=None, epochs=1, verbose="auto", callbacks=None,
            validation_split=0.0, validation_data=None, shuffle=True, class_weight=None,
            sample_weight=None, **kwargs):
        dataset = self._text_dataset(x, y, sample_weight, batch_size, shuffle)
        if dataset is None:
            return super().fit(
                x=x, y=y, batch_size=batch_size, epochs=epochs, verbose=verbose,
                callbacks=callbacks, validation_split=validation_split,
                validation_data=validation_data, shuffle=shuffle, class_weight=class_weight,
                sample_weight=sample_weight, **kwargs)
        if validation_split:
            raise ValueError(
                "validation_split does not apply to text inputs; pass "
                "validation_data=(texts, labels) instead."
            )
        if validation_data is not None and not isinstance(validation_data, tf.data.Dataset):
            validation_data = self._text_dataset(
                *tuple(validation_data) + (None,) * (3 - len(validation_data)),
                batch_size=batch_size) or validation_data
        elif isinstance(validation_data, tf.data.Dataset):
            validation_data = self._text_dataset(validation_data) or validation_data
        # The dataset is shuffled above (when `shuffle`), not by Keras.
        return super().fit(
            dataset, epochs=epochs, verbose=verbose, callbacks=callbacks,
            validation_data=validation_data, shuffle=False, class_weight=class_weight,
            **kwargs)

    def evaluate(self, x=None, y=None, batch_size=None, verbose="auto", sample_weight=None,
                 **kwargs):
        dataset = self._text_dataset(x, y, sample_weight, batch_size)
        if dataset is None:
            return super().evaluate(x=x, y=y, batch_size=batch_size, verbose=verbose,
                                    sample_weight=sample_weight, **kwargs)
        return super().evaluate(dataset, verbose=verbose, **kwargs)

    def predict(self, x, batch_size=None, verbose="auto", steps=None, callbacks=None):
        dataset = self._text_dataset(x, batch_size=batch_size)
        if dataset is None:
            return super().predict(x, batch_size=batch_size, verbose=verbose, steps=steps,
                                   callbacks=callbacks)
        return super().predict(dataset, verbose=verbose, steps=steps, callbacks=callbacks)

    # === Model directories ===

    def save_pretrained(self, model_dir, vocab_file=None, task_info=None):
        """Writes the model directory: config.json, task.json, weights, vocab.txt.

        Args:
            model_dir: str, directory to (re)write atomically.
            vocab_file: str, vocab.txt to copy in; defaults to the one the
                model was loaded with, else the preprocessor's vocabulary.
            task_info: dict of extra facts for task.json, e.g.
                {"max_seq_length": 128}; the preprocessor's max_seq_length
                and lowercase are recorded too.
        """
        info = {}
        if self.preprocessor is not None:
            info = {"max_seq_length": self.preprocessor.max_seq_length,
                    "lowercase": self.preprocessor.tokenizer.lowercase}
        info.update(task_info or {})
        model_dir_lib.save_model_dir(self, model_dir, vocab_file=vocab_file, task_info=info)

    @classmethod
    def from_pretrained(cls, model_dir, dtype=None, max_seq_length=None, lowercase=None,
                        new_head=False, **task_kwargs):
        """Loads a model directory as this task, compiled, with a preprocessor
        when it has a vocab.txt (then `fit`/`evaluate`/`predict` take strings).

        A directory saved from this same task keeps its trained head.
        `task_kwargs` that change no weight (new `label_names`, a
        `dropout_rate`) are applied to it; values are compared, not types
        (a tuple of the saved label names is no change). One that changes a
        weight's shape (another `num_classes`) would discard the trained
        head, so it raises ValueError unless `new_head` says so. Any other
        directory (an encoder, a pretrainer, another task) gives its encoder
        weights and a freshly initialized head built from `task_kwargs`.

        The model comes compiled with the task's defaults (see `compile`):
        `fit` works without calling `compile`.

        Args:
            model_dir: str, the model directory.
            dtype: None or a Keras dtype policy name ("mixed_bfloat16").
            max_seq_length: int, the longest packed text of the attached
                preprocessor; default task.json's, else the model's
                max_position_embeddings (at most 512).
            lowercase: bool; default task.json's, else guessed from vocab.txt.
            new_head: False (default): keep a saved head of this task;
                True: a freshly initialized head from `task_kwargs` alone;
                "auto": keep the saved head when its shapes allow, else a
                fresh one, with a warning that says so.
            **task_kwargs: the head's arguments (num_classes, label_names, ...).

        Example:
        >>> clf = BertClassifier.from_pretrained("models/minilm", num_classes=3)
        >>> clf.predict(["what a day"]).shape
        (1, 3)
        """
        from keras_bert.models.encoder import BertEncoder

        if new_head not in (False, True, "auto"):
            raise ValueError(
                f"Expected new_head to be False, True or 'auto'. Received: new_head={new_head!r}"
            )
        encoder_kwargs = {} if dtype is None else {"dtype": dtype}
        model = model_dir_lib.load_model_dir(model_dir, BertEncoder, **encoder_kwargs)
        info = model.task_info or {}
        loaded, vocab_file = model, model.vocab_file
        if isinstance(model, cls) and new_head is not True:
            model = _apply_task_kwargs(model, cls, task_kwargs, model_dir, new_head == "auto")
        else:
            model = cls(encoder=getattr(model, "encoder", model), **task_kwargs)
        if model is not loaded:
            # A rebuilt model: task.json's facts about the text and data stay,
            # its task and task_config are the new model's own.
            model.task_info = {k: v for k, v in info.items()
                               if k not in ("task", "task_config")} or None
        model.vocab_file = vocab_file
        if vocab_file is not None:
            model.preprocessor = model_dir_lib.build_preprocessor(
                vocab_file, model.encoder.max_position_embeddings, info,
                max_seq_length=max_seq_length, lowercase=lowercase)
        if model._has_default_recipe():
            model.compile()
        return model

    def _has_default_recipe(self):
        """True when `compile()` with no arguments works (a registered fine-tunable task)."""
        if not self.task_name:
            return False
        return get_task(self.task_name).finetune is not None


def _same_value(a, b):
    """Equal as JSON would store them: a tuple equals the list of its items."""
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_same_value(x, y) for x, y in zip(a, b))
    return a == b


def _apply_task_kwargs(model, cls, task_kwargs, model_dir, replace_if_needed):
    """`model` (loaded whole from `model_dir`) with `task_kwargs` applied, its
    trained head kept; see `BertTask.from_pretrained`."""
    saved = model.task_config()
    unknown = sorted(set(task_kwargs) - set(saved))
    changed = {k: v for k, v in task_kwargs.items() if k in saved and not _same_value(saved[k], v)}
    if not changed and not unknown:
        return model
    old_shapes = [tuple(w.shape) for w in model.weights]
    try:
        rebuilt = cls(encoder=model.encoder, **{**saved, **task_kwargs})
    except ValueError as error:
        # E.g. num_classes=5 against the 3 saved label_names: the arguments
        # alone describe the new head.
        try:
            fresh = cls(encoder=model.encoder, **task_kwargs)
        except (TypeError, ValueError):
            raise error from None
        if [tuple(w.shape) for w in fresh.weights] == old_shapes:
            raise error
        rebuilt = None
    if rebuilt is not None and [tuple(w.shape) for w in rebuilt.weights] == old_shapes:
        # Same variables, same order: only names and non-weight settings changed.
        rebuilt.set_weights(model.get_weights())
        return rebuilt
    what = ", ".join(f"{k}={v!r} (saved: {saved.get(k)!r})" for k, v in changed.items())
    if not replace_if_needed:
        raise ValueError(
            f"{model_dir} holds a trained {cls.__name__} head, and {what} changes its "
            f"shape. Pass new_head=True to start from a new, randomly initialized head, "
            f"or leave the argument out to keep the trained one."
        )
    warnings.warn(
        f"{model_dir}: the trained {cls.__name__} head is discarded for a new, randomly "
        f"initialized one, because {what} changes its shape.", stacklevel=3)
    return cls(encoder=model.encoder, **task_kwargs)


class DenseHeadTask(BertTask):
    """Base of the label heads: one encoder output -> dropout -> dense -> float32 logits.

    `BertClassifier` reads `pooled_output`, `BertTokenClassifier`
    `sequence_output`; the rest (layers, label checks, config) is this.

    Args:
        encoder: a `BertEncoder`.
        num_classes: int, number of labels.
        dropout_rate: float or None; None uses the encoder's dropout_rate.
        label_names: optional list of `num_classes` label strings.
        feature: str, the encoder output the head reads (set by subclasses).
        **kwargs: `BertTask` / `keras.Model` arguments (`preprocessor`, `name`).
    """

    def __init__(self, encoder, num_classes, dropout_rate=None, label_names=None, *,
                 feature, **kwargs):
        label_names = check_labels(num_classes, label_names)
        rate = encoder.dropout_rate if dropout_rate is None else dropout_rate
        check_rate("dropout_rate", rate)

        # === Layers ===
        self.encoder = encoder
        self.dropout = keras.layers.Dropout(rate, dtype=encoder.dtype_policy, name="dropout")
        self.output_dense = keras.layers.Dense(
            num_classes,
            kernel_initializer=initializer(encoder.initializer_range),
            dtype=encoder.dtype_policy,
            name="logits",
        )

        # === Functional graph ===
        inputs = dict(encoder.input)
        features = encoder(inputs)[feature]
        logits = self.output_dense(self.dropout(features))
        logits = keras.layers.Activation("linear", dtype="float32", name="float32_logits")(logits)
        super().__init__(inputs=inputs, outputs=logits, **kwargs)

        # === Config ===
        self.num_classes = num_classes
        self.dropout_rate = dropout_rate
        self.label_names = label_names
        self.uses_pooler = feature == "pooled_output"

    def task_config(self):
        return {
            "num_classes": self.num_classes,
            "dropout_rate": self.dropout_rate,
            "label_names": self.label_names,
        }


def check_labels(num_classes, label_names):
    """Validates `num_classes` and the optional `label_names` against it."""
    if isinstance(num_classes, bool) or not isinstance(num_classes, int) or num_classes < 1:
        raise ValueError(f"Expected num_classes >= 1. Received: num_classes={num_classes!r}")
    if label_names is not None:
        if isinstance(label_names, (str, bytes)) or not isinstance(label_names, (list, tuple)):
            raise ValueError(
                f"Expected label_names to be a list of str. Received: {label_names!r}"
            )
        label_names = [str(name) for name in label_names]
        if len(label_names) != num_classes:
            raise ValueError(
                f"label_names has {len(label_names)} names but num_classes={num_classes}. "
                f"Received: label_names={label_names}"
            )
        if len(set(label_names)) != len(label_names):
            raise ValueError(f"label_names has duplicates. Received: {label_names}")
    return label_names


def default_label_names(num_classes, label_names):
    """`label_names`, or "0".."K-1" when there are none."""
    return list(label_names) if label_names else [str(i) for i in range(num_classes)]
