"""Masked language modelling on raw text (continued pretraining, fill-mask).

model.py (BertMaskedLM: the encoder + the tied MLM head), preprocessor.py
(BertMaskedLMPreprocessor: packs, then masks on the fly; reads "[MASK]" in
text), serving.py (the `fill_mask` export signature, which `predict` runs).
Registered as 'masked_lm'; it is not a tools/finetune.py task (no reader or
fine-tuning task: `fit` on texts is its training loop).

The names below load on first use (PEP 562). `TASK` registers the task when first read.
"""

from keras_bert._lazy import lazy_exports


def _task():
    """The task's one registration line, run when `TASK` is first read."""
    from keras_bert.models.registry import TaskSpec, register_task
    from keras_bert.tasks.masked_lm import model, preprocessor

    return register_task(TaskSpec("masked_lm", model=model.BertMaskedLM,
                                  task_json=preprocessor.MASK_SETTINGS_JSON))


# TASK: what `keras_bert.models.registry.get_task("masked_lm")` finds here on demand.
__getattr__, __dir__, __all__ = lazy_exports(
    __name__,
    {"model": ["BertMaskedLM"], "preprocessor": ["BertMaskedLMPreprocessor"],
     "serving": ["MaskedLMServingModule"]},
    factories={"TASK": _task},
)
