"""keras_bert: BERT for TensorFlow 2 / Keras 3.

Importing the package loads no TensorFlow: its public names and subpackages
load on first use (PEP 562), so `from keras_bert import BertClassifier`
imports the classifier's modules then, and a light module
(`keras_bert.config`, `keras_bert.tasks.classification.options`) loads on
its own; tools/*.py read their flags from those before TensorFlow.

Keras finds keras_bert's classes in a `.keras` file only once their modules
ran. So when Keras is loaded already, `import keras_bert` imports the public
classes at once (the cost is paid), and when it is not, they are imported
right after Keras is: `import keras_bert; import keras;
keras.models.load_model("m.keras")` works in either order.
"""

import importlib.abc
import importlib.util
import os
import sys
import warnings

from keras_bert import sources as _sources
from keras_bert._lazy import lazy_exports

__version__ = "0.1.0"


def _drop_unusable_legacy_keras(environ):
    """Unsets TF_USE_LEGACY_KERAS when tf_keras is not installed (returns True then).

    Ray Train sets TF_USE_LEGACY_KERAS=1 in its TensorFlow workers. Without
    tf_keras, TensorFlow then fails every `tf.keras` use, tensorflow_text's
    import among them ("Keras cannot be imported"), although keras_bert
    needs only Keras 3: routed to Keras 3, nothing that could have worked
    breaks. With tf_keras installed the variable is left alone.
    """
    if environ.get("TF_USE_LEGACY_KERAS") not in ("true", "True", "1"):
        return False
    if importlib.util.find_spec("tf_keras") is not None:
        return False
    del environ["TF_USE_LEGACY_KERAS"]
    warnings.warn("TF_USE_LEGACY_KERAS is set (Ray Train sets it) but tf_keras is not "
                  "installed: keras_bert unset it, so tf.keras is Keras 3 in this process.",
                  stacklevel=3)
    return True


_drop_unusable_legacy_keras(os.environ)


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
        "tasks": ["BertClassifier", "BertMaskedLM", "BertMultiLabelClassifier",
                  "BertSpanLabeler", "BertTextEmbedder", "BertTokenClassifier"],
    },
)



def _register_classes():
    """Imports the public classes: Keras' `.keras` loader finds only classes whose
    modules ran (they register themselves as "keras_bert>NAME")."""
    package = sys.modules[__name__]
    for name in __all__:
        getattr(package, name)


class _AfterKerasImport(importlib.abc.MetaPathFinder):
    """Once Keras itself is imported, makes keras_bert's classes known to its loader
    (then steps aside): at once, or, when a keras_bert module is what imports Keras
    (its import is not finished), on the first `load_model`."""

    def find_spec(self, fullname, path, target=None):
        if fullname != "keras":
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(fullname)
        if spec is None or spec.loader is None:
            return spec
        exec_module = spec.loader.exec_module

        def exec_then_register(module):
            exec_module(module)
            try:
                _register_classes()
            except ImportError:
                # A keras_bert module imported Keras and is not finished (a
                # circular import now): the classes come on the first load_model.
                _register_on_first_load(module)

        # This spec's own loader object (find_spec made it for this import).
        spec.loader.exec_module = exec_then_register
        return spec


def _register_on_first_load(keras):
    """`keras.saving.load_model` (= `keras.models.load_model`) that imports the
    classes first, once."""
    original = keras.saving.load_model

    def load_model(*args, **kwargs):
        for owner in (keras.saving, keras.models):
            if getattr(owner, "load_model", None) is load_model:
                owner.load_model = original
        _register_classes()
        return original(*args, **kwargs)

    load_model.__doc__, load_model.__wrapped__ = original.__doc__, original
    keras.saving.load_model = keras.models.load_model = load_model


if "keras" in sys.modules:
    _register_classes()
elif not any(isinstance(f, _AfterKerasImport) for f in sys.meta_path):
    sys.meta_path.insert(0, _AfterKerasImport())
