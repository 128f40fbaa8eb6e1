"""The three fine-tuning tasks: data -> datasets, model, loss, evaluation.

Each task turns reader output (`keras_bert.data`) into unbatched datasets,
builds its model from a model directory, and scores predictions with
`keras_bert.training.metrics`. `keras_bert.training.finetune` runs them.
"""

import json
import os

import keras
import numpy as np
import tensorflow as tf

from keras_bert.config import BertConfig
from keras_bert.data import batching, classification, conll, squad
from keras_bert.models import BertClassifier, BertSpanLabeler, BertTokenClassifier
from keras_bert.models.model_dir import CONFIG_FILE, VOCAB_FILE, read_task_info
from keras_bert.text import BertPreprocessor, BertTokenizer, infer_lowercase
from keras_bert.training import metrics as metrics_lib


def _predict_batches(model, dataset):
    """Runs `model` (inference mode) over (features, ...) batches; yields numpy outputs."""
    predict = tf.function(lambda x: model(x, training=False), reduce_retracing=True)
    for element in dataset:
        features = element[0] if isinstance(element, tuple) else element
        yield keras.tree.map_structure(lambda t: np.asarray(t), predict(features))


class FinetuneTask:
    """Shared setup: model directory, vocabulary, tokenizer, sequence length.

    Subclasses set `name`, `model_class`, `metrics` (higher is better, the
    first is the default early-stopping metric) and implement `prepare`,
    `model_kwargs`, `loss`, `evaluate`.
    """

    name = None
    model_class = None
    metrics = ()
    default_max_seq_length = 128
    padding_values = None  # Of training elements; None = 0 everywhere.

    def __init__(self, model_dir, options):
        self.model_dir = model_dir
        self.options = options
        config = BertConfig.from_json_file(os.path.join(model_dir, CONFIG_FILE))
        self.vocab_file = os.path.join(model_dir, VOCAB_FILE)
        if not os.path.exists(self.vocab_file):
            raise FileNotFoundError(
                f"{model_dir} has no {VOCAB_FILE}: fine-tuning tokenizes text with the model's "
                f"vocabulary. Copy it in or re-create the directory with "
                f"tools/convert_checkpoint.py."
            )
        self.base_info = read_task_info(model_dir) or {}
        self.max_seq_length = (
            options.max_seq_length or self.base_info.get("max_seq_length")
            or self.default_max_seq_length
        )
        if not 3 <= self.max_seq_length <= config.max_position_embeddings:
            raise ValueError(
                f"--max-seq-length {self.max_seq_length} is out of range: the model in "
                f"{model_dir} takes 3 to {config.max_position_embeddings} positions "
                f"(max_position_embeddings)."
            )
        lowercase = options.lowercase
        if lowercase is None:
            lowercase = self.base_info.get("lowercase")
        if lowercase is None:
            lowercase = infer_lowercase(self.vocab_file)
        self.lowercase = bool(lowercase)
        self.tokenizer = BertTokenizer(self.vocab_file, lowercase=self.lowercase)

    def base_label_names(self):
        """Label names of a model directory of this same task, if any."""
        if self.base_info.get("task") == self.name:
            return self.base_info.get("task_config", {}).get("label_names")
        return None

    def build_model(self, dtype=None):
        return self.model_class.from_pretrained(self.model_dir, dtype=dtype, **self.model_kwargs())

    def training_batches(self, batch_size, seed, input_pipeline_id=0, num_input_pipelines=1):
        return batching.training_batches(
            self.train_dataset, batch_size, self.max_seq_length, seed=seed,
            input_pipeline_id=input_pipeline_id, num_input_pipelines=num_input_pipelines,
            padding_values=self.padding_values,
        )

    def task_info(self):
        """Facts for task.json besides the model's own task_config."""
        return {"max_seq_length": self.max_seq_length, "lowercase": self.lowercase}

    def write_predictions(self, output_dir):
        """Writes evaluation predictions beside the model, when the task has any."""


