"""In-graph text processing: tokenizer, packer, MLM masking, vocabularies.

Imports nothing from keras_bert.layers or keras_bert.models.
"""

from keras_bert.text.byte_pair import BytePairTokenizer
from keras_bert.text.masker import MaskedLMMasker
from keras_bert.text.packer import BertPacker
from keras_bert.text.preprocessor import BertPreprocessor
from keras_bert.text.sentencepiece import SentencePieceTokenizer
from keras_bert.text.settings import TextSettings
from keras_bert.text.settings import resolve_text_settings
from keras_bert.text.tokenizer import BertTokenizer
from keras_bert.text.vocab import SPECIAL_TOKENS
from keras_bert.text.vocab import build_vocabulary
from keras_bert.text.vocab import count_words
from keras_bert.text.vocab import infer_lowercase
from keras_bert.text.vocab import load_vocabulary
from keras_bert.text.vocab import save_vocabulary

__all__ = [
    "BertPacker",
    "BertPreprocessor",
    "BertTokenizer",
    "BytePairTokenizer",
    "MaskedLMMasker",
    "SPECIAL_TOKENS",
    "SentencePieceTokenizer",
    "TextSettings",
    "build_vocabulary",
    "count_words",
    "infer_lowercase",
    "load_vocabulary",
    "resolve_text_settings",
    "save_vocabulary",
]
