"""Fine-tuning tasks, one folder each: head model, reader, fine-tuning task,
serving module and metrics. Importing this package registers them in
`keras_bert.models.registry` (keras_bert's own __init__ does).
"""

from keras_bert.tasks.classification import BertClassifier, ClassificationTask
from keras_bert.tasks.classification import ClassifierServingModule
from keras_bert.tasks.span_qa import BertSpanLabeler, SpanQAServingModule, SpanQATask
from keras_bert.tasks.token_classification import BertTokenClassifier
from keras_bert.tasks.token_classification import TokenClassificationTask
from keras_bert.tasks.token_classification import TokenClassifierServingModule
