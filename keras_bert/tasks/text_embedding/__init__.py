"""Text embeddings: one vector per text, for similarity, search and clustering.

model.py (the embedder), pairs.py (its contrastive `fit`), layers.py (masked pooling,
L2 normalization), losses.py (in-batch negatives, cosine regression),
metrics.py (recall@k, MRR, Spearman), sentence_transformers.py (a
sentence-transformers folder's settings), search.py (cosine similarity,
in-memory top-k), serving.py (export signatures). Registered as
'text_embedding'; no tools/finetune.py task yet (no reader or options.py):
fine-tune with `BertTextEmbedder.fit` on pairs.
"""

from keras_bert.models.registry import TaskSpec, register_task
from keras_bert.tasks.text_embedding.model import BertTextEmbedder
from keras_bert.tasks.text_embedding.losses import CosineSimilarityLoss
from keras_bert.tasks.text_embedding.losses import MultipleNegativesRankingLoss
from keras_bert.tasks.text_embedding.search import EmbeddingIndex
from keras_bert.tasks.text_embedding.serving import TextEmbedderServingModule

# TASK: what `keras_bert.models.registry.get_task("text_embedding")` finds here.
TASK = register_task(TaskSpec("text_embedding", model=BertTextEmbedder))
