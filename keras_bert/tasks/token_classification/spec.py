"""`TASK`: the task's registration line, what `get_task` finds here on demand."""

from keras_bert.models.registry import TaskSpec, register_task
from keras_bert.tasks.token_classification import finetune, model, options

TASK = register_task(TaskSpec(
    "token_classification", model=model.BertTokenClassifier,
    finetune=finetune.TokenClassificationTask, options=options.TokenClassificationOptions,
    task_json=options.TASK_JSON))
