"""Text embeddings: one vector per text, for similarity, search and clustering."""

from keras_bert.tasks.text_embedding.model import BertTextEmbedder
from keras_bert.tasks.text_embedding.losses import CosineSimilarityLoss
from keras_bert.tasks.text_embedding.losses import MultipleNegativesRankingLoss
from keras_bert.tasks.text_embedding.search import EmbeddingIndex
from keras_bert.tasks.text_embedding.serving import TextEmbedderServingModule
from keras_bert.tasks.text_embedding.spec import TASK

__all__ = ["BertTextEmbedder", "CosineSimilarityLoss", "MultipleNegativesRankingLoss",
           "EmbeddingIndex", "TextEmbedderServingModule", "TASK"]
