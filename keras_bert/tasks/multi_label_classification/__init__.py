"""Multi-label classification: any number of labels per text (sigmoid head).

model.py (the head), reader.py (data files), finetune.py (the fine-tuning
task, thresholds tuned on the eval set), serving.py (export signatures),
metrics.py (micro / macro F1, threshold search), options.py (options and
task.json schema). Registered as 'multi_label_classification'.
"""

from keras_bert.models.registry import TaskSpec, register_task
from keras_bert.tasks.multi_label_classification import options
from keras_bert.tasks.multi_label_classification.finetune import MultiLabelTask
from keras_bert.tasks.multi_label_classification.model import BertMultiLabelClassifier
from keras_bert.tasks.multi_label_classification.serving import MultiLabelServingModule

# TASK: what `keras_bert.models.registry.get_task("multi_label_classification")` finds here.
TASK = register_task(TaskSpec("multi_label_classification", model=BertMultiLabelClassifier,
                              finetune=MultiLabelTask, options=options.MultiLabelOptions,
                              task_json=options.TASK_JSON))
