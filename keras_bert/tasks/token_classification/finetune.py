"""TokenClassificationTask: a tag per word (NER), fine-tuned on CoNLL files."""

import numpy as np

from keras_bert.data import batching
from keras_bert.tasks.token_classification import metrics as metrics_lib
from keras_bert.tasks.token_classification import reader as conll
from keras_bert.tasks.token_classification.model import BertTokenClassifier
from keras_bert.text.windows import windows_of
from keras_bert.training.finetune import FinetuneTask, predict_batches


class TokenClassificationTask(FinetuneTask):
    """A tag per word (NER); labels on each word's first WordPiece."""

    name = "token_classification"
    model_class = BertTokenClassifier
    metrics = ("f1", "precision", "recall")
    padding_values = conll.LABEL_PADDING
    label_inference = conll.TAG_INFERENCE

    @classmethod
    def read_data(cls, path, training, task_options):
        """A CoNLL file (token ... tag per line, blank line between sentences)."""
        return conll.read_conll(path)

    def prepare(self, train, eval_data):
        options = self.task_options
        self.label_names = self.resolve_label_names(options.label_names, train, train.tags)
        train, train_ids = conll.encode_tags(train, self.label_names, options.unknown_labels)
        eval_data, eval_ids = conll.encode_tags(eval_data, self.label_names, options.unknown_labels)
        self.eval_data = eval_data
        self.train_tag_ids = train_ids
        self.num_train_examples = len(train)
        encoded = conll.first_piece_examples(train.words, train_ids, self.preprocessor)
        self.train_dataset = encoded.map(lambda x, y, index: (x, y))
        encoded = conll.first_piece_examples(eval_data.words, eval_ids, self.preprocessor)
        self.eval_dataset = encoded.map(lambda x, y, index: (x, y))
        self.word_index = list(encoded.map(lambda x, y, index: index).as_numpy_iterator())
        self.cut_words = sum(
            len(words) - int((index >= 0).sum())
            for words, index in zip(eval_data.words, self.word_index)
        )

    def class_weight_labels(self):
        # One label per word (on its first piece): the counts are over words.
        ids = np.concatenate([np.asarray(t, "int64") for t in self.train_tag_ids] or [[]])
        return self.label_names, ids

    def model_kwargs(self):
        windows = windows_of(self.task_options)
        return {
            "num_classes": len(self.label_names),
            "label_names": self.label_names,
            "dropout_rate": self.options.dropout_rate,
            **({} if windows is None else {"windows": windows}),
        }

    def predict_tags(self, model, batch_size):
        batches = batching.eval_batches(self.eval_dataset, batch_size, self.padding_values)
        logits = [row for batch in predict_batches(model, batches) for row in batch]
        return conll.predictions_to_tags(
            logits, self.word_index, [len(w) for w in self.eval_data.words], self.label_names)

    def evaluate(self, model, batch_size):
        predicted = self.predict_tags(model, batch_size)
        result = metrics_lib.entity_metrics(self.eval_data.tags, predicted)
        result["words_without_prediction"] = self.cut_words
        return result
