"""Text embeddings: one vector per text, for similarity, search and clustering.

model.py (the embedder), layers.py (masked pooling, L2 normalization),
sentence_transformers.py (a sentence-transformers folder's settings),
search.py (cosine similarity, in-memory top-k), serving.py (export
signatures). Registered as 'text_embedding'.
"""

from keras_bert.models.registry import TaskSpec, register_task
from keras_bert.tasks.text_embedding.model import BertTextEmbedder
from keras_bert.tasks.text_embedding.search import EmbeddingIndex
from keras_bert.tasks.text_embedding.serving import TextEmbedderServingModule

# TASK: what `keras_bert.models.registry.get_task("text_embedding")` finds here.
TASK = register_task(TaskSpec("text_embedding", model=BertTextEmbedder))
