"""ClassifierServingModule: raw text (or text pairs) -> probabilities and labels."""

import tensorflow as tf

from keras_bert.export.serving_module import STRINGS, BertServingModule, check_same_batch
from keras_bert.models.task import check_labels, default_label_names


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
    by token length in the graph, split into k sub-batches of about equal
    size, each padded to its own longest text, and the rows are returned in
    the request's order: a few long tweets then no longer pad the whole
    request (same outputs as k=1, up to float rounding).

    Args:
        model: a `BertClassifier`.
        label_names: list of K str, or None for the model's `label_names`
            (or "0".."K-1" if it has none).
        pairs: bool, signatures take (text, text_b).
        sub_batches: int >= 1, length-sorted sub-batches per request (see above).
        **kwargs: `BertServingModule` arguments.
    """

    SIGNATURES = {**BertServingModule.SIGNATURES, "classify": "classify"}
    DEFAULT_SIGNATURE = "classify"
    TASK_OPTIONS = ("pairs", "sub_batches")
    #: a request is split only when every sub-batch gets at least this many texts.
    MIN_SUB_BATCH = 8

    @classmethod
    def options_from_task_info(cls, task_info):
        # "pairs": tools/finetune.py writes it for sentence-pair data.
        return {"pairs": bool(task_info.get("pairs", False))}

    def __init__(self, model, tokenizer, vocab_file, max_seq_length, label_names=None,
                 pairs=False, sub_batches=1, **kwargs):
        if not isinstance(sub_batches, int) or sub_batches < 1:
            raise ValueError(
                f"Expected sub_batches to be an int >= 1. Received: sub_batches={sub_batches!r}"
            )
        self.sub_batches = sub_batches
        num_classes = model.num_classes
        label_names = check_labels(
            num_classes, default_label_names(num_classes, label_names or model.label_names))
        self.pairs = bool(pairs)
        self.num_classes = num_classes
        self.label_names = tf.constant([str(name) for name in label_names], tf.string)
        super().__init__(model, tokenizer, vocab_file, max_seq_length, **kwargs)

    def _define_signatures(self):
        super()._define_signatures()
        specs = [STRINGS, STRINGS] if self.pairs else [STRINGS]
        if self.pairs:
            def classify(text, text_b):
                return self._classify(check_same_batch(text, text_b))

            def preprocess(text, text_b):
                return self.pack(tuple(self.tokenize(t) for t in check_same_batch(text, text_b)))
        else:
            def classify(text):
                return self._classify((text,))

            def preprocess(text):
                return self.pack((self.tokenize(text),))

        self.classify = tf.function(classify, input_signature=specs)
        self.preprocess = tf.function(preprocess, input_signature=specs)

    def _classify(self, texts):
        segments = tuple(self.tokenize(t) for t in texts)
        if self.sub_batches > 1:
            logits = self._run_model_sorted(segments)
        else:
            logits = self.run_model(self.pack(segments))  # (B, K)
        if self.num_classes == 1:
            return {"score": logits[:, 0]}
        label_id = tf.argmax(logits, axis=-1, output_type=tf.int32)
        return {
            "probabilities": tf.nn.softmax(logits, axis=-1),
            "label_id": label_id,
            "label": tf.gather(self.label_names, label_id),
        }

    def _run_model_sorted(self, segments):
        """Logits [B, K] computed on length-sorted sub-batches, rows in input order."""
        k = self.sub_batches
        lengths = tf.add_n([tf.cast(s.row_lengths(), tf.int32) for s in segments])  # (B,)
        batch = tf.shape(lengths)[0]

        def split():
            order = tf.argsort(lengths, stable=True)  # (B,) shortest first
            parts = []
            for i in range(k):
                index = order[batch * i // k:batch * (i + 1) // k]
                parts.append(self.run_model(self.pack(tuple(tf.gather(s, index)
                                                            for s in segments))))
            # Row j of the concatenation is input row order[j].
            return tf.gather(tf.concat(parts, 0), tf.math.invert_permutation(order))

        return tf.cond(batch >= self.MIN_SUB_BATCH * k, split,
                       lambda: self.run_model(self.pack(segments)))
