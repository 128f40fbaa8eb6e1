"""Cosine similarity and exact top-k search over embeddings held in memory (numpy).

For a corpus that fits in memory: every query is scored against every row.
For millions of vectors, hand `EmbeddingIndex.embeddings` to a vector index.
"""

import numpy as np

from keras_bert.config import check_count

# Queries scored per matrix product: bounds the [chunk, N] score matrix.
_QUERY_CHUNK = 1024


def as_embeddings(value, name):
    """`value` as a float32 matrix [N, D]; a ValueError naming `name` otherwise."""
    array = np.asarray(value.numpy() if hasattr(value, "numpy") else value)
    if array.dtype == object or array.dtype.kind in "SU" or array.ndim != 2:
        raise ValueError(f"Expected {name} to be embeddings, a float matrix [N, D]. "
                         f"Received: an array of dtype {array.dtype} and shape "
                         f"{list(array.shape)}.")
    array = array.astype("float32", copy=False)
    if not np.isfinite(array).all():
        raise ValueError(f"{name} holds NaN or infinite values.")
    return array


def unit_rows(embeddings):
    """float32 [N, D]: each row divided by its L2 norm (zero rows stay zero)."""
    norms = np.linalg.norm(embeddings, axis=-1, keepdims=True)
    return embeddings / np.maximum(norms, 1e-12)


def cosine_matrix(a, b):
    """float32 [N, M]: the cosine of every row of a [N, D] with every row of b [M, D]."""
    a, b = as_embeddings(a, "a"), as_embeddings(b, "b")
    if a.shape[1] != b.shape[1]:
        raise ValueError(f"Embeddings of different widths: {a.shape[1]} and {b.shape[1]}.")
    return unit_rows(a) @ unit_rows(b).T


def nearest(queries, corpus, k=10):
    """The `k` corpus rows most cosine-similar to each query, best first.

    Args:
        queries: float [Q, D].
        corpus: float [N, D], N >= 1.
        k: int >= 1; at most N results are returned.

    Returns:
        (scores float32 [Q, min(k, N)], indices int64 [Q, min(k, N)]); equal
        scores are ordered by corpus index.
    """
    queries, corpus = as_embeddings(queries, "queries"), as_embeddings(corpus, "corpus")
    check_count("top_k", k)
    if len(corpus) == 0:
        raise ValueError("The corpus is empty: embed at least one document to search.")
    if queries.shape[1] != corpus.shape[1]:
        raise ValueError(f"The queries are {queries.shape[1]} wide but the corpus is "
                         f"{corpus.shape[1]} wide: embed both with the same model.")
    k = min(int(k), len(corpus))
    corpus = unit_rows(corpus)
    scores, indices = [], []
    for start in range(0, len(queries), _QUERY_CHUNK):
        chunk = unit_rows(queries[start:start + _QUERY_CHUNK]) @ corpus.T  # (q, N)
        # Best first, ties by index: a stable sort of the negated scores.
        order = np.argsort(-chunk, axis=1, kind="stable")[:, :k]
        scores.append(np.take_along_axis(chunk, order, axis=1))
        indices.append(order.astype("int64"))
    if not scores:
        return np.zeros([0, k], "float32"), np.zeros([0, k], "int64")
    return np.concatenate(scores).astype("float32"), np.concatenate(indices)


class EmbeddingIndex:
    """A corpus embedded once, searched by cosine similarity in memory.

    Args:
        embedder: the `BertTextEmbedder` that embeds queries (and made `embeddings`).
        embeddings: float32 [N, D], one row per document.
        documents: optional list of N documents (str), returned by `search`.

    Example:
    >>> index = embedder.index(["the cat sat", "stocks fell", "a kitten napped"])
    >>> index.search(["a sleeping cat"], top_k=2)[1]  # indices, best first
    array([[2, 0]])
    >>> np.save("corpus.npy", index.embeddings)  # for a vector database of one's own
    """

    def __init__(self, embedder, embeddings, documents=None):
        self.embedder = embedder
        self.embeddings = as_embeddings(embeddings, "embeddings")
        if documents is not None and len(documents) != len(self.embeddings):
            raise ValueError(f"Expected one document per embedding ({len(self.embeddings)}). "
                             f"Received: {len(documents)} documents.")
        self.documents = None if documents is None else list(documents)

    def __len__(self):
        return len(self.embeddings)

    def search(self, queries, top_k=10, batch_size=None):
        """(scores float32 [Q, k], indices int64 [Q, k]) of the best documents per query.

        Args:
            queries: texts (list, 1-D array) or query embeddings [Q, D].
            top_k: int, results per query (at most the corpus size).
            batch_size: int, texts per embedding call.
        """
        return nearest(self.embedder.embeddings_of(queries, batch_size, "queries"),
                       self.embeddings, top_k)

    def save(self, path):
        """Writes the embeddings as a float32 .npy file (`numpy.load` reads it)."""
        np.save(path, self.embeddings)
