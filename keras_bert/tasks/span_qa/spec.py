"""`TASK`: the task's registration line, what `get_task` finds here on demand."""

from keras_bert.models.registry import TaskSpec, register_task
from keras_bert.tasks.span_qa import finetune, model, options

TASK = register_task(TaskSpec(
    "span_qa", model=model.BertSpanLabeler,
    finetune=finetune.SpanQATask, options=options.SpanQAOptions,
    task_json=options.TASK_JSON))
