"""Span question answering (SQuAD v1.1 / v2.0).

model.py (the head), reader.py (data files), finetune.py (the fine-tuning
task), serving.py (export signatures), metrics.py, options.py (options and
task.json schema). Registered as 'span_qa'.
"""

from keras_bert.models.registry import TaskSpec, register_task
from keras_bert.tasks.span_qa.finetune import SpanQATask
from keras_bert.tasks.span_qa import options
from keras_bert.tasks.span_qa.model import BertSpanLabeler
from keras_bert.tasks.span_qa.serving import SpanQAServingModule

# TASK: what `keras_bert.models.registry.get_task("span_qa")` finds here on demand.
TASK = register_task(TaskSpec("span_qa", model=BertSpanLabeler, finetune=SpanQATask,
                     options=options.SpanQAOptions, task_json=options.TASK_JSON))