class ClassificationTask(FinetuneTask):
    """Sentence / sentence-pair classification, or regression (num_classes=1, MSE)."""

    name = "classification"
    model_class = BertClassifier

    def prepare(self, train, eval_data):
        options = self.options
        self.regression = options.regression or (
            self.base_info.get("regression", False) and options.label_names is None
        )
        self.metrics = ("pearson", "spearman") if self.regression else ("accuracy", "macro_f1", "mcc")
        self.preprocessor = BertPreprocessor(
            self.tokenizer, sequence_length=None, max_length=self.max_seq_length
        )
        if self.regression:
            self.label_names = None
            train_labels = np.asarray(train.labels, "float32")
            eval_labels = np.asarray(eval_data.labels, "float32")
        else:
            self.label_names = (
                options.label_names or self.base_label_names()
                or classification.infer_label_names(train.labels)
            )
            if len(self.label_names) < 2:
                raise ValueError(
                    f"The training data has a single label {self.label_names}; classification "
                    f"needs at least 2 (for a numeric target pass --regression)."
                )
            # Training rows must fit the label set too; a typo there is an error.
            train, train_labels = classification.encode_labels(
                train, self.label_names, options.unknown_labels)
            eval_data, eval_labels = classification.encode_labels(
                eval_data, self.label_names, options.unknown_labels)
        self.eval_data, self.eval_labels = eval_data, eval_labels
        self.pairs = train.texts_b is not None
        self.num_train_examples = len(train)
        self.train_dataset = classification.classification_dataset(
            train, train_labels, self.preprocessor)
        self.eval_dataset = classification.classification_dataset(
            eval_data, eval_labels, self.preprocessor)

    def model_kwargs(self):
        if self.regression:
            return {"num_classes": 1, "dropout_rate": self.options.dropout_rate}
        return {
            "num_classes": len(self.label_names),
            "label_names": self.label_names,
            "dropout_rate": self.options.dropout_rate,
        }

    def loss(self):
        if self.regression:
            return keras.losses.MeanSquaredError()
        return keras.losses.SparseCategoricalCrossentropy(from_logits=True)

    def evaluate(self, model, batch_size):
        batches = batching.eval_batches(self.eval_dataset, batch_size)
        outputs = np.concatenate(list(_predict_batches(model, batches)))
        if self.regression:
            return metrics_lib.regression_metrics(self.eval_labels, outputs[:, 0])
        return metrics_lib.classification_metrics(
            self.eval_labels, outputs.argmax(-1), len(self.label_names))

    def task_info(self):
        info = super().task_info()
        # "pairs": the exported classifier takes (text, text_b).
        info.update(regression=self.regression, pairs=self.pairs)
        return info


class TokenClassificationTask(FinetuneTask):
    """A tag per word (NER); labels on each word's first WordPiece."""

    name = "token_classification"
    model_class = BertTokenClassifier
    metrics = ("f1", "precision", "recall")
    padding_values = conll.LABEL_PADDING

    def prepare(self, train, eval_data):
        options = self.options
        self.label_names = options.label_names or self.base_label_names() or conll.tag_names(
            train.tags)
        train, train_ids = conll.encode_tags(train, self.label_names, options.unknown_labels)
        eval_data, eval_ids = conll.encode_tags(eval_data, self.label_names, options.unknown_labels)
        self.eval_data = eval_data
        self.num_train_examples = len(train)
        encoded = conll.token_classification_dataset(
            train, train_ids, self.tokenizer, self.max_seq_length)
        self.train_dataset = encoded.map(lambda x, y, index: (x, y))
        encoded = conll.token_classification_dataset(
            eval_data, eval_ids, self.tokenizer, self.max_seq_length)
        self.eval_dataset = encoded.map(lambda x, y, index: (x, y))
        self.word_index = list(encoded.map(lambda x, y, index: index).as_numpy_iterator())
        self.cut_words = sum(
            len(words) - int((index >= 0).sum())
            for words, index in zip(eval_data.words, self.word_index)
        )

    def model_kwargs(self):
        return {
            "num_classes": len(self.label_names),
            "label_names": self.label_names,
            "dropout_rate": self.options.dropout_rate,
        }

    def loss(self):
        # Label -1 marks pieces that carry no label (not first pieces, [CLS],
        # [SEP], padding); the mean is over labeled pieces only.
        return keras.losses.SparseCategoricalCrossentropy(from_logits=True, ignore_class=-1)

    def predict_tags(self, model, batch_size):
        batches = batching.eval_batches(self.eval_dataset, batch_size, self.padding_values)
        logits = [row for batch in _predict_batches(model, batches) for row in batch]
        return conll.predictions_to_tags(
            logits, self.word_index, [len(w) for w in self.eval_data.words], self.label_names)

    def evaluate(self, model, batch_size):
        predicted = self.predict_tags(model, batch_size)
        result = metrics_lib.entity_metrics(self.eval_data.tags, predicted)
        result["words_without_prediction"] = self.cut_words
        return result


