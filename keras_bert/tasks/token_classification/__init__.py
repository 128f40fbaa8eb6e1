"""Token classification: a label per token (NER, POS tagging).

model.py (the head), reader.py (data files), finetune.py (the fine-tuning
task), serving.py (export signatures), metrics.py, options.py (options and
task.json schema). Registered as 'token_classification'.
"""

from keras_bert.tasks.token_classification.model import BertTokenClassifier
from keras_bert.tasks.token_classification.finetune import TokenClassificationTask
from keras_bert.tasks.token_classification.serving import TokenClassifierServingModule
from keras_bert.tasks.token_classification.spec import TASK

__all__ = ["BertTokenClassifier", "TokenClassificationTask", "TokenClassifierServingModule", "TASK"]
