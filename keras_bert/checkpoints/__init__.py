"""Google TF1, Hugging Face, transformers-TF, keras-hub, TF Hub and Model Garden BERT checkpoints
-> keras_bert model directories.

Example:
>>> from keras_bert.checkpoints import convert_checkpoint
>>> report = convert_checkpoint("uncased_L-12_H-768_A-12", "models/bert_base", check=True)
>>> print(report.summary())
"""

from keras_bert.checkpoints.convert import (
    FORMATS,
    assign_weights,
    build_model,
    check_inputs,
    check_model,
    convert_checkpoint,
    detect_format,
    read_checkpoint,
)
from keras_bert.checkpoints.google import read_google_checkpoint, write_google_checkpoint
from keras_bert.checkpoints.hub import KNOWN_NAMES, locate_checkpoint
from keras_bert.checkpoints.huggingface import read_huggingface_checkpoint
from keras_bert.checkpoints.keras_hub_preset import read_keras_hub_preset
from keras_bert.checkpoints.model_garden import read_model_garden_checkpoint
from keras_bert.checkpoints.tf_hub import read_tf_hub_saved_model
from keras_bert.checkpoints.resolve import resolve_source
from keras_bert.checkpoints.transformers_tf import read_transformers_tf_checkpoint
from keras_bert.checkpoints.source import CheckpointError, ConversionReport, SourceCheckpoint
from keras_bert.checkpoints.minilm import minilm_checkpoint_dir
