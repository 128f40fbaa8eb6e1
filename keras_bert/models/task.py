"""BertTask: the base of every model that puts a head on a `BertEncoder`."""


import os
import warnings

import keras
import numpy as np
import tensorflow as tf

from keras_bert import sources
from keras_bert.config import check_rate
from keras_bert.layers.activations import initializer
from keras_bert.models import model_dir as model_dir_lib
from keras_bert.models import task_inputs
from keras_bert.models.keras_file import AtomicKerasSave
from keras_bert.models.registry import get_task
from keras_bert.models.replica_jit import ReplicaJitCompile
from keras_bert.text.preprocessor import BertPreprocessor

# Texts per call of the traced preprocessor when in-memory texts are
# preprocessed up front: bounds the memory of one call's ragged tokens.
_PREPROCESS_CHUNK = 8192

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


# The input rules live in task_inputs; these names stay importable from here.
_is_text = task_inputs.is_text
text_inputs = task_inputs.text_inputs


class _TracedPreprocessor:
    """A preprocessor traced once per number of text columns (one or a pair).

    Tracing the tokenizer and packer (a graph of about a thousand nodes with
    large constant tables) costs about a second; a `dataset.map` of the
    preprocessor paid it on each `fit` / `evaluate` / `predict`. Kept on the
    model (as a plain object, so Keras and SavedModel do not track it) and
    rebuilt when the model's preprocessor is replaced.
    """

    def __init__(self, preprocessor):
        self.preprocessor = preprocessor
        self.functions = {}

    def __call__(self, texts):
        """`texts` (a tuple of 1-D tf.string Tensors) -> encoder inputs."""
        count = len(texts)
        if count not in self.functions:
            preprocessor = self.preprocessor

            def preprocess(*columns):
                return preprocessor(tuple(columns))

            self.functions[count] = tf.function(
                preprocess, input_signature=[tf.TensorSpec([None], tf.string)] * count)
        return self.functions[count](*texts)


def _trim_to_longest(features, *rest):
    """Cuts a batch of up-front padded encoder inputs to its longest text, as
    `BertPacker(sequence_length=None)` pads each batch on its own."""
    lengths = tf.reduce_sum(tf.cast(features["padding_mask"], tf.int32), axis=1)
    width = tf.reduce_max(lengths)
    return ({k: v[:, :width] for k, v in features.items()},) + rest


def _dataset_text_parts(spec):
    """Reads a dataset's element_spec by Keras' (x, y[, sample_weight]) rule.

    Returns:
        None when the inputs are not strings (Keras takes the dataset as it
        is), else (features_spec, has_rest): `features_spec` is a string
        TensorSpec or a tuple of two (pairs); `has_rest` says whether labels
        (and sample weights) follow.
    """
    def is_string_spec(s):
        return isinstance(s, (tf.TensorSpec, tf.RaggedTensorSpec)) and s.dtype == tf.string

    def is_features(s):
        return is_string_spec(s) or (
            isinstance(s, tuple) and len(s) in (1, 2) and all(is_string_spec(t) for t in s))

    if is_string_spec(spec):
        return spec, False
    if isinstance(spec, tuple) and 1 <= len(spec) <= 3 and is_features(spec[0]):
        return spec[0], len(spec) > 1
    return None


