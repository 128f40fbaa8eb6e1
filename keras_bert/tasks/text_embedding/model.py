"""BertTextEmbedder: one vector per text (sentence embeddings), for similarity and search."""

import os

import keras
import numpy as np

from keras_bert.layers.activations import initializer
from keras_bert.models import task_inputs
from keras_bert.models.task import BertTask
from keras_bert.tasks.text_embedding import sentence_transformers as st_folder
from keras_bert.tasks.text_embedding.layers import EmbeddingPooling, L2Normalize, check_pooling
from keras_bert.tasks.text_embedding.pairs import PairFitting
from keras_bert.tasks.text_embedding.search import (EmbeddingIndex, as_embeddings, cosine_matrix,
                                                    unit_rows)
from keras_bert.tasks.text_embedding.serving import TextEmbedderServingModule


@keras.saving.register_keras_serializable(package="keras_bert")
class BertTextEmbedder(PairFitting, BertTask):
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

    Fine-tuning (`fit`; compiled at construction with keras_bert's AdamW): x is
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
        from keras_bert import sources, storage

        source = os.fspath(model_dir)
        given = {"pooling": pooling, "normalize": normalize}
        # A remote source is a model directory (`sources.resolve_source`).
        if not sources.is_model_dir(source) and not storage.is_remote(source):
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
