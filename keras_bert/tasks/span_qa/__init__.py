"""Span question answering (SQuAD v1.1 / v2.0).

model.py (the head), reader.py (data files), finetune.py (the fine-tuning
task), serving.py (export signatures), metrics.py, options.py (options and
task.json schema). Registered as 'span_qa'.

The names below load on first use (PEP 562): importing options.py loads
no TensorFlow. `TASK` registers the task when first read.
"""

from keras_bert._lazy import lazy_exports


def _task():
    """The task's one registration line, run when `TASK` is first read."""
    from keras_bert.models.registry import TaskSpec, register_task
    from keras_bert.tasks.span_qa import finetune, model, options

    return register_task(TaskSpec("span_qa", model=model.BertSpanLabeler, finetune=finetune.SpanQATask,
                                  options=options.SpanQAOptions, task_json=options.TASK_JSON))


# TASK: what `keras_bert.models.registry.get_task("span_qa")` finds here on demand.
__getattr__, __dir__, __all__ = lazy_exports(
    __name__,
    {"finetune": ["SpanQATask"], "model": ["BertSpanLabeler"], "serving": ["SpanQAServingModule"]},
    factories={"TASK": _task},
)
