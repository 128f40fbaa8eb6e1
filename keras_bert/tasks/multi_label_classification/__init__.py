"""Multi-label classification: any number of labels per text (sigmoid head).

model.py (the head), reader.py (data files), finetune.py (the fine-tuning
task, thresholds tuned on the eval set), serving.py (export signatures),
metrics.py (micro / macro F1, threshold search), options.py (options and
task.json schema). Registered as 'multi_label_classification'.

The names below load on first use (PEP 562): importing options.py loads
no TensorFlow. `TASK` registers the task when first read.
"""

from keras_bert._lazy import lazy_exports


def _task():
    """The task's one registration line, run when `TASK` is first read."""
    from keras_bert.models.registry import TaskSpec, register_task
    from keras_bert.tasks.multi_label_classification import finetune, model, options

    return register_task(TaskSpec("multi_label_classification", model=model.BertMultiLabelClassifier, finetune=finetune.MultiLabelTask,
                                  options=options.MultiLabelOptions, task_json=options.TASK_JSON))


# TASK: what `keras_bert.models.registry.get_task("multi_label_classification")` finds here on demand.
__getattr__, __dir__, __all__ = lazy_exports(
    __name__,
    {"finetune": ["MultiLabelTask"], "model": ["BertMultiLabelClassifier"], "serving": ["MultiLabelServingModule"]},
    factories={"TASK": _task},
)
