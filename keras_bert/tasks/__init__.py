"""Fine-tuning tasks, one folder each: head model, reader, fine-tuning task,
serving module and metrics. Importing this package registers them all in
`keras_bert.models.registry` (keras_bert's own __init__ does, for its
public names); loading does not rely on it: `get_task(NAME)` imports the
folder `keras_bert.tasks.NAME` on demand. A task folder imports no sibling
task folder (tests/test_package_graph.py checks).
"""

from keras_bert.tasks.classification import BertClassifier, ClassificationTask
from keras_bert.tasks.classification import ClassifierServingModule
from keras_bert.tasks.multi_label_classification import BertMultiLabelClassifier
from keras_bert.tasks.multi_label_classification import MultiLabelServingModule, MultiLabelTask
from keras_bert.tasks.span_qa import BertSpanLabeler, SpanQAServingModule, SpanQATask
from keras_bert.tasks.token_classification import BertTokenClassifier
from keras_bert.tasks.token_classification import TokenClassificationTask
from keras_bert.tasks.token_classification import TokenClassifierServingModule
from keras_bert.tasks.text_embedding import BertTextEmbedder, EmbeddingIndex
from keras_bert.tasks.text_embedding import TextEmbedderServingModule
