"""Text embeddings: one vector per text, for similarity, search and clustering.

model.py (the embedder), pairs.py (its contrastive `fit`), layers.py (masked pooling,
L2 normalization), losses.py (in-batch negatives, cosine regression),
metrics.py (recall@k, MRR, Spearman), sentence_transformers.py (a
sentence-transformers folder's settings), search.py (cosine similarity,
in-memory top-k), serving.py (export signatures), reader.py (pair files),
finetune.py and options.py (tools/finetune.py --task text_embedding),
output.py (embeddings written as JSON Lines or .npy). Registered as
'text_embedding'.
"""

from keras_bert.tasks.text_embedding.model import BertTextEmbedder
from keras_bert.tasks.text_embedding.losses import CosineSimilarityLoss
from keras_bert.tasks.text_embedding.losses import MultipleNegativesRankingLoss
from keras_bert.tasks.text_embedding.search import EmbeddingIndex
from keras_bert.tasks.text_embedding.serving import TextEmbedderServingModule
from keras_bert.tasks.text_embedding.spec import TASK

__all__ = ["BertTextEmbedder", "CosineSimilarityLoss", "MultipleNegativesRankingLoss",
           "EmbeddingIndex", "TextEmbedderServingModule", "TASK"]
