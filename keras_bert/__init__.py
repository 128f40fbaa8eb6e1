"""keras_bert: BERT for TensorFlow 2 / Keras 3.

Importing the package loads no TensorFlow: its public names and subpackages
load on first use (PEP 562), so `from keras_bert import BertClassifier`
imports the classifier's modules then, and a light module
(`keras_bert.config`, `keras_bert.tasks.classification.options`) loads on
its own; tools/*.py read their flags from those before TensorFlow.

Keras finds keras_bert's classes in a `.keras` file only once their modules
ran. So when Keras is loaded already, `import keras_bert` imports the public
classes at once (the cost is paid): `import keras; import keras_bert;
keras.models.load_model("m.keras")` works as it always did.
"""

import sys

from keras_bert import sources as _sources
from keras_bert._lazy import lazy_exports

__version__ = "0.1.0"


def _resolve_checkpoint(source):
    """Any source other than a model directory: the converter, loaded on first use."""
    from keras_bert.checkpoints.resolve import resolve_source

    return resolve_source(source)


def _load_preprocessor(model_dir, **kwargs):
    """`BertPreprocessor.from_pretrained`'s reader (text/ imports no model code)."""
    from keras_bert.models.model_dir import load_preprocessor

    return load_preprocessor(model_dir, **kwargs)


# Here, not in a lazy module: every `from_pretrained` runs after this file.
_sources.register_source_resolver(_resolve_checkpoint)
_sources.register_preprocessor_loader(_load_preprocessor)

__getattr__, __dir__, __all__ = lazy_exports(
    __name__,
    {
        "config": ["BertConfig"],
        "layers": ["BertEmbeddings", "MaskedLMHead", "NextSentenceHead", "Pooler",
                   "TransformerEncoderBlock"],
        "models": ["BertEncoder", "BertPretrainer", "BertTask"],
        "tasks": ["BertClassifier", "BertMultiLabelClassifier", "BertSpanLabeler",
                  "BertTokenClassifier"],
    },
)

# Keras is loaded: its `.keras` loader can only find classes whose modules ran.
if "keras" in sys.modules:
    for _name in __all__:
        getattr(sys.modules[__name__], _name)
    del _name
