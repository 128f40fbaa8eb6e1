"""Span question answering (SQuAD v1.1 / v2.0).

model.py (the head), reader.py (data files), finetune.py (the fine-tuning
task), serving.py (export signatures), metrics.py, options.py (options and
task.json schema). Registered as 'span_qa'.

The names below load on first use (PEP 562), so importing options.py loads
no TensorFlow; `TASK` (spec.py, the registration line) registers the task.
"""

from keras_bert._lazy import lazy_exports

__getattr__, __dir__, __all__ = lazy_exports(__name__, {
    "model": ["BertSpanLabeler"], "finetune": ["SpanQATask"],
    "serving": ["SpanQAServingModule"], "spec": ["TASK"]})