class BertTask(AtomicKerasSave, ReplicaJitCompile, keras.Model):
    """A functional model made of `encoder` plus a task head, optionally with
    a `BertPreprocessor` that lets `fit`, `evaluate` and `predict` take raw text.

    Subclasses build their graph in `__init__`, keep the encoder as
    `self.encoder`, pass `preprocessor` and other Keras arguments through
    `**kwargs`, and list their own constructor arguments in `task_config()`.
    Saving, loading, serialization and raw-text inputs are shared here.

    With a preprocessor, `fit`, `evaluate`, `predict` (and `model(texts)`,
    `*_on_batch`) take strings. They are tokenized and packed in the tf.data
    pipeline (in parallel, each batch padded to its longest text), not in the
    model's graph. The integer input dict (token_ids, segment_ids,
    padding_mask) works as ever; ids and masks out of range are refused.

    Texts: a list or tuple of str, a 1-D numpy str/object array, a 1-D
    tf.string Tensor. A single string is refused: pass `[text]`.

    Sentence pairs, never guessed:
    - columns: a TUPLE of two text batches, `(texts_a, texts_b)`;
    - rows: a LIST of `(a, b)` tuples, or a string array of shape [N, 2].
    An outer list/tuple of two items of two strings each fits both readings;
    only those exact containers decide it (tuple of lists = columns, list of
    tuples = rows), any other is refused with both forms shown, as is a
    tuple of two strings (one pair `[(a, b)]`, or two texts `[a, b]`).
    Single-text heads (taggers) refuse pairs and 2-D string arrays;
    `BertSpanLabeler` takes `(questions, contexts)` by the same rule.

    Labels (`y`): a numpy array, list or tuple of ids (floats for
    regression), or label names (str) mapped through `label_names`; an
    unknown name, or names on a model without `label_names`, is an error.

    A `tf.data.Dataset` of batches follows Keras' rule: an element
    `(x, y[, sample_weight])` is inputs and labels, `x` being texts or the
    tuple `(texts_a, texts_b)`; string labels map through `label_names`.
    Unlabelled elements: `texts`, `(texts,)` or `((texts_a, texts_b),)`.

    `compile()` fills every argument left out with the task's fine-tuning
    defaults (`default_optimizer`, `default_loss`, `default_metrics`), and
    `from_pretrained` returns the model compiled with them; a `.keras` file
    keeps the compile configuration (`get_compile_config`). `save` writes
    `.keras` files atomically (`AtomicKerasSave`).

    `compile(jit_compile=True)` under a multi-device strategy compiles each
    replica's step with XLA and sums gradients outside it (`ReplicaJitCompile`).
    """

    #: The task's name in task.json and the registry; each task model class sets its own.
    task_name = None
    #: The `BertServingModule` subclass of this task's exports and of `predict`
    #: on strings; the task model's own folder sets it (None: the base module).
    serving_module_class = None
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

    #: How many string columns the head reads: 1 (texts), 2 (pairs).
    text_columns = (1, 2)

    def _what(self, method):
        return f"{type(self).__name__}.{method}"

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

    def _check_text_columns(self, count, method):
        """Refuses pairs for single-text heads and single texts for pair heads."""
        if count in self.text_columns:
            return
        if count == 2:
            raise ValueError(
                f"{self._what(method)} takes one batch of texts (a list of str or a 1-D "
                f"array), not sentence pairs or a 2-D string array."
            )
        raise ValueError(
            f"{self._what(method)} takes pairs (two batches of strings); "
            f"{task_inputs.PAIRS_RULE}."
        )

    def _texts(self, x, method):
        """`x`'s string columns (a tuple of 1-D tf.string Tensors) or None."""
        if (2 in self.text_columns and isinstance(x, tuple) and len(x) == 2
                and all(isinstance(v, (str, bytes)) for v in x)):
            # One pair, or two texts? Not guessed.
            raise ValueError(
                f"{self._what(method)}: a tuple of two strings could be one pair or two "
                f"texts; pass [(a, b)] for one pair, or a list [a, b] for two texts."
            )
        texts = task_inputs.text_inputs(x, self._what(method))
        if texts is None:
            return None
        self._check_text_columns(len(texts), method)
        self._require_preprocessor()
        counts = [task_inputs.count_rows(t) for t in texts]
        if len(set(counts)) > 1:
            raise ValueError(
                f"Sentence pairs need as many second texts as first texts. Received: "
                f"{counts[0]} and {counts[1]}."
            )
        return texts

    def _labels(self, y, count, method, name="y"):
        """`y` (or sample weights) as a numpy array of one row per example,
        label names mapped through `label_names` (see `task_inputs.label_array`)."""
        return task_inputs.label_array(
            y, count, getattr(self, "label_names", None), getattr(self, "num_classes", None),
            self._what(method), name)

    def _traced_preprocessor(self):
        """The model's preprocessor as a `_TracedPreprocessor`, traced once per
        model and text-column count (a new one when the preprocessor changes)."""
        preprocessor = self._require_preprocessor()
        traced = self.__dict__.get("_traced_preprocessor_cache")
        if traced is None or traced.preprocessor is not preprocessor:
            traced = _TracedPreprocessor(preprocessor)
            self._traced_preprocessor_cache = traced
        return traced

    def _preprocess_element(self, *element):
        """(texts[, labels[, sample_weight]]) -> (encoder inputs, ...)."""
        x, rest = element[0], element[1:]
        texts = x if isinstance(x, tuple) else (x,)
        return (self._traced_preprocessor()(texts),) + rest

    def _preprocessed_in_memory(self, texts):
        """Encoder inputs of all `texts` (a tuple of 1-D tf.string Tensors),
        padded to the longest, as numpy arrays; or None when the preprocessor
        is not a `BertPreprocessor` (its padding is then not known).

        Preprocessing up front through the traced function keeps tracing out
        of the tf.data pipeline (a new iterator per epoch re-instantiates the
        graphs it holds); with `sequence_length=None` each batch is then cut
        back to its own longest text by `_trim_to_longest`.
        """
        preprocessor = self._require_preprocessor()
        if not isinstance(preprocessor, BertPreprocessor):
            return None
        traced = self._traced_preprocessor()
        count = task_inputs.count_rows(texts[0])
        chunks = [
            {k: v.numpy() for k, v in traced(
                tuple(t[start:start + _PREPROCESS_CHUNK] for t in texts)).items()}
            for start in range(0, count, _PREPROCESS_CHUNK)
        ]
        width = max(chunk["token_ids"].shape[1] for chunk in chunks)
        pad_values = {"token_ids": preprocessor.packer.pad_token_id}
        return {
            key: np.concatenate([
                np.pad(chunk[key], [(0, 0), (0, width - chunk[key].shape[1])],
                       constant_values=pad_values.get(key, 0))
                for chunk in chunks
            ])
            for key in chunks[0]
        }

    def _text_dataset(self, x, y=None, sample_weight=None, batch_size=None, shuffle=False):
        """A batched, preprocessed tf.data.Dataset for string `x`, or None if
        `x` holds no strings (then Keras takes it as it is).

        This is the one place where text input becomes a dataset; subclasses
        may override it to take other raw forms (e.g. word lists with tag
        lists) and call `super()._text_dataset(...)` for the rest.

        Args:
            x: texts, pairs or a `tf.data.Dataset` (see `BertTask`).
            y: labels as users hold them (ids, floats, label names).
            sample_weight: optional per-example weights.
            batch_size: int, default 32 (in-memory inputs only).
            shuffle: bool, shuffle in-memory inputs each epoch.

        Returns:
            A `tf.data.Dataset` of (encoder inputs[, labels[, weights]]), or None.
        """
        if isinstance(x, tf.data.Dataset):
            return self._dataset_of_text_dataset(x)
        texts = self._texts(x, "fit")
        if texts is None:
            return None
        count = task_inputs.count_rows(texts[0])
        if count == 0:
            raise ValueError(f"{type(self).__name__}: fit and evaluate need at least one "
                             f"text. Received: 0 texts.")
        labels = []
        for name, value in (("y", y), ("sample_weight", sample_weight)):
            if value is not None:
                labels.append(self._labels(value, count, "fit", name))
        if sample_weight is not None and y is None:
            raise ValueError("sample_weight needs labels: pass y as well.")
        features = self._preprocessed_in_memory(texts)
        first = (texts if len(texts) == 2 else texts[0]) if features is None else features
        dataset = tf.data.Dataset.from_tensor_slices((first, *labels))
        if shuffle:
            dataset = dataset.shuffle(max(count, 1), reshuffle_each_iteration=True)
        dataset = dataset.batch(batch_size or 32)
        if features is None:
            dataset = dataset.map(self._preprocess_element,
                                  num_parallel_calls=tf.data.AUTOTUNE)
        elif self.preprocessor.sequence_length is None:
            dataset = dataset.map(_trim_to_longest)
        return dataset.prefetch(tf.data.AUTOTUNE)

    def _text_features_of(self, dataset, method):
        """Checks a string dataset's features; returns (parts, splitter) or None.

        `splitter` turns the element's x into the tuple of string columns.
        """
        parts = _dataset_text_parts(dataset.element_spec)
        if parts is None:
            return None
        self._require_preprocessor()
        features, has_rest = parts
        flat = tf.nest.flatten(features)
        if any(s.shape.rank == 0 for s in flat):
            raise ValueError(
                "The dataset yields single strings; batch it first, e.g. "
                "dataset.batch(32), as Keras takes one batch per element."
            )
        if isinstance(features, tuple):
            columns = len(features)

            def split(x):
                return tuple(x)
        elif features.shape.rank == 2 and features.shape[-1] == 2:
            columns = 2  # Rows of pairs, [batch, 2].

            def split(x):
                return (x[:, 0], x[:, 1])
        elif features.shape.rank == 1:
            columns = 1

            def split(x):
                return (x,)
        else:
            raise ValueError(
                f"{self._what(method)} takes a dataset of 1-D text batches (or pairs); its "
                f"texts have shape {features.shape}. {task_inputs.DATASET_RULE[0].upper()}"
                f"{task_inputs.DATASET_RULE[1:]}."
            )
        self._check_text_columns(columns, method)
        return parts, split

    def _dataset_of_text_dataset(self, dataset):
        checked = self._text_features_of(dataset, "fit")
        if checked is None:
            return None
        (features, has_rest), split = checked
        label_spec = dataset.element_spec[1] if has_rest else None
        map_labels = None
        if isinstance(label_spec, (tf.TensorSpec, tf.RaggedTensorSpec)) and (
                label_spec.dtype == tf.string):
            label_names = getattr(self, "label_names", None)
            if getattr(self, "num_classes", None) == 1 or not label_names:
                raise ValueError(
                    f"{type(self).__name__}: the dataset's labels are strings but the model "
                    f"has no label_names to map them to ids (a regression needs numbers). "
                    f"Pass ids, or build the model with label_names=[...]. If the strings "
                    f"are second texts: {task_inputs.DATASET_RULE}."
                )
            what = type(self).__name__

            def map_labels(labels):
                return task_inputs.label_ids_tensor(labels, label_names, what)

        def preprocess(x, *rest):
            rest = list(rest)
            if rest and map_labels is not None:
                rest[0] = map_labels(rest[0])
            return (self._traced_preprocessor()(split(x)),) + tuple(rest)

        if isinstance(dataset.element_spec, tuple):
            function = preprocess
        else:
            def function(x):
                return preprocess(x)
        return dataset.map(function, num_parallel_calls=tf.data.AUTOTUNE).prefetch(
            tf.data.AUTOTUNE)

    def _predict_dataset_texts(self, dataset):
        """The string columns of a dataset for `predict` (labels dropped), as
        1-D numpy object arrays, or None when it holds no strings."""
        checked = self._text_features_of(dataset, "predict")
        if checked is None:
            return None
        (features, has_rest), split = checked
        self._refuse_string_labels_without_names(dataset)
        if isinstance(dataset.element_spec, tuple):
            dataset = dataset.map(lambda x, *rest: split(x))
        else:
            dataset = dataset.map(lambda x: split(x))
        parts = [[] for _ in range(len(dataset.element_spec))]
        for columns in dataset.as_numpy_iterator():
            for part, column in zip(parts, columns):
                part.append(column)
        return tuple(np.concatenate(p) if p else np.zeros([0], object) for p in parts)

    def _refuse_string_labels_without_names(self, dataset):
        """predict drops labels; strings there without label_names are more
        likely second texts than labels, so they are refused, not dropped."""
        spec = dataset.element_spec
        if (isinstance(spec, tuple) and len(spec) > 1
                and isinstance(spec[1], (tf.TensorSpec, tf.RaggedTensorSpec))
                and spec[1].dtype == tf.string and not getattr(self, "label_names", None)):
            raise ValueError(
                f"{self._what('predict')}: the dataset yields (x, strings); "
                f"{task_inputs.DATASET_RULE}, but this model has no label_names to read "
                f"the strings as labels. Map the dataset to ((texts_a, texts_b),) for pairs, "
                f"or to (texts,) to drop the labels."
            )

    def _empty_prediction(self):
        """predict's result for zero texts: each output with 0 rows."""
        def empty(tensor):
            shape = [0] + [d or 0 for d in tensor.shape[1:]]
            return np.zeros(shape, dtype=tensor.dtype)
        return keras.tree.map_structure(empty, self.output)

    def _keras_call(self, method, *args, **kwargs):
        """Runs a Keras training/evaluation/prediction entry point.

        A call that fails while Keras traces its step function leaves the
        half-traced tf.function cached on the model, and every later call
        then fails with "Creating variables on a non-first call to a function
        decorated with tf.function". The cached functions are dropped on
        failure, so a fixed call works on the same model.
        """
        try:
            return method(*args, **kwargs)
        except BaseException:
            self.train_function = None
            self.test_function = None
            self.predict_function = None
            raise

    def _integer_inputs(self, x, y, sample_weight, method):
        """Checks the integer input dict, and reads labels as users hold them."""
        if isinstance(x, tf.data.Dataset):
            return self._checked_integer_dataset(x, method), y, sample_weight
        task_inputs.check_integer_inputs(x, self.encoder, self._what(method))
        if isinstance(x, dict) and "token_ids" in x:
            count = len(x["token_ids"])
            y = self._labels(y, count, method)
            sample_weight = self._labels(sample_weight, count, method, "sample_weight")
        return x, y, sample_weight

    def _checked_integer_dataset(self, dataset, method):
        spec = dataset.element_spec
        features = spec[0] if isinstance(spec, tuple) else spec
        if not isinstance(features, dict) or "token_ids" not in features:
            return dataset
        encoder, what = self.encoder, self._what(method)

        def check(x, *rest):
            return (task_inputs.integer_checks_in_graph(x, encoder, what),) + rest

        if isinstance(spec, tuple):
            checked = dataset.map(check, num_parallel_calls=tf.data.AUTOTUNE)
        else:
            checked = dataset.map(lambda x: check(x)[0], num_parallel_calls=tf.data.AUTOTUNE)
        return checked.prefetch(tf.data.AUTOTUNE)

    def _require_labels(self, x, y, method):
        """fit/evaluate without labels would fail deep in Keras ("None values
        not supported"); say so up front."""
        if isinstance(x, tf.data.Dataset):
            parts = _dataset_text_parts(x.element_spec)
            missing = parts is not None and not parts[1]
        else:
            # The integer dict path is Keras' own, as for any model.
            missing = y is None and x is not None and not isinstance(x, dict) and (
                task_inputs.holds_strings(x))
        if missing:
            raise ValueError(
                f"{self._what(method)} needs labels: pass y (ids, or names from "
                f"label_names), or a dataset of (x, y) batches. Received no labels."
            )

    def fit(self, x=None, y=None, batch_size=None, epochs=1, verbose="auto", callbacks=None,
            validation_split=0.0, validation_data=None, shuffle=True, class_weight=None,
            sample_weight=None, **kwargs):
        self._require_labels(x, y, "fit")
        dataset = self._text_dataset(x, y, sample_weight, batch_size, shuffle)
        if dataset is None:
            x, y, sample_weight = self._integer_inputs(x, y, sample_weight, "fit")
            return self._keras_call(
                super().fit, x=x, y=y, batch_size=batch_size, epochs=epochs, verbose=verbose,
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
        return self._keras_call(
            super().fit, dataset, epochs=epochs, verbose=verbose, callbacks=callbacks,
            validation_data=validation_data, shuffle=False, class_weight=class_weight,
            **kwargs)

    def evaluate(self, x=None, y=None, batch_size=None, verbose="auto", sample_weight=None,
                 **kwargs):
        self._require_labels(x, y, "evaluate")
        dataset = self._text_dataset(x, y, sample_weight, batch_size)
        if dataset is None:
            x, y, sample_weight = self._integer_inputs(x, y, sample_weight, "evaluate")
            return self._keras_call(
                super().evaluate, x=x, y=y, batch_size=batch_size, verbose=verbose,
                sample_weight=sample_weight, **kwargs)
        return self._keras_call(super().evaluate, dataset, verbose=verbose, **kwargs)

    def predict(self, x, batch_size=None, verbose="auto", steps=None, callbacks=None):
        if isinstance(x, tf.data.Dataset):
            if self._text_features_of(x, "predict") is not None:
                self._refuse_string_labels_without_names(x)
                if isinstance(x.element_spec, tuple):
                    x = x.map(lambda features, *rest: (features,))
            dataset = self._text_dataset(x)
        else:
            texts = self._texts(x, "predict")
            if texts is not None and task_inputs.count_rows(texts[0]) == 0:
                return self._empty_prediction()
            dataset = None if texts is None else self._text_dataset(
                texts if len(texts) == 2 else texts[0], batch_size=batch_size)
        if dataset is None:
            x, _, _ = self._integer_inputs(x, None, None, "predict")
            return self._keras_call(super().predict, x, batch_size=batch_size,
                                    verbose=verbose, steps=steps, callbacks=callbacks)
        return self._keras_call(super().predict, dataset, verbose=verbose, steps=steps,
                                callbacks=callbacks)

    def _predict_texts(self, x, method="predict"):
        """The string columns of `x` for heads whose `predict` decodes text
        (taggers, QA): in-memory inputs and datasets alike, or None."""
        if isinstance(x, tf.data.Dataset):
            return self._predict_dataset_texts(x)
        return self._texts(x, method)

    # === Batch-level Keras entry points on strings ===

    def __call__(self, *args, **kwargs):
        # Strings never reach the functional graph: it takes the integer dict.
        if args and not isinstance(args[0], dict) and task_inputs.holds_strings(args[0]):
            texts = self._texts(args[0], "__call__")
            args = (self.preprocessor(texts),) + args[1:]
        return super().__call__(*args, **kwargs)

    def predict_on_batch(self, x):
        texts = None if isinstance(x, dict) else self._texts(x, "predict_on_batch")
        if texts is None:
            task_inputs.check_integer_inputs(x, self.encoder, self._what("predict_on_batch"))
            return super().predict_on_batch(x)
        count = task_inputs.count_rows(texts[0])
        return self.predict(x, batch_size=max(count, 1), verbose=0)

    def _on_batch_inputs(self, x, y, sample_weight, method):
        texts = None if isinstance(x, dict) else self._texts(x, method)
        if texts is None:
            return self._integer_inputs(x, y, sample_weight, method)
        count = task_inputs.count_rows(texts[0])
        return (self.preprocessor(texts), self._labels(y, count, method),
                self._labels(sample_weight, count, method, "sample_weight"))

    def train_on_batch(self, x, y=None, sample_weight=None, class_weight=None,
                       return_dict=False):
        x, y, sample_weight = self._on_batch_inputs(x, y, sample_weight, "train_on_batch")
        return self._keras_call(super().train_on_batch, x, y, sample_weight=sample_weight,
                                class_weight=class_weight, return_dict=return_dict)

    def test_on_batch(self, x, y=None, sample_weight=None, return_dict=False):
        x, y, sample_weight = self._on_batch_inputs(x, y, sample_weight, "test_on_batch")
        return self._keras_call(super().test_on_batch, x, y, sample_weight=sample_weight,
                                return_dict=return_dict)

    # === Model directories ===

    def save_pretrained(self, model_dir, vocab_file=None, task_info=None):
        """Writes the model directory: config.json, task.json, weights, vocab.txt.

        Args:
            model_dir: str, directory to (re)write atomically.
            vocab_file: str, vocab.txt to copy in; defaults to the one the
                model was loaded with, else the preprocessor's vocabulary.
            task_info: dict of extra facts for task.json, e.g.
                {"eval_metrics": ...}; the preprocessor's text settings
                (max_seq_length, lowercase, truncation) are recorded too
                (`task_info` wins over them).
        """
        info = {}
        if self.preprocessor is not None:
            info = self.preprocessor.text_settings.to_json()
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
            model_dir: str, the model directory, or any source
                `keras_bert.sources.resolve_source` takes (a Hugging Face
                folder or Hub id, a Google TF1 folder, "bert-base-uncased"):
                converted once into a cache, with its casing, maximum length
                and (for a fine-tuned Hugging Face head) labels.
            dtype: None or a Keras dtype policy name ("mixed_bfloat16").
            max_seq_length: int, the longest packed text of the attached
                preprocessor; default task.json's, else the model's
                max_position_embeddings (at most 512): see
                `keras_bert.text.resolve_text_settings`.
            lowercase: bool; default task.json's, else guessed from vocab.txt
                (with a warning).
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

        model_dir = sources.resolve_source(model_dir)
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
                max_seq_length=max_seq_length, lowercase=lowercase,
                where=os.path.join(model_dir, model_dir_lib.TASK_FILE))
        if model._has_default_recipe():
            model.compile()
        return model

    @classmethod
    def from_preset(cls, model_dir, **kwargs):
        """`from_pretrained`, under the name keras-hub users know."""
        return cls.from_pretrained(model_dir, **kwargs)

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
