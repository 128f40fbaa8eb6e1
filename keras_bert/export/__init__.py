"""SavedModel export with raw-string signatures, for TF Serving.

Example:
>>> from keras_bert.export import export_model
>>> export_model("models/sentiment", "exports/sentiment")   # -> exports/sentiment/1
"""

from keras_bert.export.export import (
    build_serving_module,
    export_model,
    next_version,
    resolve_export_dir,
    save_serving_module,
)
from keras_bert.export.serving_module import BertServingModule
from keras_bert.export.features import extract_features
