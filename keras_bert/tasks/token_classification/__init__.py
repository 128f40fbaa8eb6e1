"""Token classification: a label per token (NER, POS tagging).

model.py (the head), reader.py (data files), finetune.py (the fine-tuning
task), serving.py (export signatures), metrics.py, options.py (options and
task.json schema). Registered as 'token_classification'.

The names below load on first use (PEP 562): importing options.py loads
no TensorFlow. `TASK` registers the task when first read.
"""

from keras_bert._lazy import lazy_exports


def _task():
    """The task's one registration line, run when `TASK` is first read."""
    from keras_bert.models.registry import TaskSpec, register_task
    from keras_bert.tasks.token_classification import finetune, model, options

    return register_task(TaskSpec("token_classification", model=model.BertTokenClassifier, finetune=finetune.TokenClassificationTask,
                                  options=options.TokenClassificationOptions, task_json=options.TASK_JSON))


# TASK: what `keras_bert.models.registry.get_task("token_classification")` finds here on demand.
__getattr__, __dir__, __all__ = lazy_exports(
    __name__,
    {"finetune": ["TokenClassificationTask"], "model": ["BertTokenClassifier"], "serving": ["TokenClassifierServingModule"]},
    factories={"TASK": _task},
)
