"""PairFitting: `BertTextEmbedder`'s contrastive `fit` / `evaluate` on text pairs.

A pair batch is (anchor encoder inputs, {"positive": encoder inputs, "keys"
[B, 2] | "score" [B]}): the anchors are the model's ordinary input (Keras runs
them through `train_step`), the positives travel in y and are embedded in
`compute_loss`, in the same gradient tape. A strategy splits x and y along
the batch together, so pairs stay whole on each replica.
"""

import keras
import numpy as np
import tensorflow as tf

from keras_bert.models import task_inputs
from keras_bert.models.pipeline import _trim_to_longest
from keras_bert.tasks.text_embedding import metrics as metrics_lib
from keras_bert.tasks.text_embedding.losses import (CosineSimilarityLoss,
                                                    MultipleNegativesRankingLoss)
from keras_bert.tasks.text_embedding.reader import retrieval_targets, text_keys


class PairFitting:
    """Mixin of `BertTextEmbedder` (before `BertTask`): fit and evaluate on text pairs.

    Integer inputs go on to `BertTask`'s fit / evaluate (with a loss of the
    user's); see `BertTextEmbedder` for the pair forms and losses.
    """

    def default_optimizer(self):
        from keras_bert.training.finetune import FinetuneTask

        return FinetuneTask.default_optimizer()

    def default_loss(self):
        return MultipleNegativesRankingLoss()

    def _has_default_recipe(self):
        return True

    def fit(self, x=None, y=None, batch_size=None, epochs=1, verbose="auto", callbacks=None,
            validation_data=None, shuffle=True, **kwargs):
        pairs = self._pair_dataset(x, y, batch_size, shuffle, "fit")
        if pairs is None:  # The integer input dict, with a loss of the user's.
            return super().fit(x, y, batch_size=batch_size, epochs=epochs, verbose=verbose,
                               callbacks=callbacks, validation_data=validation_data,
                               shuffle=shuffle, **kwargs)
        if validation_data is not None:
            validation_data = self._pair_dataset(
                *_x_and_y(validation_data), batch_size=batch_size, shuffle=False,
                method="fit(validation_data)")
        return self._keras_call(keras.Model.fit, self, pairs, epochs=epochs, verbose=verbose,
                                callbacks=callbacks, validation_data=validation_data,
                                shuffle=False, **kwargs)

    def evaluate(self, x=None, y=None, batch_size=None, verbose="auto", **kwargs):
        pairs = self._pair_dataset(x, y, batch_size, False, "evaluate")
        if pairs is None:
            return super().evaluate(x, y, batch_size=batch_size, verbose=verbose, **kwargs)
        return self._keras_call(keras.Model.evaluate, self, pairs, verbose=verbose, **kwargs)

    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None, training=True):
        """On pair batches (`_pair_dataset`): the anchor embeddings are `y_pred`,
        the positives are embedded here, in the same tape, and the pair loss
        reads both; otherwise Keras' compiled loss."""
        if not (isinstance(y, dict) and "positive" in y):
            return super().compute_loss(x, y, y_pred, sample_weight, training=training)
        # Anchor, positive, hard negatives 1..K (tools/finetune.py's pair files): (B, D) each.
        parts = [y_pred] + [self(inputs, training=training)
                            for inputs in (y["positive"], *y.get("negatives", ()))]
        embeddings = tf.concat(parts, axis=-1)  # (B, (2 + K) * D)
        if "score" in y:
            # Scored pairs regress the cosine whatever ranking scale was compiled.
            loss = self.loss if isinstance(self.loss, CosineSimilarityLoss) else (
                CosineSimilarityLoss())
            value = loss(y["score"], embeddings)
        else:
            value = self.loss(y["keys"], embeddings)
        if self.losses:
            value = value + tf.add_n([tf.cast(v, value.dtype) for v in self.losses])
        return value

    def _pair_dataset(self, x, y, batch_size, shuffle, method):
        """A dataset of (anchor inputs, {"positive": inputs, "keys" | "score"}) batches of
        pairs of texts `x` (scores `y`), or None when `x` holds no strings."""
        if isinstance(x, tf.data.Dataset):
            return self._pair_dataset_of_dataset(x, method)
        texts = task_inputs.text_inputs(x, self._what(method))
        if texts is None:
            return None
        self._check_pair_loss(y is not None, method)
        if len(texts) != 2:
            raise ValueError(
                f"{self._what(method)} trains on (anchor, positive) pairs of texts: "
                f"{task_inputs.PAIRS_RULE}. Received one column of texts.")
        anchors, positives = (np.asarray(t.numpy(), object) for t in texts)
        self._require_preprocessor()
        if len(anchors) == 0:
            raise ValueError(f"{self._what(method)} needs at least one pair. Received: 0.")
        for name, column in (("anchor", anchors), ("positive", positives)):
            empty = [i for i, t in enumerate(column) if not t.strip()]
            if empty:
                raise ValueError(
                    f"{self._what(method)}: pair {empty[0]} has an empty {name} text "
                    f"({len(empty)} pairs in all); drop those pairs.")
        anchors, positives = tf.constant(anchors.astype(bytes)), tf.constant(
            positives.astype(bytes))
        # Preprocessed up front, as TextPipeline does for texts: a tokenizer in the
        # dataset's map would be re-instantiated by each epoch's iterator.
        features = [self._preprocessed_in_memory((t,)) for t in (anchors, positives)]
        if features[0] is None:  # A preprocessor of unknown padding: packed per batch.
            columns = (anchors, positives) + (() if y is None else (
                _scores(y, len(anchors), self._what(method)),))
            return self._pair_batches(_maybe_shuffle(
                tf.data.Dataset.from_tensor_slices(columns), shuffle).batch(batch_size or 32))
        target = {"positive": features[1]}
        if y is None:
            target["keys"] = _text_keys(anchors, positives)
        else:
            target["score"] = _scores(y, len(anchors), self._what(method))
        dataset = _maybe_shuffle(tf.data.Dataset.from_tensor_slices((features[0], target)),
                                 shuffle).batch(batch_size or 32)
        if self.preprocessor.sequence_length is None:
            dataset = dataset.map(_trim_pair_batch)
        return dataset.prefetch(tf.data.AUTOTUNE)

    def _check_pair_loss(self, scored, method):
        """Pairs train with the two pair losses only; refuses any other compiled loss."""
        if not self.compiled:  # Keras' own words, before the pairs are packed.
            raise ValueError(f"You must call `compile()` before using the model "
                             f"({self._what(method)}): it was built with compile=False.")
        if not isinstance(self.loss, (MultipleNegativesRankingLoss, CosineSimilarityLoss)):
            raise ValueError(
                f"{self._what(method)} on text pairs trains with MultipleNegativesRankingLoss "
                f"or CosineSimilarityLoss (keras_bert.tasks.text_embedding.losses); the model "
                f"is compiled with loss={self.loss!r}. Compile with one of them, or leave "
                f"loss out (compile()) for the default.")
        if not scored and isinstance(self.loss, CosineSimilarityLoss):
            raise ValueError(f"{self._what(method)}: the model is compiled with "
                             f"CosineSimilarityLoss, which needs a score per pair (y).")

    def _pair_dataset_of_dataset(self, dataset, method):
        spec = dataset.element_spec
        texts = spec[0] if isinstance(spec, tuple) else spec
        strings = isinstance(texts, tuple) and len(texts) == 2 and all(
            isinstance(s, tf.TensorSpec) and s.dtype == tf.string for s in texts)
        if not strings:
            if isinstance(texts, tf.TensorSpec) and texts.dtype == tf.string:
                raise ValueError(
                    f"{self._what(method)} trains on pairs: yield ((anchors, positives),) or "
                    f"((anchors, positives), scores) batches. Received one column of texts.")
            return None  # Integer inputs: Keras' own path.
        self._require_preprocessor()
        if len(spec) > 2:
            raise ValueError(f"{self._what(method)}: a pair dataset yields ((anchors, "
                             f"positives),) or ((anchors, positives), scores); sample "
                             f"weights are not taken.")
        self._check_pair_loss(len(spec) == 2, method)
        if len(spec) == 2:
            return self._pair_batches(dataset.map(lambda pair, score: (*pair, score)))
        return self._pair_batches(dataset.map(lambda pair: tuple(pair)))

    def _pair_batches(self, dataset):
        preprocess = self._traced_preprocessor()

        def pack(anchor, positive, score=None):
            target = {"positive": preprocess((positive,))}
            if score is None:
                target["keys"] = _text_keys(anchor, positive)
            else:
                target["score"] = tf.cast(score, tf.float32)
            return preprocess((anchor,)), target

        return dataset.map(pack, num_parallel_calls=tf.data.AUTOTUNE).prefetch(
            tf.data.AUTOTUNE)

    def evaluate_pairs(self, anchors, positives, scores=None, batch_size=None):
        """Retrieval metrics of held-out pairs, or Spearman's rho of scored ones.

        Args:
            anchors, positives: texts [N] each (pair i: anchors[i], positives[i]).
            scores: None, or floats [N]: then {"spearman": rho of the cosines}.
            batch_size: int, texts per embedding call.

        Returns:
            {"recall@1", "recall@10", "mrr"} (each anchor ranks the distinct
            positive texts: pairs that share a positive rank one copy of it),
            or {"spearman"}: floats.
        """
        first = self.embeddings_of(anchors, batch_size, "anchors")
        count, targets = len(positives) if hasattr(positives, "__len__") else None, None
        if scores is None and isinstance(positives, (list, tuple, np.ndarray)) and all(
                isinstance(t, (str, bytes)) for t in positives):
            positives, targets = retrieval_targets(list(positives))
        second = self.embeddings_of(positives, batch_size, "positives")
        count = len(second) if targets is None else count
        if len(first) != count:
            raise ValueError(f"Expected one positive per anchor. Received: {len(first)} "
                             f"anchors and {count} positives.")
        return metrics_lib.pair_metrics(
            first, second, None if scores is None else _scores(scores, count, "evaluate_pairs"),
            targets)


