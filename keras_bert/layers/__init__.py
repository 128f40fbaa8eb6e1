"""Keras layers of BERT, usable inside any Keras model."""

from keras_bert.layers.activations import gelu, gelu_approx, get_activation
from keras_bert.layers.dropout import Dropout
from keras_bert.layers.embeddings import BertEmbeddings
from keras_bert.layers.lora import LoraDense
from keras_bert.layers.masked_lm_head import MaskedLMHead
from keras_bert.layers.next_sentence_head import NextSentenceHead
from keras_bert.layers.pooler import Pooler
from keras_bert.layers.transformer_encoder_block import TransformerEncoderBlock
from keras_bert.layers.bert_features import BertFeatures
