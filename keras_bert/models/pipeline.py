"""TextPipeline: raw inputs through the model's preprocessor in every Keras entry point.

`BertTask` mixes it in. One hook, `preprocess_samples`, turns a batch of raw
inputs (texts or pairs, labels, sample weights) into model inputs; `fit`,
`evaluate`, `predict`, `model(texts)` and the `*_on_batch` methods go through
it. The rules of what counts as texts, pairs and labels live in `task_inputs`.
"""

import keras
import numpy as np
import tensorflow as tf

from keras_bert.models import task_inputs
from keras_bert.text.preprocessor import BertPreprocessor

# Texts per call of the traced preprocessor when in-memory texts are
# preprocessed up front: bounds the memory of one call's ragged tokens.
_PREPROCESS_CHUNK = 8192


class _TracedPreprocessor:
    """A preprocessor traced once per number of text columns (one or a pair).

    Tracing the tokenizer and packer is slow, so it is done once per model, not
    per `dataset.map`; kept as a plain object (untracked by Keras and SavedModel).
    """

    def __init__(self, preprocessor):
        self.preprocessor = preprocessor
        self.key = preprocessor.settings_key
        self.functions = {}

    def __call__(self, texts):
        """`texts` (a tuple of 1-D tf.string Tensors) -> encoder inputs."""
        count = len(texts)
        if count not in self.functions:
            preprocessor = self.preprocessor

            def preprocess(*columns):
                return preprocessor(tuple(columns))

            self.functions[count] = tf.function(
                preprocess, input_signature=[tf.TensorSpec([None], tf.string)] * count,
                autograph=False)
        return self.functions[count](*texts)


def _trim_to_longest(multiple=1):
    """A map function that cuts a batch of up-front padded encoder inputs to its
    longest text (rounded up to `multiple`), as `BertPacker(sequence_length=None)`
    pads each batch on its own."""
    def trim(features, *rest):
        lengths = tf.reduce_sum(tf.cast(features["padding_mask"], tf.int32), axis=1)
        width = tf.reduce_max(lengths)
        width = (width + multiple - 1) // multiple * multiple  # Slicing past the end is a no-op.
        return ({k: v[:, :width] for k, v in features.items()},) + rest
    return trim


def _dataset_text_parts(spec):
    """A dataset's element_spec by Keras' (x, y[, sample_weight]) rule: None when the
    inputs are not strings, else (features_spec, has_rest): a string TensorSpec or a
    tuple of two (pairs), and whether labels (and sample weights) follow."""
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


