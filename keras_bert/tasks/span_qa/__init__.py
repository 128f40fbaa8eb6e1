"""Span question answering (SQuAD v1.1 / v2.0).

model.py (the head), reader.py (data files), finetune.py (the fine-tuning
task), serving.py (export signatures), metrics.py, options.py (options and
task.json schema). Registered as 'span_qa'.
"""

from keras_bert.tasks.span_qa.model import BertSpanLabeler
from keras_bert.tasks.span_qa.finetune import SpanQATask
from keras_bert.tasks.span_qa.serving import SpanQAServingModule
from keras_bert.tasks.span_qa.spec import TASK

__all__ = ["BertSpanLabeler", "SpanQATask", "SpanQAServingModule", "TASK"]
