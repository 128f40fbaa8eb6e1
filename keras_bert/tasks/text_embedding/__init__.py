"""Text embeddings: one vector per text, for similarity, search and clustering.

model.py (the embedder), pairs.py (its contrastive `fit`), layers.py (masked pooling,
L2 normalization), losses.py (in-batch negatives, cosine regression),
metrics.py (recall@k, MRR, Spearman), sentence_transformers.py (a
sentence-transformers folder's settings), search.py (cosine similarity,
in-memory top-k), serving.py (export signatures), reader.py (pair files),
finetune.py and options.py (tools/finetune.py --task text_embedding),
output.py (embeddings written as JSON Lines or .npy). Registered as
'text_embedding'.

The names below load on first use (PEP 562); `TASK` (spec.py, the
registration line) registers the task.
"""

from keras_bert._lazy import lazy_exports

__getattr__, __dir__, __all__ = lazy_exports(__name__, {
    "model": ["BertTextEmbedder"],
    "losses": ["CosineSimilarityLoss", "MultipleNegativesRankingLoss"],
    "search": ["EmbeddingIndex"], "serving": ["TextEmbedderServingModule"], "spec": ["TASK"]})
