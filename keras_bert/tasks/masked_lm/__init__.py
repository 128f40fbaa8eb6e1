"""Masked language modelling on raw text (continued pretraining, fill-mask).

model.py (BertMaskedLM: the encoder + the tied MLM head), preprocessor.py
(BertMaskedLMPreprocessor: packs, then masks on the fly; reads "[MASK]" in
text), serving.py (the `fill_mask` export signature, which `predict` runs).
Registered as 'masked_lm'; it is not a tools/finetune.py task (no reader or
fine-tuning task: `fit` on texts is its training loop).

The names below load on first use (PEP 562); `TASK` (spec.py, the
registration line) registers the task.
"""

from keras_bert._lazy import lazy_exports

__getattr__, __dir__, __all__ = lazy_exports(__name__, {
    "model": ["BertMaskedLM"], "preprocessor": ["BertMaskedLMPreprocessor"],
    "serving": ["MaskedLMServingModule"], "spec": ["TASK"]})
