"""SavedModel export with raw-string signatures, for TF Serving.

Example:
>>> from keras_bert.export import export_model
>>> export_model("models/sentiment", "exports/sentiment")   # -> exports/sentiment/1
"""

from keras_bert.export.classifier import ClassifierServingModule
from keras_bert.export.export import (
    SERVING_MODULES,
    build_serving_module,
    export_model,
    next_version,
    resolve_export_dir,
    save_serving_module,
)
from keras_bert.export.serving_module import BertServingModule
from keras_bert.export.span_qa import SpanQAServingModule
from keras_bert.export.token_classifier import TokenClassifierServingModule
from keras_bert.export.features import extract_features
