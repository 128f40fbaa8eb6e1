"""MultiLabelTask: fine-tuning a sigmoid head, thresholds tuned on the eval set."""

import numpy as np

from keras_bert.data import batching
from keras_bert.data.text_data import text_label_dataset
from keras_bert.tasks.multi_label_classification import metrics as metrics_lib
from keras_bert.tasks.multi_label_classification import reader
from keras_bert.tasks.multi_label_classification.model import BertMultiLabelClassifier
from keras_bert.training.finetune import FinetuneTask, predict_batches


class MultiLabelTask(FinetuneTask):
    """Texts with any number of labels each: binary cross-entropy per label.

    After every epoch each label's threshold is tuned on the evaluation set
    (`tune_thresholds`, unless `MultiLabelOptions.threshold` fixes one), set
    on the model and used for its metrics. Tuned and scored on the same set:
    hold out a test set for an unbiased F1.
    """

    name = "multi_label_classification"
    model_class = BertMultiLabelClassifier
    metrics = ("macro_f1", "micro_f1", "exact_match")

    @classmethod
    def read_data(cls, path, training, task_options):
        """A .csv / .tsv / .jsonl file read as `task_options` (a
        `MultiLabelOptions`) says."""
        options = task_options
        return reader.read_multi_label_file(
            path, options.text_column, options.label_column, options.label_columns,
            options.label_separator, options.file_format, options.label_names)

    def prepare(self, train, eval_data):
        options = self.task_options
        self.label_names = self.resolve_label_names(
            options.label_names or options.label_columns, train)
        train, train_matrix = reader.encode_label_sets(
            train, self.label_names, options.unknown_labels)
        eval_data, eval_matrix = reader.encode_label_sets(
            eval_data, self.label_names, options.unknown_labels)
        self.eval_data, self.eval_labels = eval_data, eval_matrix
        self.num_train_examples = len(train)
        self.train_dataset, self.eval_dataset = (
            text_label_dataset(data.texts, None, matrix, self.preprocessor)
            for data, matrix in ((train, train_matrix), (eval_data, eval_matrix)))

    def model_kwargs(self):
        return {
            "num_classes": len(self.label_names),
            "label_names": self.label_names,
            "dropout_rate": self.options.dropout_rate,
        }

    def eval_probabilities(self, model, batch_size):
        """float64 [num_eval, num_labels]: the model's probabilities on the eval set."""
        batches = batching.eval_batches(self.eval_dataset, batch_size)
        logits = list(predict_batches(model, batches))
        if not logits:
            return np.zeros([0, len(self.label_names)])
        return 1.0 / (1.0 + np.exp(-np.concatenate(logits).astype("float64")))

    def evaluate(self, model, batch_size):
        probabilities = self.eval_probabilities(model, batch_size)
        fixed = self.task_options.threshold
        thresholds = ([float(fixed)] * len(self.label_names) if fixed is not None
                      else metrics_lib.tune_thresholds(self.eval_labels, probabilities))
        # Saved with the model (task_config) when this epoch is the best.
        model.thresholds = thresholds
        predicted = metrics_lib.predict_labels(probabilities, thresholds)
        return metrics_lib.multi_label_metrics(self.eval_labels, predicted, self.label_names)
