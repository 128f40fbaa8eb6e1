"""ClassifierServingModule: raw text (or text pairs) -> probabilities and labels."""

import tensorflow as tf

from keras_bert.export.serving_module import STRINGS, BertServingModule, check_same_batch
from keras_bert.models.task import default_label_names


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

    Args:
        model: a `BertClassifier`.
        label_names: list of K str, or None for the model's `label_names`
            (or "0".."K-1" if it has none).
        pairs: bool, signatures take (text, text_b).
        **kwargs: `BertServingModule` arguments.
    """

    SIGNATURES = {**BertServingModule.SIGNATURES, "classify": "classify"}
    DEFAULT_SIGNATURE = "classify"
    TASK_OPTIONS = ("pairs",)

    @classmethod
    def options_from_task_info(cls, task_info):
        # "pairs": tools/finetune.py writes it for sentence-pair data.
        return {"pairs": bool(task_info.get("pairs", False))}

    def __init__(self, model, tokenizer, vocab_file, max_seq_length, label_names=None,
                 pairs=False, **kwargs):
        num_classes = model.num_classes
        label_names = default_label_names(num_classes, label_names or model.label_names)
        if len(label_names) != num_classes:
            raise ValueError(
                f"Expected {num_classes} label names (num_classes). "
                f"Received: label_names={label_names}"
            )
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
        logits = self.run_model(self.pack(tuple(self.tokenize(t) for t in texts)))  # (B, K)
        if self.num_classes == 1:
            return {"score": logits[:, 0]}
        label_id = tf.argmax(logits, axis=-1, output_type=tf.int32)
        return {
            "probabilities": tf.nn.softmax(logits, axis=-1),
            "label_id": label_id,
            "label": tf.gather(self.label_names, label_id),
        }