def _text_keys(anchors, positives):
    """float32 [B, 2]: the hash keys of each pair's texts (`reader.text_keys`)."""
    return text_keys(tf.stack([anchors, positives], axis=1))


def _maybe_shuffle(dataset, shuffle):
    return dataset.shuffle(dataset.cardinality(), reshuffle_each_iteration=True) if shuffle \
        else dataset


def _trim_pair_batch(anchor, target):
    """Both sides of a batch of up-front padded pairs cut to their own longest text."""
    positive = _trim_to_longest()(target["positive"])[0]
    return _trim_to_longest()(anchor)[0], {**target, "positive": positive}


def _x_and_y(data):
    """(x, y) of `validation_data`: a dataset, (pairs,) or (pairs, scores)."""
    if isinstance(data, tf.data.Dataset):
        return data, None
    data = tuple(data)
    if len(data) == 2 and all(task_inputs.holds_strings(part) for part in data):
        return data, None  # (anchors, positives) columns.
    return data[0], (data[1] if len(data) > 1 else None)


def _scores(y, count, what):
    """Pair scores as float32 [count] in [-1, 1]."""
    try:
        scores = np.asarray(y.numpy() if hasattr(y, "numpy") else y, "float32").reshape(-1)
    except (TypeError, ValueError):
        raise ValueError(f"{what}: y must be one float score per pair in [-1, 1]. "
                         f"Received e.g. {list(y)[:1]!r}.") from None
    if len(scores) != count:
        raise ValueError(f"{what}: expected one score per pair ({count}). Received: "
                         f"{len(scores)}.")
    bad = ~np.isfinite(scores) | (np.abs(scores) > 1)
    if bad.any():
        i = int(np.argmax(bad))
        raise ValueError(f"{what}: scores are cosine targets in [-1, 1]; y[{i}] = "
                         f"{float(scores[i])!r}. Rescale them (e.g. STS 0-5 scores: y / 5).")
    return scores
