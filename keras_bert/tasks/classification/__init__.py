"""Sentence and sentence-pair classification (or regression).

model.py (the head), reader.py (data files), finetune.py (the fine-tuning
task), serving.py (export signatures), metrics.py, options.py (options and
task.json schema). Registered as 'classification'.

The names below load on first use (PEP 562), so importing options.py loads
no TensorFlow; `TASK` (spec.py, the registration line) registers the task.
"""

from keras_bert._lazy import lazy_exports

__getattr__, __dir__, __all__ = lazy_exports(__name__, {
    "model": ["BertClassifier"], "finetune": ["ClassificationTask"],
    "serving": ["ClassifierServingModule"], "spec": ["TASK"]})
