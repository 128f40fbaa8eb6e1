"""`TASK`: the task's registration line, what `get_task` finds here on demand."""

from keras_bert.models.registry import TaskSpec, register_task
from keras_bert.tasks.multi_label_classification import finetune, model, options

TASK = register_task(TaskSpec(
    "multi_label_classification", model=model.BertMultiLabelClassifier,
    finetune=finetune.MultiLabelTask, options=options.MultiLabelOptions,
    task_json=options.TASK_JSON))
