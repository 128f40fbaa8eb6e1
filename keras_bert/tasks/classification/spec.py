"""`TASK`: the task's registration line, what `get_task` finds here on demand."""

from keras_bert.models.registry import TaskSpec, register_task
from keras_bert.tasks.classification import finetune, model, options

TASK = register_task(TaskSpec(
    "classification", model=model.BertClassifier,
    finetune=finetune.ClassificationTask, options=options.ClassificationOptions,
    task_json=options.TASK_JSON))
