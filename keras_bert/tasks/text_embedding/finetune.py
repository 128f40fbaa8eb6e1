"""TextEmbeddingTask: contrastive (pairs, hard negatives) or scored-pair fine-tuning."""

import logging

import numpy as np
import tensorflow as tf

from keras_bert.data import batching
from keras_bert.tasks.text_embedding import metrics as metrics_lib
from keras_bert.tasks.text_embedding import reader
from keras_bert.tasks.text_embedding.model import BertTextEmbedder
from keras_bert.training.finetune import FinetuneTask, predict_batches

logger = logging.getLogger("keras_bert.training")

RETRIEVAL_METRICS = ("mrr", "recall@1", "recall@10")


class TextEmbeddingTask(FinetuneTask):
    """Sentence embeddings: `BertTextEmbedder` trained on text pairs from a file.

    Unscored pairs train with `MultipleNegativesRankingLoss` (in-batch and
    hard negatives); the eval set's anchors each rank its distinct positive
    texts: recall@1, recall@10 and MRR (the default --metric). Scored pairs
    train with `CosineSimilarityLoss`; the eval metric is Spearman's rho of
    the cosines with the scores. The embedder's pooling and normalization
    are the model directory's (a sentence-transformers folder's own).
    """

    name = "text_embedding"
    model_class = BertTextEmbedder
    metrics = RETRIEVAL_METRICS

    @classmethod
    def read_data(cls, path, training, task_options):
        options = task_options
        return reader.read_pair_file(
            path, options.anchor_column, options.positive_column, options.negative_columns,
            options.score_column, options.score_scale, options.file_format)

    def prepare(self, train, eval_data):
        self.scored = train.scores is not None
        # MultipleNegativesRankingLoss ranks the global batch (not scored pairs' loss).
        self.gathers_across_replicas = not self.scored
        self.metrics = ("spearman",) if self.scored else RETRIEVAL_METRICS
        if not self.scored:
            self._log_shared_positives(train)
        self.num_train_examples = len(train)
        self.train_dataset = reader.pair_dataset(train, self.preprocessor)
        # Tokenized once (cached), embedded after every epoch.
        self.eval_scores, self.eval_targets = None, None
        positives = eval_data.positives
        if self.scored:
            self.eval_scores = np.asarray(eval_data.scores, "float32")
        else:
            positives, self.eval_targets = reader.retrieval_targets(positives)
        self.eval_datasets = [self._text_dataset(t) for t in (eval_data.anchors, positives)]

    @staticmethod
    def _log_shared_positives(train):
        shared = len(train) - len(set(train.positives))
        if shared:
            logger.info(
                "%s: %d pairs repeat the positive text of another pair; in a batch the copies "
                "are not each other's negatives (MultipleNegativesRankingLoss leaves out "
                "candidates whose text equals the row's positive, or whose anchor equals its "
                "anchor).", getattr(train.report, "source", "the training data"), shared)

    def model_kwargs(self):
        return {}

    def training_batches(self, batch_size, seed, input_pipeline_id=0, num_input_pipelines=1):
        # Bucketed by the longest text of the element (anchor, positive,
        # negatives): every one of them is padded to that bucket's edge.
        def longest(anchor, target):
            inputs = [anchor, target["positive"], *target.get("negatives", ())]
            return tf.reduce_max(tf.stack([tf.shape(x["token_ids"])[0] for x in inputs]))

        return batching.training_batches(
            self.train_dataset, batch_size, self.max_seq_length, seed=seed,
            input_pipeline_id=input_pipeline_id, num_input_pipelines=num_input_pipelines,
            element_length=longest)

    def _text_dataset(self, texts):
        return tf.data.Dataset.from_tensor_slices(tf.constant(texts, tf.string)).map(
            self.preprocessor, num_parallel_calls=tf.data.AUTOTUNE).cache()

    def evaluate(self, model, batch_size):
        anchors, positives = (np.concatenate(list(predict_batches(
            model, batching.eval_batches(dataset, batch_size)))) for dataset in self.eval_datasets)
        return metrics_lib.pair_metrics(anchors, positives, self.eval_scores, self.eval_targets)

    def task_info(self):
        info = super().task_info()
        info.update(scored=self.scored)
        return info
