"""Sentence and sentence-pair classification (or regression).

model.py (the head), reader.py (data files), finetune.py (the fine-tuning
task), serving.py (export signatures), metrics.py, options.py (options and
task.json schema), spec.py (its registration line, run on import).
"""

from keras_bert.tasks.classification.model import BertClassifier
from keras_bert.tasks.classification.finetune import ClassificationTask
from keras_bert.tasks.classification.serving import ClassifierServingModule
from keras_bert.tasks.classification.spec import TASK

__all__ = ["BertClassifier", "ClassificationTask", "ClassifierServingModule", "TASK"]
