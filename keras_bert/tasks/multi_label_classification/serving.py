"""MultiLabelServingModule: raw text -> a probability and a 0/1 decision per label."""

import tensorflow as tf

from keras_bert.export.serving_module import STRINGS, BertServingModule
from keras_bert.models.dense_head import check_labels, default_label_names


class MultiLabelServingModule(BertServingModule):
    """Serving signatures of a `BertMultiLabelClassifier`.

    serving_default / classify, on `text` string [B]:
        probabilities  float32 [B, C]  sigmoid of each label's logit
        predicted      int32 [B, C]    1 where probabilities >= the label's threshold

    Dense tensors only, so TF Serving's REST and gRPC APIs both carry them.
    Column c is label_names[c]: the names and thresholds are in the
    export's keras_bert_export.json ("label_names", "thresholds"), the
    thresholds in the graph too. `preprocess` takes the same input.

    Args:
        model: a `BertMultiLabelClassifier`.
        label_names: list of C str, or None for the model's `label_names`
            (or "0".."C-1" if it has none).
        **kwargs: `BertServingModule` arguments.
    """

    SIGNATURES = {**BertServingModule.SIGNATURES, "classify": "classify"}
    DEFAULT_SIGNATURE = "classify"

    def __init__(self, model, preprocessor, label_names=None,
                 **kwargs):
        num_classes = model.num_classes
        self.label_names_list = check_labels(
            num_classes, default_label_names(num_classes, label_names or model.label_names))
        self.thresholds_list = [float(t) for t in model.resolved_thresholds()]
        self.num_classes = num_classes
        self.thresholds = tf.constant(self.thresholds_list, tf.float32)  # (C,)
        super().__init__(model, preprocessor, **kwargs)

    def export_metadata(self):
        return {"label_names": list(self.label_names_list),
                "thresholds": list(self.thresholds_list)}

    def _define_signatures(self):
        super()._define_signatures()
        self.classify = tf.function(self._classify, input_signature=[STRINGS], autograph=False)

    def _classify(self, text):
        logits = self.run_model(self.preprocess_texts((text,)))  # (B, C)
        probabilities = tf.sigmoid(logits)
        predicted = tf.cast(probabilities >= self.thresholds, tf.int32)  # (B, C)
        return {"probabilities": probabilities, "predicted": predicted}
