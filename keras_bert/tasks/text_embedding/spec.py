"""`TASK`: the task's registration line, what `get_task` finds here on demand."""

from keras_bert.models.registry import TaskSpec, register_task
from keras_bert.tasks.text_embedding import finetune, model, options

TASK = register_task(TaskSpec(
    "text_embedding", model=model.BertTextEmbedder, finetune=finetune.TextEmbeddingTask,
    options=options.TextEmbeddingOptions, task_json=options.TASK_JSON))
