"""Masked language modelling on raw text (continued pretraining, fill-mask).

Not a tools/finetune.py task: `fit` on texts is its training loop.
"""

from keras_bert.tasks.masked_lm.model import BertMaskedLM
from keras_bert.tasks.masked_lm.preprocessor import BertMaskedLMPreprocessor
from keras_bert.tasks.masked_lm.serving import MaskedLMServingModule
from keras_bert.tasks.masked_lm.spec import TASK

__all__ = ["BertMaskedLM", "BertMaskedLMPreprocessor", "MaskedLMServingModule", "TASK"]
