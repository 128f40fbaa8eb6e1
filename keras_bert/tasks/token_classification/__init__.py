"""Token classification: a label per token (NER, POS tagging).

model.py (the head), reader.py (data files), finetune.py (the fine-tuning
task), serving.py (export signatures), metrics.py, options.py (options and
task.json schema). Registered as 'token_classification'.
"""

from keras_bert.models.registry import TaskSpec, register_task
from keras_bert.tasks.token_classification.finetune import TokenClassificationTask
from keras_bert.tasks.token_classification import options
from keras_bert.tasks.token_classification.model import BertTokenClassifier
from keras_bert.tasks.token_classification.serving import TokenClassifierServingModule

# TASK: what `keras_bert.models.registry.get_task("token_classification")` finds here on demand.
TASK = register_task(TaskSpec("token_classification", model=BertTokenClassifier, finetune=TokenClassificationTask,
                     options=options.TokenClassificationOptions, task_json=options.TASK_JSON))
