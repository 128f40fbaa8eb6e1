"""`TASK`: the task's registration line, what `get_task` finds here on demand."""

from keras_bert.models.registry import TaskSpec, register_task
from keras_bert.tasks.masked_lm import model, preprocessor

TASK = register_task(TaskSpec("masked_lm", model=model.BertMaskedLM,
                              task_json=preprocessor.MASK_SETTINGS_JSON))
