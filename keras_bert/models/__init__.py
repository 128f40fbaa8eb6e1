"""Functional BERT models built from keras_bert.layers."""

from keras_bert.models.classifier import BertClassifier
from keras_bert.models.encoder import BertEncoder
from keras_bert.models.model_dir import load_model_dir, save_model_dir
from keras_bert.models.pretrainer import BertPretrainer
from keras_bert.models.span_labeler import BertSpanLabeler
from keras_bert.models.task import BertTask
from keras_bert.models.token_classifier import BertTokenClassifier
