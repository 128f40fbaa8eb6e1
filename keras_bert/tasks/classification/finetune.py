"""ClassificationTask: sentence (pair) classification or regression fine-tuning."""

import numpy as np

from keras_bert.data import batching
from keras_bert.data.text_data import text_label_dataset
from keras_bert.tasks.classification import metrics as metrics_lib
from keras_bert.tasks.classification import reader
from keras_bert.tasks.classification.model import BertClassifier
from keras_bert.text.windows import windows_of
from keras_bert.training.finetune import FinetuneTask, predict_batches


class ClassificationTask(FinetuneTask):
    """Sentence / sentence-pair classification, or regression (num_classes=1, MSE)."""

    name = "classification"
    model_class = BertClassifier
    # Numerically equal labels are one class ("1", "1.0").
    label_inference = {"key": reader.label_key}

    @classmethod
    def read_data(cls, path, training, task_options):
        """A .csv / .tsv / .jsonl file, or "tfds:NAME[SPLIT]" (split "train" for
        training, else "validation" or "test"), read as `task_options` (a
        `ClassificationOptions`, left as it is) says. A TFDS dataset's
        ClassLabel names are the examples' `label_names` (none: `regression`)."""
        options = task_options
        columns = (options.text_column, options.text_b_column, options.label_column)
        if path.startswith("tfds:"):
            name, _, split = path[len("tfds:"):].partition("[")
            split = split.rstrip("]") or (
                "train" if training else reader.tfds_eval_split(name, options.tfds_data_dir))
            examples, _ = reader.read_tfds_classification(
                name, split, None if columns[0] == "text" else columns[0], *columns[1:],
                data_dir=options.tfds_data_dir)
            return examples
        return reader.read_classification_file(
            path, *columns, options.regression, options.file_format)

    def prepare(self, train, eval_data):
        options = self.task_options
        self.regression = options.regression or train.regression or (
            self.base_info.get("regression", False) and options.label_names is None
        )
        self.metrics = ("pearson", "spearman") if self.regression else ("accuracy", "macro_f1", "mcc")
        if self.regression:
            self.label_names = None
            train_labels = np.asarray(train.labels, "float32")
            eval_labels = np.asarray(eval_data.labels, "float32")
        else:
            self.label_names = self.resolve_label_names(
                options.label_names, train, declared=train.label_names, minimum=2,
                why=" For a numeric target pass --regression.")
            # Training rows must fit the label set too; a typo there is an error.
            train, train_labels = reader.encode_labels(
                train, self.label_names, options.unknown_labels)
            eval_data, eval_labels = reader.encode_labels(
                eval_data, self.label_names, options.unknown_labels)
        self.eval_data, self.eval_labels = eval_data, eval_labels
        self.train_labels = train_labels
        self.pairs = train.texts_b is not None
        if self.pairs and windows_of(options) is not None:
            raise ValueError(
                f"--window-stride {options.window_stride}: windows read single texts, but the "
                f"data has second texts (--text-b-column {options.text_b_column}). Drop "
                f"--window-stride for sentence pairs.")
        self.num_train_examples = len(train)
        self.train_dataset, self.eval_dataset = (
            text_label_dataset(data.texts, data.texts_b, labels, self.preprocessor)
            for data, labels in ((train, train_labels), (eval_data, eval_labels)))

    def class_weight_labels(self):
        if self.regression:
            return None
        return self.label_names, self.train_labels

    def model_kwargs(self):
        windows = windows_of(self.task_options)
        extra = {} if windows is None else {"windows": windows}
        if self.regression:
            return {"num_classes": 1, "dropout_rate": self.options.dropout_rate, **extra}
        return {
            "num_classes": len(self.label_names),
            "label_names": self.label_names,
            "dropout_rate": self.options.dropout_rate,
            **extra,
        }

    def evaluate(self, model, batch_size):
        batches = batching.eval_batches(self.eval_dataset, batch_size)
        outputs = np.concatenate(list(predict_batches(model, batches)))
        if self.regression:
            return metrics_lib.regression_metrics(self.eval_labels, outputs[:, 0])
        return metrics_lib.classification_metrics(
            self.eval_labels, outputs.argmax(-1), len(self.label_names), self.label_names)

    def task_info(self):
        info = super().task_info()
        # "pairs": the exported classifier takes (text, text_b).
        info.update(regression=self.regression, pairs=self.pairs)
        return info
