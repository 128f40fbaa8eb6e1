"""SpanQATask: SQuAD-style extractive question answering fine-tuning."""

import json

from keras_bert import storage
from keras_bert.data import batching
from keras_bert.tasks.span_qa import metrics as metrics_lib
from keras_bert.tasks.span_qa import reader as squad
from keras_bert.tasks.span_qa.model import BertSpanLabeler
from keras_bert.training.finetune import FinetuneTask, predict_batches


class SpanQATask(FinetuneTask):
    """SQuAD-style extractive question answering (v1.1, or v2.0 with no-answer)."""

    name = "span_qa"
    model_class = BertSpanLabeler
    metrics = ("f1", "exact")
    default_max_seq_length = 384

    @classmethod
    def read_data(cls, path, training, task_options):
        """A SQuAD v1.1 / v2.0 JSON file."""
        return squad.read_squad(path, training=training)

    def prepare(self, train, eval_data):
        options = self.task_options
        self.version_2_with_negative = bool(train.version_2_with_negative or eval_data.version_2_with_negative)
        train_features = squad.squad_features(
            train, self.preprocessor, options.doc_stride, options.max_query_length,
            training=True)
        self.eval_data = eval_data
        self.eval_features = squad.squad_features(
            eval_data, self.preprocessor, options.doc_stride, options.max_query_length,
            training=False)
        self.num_train_examples = len(train_features)
        self.train_dataset = squad.squad_dataset(train_features)
        self.eval_dataset = squad.squad_dataset(self.eval_features)
        self.predictions = None

    def model_kwargs(self):
        return {}

    def evaluate(self, model, batch_size):
        batches = batching.eval_batches(self.eval_dataset, batch_size)
        starts, ends = [], []
        for out in predict_batches(model, batches):
            starts += list(out["start_logits"])
            ends += list(out["end_logits"])
        options = self.task_options
        self.predictions, self.null_odds = squad.squad_predictions(
            self.eval_data, self.eval_features, starts, ends, n_best_size=options.n_best_size,
            max_answer_length=options.max_answer_length,
            null_score_diff_threshold=options.null_score_diff_threshold,
            version_2_with_negative=self.version_2_with_negative)
        return metrics_lib.squad_metrics(self.predictions, self.eval_data.answers())

    def task_info(self):
        info = super().task_info()
        options = self.task_options
        info.update(
            doc_stride=options.doc_stride, max_query_length=options.max_query_length,
            max_answer_length=options.max_answer_length, n_best_size=options.n_best_size,
            version_2_with_negative=self.version_2_with_negative,
            null_score_diff_threshold=options.null_score_diff_threshold,
        )
        return info

    def write_predictions(self, output_dir):
        if self.predictions is None:
            return
        # Beside the committed model (on a store: outside its commit marker).
        with storage.open_file(storage.join(output_dir, "eval_predictions.json"), "w") as f:
            json.dump(self.predictions, f, indent=1, ensure_ascii=False)
        if self.version_2_with_negative:
            with storage.open_file(storage.join(output_dir, "eval_null_odds.json"), "w") as f:
                json.dump(self.null_odds, f, indent=1)
