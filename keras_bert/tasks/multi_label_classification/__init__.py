"""Multi-label classification: any number of labels per text (sigmoid head).

model.py (the head), reader.py (data files), finetune.py (the fine-tuning
task, thresholds tuned on the eval set), serving.py (export signatures),
metrics.py (micro / macro F1, threshold search), options.py (options and
task.json schema). Registered as 'multi_label_classification'.

The names below load on first use (PEP 562), so importing options.py loads
no TensorFlow; `TASK` (spec.py, the registration line) registers the task.
"""

from keras_bert._lazy import lazy_exports

__getattr__, __dir__, __all__ = lazy_exports(__name__, {
    "model": ["BertMultiLabelClassifier"], "finetune": ["MultiLabelTask"],
    "serving": ["MultiLabelServingModule"], "spec": ["TASK"]})
