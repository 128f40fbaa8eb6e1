"""SavedModel export with raw-string signatures, for TF Serving (and LiteRT exports).

Example:
>>> from keras_bert.export import export_model, litert_interpreter
>>> export_model("models/sentiment", "exports/sentiment")   # -> exports/sentiment/1
>>> lite = export_model("models/sentiment", "exports/sentiment-lite", format="tflite")
>>> litert_interpreter(lite).get_signature_list()["serving_default"]["inputs"]
['text']
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
from keras_bert.export.tflite_runtime import litert_interpreter
