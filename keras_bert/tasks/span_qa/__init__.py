"""Span question answering (SQuAD v1.1 / v2.0)."""

from keras_bert.tasks.span_qa.model import BertSpanLabeler
from keras_bert.tasks.span_qa.finetune import SpanQATask
from keras_bert.tasks.span_qa.serving import SpanQAServingModule
from keras_bert.tasks.span_qa.spec import TASK

__all__ = ["BertSpanLabeler", "SpanQATask", "SpanQAServingModule", "TASK"]
