"""ClassifierServingModule: raw text (or text pairs) -> probabilities and labels."""

import tensorflow as tf

from keras_bert.export.serving_module import (STRINGS, BertServingModule, check_rank,
                                              check_same_batch, overrides_call)
from keras_bert.models.dense_head import check_labels, default_label_names
from keras_bert.text.windows import text_windows


class ClassifierServingModule(BertServingModule):
    """Serving signatures of a `BertClassifier`.

    serving_default / classify, on `text` (and `text_b` with `pairs=True`),
    string [B]:
        probabilities  float32 [B, K]  softmax over the K classes
        label_id       int32 [B]       argmax
        label          string [B]      label_names[label_id] ("0".."K-1" if none)
    Regression (num_classes=1):
        score          float32 [B]     the model's output

    Pairs are packed as [CLS] text [SEP] text_b [SEP], truncated longest
    first to `max_seq_length`. `preprocess` takes the same inputs.

    With `sub_batches=k > 1`, a request of at least `8 * k` texts is sorted
    by token length in the graph, split into k sub-batches, each padded to
    its own longest text, and the rows are returned in the request's order
    (same outputs as k=1, up to float rounding). `sub_batches` may also be a
    table of `(min_texts, k)` pairs, ascending (`keras_bert.export.tuning`).

    A model with `windows` reads each text as overlapping windows
    (`keras_bert.text.windows.text_windows`), runs all windows of the
    request as one batch and combines each text's window logits ("mean" or
    "max") before the softmax. classify then also returns
        num_windows    int32 [B]       windows read of each text
    and `preprocess` returns the windows: token_ids, segment_ids,
    padding_mask int32 [F, S] and example int32 [F] (the text of each).
    Windows read single texts (not pairs) and run as one batch (sub_batches=1).

    Args:
        model: a `BertClassifier`.
        label_names: list of K str, or None for the model's `label_names`
            (or "0".."K-1" if it has none).
        pairs: bool, signatures take (text, text_b).
        sub_batches: int >= 1, length-sorted sub-batches per request, or a
            table of `(min_texts, k)` pairs (see above).
        **kwargs: `BertServingModule` arguments.
    """

    SIGNATURES = {**BertServingModule.SIGNATURES, "classify": "classify"}
    DEFAULT_SIGNATURE = "classify"
    TASK_OPTIONS = ("pairs", "sub_batches")
    #: a request is split only when every sub-batch gets at least this many texts.
    MIN_SUB_BATCH = 8

    @classmethod
    def sub_batch_table(cls, sub_batches):
        """`sub_batches` (an int or `(min_texts, k)` pairs) as a tuple of pairs, ascending.

        An int k > 1 splits requests of at least `MIN_SUB_BATCH * k` texts:
        `((8 * k, k),)`; 1 never splits: `()`.
        """
        if isinstance(sub_batches, int) and not isinstance(sub_batches, bool):
            if sub_batches < 1:
                raise ValueError(f"Expected sub_batches to be an int >= 1. Received: "
                                 f"sub_batches={sub_batches!r}")
            return ((cls.MIN_SUB_BATCH * sub_batches, sub_batches),) if sub_batches > 1 else ()
        try:
            table = tuple((int(n), int(k)) for n, k in sub_batches)
        except (TypeError, ValueError):
            table = None
        if (not table or any(k < 1 or n < cls.MIN_SUB_BATCH * k for n, k in table)
                or any(a[0] >= b[0] for a, b in zip(table, table[1:]))):
            raise ValueError(
                f"Expected sub_batches to be an int >= 1 or (min_texts, k) pairs with "
                f"min_texts ascending and >= {cls.MIN_SUB_BATCH} * k. Received: "
                f"sub_batches={sub_batches!r}")
        return table

    @classmethod
    def options_from_task_info(cls, task_info):
        # "pairs": tools/finetune.py writes it for sentence-pair data.
        return {"pairs": bool(task_info.get("pairs", False))}

    def __init__(self, model, preprocessor, label_names=None, pairs=False, sub_batches=1,
                 **kwargs):
        # Plain tuples (a list would be tracked into the SavedModel).
        self._sub_batch_table = self.sub_batch_table(sub_batches)
        self.sub_batches = sub_batches if isinstance(sub_batches, int) else tuple(
            self._sub_batch_table)
        # Plain attributes (a dict would be tracked into the SavedModel).
        windows = getattr(model, "windows", None)
        self.window_stride = windows and windows["stride"]
        self.max_windows = windows and windows["max_windows"]
        self.window_combine = windows and windows["combine"]
        if windows is not None and (pairs or self._sub_batch_table):
            raise ValueError(
                f"Windows read single texts in one batch; received "
                f"{'pairs=True' if pairs else f'sub_batches={sub_batches}'} for a classifier "
                f"with windows={windows}. Export it without windows "
                f"(model.set_windows(None)) or drop --pairs / --sub-batches.")
        if self._sub_batch_table and overrides_call(preprocessor):
            raise ValueError(
                f"sub_batches={sub_batches!r} sorts texts by their token counts, which a "
                f"preprocessor with its own call ({type(preprocessor).__name__}) does not "
                f"give; export it with sub_batches=1.")
        num_classes = model.num_classes
        label_names = check_labels(
            num_classes, default_label_names(num_classes, label_names or model.label_names))
        self.pairs = bool(pairs)
        self.num_classes = num_classes
        self.label_names = tf.constant([str(name) for name in label_names], tf.string)
        super().__init__(model, preprocessor, **kwargs)

    def _define_signatures(self):
        super()._define_signatures()
        specs = [STRINGS, STRINGS] if self.pairs else [STRINGS]
        if self.pairs:
            def classify(text, text_b):
                return self._classify_by_size(text, text_b)

            def preprocess(text, text_b):
                return self.preprocess_texts(check_same_batch(text, text_b))
        elif self.window_stride is not None:
            def classify(text):
                logits, num_windows = self._window_logits(text)
                return {**self._outputs(logits), "num_windows": num_windows}

            def preprocess(text):
                windows = self._text_windows(text)
                keys = ("token_ids", "segment_ids", "padding_mask", "example")
                return {k: windows[k] for k in keys}

            def logits(text):
                logits, num_windows = self._window_logits(text)
                return {"logits": logits, "num_windows": num_windows}

            # For `BertClassifier.predict`; not a signature of the export.
            self._keras.logits_fn = tf.function(logits, input_signature=specs, autograph=False)
        else:
            def classify(text):
                return self._classify_by_size(text)

            def preprocess(text):
                return self.preprocess_texts((text,))

        if self.window_stride is None:
            # classify with k sub-batches (a scalar int32) whatever the request size:
            # classify calls it with the table's k, the tuner with each candidate
            # (`keras_bert.export.tuning`), one graph for both; not a signature.
            def classify_in_sub_batches(*inputs):
                texts = check_same_batch(*inputs[:-1]) if self.pairs else inputs[:-1]
                segments = tuple(self.tokenize(t) for t in texts)
                return self._outputs(self.run_model_in_sub_batches(segments, inputs[-1]))

            # Not inlined: classify's untaken branch is then one node, not a whole
            # while loop that the executor passes a dead value through (BENCHMARKS.md).
            self._keras.classify_in_sub_batches = tf.function(
                classify_in_sub_batches, input_signature=specs + [tf.TensorSpec([], tf.int32)],
                experimental_attributes={"_noinline": True}, autograph=False)
        self.classify = tf.function(classify, input_signature=specs, autograph=False)
        self.preprocess = tf.function(preprocess, input_signature=specs, autograph=False)

    def set_sub_batches(self, sub_batches):
        """Sets `sub_batches` (an int or a table) before `classify` is first traced.

        The tuner (`keras_bert.export.tuning`) measures on this module's own
        graph, then sets its choice here; the export traces classify with it.
        """
        if self.classify.experimental_get_tracing_count():
            raise RuntimeError("classify is traced already: set sub_batches before the first "
                               "call (or build the module with sub_batches=...).")
        table = self.sub_batch_table(sub_batches)
        if self.window_stride is not None and table:
            raise ValueError(f"A classifier with windows runs a request as one batch. "
                             f"Received: sub_batches={sub_batches!r}")
        self._sub_batch_table = table
        self.sub_batches = sub_batches if isinstance(sub_batches, int) else table

    def _classify_by_size(self, *texts):
        """classify's outputs: a request as the sub-batch table says for its size.

        Below the table's first size (1 text included), and always without a
        table, the request runs as one batch by the graph of an untuned export.
        """
        if not self._sub_batch_table:
            return self.classify_one_batch(*texts)
        k = self._sub_batch_count(texts[0])
        return tf.cond(k > 1, lambda: self._keras.classify_in_sub_batches(*texts, k),
                       lambda: self.classify_one_batch(*texts))

    def classify_one_batch(self, *texts):
        """classify's outputs of a request run as one batch: an untuned export's
        classify (the tuner times it against the chosen table at 1 text)."""
        return self._classify(check_same_batch(*texts) if self.pairs else texts)

    def _classify(self, texts):
        """classify's outputs on a tuple of string batches run as one batch (also the
        LiteRT export's path, `keras_bert.export.tflite`: no sub-batches there)."""
        return self._outputs(self.run_model(self.preprocess_texts(texts)))

    def _outputs(self, logits):
        """The classify outputs of logits [B, K]."""
        if self.num_classes == 1:
            return {"score": logits[:, 0]}
        label_id = tf.argmax(logits, axis=-1, output_type=tf.int32)
        return {
            "probabilities": tf.nn.softmax(logits, axis=-1),
            "label_id": label_id,
            "label": tf.gather(self.label_names, label_id),
        }

    def _text_windows(self, text):
        return text_windows(self.tokenize(text), self.pack,
                            self.truncation_length, self.window_stride,
                            self.max_windows)

    def _window_logits(self, text):
        """(logits float32 [B, K] combined over each text's windows, num_windows int32 [B])."""
        windows = self._text_windows(text)
        logits = self.run_model(
            {k: windows[k] for k in ("token_ids", "segment_ids", "padding_mask")})  # (F, K)
        combine = (tf.math.unsorted_segment_max if self.window_combine == "max"
                   else tf.math.unsorted_segment_mean)
        # Every text has at least one window (an empty text: [CLS] [SEP]).
        return combine(logits, windows["example"], tf.shape(text)[0]), windows["num_windows"]

    def _sub_batch_count(self, text):
        """int32 scalar, the k of the sub-batch table for a request of `text`'s size."""
        batch = tf.shape(check_rank(text, 1))[0]
        thresholds = tf.constant([0] + [n for n, _ in self._sub_batch_table], tf.int32)
        counts = tf.constant([1] + [k for _, k in self._sub_batch_table], tf.int32)
        # The last entry whose min_texts <= B (entry 0: one batch).
        return tf.gather(counts, tf.searchsorted(thresholds, [batch], side="right")[0] - 1)

    def run_model_in_sub_batches(self, segments, k):
        """Logits [B, K] of k length-sorted sub-batches (k a scalar int32 tensor), rows in
        input order; k = 1 runs the request as one batch."""

        def whole():
            return self.run_model(self.pack(segments))

        def split():
            lengths = tf.add_n([tf.cast(s.row_lengths(), tf.int32) for s in segments])  # (B,)
            batch = tf.shape(lengths)[0]
            order = tf.argsort(lengths, stable=True)  # (B,) shortest first

            def part(i, parts):
                index = order[batch * i // k:batch * (i + 1) // k]
                logits = self.run_model(self.pack(tuple(tf.gather(s, index) for s in segments)))
                return i + 1, parts.write(i, logits)

            # One graph for any k (a loop, not k copies): the tuner times every k on it.
            parts = tf.TensorArray(tf.float32, size=k, infer_shape=False,
                                   element_shape=[None, self.num_classes])
            _, parts = tf.while_loop(lambda i, _: i < k, part, (tf.constant(0), parts))
            # Row j of the concatenation is input row order[j].
            return tf.gather(parts.concat(), tf.math.invert_permutation(order))

        return tf.cond(k > 1, split, whole)

