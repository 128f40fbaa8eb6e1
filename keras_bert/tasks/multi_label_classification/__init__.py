"""Multi-label classification: any number of labels per text (sigmoid head)."""

from keras_bert.tasks.multi_label_classification.model import BertMultiLabelClassifier
from keras_bert.tasks.multi_label_classification.finetune import MultiLabelTask
from keras_bert.tasks.multi_label_classification.serving import MultiLabelServingModule
from keras_bert.tasks.multi_label_classification.spec import TASK

__all__ = ["BertMultiLabelClassifier", "MultiLabelTask", "MultiLabelServingModule", "TASK"]
