"""keras_bert: BERT for TensorFlow 2 / Keras 3."""

__version__ = "0.1.0"

from keras_bert.config import BertConfig
from keras_bert.layers import (
    BertEmbeddings,
    MaskedLMHead,
    NextSentenceHead,
    Pooler,
    TransformerEncoderBlock,
)
from keras_bert.models import BertEncoder, BertPretrainer, BertTask
from keras_bert.tasks import BertClassifier, BertSpanLabeler, BertTokenClassifier
