"""Fine-tuning tasks, one folder each: head model, reader, fine-tuning task,
serving module and metrics. A task registers in `keras_bert.models.registry`
when its folder's `TASK` is first read: `get_task(NAME)` imports the folder
`keras_bert.tasks.NAME` on demand and reads it, so nothing here imports a task
up front. A task folder imports no sibling task folder
(tests/test_package_graph.py checks).

The names below load on first use (PEP 562), like each folder's own: a
folder's options.py imports only the standard library, and importing it
loads no TensorFlow.
"""

from keras_bert._lazy import lazy_exports

__getattr__, __dir__, __all__ = lazy_exports(
    __name__,
    {
        "classification": ["BertClassifier", "ClassificationTask", "ClassifierServingModule"],
        "masked_lm": ["BertMaskedLM", "BertMaskedLMPreprocessor", "MaskedLMServingModule"],
        "multi_label_classification": ["BertMultiLabelClassifier", "MultiLabelServingModule",
                                       "MultiLabelTask"],
        "span_qa": ["BertSpanLabeler", "SpanQAServingModule", "SpanQATask"],
        "text_embedding": ["BertTextEmbedder", "EmbeddingIndex", "TextEmbedderServingModule"],
        "token_classification": ["BertTokenClassifier", "TokenClassificationTask",
                                 "TokenClassifierServingModule"],
    },
)
