"""Sentence and sentence-pair classification (or regression).

model.py (the head), reader.py (data files), finetune.py (the fine-tuning
task), serving.py (export signatures), metrics.py, options.py (options and
task.json schema). Registered as 'classification'.
"""

from keras_bert.models.registry import TaskSpec, register_task
from keras_bert.tasks.classification.finetune import ClassificationTask
from keras_bert.tasks.classification import options
from keras_bert.tasks.classification.model import BertClassifier
from keras_bert.tasks.classification.serving import ClassifierServingModule

# TASK: what `keras_bert.models.registry.get_task("classification")` finds here on demand.
TASK = register_task(TaskSpec("classification", model=BertClassifier, finetune=ClassificationTask,
                     options=options.ClassificationOptions, task_json=options.TASK_JSON))