class TextPipeline:
    """Mixin of `BertTask`: Keras' entry points on raw strings, through `preprocess_samples`.

    The model keeps `preprocessor` (a `BertPreprocessor`, or None: integer
    inputs only), `encoder`, and optionally `label_names` / `num_classes`.
    """

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

    def _check_pair_segments(self):
        """Refuses pairs whose second text would get segment id 1 in a one-row segment
        embedding (type_vocab_size 1, RoBERTa's): the model's fact against the packer's."""
        packer = self._require_preprocessor().packer
        if self.encoder.type_vocab_size == 1 and packer.pair_separator == 1:
            raise ValueError(
                f"{type(self).__name__}: the encoder has one token type (type_vocab_size=1), "
                f"but its preprocessor's {type(self.preprocessor.tokenizer).__name__} packs "
                f"pairs as [CLS] a [SEP] b [SEP] with segment id 1 on b. Use the tokenizer "
                f"the model was released with (RoBERTa and XLM-R pack <s> a </s></s> b </s>, "
                f"one segment): from_pretrained(MODEL_DIR) attaches it.")

    def _labels(self, y, count, method, name="y"):
        """`y` (or sample weights) as a numpy array of one row per example,
        label names mapped through `label_names` (see `task_inputs.label_array`)."""
        return task_inputs.label_array(
            y, count, getattr(self, "label_names", None), getattr(self, "num_classes", None),
            self._what(method), name)

    def preprocess_samples(self, x, y=None, sample_weight=None):
        """The one hook: a batch of raw inputs -> model inputs (and labels, weights).

        Every Keras entry point on strings comes here. TensorFlow ops only.

        Args:
            x: string Tensor [B], or a tuple of one or two of them (pairs).
            y: None, or labels [B, ...]: ids, floats, or strings mapped
                through `label_names`.
            sample_weight: None, or float weights [B, ...].

        Returns:
            The encoder input dict when `y` is None, else `(inputs, y)` or
            `(inputs, y, sample_weight)` (`keras.utils.pack_x_y_sample_weight`).
        """
        texts = tuple(x) if isinstance(x, (tuple, list)) else (x,)
        if len(texts) == 2:
            self._check_pair_segments()
        features = self._traced_preprocessor()(texts)
        if y is not None and y.dtype == tf.string:
            y = task_inputs.label_ids_tensor(y, self.label_names, type(self).__name__)
        return keras.utils.pack_x_y_sample_weight(features, y, sample_weight)

    def _traced_preprocessor(self):
        """The model's preprocessor as a `_TracedPreprocessor`, traced once per
        model, setting and text-column count (anew when either changes)."""
        preprocessor = self._require_preprocessor()
        traced = self.__dict__.get("_traced_preprocessor_cache")
        if traced is None or traced.key != preprocessor.settings_key:
            traced = _TracedPreprocessor(preprocessor)
            object.__setattr__(self, "_traced_preprocessor_cache", traced)
        return traced

    def _preprocessed_in_memory(self, texts):
        """Encoder inputs of all `texts` (a tuple of 1-D tf.string Tensors),
        padded to the longest, as numpy arrays; None when the preprocessor is
        not a `BertPreprocessor` (its padding is then not known).

        Up front, tracing stays out of the tf.data pipeline (each epoch's new
        iterator would re-instantiate its graphs); `_trim_to_longest` then cuts
        each batch back to its longest text.
        """
        preprocessor = self._require_preprocessor()
        if not isinstance(preprocessor, BertPreprocessor):
            return None
        count = task_inputs.count_rows(texts[0])
        chunks = [
            {k: v.numpy() for k, v in self.preprocess_samples(
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
        """A batched, preprocessed tf.data.Dataset of (encoder inputs[, labels[,
        weights]]) for string `x` (texts, pairs or a dataset), or None if `x` holds
        no strings (then Keras takes it as it is). The one place text input becomes
        a dataset: subclasses override it for other raw forms (word lists with tags).
        `batch_size` (default 32) and `shuffle` apply to in-memory inputs.
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
            dataset = dataset.map(self.preprocess_samples, num_parallel_calls=tf.data.AUTOTUNE)
        elif self.preprocessor.sequence_length is None:
            dataset = dataset.map(_trim_to_longest(self.preprocessor.pad_to_multiple_of))
        return dataset.prefetch(tf.data.AUTOTUNE)

    def _text_features_of(self, dataset, method):
        """Checks a string dataset's features; returns (parts, splitter), `splitter`
        turning the element's x into the tuple of string columns, or None."""
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
        if isinstance(label_spec, (tf.TensorSpec, tf.RaggedTensorSpec)) and (
                label_spec.dtype == tf.string) and (
                getattr(self, "num_classes", None) == 1 or not getattr(self, "label_names", None)):
            raise ValueError(
                f"{type(self).__name__}: the dataset's labels are strings but the model "
                f"has no label_names to map them to ids (a regression needs numbers). "
                f"Pass ids, or build the model with label_names=[...]. If the strings "
                f"are second texts: {task_inputs.DATASET_RULE}."
            )

        if isinstance(dataset.element_spec, tuple):
            def function(x, *rest):
                return self.preprocess_samples(split(x), *rest)
        else:
            def function(x):
                return self.preprocess_samples(split(x))
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
        """Runs a Keras entry point, dropping its cached step functions on failure:
        a half-traced one would make every later call fail with "Creating
        variables on a non-first call to a function decorated with tf.function".
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

    def _class_weight_ids(self, class_weight):
        """`class_weight` keyed by label ids; keys that are label names map through
        `label_names` (an unknown name is an error that lists them)."""
        if not class_weight or not any(isinstance(k, (str, bytes)) for k in class_weight):
            return class_weight
        names = list(getattr(self, "label_names", None) or [])
        result = {}
        for key, weight in class_weight.items():
            if isinstance(key, bytes):
                key = key.decode("utf-8")
            if isinstance(key, str):
                if key not in names:
                    raise ValueError(
                        f"class_weight names the label {key!r}, but this model's label_names "
                        f"are {names or 'not set'}. Key class_weight by those names or by "
                        f"label ids 0..{getattr(self, 'num_classes', 1) - 1}.")
                key = names.index(key)
            result[int(key)] = weight
        return result

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
        class_weight = self._class_weight_ids(class_weight)
        dataset = self._text_dataset(x, y, sample_weight, batch_size, shuffle)
        if dataset is None:
            x, y, sample_weight = self._integer_inputs(x, y, sample_weight, "fit")
            self._build_optimizer()
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
        self._build_optimizer()
        return self._keras_call(
            super().fit, dataset, epochs=epochs, verbose=verbose, callbacks=callbacks,
            validation_data=validation_data, shuffle=False, class_weight=class_weight,
            **kwargs)

    def _build_optimizer(self):
        """Creates the optimizer's variables before `fit` traces its step. Keras
        (no strategy set) creates them inside the step's first trace, and a
        tf.function that creates variables is traced twice: building them here
        makes the first `fit` of a model about 40% faster to start."""
        optimizer = getattr(self, "optimizer", None)
        if self.built and self.compiled and optimizer is not None and not optimizer.built:
            with self.distribute_strategy.scope():
                optimizer.build(self.trainable_variables)

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

    #: True for heads whose `predict` on strings returns what their export's
    #: default signature returns (decoded answers), by the serving module's code.
    predicts_like_export = False

    def predict(self, x, batch_size=None, verbose="auto", steps=None, callbacks=None):
        if self.predicts_like_export:
            texts = self._predict_texts(x)
            if texts is not None:
                return self.predict_strings(texts, batch_size=batch_size)
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

    def predict_strings(self, texts, function=None, batch_size=None):
        """Runs `function` of `self.serving_module()` (default: its default signature)
        on string columns `texts`, `batch_size` (default 64) at a time; returns what
        that signature of the export returns (a dict of numpy arrays). The one route
        of `predict` for heads that answer as their export does.
        """
        module = self.serving_module()
        if function is None:
            function = getattr(module, module.SIGNATURES[module.DEFAULT_SIGNATURE])
        return module.predict_strings(function, texts, batch_size or 64,
                                      what=f"{type(self).__name__}.predict")

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
            args = (self.preprocess_samples(texts),) + args[1:]
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
        return (self.preprocess_samples(texts), self._labels(y, count, method),
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

