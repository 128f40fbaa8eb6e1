"""Masked language modelling on raw text (continued pretraining, fill-mask).

model.py (BertMaskedLM: the encoder + the tied MLM head), preprocessor.py
(BertMaskedLMPreprocessor: packs, then masks on the fly; reads "[MASK]" in
text), serving.py (the `fill_mask` export signature, which `predict` runs).
Registered as 'masked_lm'; it is not a tools/finetune.py task (no reader or
fine-tuning task: `fit` on texts is its training loop).
"""

from keras_bert.tasks.masked_lm.model import BertMaskedLM
from keras_bert.tasks.masked_lm.preprocessor import BertMaskedLMPreprocessor
from keras_bert.tasks.masked_lm.serving import MaskedLMServingModule
from keras_bert.tasks.masked_lm.spec import TASK

__all__ = ["BertMaskedLM", "BertMaskedLMPreprocessor", "MaskedLMServingModule", "TASK"]
