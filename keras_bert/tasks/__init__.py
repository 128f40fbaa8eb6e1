"""Fine-tuning tasks, one folder each: head model, reader, fine-tuning task,
serving module and metrics. Importing a folder registers its task in
`keras_bert.models.registry` (its spec.py's `register_task` line), and this
package imports every folder, so `import keras_bert` knows every task. A task
folder imports no sibling task folder (tests/test_package_graph.py checks).
"""

from keras_bert.tasks.classification import BertClassifier, ClassificationTask
from keras_bert.tasks.classification import ClassifierServingModule
from keras_bert.tasks.masked_lm import BertMaskedLM, BertMaskedLMPreprocessor
from keras_bert.tasks.masked_lm import MaskedLMServingModule
from keras_bert.tasks.multi_label_classification import BertMultiLabelClassifier
from keras_bert.tasks.multi_label_classification import MultiLabelServingModule, MultiLabelTask
from keras_bert.tasks.span_qa import BertSpanLabeler, SpanQAServingModule, SpanQATask
from keras_bert.tasks.text_embedding import BertTextEmbedder, EmbeddingIndex
from keras_bert.tasks.text_embedding import TextEmbedderServingModule
from keras_bert.tasks.token_classification import BertTokenClassifier, TokenClassificationTask
from keras_bert.tasks.token_classification import TokenClassifierServingModule

__all__ = [
    "BertClassifier", "ClassificationTask", "ClassifierServingModule",
    "BertMaskedLM", "BertMaskedLMPreprocessor", "MaskedLMServingModule",
    "BertMultiLabelClassifier", "MultiLabelServingModule", "MultiLabelTask",
    "BertSpanLabeler", "SpanQAServingModule", "SpanQATask",
    "BertTextEmbedder", "EmbeddingIndex", "TextEmbedderServingModule",
    "BertTokenClassifier", "TokenClassificationTask", "TokenClassifierServingModule",
]