class SpanQATask(FinetuneTask):
    """SQuAD-style extractive question answering (v1.1, or v2.0 with no-answer)."""

    name = "span_qa"
    model_class = BertSpanLabeler
    metrics = ("f1", "exact")
    default_max_seq_length = 384

    def prepare(self, train, eval_data):
        options = self.options
        self.version_2 = bool(train.version_2 or eval_data.version_2)
        train_features = squad.squad_features(
            train, self.tokenizer, self.max_seq_length, options.doc_stride,
            options.max_query_length, training=True)
        self.eval_data = eval_data
        self.eval_features = squad.squad_features(
            eval_data, self.tokenizer, self.max_seq_length, options.doc_stride,
            options.max_query_length, training=False)
        self.num_train_examples = len(train_features)
        self.train_dataset = squad.squad_dataset(train_features)
        self.eval_dataset = squad.squad_dataset(self.eval_features)
        self.predictions = None

    def model_kwargs(self):
        return {}

    def loss(self):
        # Start and end cross-entropy, averaged (run_squad.py's total_loss).
        ce = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
        return {"start_logits": ce, "end_logits": ce}

    def loss_weights(self):
        return {"start_logits": 0.5, "end_logits": 0.5}

    def evaluate(self, model, batch_size):
        batches = batching.eval_batches(self.eval_dataset, batch_size)
        starts, ends = [], []
        for out in _predict_batches(model, batches):
            starts += list(out["start_logits"])
            ends += list(out["end_logits"])
        options = self.options
        self.predictions, self.null_odds = squad.squad_predictions(
            self.eval_data, self.eval_features, starts, ends, n_best_size=options.n_best_size,
            max_answer_length=options.max_answer_length,
            null_score_diff_threshold=options.null_score_diff_threshold,
            version_2=self.version_2)
        return metrics_lib.squad_metrics(self.predictions, self.eval_data.answers())

    def task_info(self):
        info = super().task_info()
        options = self.options
        info.update(
            doc_stride=options.doc_stride, max_query_length=options.max_query_length,
            max_answer_length=options.max_answer_length,
            version_2_with_negative=self.version_2,
            null_score_diff_threshold=options.null_score_diff_threshold,
        )
        return info

    def write_predictions(self, output_dir):
        if self.predictions is None:
            return
        with open(os.path.join(output_dir, "eval_predictions.json"), "w", encoding="utf-8") as f:
            json.dump(self.predictions, f, indent=1, ensure_ascii=False)
        if self.version_2:
            with open(os.path.join(output_dir, "eval_null_odds.json"), "w", encoding="utf-8") as f:
                json.dump(self.null_odds, f, indent=1)


TASKS = {
    task.name: task for task in (ClassificationTask, TokenClassificationTask, SpanQATask)
}
