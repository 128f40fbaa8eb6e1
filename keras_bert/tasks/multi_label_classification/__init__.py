"""Multi-label classification: any number of labels per text (sigmoid head).

model.py (the head), reader.py (data files), finetune.py (the fine-tuning
task, thresholds tuned on the eval set), serving.py (export signatures),
metrics.py (micro / macro F1, threshold search), options.py (options and
task.json schema). Registered as 'multi_label_classification'.
"""

from keras_bert.tasks.multi_label_classification.model import BertMultiLabelClassifier
from keras_bert.tasks.multi_label_classification.finetune import MultiLabelTask
from keras_bert.tasks.multi_label_classification.serving import MultiLabelServingModule
from keras_bert.tasks.multi_label_classification.spec import TASK

__all__ = ["BertMultiLabelClassifier", "MultiLabelTask", "MultiLabelServingModule", "TASK"]
