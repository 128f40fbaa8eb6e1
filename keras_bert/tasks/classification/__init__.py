"""Sentence and sentence-pair classification (or regression)."""

from keras_bert.tasks.classification.model import BertClassifier
from keras_bert.tasks.classification.finetune import ClassificationTask
from keras_bert.tasks.classification.serving import ClassifierServingModule
from keras_bert.tasks.classification.spec import TASK

__all__ = ["BertClassifier", "ClassificationTask", "ClassifierServingModule", "TASK"]
