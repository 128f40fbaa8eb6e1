"""Generic functional BERT models: encoder, pretrainer, task base, model directory.

The task heads live in `keras_bert.tasks`.
"""

from keras_bert.models.encoder import BertEncoder
from keras_bert.models.model_dir import load_model_dir, save_model_dir
from keras_bert.models.pretrainer import BertPretrainer
from keras_bert.models.registry import TaskSpec, get_task, register_task, task_names
from keras_bert.models.task import BertTask
