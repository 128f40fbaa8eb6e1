"""BertTextEmbedder: one vector per text (sentence embeddings), for similarity and search."""

import os

import keras
import numpy as np
import tensorflow as tf

from keras_bert.layers.activations import initializer
from keras_bert.models import task_inputs
from keras_bert.models.pipeline import _trim_to_longest
from keras_bert.models.task import BertTask
from keras_bert.tasks.text_embedding import sentence_transformers as st_folder
from keras_bert.tasks.text_embedding import metrics as metrics_lib
from keras_bert.tasks.text_embedding.layers import EmbeddingPooling, L2Normalize, check_pooling
from keras_bert.tasks.text_embedding.losses import (CosineSimilarityLoss,
                                                    MultipleNegativesRankingLoss)
from keras_bert.tasks.text_embedding.search import (EmbeddingIndex, as_embeddings, cosine_matrix,
                                                    unit_rows)
from keras_bert.tasks.text_embedding.serving import TextEmbedderServingModule


@keras.saving.register_keras_serializable(package="keras_bert")
class BertTextEmbedder(BertTask):
    """Encoder -> pooling over real tokens -> optional dense projection -> L2 normalization.

    Output: float32 embeddings [batch_size, D], D = `projection_dim` or the
    encoder's hidden_size; unit rows when `normalize` (so a dot product is
    the cosine).

    Args:
        encoder: a `BertEncoder`.
        pooling: "mean" (masked mean over real tokens, [CLS] and [SEP]
            included), "cls" (the [CLS] position of sequence_output) or
            "max" (masked per-feature maximum).
        projection_dim: int or None: a dense layer (with bias, linear) from
            the pooled vector to this many dimensions; None: no projection.
        normalize: bool, L2-normalize each embedding (default True).
        **kwargs: `BertTask` arguments (`preprocessor`, `name`, `compile`).

    `from_pretrained` on a sentence-transformers folder (modules.json,
    1_Pooling/config.json, a Normalize module, sentence_bert_config.json)
    takes its pooling, normalization and max_seq_length from those files
    (arguments given win), so all-MiniLM-L6-v2 embeds as
    sentence-transformers does. A saved embedder keeps them in task.json.

    With a preprocessor, `predict(texts)` (a list, a 1-D array, a dataset of
    string batches) returns float32 [N, D] from the export's `embedding`
    signature code; `similarity(a, b)` the cosine matrix [N, M] (or the
    row-wise cosine [N] of the export's `similarity` signature with
    `pairwise=True`); `index(documents)` an `EmbeddingIndex` to `search`.
    An empty text embeds as [CLS] [SEP], as sentence-transformers embeds it;
    an empty batch gives [0, D].

    Fine-tuning (`fit`, compiled by default with keras_bert's AdamW): x is
    (anchor, positive) text pairs (`(anchors, positives)` columns, rows of
    pairs, or a dataset of `((anchors, positives),)` batches). Without y the
    loss is `MultipleNegativesRankingLoss` (in-batch negatives, scale 20;
    `compile(loss=MultipleNegativesRankingLoss(scale=...))` sets another);
    with float scores y in [-1, 1] it is `CosineSimilarityLoss` (STS-style
    regression). `evaluate_pairs` gives recall@1/@10 and MRR of held-out pairs,
    or Spearman's rho of scored pairs.

    Example:
    >>> embedder = BertTextEmbedder.from_pretrained("all-MiniLM-L6-v2")
    >>> vectors = embedder.predict(["a cat sat on the mat", "stocks fell sharply"])
    >>> vectors.shape, float(np.linalg.norm(vectors[0]))
    ((2, 384), 1.0)
    >>> embedder.similarity(["a kitten naps"], ["a cat sat on the mat", "stocks fell"])
    array([[0.55, 0.02]], dtype=float32)  # approximately
    """

    task_name = "text_embedding"
    serving_module_class = TextEmbedderServingModule
    uses_pooler = False  # The tanh pooler is not read: CLS pooling takes sequence_output[:, 0].
    text_columns = (1,)

    def __init__(self, encoder, pooling="mean", projection_dim=None, normalize=True, **kwargs):
        check_pooling(pooling)
        if projection_dim is not None and (isinstance(projection_dim, bool) or not isinstance(
                projection_dim, int) or projection_dim < 1):
            raise ValueError(f"Expected projection_dim to be an int >= 1 or None. "
                             f"Received: projection_dim={projection_dim!r}")
        if not isinstance(normalize, bool):
            raise ValueError(f"Expected normalize to be True or False. "
                             f"Received: normalize={normalize!r}")

        # === Layers ===
        self.encoder = encoder
        self.embedding_pooling = EmbeddingPooling(pooling, dtype="float32", name="pooling")
        self.projection = None if projection_dim is None else keras.layers.Dense(
            projection_dim, kernel_initializer=initializer(encoder.initializer_range),
            dtype="float32", name="projection")
        self.l2_normalize = L2Normalize(dtype="float32", name="l2_normalize") if normalize \
            else None

        # === Functional graph ===
        inputs = dict(encoder.input)
        sequence = encoder(inputs)["sequence_output"]  # (B, S, H)
        embedding = self.embedding_pooling(sequence, inputs["padding_mask"])  # (B, H)
        if self.projection is not None:
            embedding = self.projection(embedding)  # (B, D)
        if self.l2_normalize is not None:
            embedding = self.l2_normalize(embedding)
        embedding = keras.layers.Activation("linear", dtype="float32", name="embedding")(
            embedding)
        super().__init__(inputs=inputs, outputs=embedding, **kwargs)

        # === Config ===
        self.pooling = pooling
        self.projection_dim = projection_dim
        self.normalize = normalize

    def task_config(self):
        return {"pooling": self.pooling, "projection_dim": self.projection_dim,
                "normalize": self.normalize}

    @property
    def embedding_dim(self):
        """int, D: the width of one embedding."""
        return self.projection_dim or self.encoder.hidden_size

    @classmethod
    def from_pretrained(cls, model_dir, max_seq_length=None, pooling=None, normalize=None,
                        **kwargs):
        """`BertTask.from_pretrained`, reading a sentence-transformers folder's own settings.

        Args:
            model_dir: a model directory or any source `from_pretrained` takes
                (a sentence-transformers / Hugging Face folder, a Hub id, a
                known name such as "all-MiniLM-L6-v2").
            max_seq_length: int or None; None: sentence_bert_config.json's
                max_seq_length for a sentence-transformers folder, else as
                `BertTask.from_pretrained`.
            pooling: "mean", "cls", "max" or None; None: the folder's
                1_Pooling/config.json, else a saved embedder's, else "mean".
            normalize: bool or None; None: True when the folder's modules.json
                lists a Normalize module (False when it lists none), else a
                saved embedder's, else True.
            **kwargs: `BertTask.from_pretrained` arguments (dtype, lowercase,
                new_head, projection_dim).
        """
        from keras_bert import sources

        source = os.fspath(model_dir)
        given = {"pooling": pooling, "normalize": normalize}
        if not sources.is_model_dir(source):
            from keras_bert.checkpoints.hub import locate_checkpoint

            source = locate_checkpoint(source)
            if st_folder.is_sentence_transformers_folder(source):
                facts = st_folder.read_sentence_transformers(source)
                given = {k: facts[k] if v is None else v for k, v in given.items()}
                if max_seq_length is None:
                    max_seq_length = facts["max_seq_length"]
        kwargs.update({k: v for k, v in given.items() if v is not None})
        return super().from_pretrained(source, max_seq_length=max_seq_length, **kwargs)

    # === Embeddings of raw strings ===

    def predict(self, x, batch_size=None, verbose="auto", steps=None, callbacks=None):
        """float32 embeddings [N, D] of texts (list, 1-D array, dataset of string
        batches), by the export's `embedding` signature code; on the integer
        input dict, Keras' predict."""
        texts = self._predict_texts(x)
        if texts is None:
            return super().predict(x, batch_size=batch_size, verbose=verbose, steps=steps,
                                   callbacks=callbacks)
        module = self.serving_module()
        return self.predict_strings(texts, module.embedding, batch_size)["embedding"]

    # === Contrastive fine-tuning on pairs ===

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
        positive = self(y["positive"], training=training)  # (B, D)
        both = tf.concat([y_pred, positive], axis=-1)  # (B, 2D)
        if "score" in y:
            # Scored pairs regress the cosine whatever ranking scale was compiled.
            loss = self.loss if isinstance(self.loss, CosineSimilarityLoss) else (
                CosineSimilarityLoss())
            value = loss(y["score"], both)
        else:
            value = self.loss(y["keys"], both)
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
        """Pairs train with the two pair losses only; refuses any other compiled loss
        (compiling with the default one first, as `fit` does)."""
        self.ensure_compiled()
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
            {"recall@1", "recall@10", "mrr"} (each anchor ranks all N positives),
            or {"spearman"}: floats.
        """
        first = self.embeddings_of(anchors, batch_size, "anchors")
        second = self.embeddings_of(positives, batch_size, "positives")
        if len(first) != len(second):
            raise ValueError(f"Expected one positive per anchor. Received: {len(first)} "
                             f"anchors and {len(second)} positives.")
        if scores is None:
            return metrics_lib.retrieval_metrics(first, second)
        cosine = np.sum(unit_rows(first) * unit_rows(second), axis=-1)
        return {"spearman": metrics_lib.spearman(cosine, _scores(scores, len(first),
                                                                   "evaluate_pairs"))}

    def embeddings_of(self, value, batch_size=None, name="texts"):
        """float32 [N, D]: `value` embedded when it holds texts, else checked as
        embeddings (a float matrix [N, D] of this model's width)."""
        if isinstance(value, (str, bytes)):
            raise ValueError(f"{self._what('predict')} takes a batch of {name}, not a single "
                             f"string: wrap it in a list, e.g. [{str(value)[:40]!r}].")
        if task_inputs.holds_strings(value) or (hasattr(value, "element_spec")) or (
                isinstance(value, (list, tuple)) and len(value) == 0):
            return self.predict(value, batch_size=batch_size)
        array = as_embeddings(value, name)
        if array.shape[1] != self.embedding_dim:
            raise ValueError(f"{name} are {array.shape[1]} wide; this model's embeddings are "
                             f"{self.embedding_dim} wide. Pass texts, or embeddings of this "
                             f"model.")
        return array

    def similarity(self, a, b, pairwise=False, batch_size=None):
        """Cosine similarity of texts (or their embeddings).

        Args:
            a: texts [N] or embeddings [N, D].
            b: texts [M] or embeddings [M, D].
            pairwise: False: the matrix [N, M] of every a with every b; True:
                a and b row by row, [N] (N == M), what the export's
                `similarity` signature returns (from its code, for texts).
            batch_size: int, texts per embedding call.

        Returns:
            float32 numpy array [N, M], or [N] with `pairwise`.
        """
        if pairwise:
            if task_inputs.holds_strings(a) and task_inputs.holds_strings(b):
                first = self._texts(a, "similarity")
                second = self._texts(b, "similarity")
                if task_inputs.count_rows(first[0]) != task_inputs.count_rows(second[0]):
                    raise ValueError(
                        f"similarity(pairwise=True) needs one b per a. Received: "
                        f"{task_inputs.count_rows(first[0])} and "
                        f"{task_inputs.count_rows(second[0])} texts.")
                return self.predict_strings(first + second, self.serving_module().similarity,
                                            batch_size)["similarity"]
            first = self.embeddings_of(a, batch_size, "a")
            second = self.embeddings_of(b, batch_size, "b")
            if len(first) != len(second):
                raise ValueError(f"similarity(pairwise=True) needs one b per a. Received: "
                                 f"{len(first)} and {len(second)}.")
            return np.sum(unit_rows(first) * unit_rows(second), axis=-1).astype("float32")
        return cosine_matrix(self.embeddings_of(a, batch_size, "a"),
                             self.embeddings_of(b, batch_size, "b"))

    def index(self, documents, batch_size=None):
        """An `EmbeddingIndex` of `documents` (texts, embedded once, or embeddings [N, D])."""
        embeddings = self.embeddings_of(documents, batch_size, "documents")
        texts = list(documents) if task_inputs.holds_strings(documents) else None
        return EmbeddingIndex(self, embeddings, texts)

    def search(self, queries, documents, top_k=10, batch_size=None):
        """(scores float32 [Q, k], indices int64 [Q, k]): the `top_k` documents most
        similar to each query, best first (`index(documents).search(queries)`;
        keep the index to search one corpus many times)."""
        return self.index(documents, batch_size).search(queries, top_k, batch_size)


def _text_keys(anchors, positives):
    """float32 [B, 2]: 24-bit hashes of each pair's texts, so that
    `MultipleNegativesRankingLoss` finds duplicates (exact integers in float32)."""
    return tf.cast(tf.stack([tf.strings.to_hash_bucket_fast(anchors, 1 << 24),
                             tf.strings.to_hash_bucket_fast(positives, 1 << 24)], axis=1),
                   tf.float32)


def _maybe_shuffle(dataset, shuffle):
    return dataset.shuffle(dataset.cardinality(), reshuffle_each_iteration=True) if shuffle \
        else dataset


def _trim_pair_batch(anchor, target):
    """Both sides of a batch of up-front padded pairs cut to their own longest text."""
    positive = _trim_to_longest(target["positive"])[0]
    return _trim_to_longest(anchor)[0], {**target, "positive": positive}


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
