"""keras_bert: BERT for TensorFlow 2 / Keras 3."""

__version__ = "0.1.0"

from keras_bert.config import BertConfig
from keras_bert.layers import (
    BertEmbeddings,
    MaskedLMHead,
    NextSentenceHead,
    Pooler,
    TransformerEncoderBlock,
)
from keras_bert.models import BertEncoder, BertPretrainer, BertTask
from keras_bert.tasks import BertClassifier, BertSpanLabeler, BertTokenClassifier
from keras_bert.tasks import BertMultiLabelClassifier, BertTextEmbedder

from keras_bert import sources as _sources


def _resolve_checkpoint(source):
    """Any source other than a model directory: the converter, loaded on first use."""
    from keras_bert.checkpoints.resolve import resolve_source

    return resolve_source(source)


_sources.register_source_resolver(_resolve_checkpoint)

# Subpackages load on first use: `import keras_bert; keras_bert.training.create_optimizer`
# works without `import keras_bert.training` (PEP 562).
_SUBPACKAGES = ("checkpoints", "data", "export", "layers", "models", "progress", "sources",
                "tasks", "text", "training")


def __getattr__(name):
    if name in _SUBPACKAGES:
        import importlib

        return importlib.import_module(f"keras_bert.{name}")
    raise AttributeError(f"module 'keras_bert' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_SUBPACKAGES))
