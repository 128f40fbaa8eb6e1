"""Token classification: a label per token (NER, POS tagging)."""

from keras_bert.tasks.token_classification.model import BertTokenClassifier
from keras_bert.tasks.token_classification.finetune import TokenClassificationTask
from keras_bert.tasks.token_classification.serving import TokenClassifierServingModule
from keras_bert.tasks.token_classification.spec import TASK

__all__ = ["BertTokenClassifier", "TokenClassificationTask", "TokenClassifierServingModule", "TASK"]
