"""keras_bert: BERT for TensorFlow 2 / Keras 3.

`import keras_bert` imports TensorFlow, Keras and every public class, as
`import keras_hub` does. Each Keras object a saved model can name (layers,
models, optimizers, schedules, losses, metrics) registers itself where it is
defined, as "keras_bert>NAME", so once this import returns
`keras.models.load_model("model.keras")` finds them, whichever of `keras` and
`keras_bert` was imported first.
"""

import importlib.util
import os
import warnings

__version__ = "0.1.0"


def _drop_unusable_legacy_keras(environ):
    """Unsets TF_USE_LEGACY_KERAS when tf_keras is not installed (returns True then).

    Ray Train sets it in its TensorFlow workers; without tf_keras, TensorFlow
    then fails every `tf.keras` use (tensorflow_text's import among them),
    though keras_bert needs only Keras 3. Runs before TensorFlow is imported.
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

# The public classes (importing them registers them with Keras), then the
# subpackages, so that `keras_bert.checkpoints.convert_checkpoint` works too.
from keras_bert import sources as _sources  # noqa: E402
from keras_bert.config import BertConfig  # noqa: E402
from keras_bert.layers import BertEmbeddings, MaskedLMHead, NextSentenceHead  # noqa: E402
from keras_bert.layers import Pooler, TransformerEncoderBlock  # noqa: E402
from keras_bert.text import BertPreprocessor, BertTokenizer  # noqa: E402
from keras_bert.models import BertEncoder, BertPretrainer, BertTask  # noqa: E402
from keras_bert.tasks import BertClassifier, BertMaskedLM  # noqa: E402
from keras_bert.tasks import BertMultiLabelClassifier, BertSpanLabeler  # noqa: E402
from keras_bert.tasks import BertTextEmbedder, BertTokenClassifier  # noqa: E402
from keras_bert import checkpoints, data, export, training  # noqa: E402,F401
from keras_bert.models import model_dir as _model_dir  # noqa: E402

__all__ = [
    "BertClassifier", "BertConfig", "BertEmbeddings", "BertEncoder", "BertMaskedLM",
    "BertMultiLabelClassifier", "BertPreprocessor", "BertPretrainer", "BertSpanLabeler",
    "BertTask", "BertTextEmbedder", "BertTokenClassifier", "BertTokenizer", "MaskedLMHead",
    "NextSentenceHead", "Pooler", "TransformerEncoderBlock",
]

# Models and text sit below the converter and the model directory reader, so
# `from_pretrained` reaches those through keras_bert.sources.
_sources.register_source_resolver(checkpoints.resolve_source)
_sources.register_preprocessor_loader(_model_dir.load_preprocessor)
