"""TF Hub / Kaggle BERT SavedModels (the `hub.KerasLayer` models): read.

Sources:
- an encoder SavedModel folder (e.g. bert_en_uncased_L-12_H-768_A-12/4): the
  config comes from the weights' shapes and keras_metadata.pb (the
  activation), the casing from its `do_lower_case` variable;
- a folder holding such an encoder and its preprocess SavedModel as two
  subfolders: the vocabulary, casing and sequence length come from the
  preprocess model;
- a user's SavedModel holding a `hub.KerasLayer` BERT: one linear Dense layer
  on top becomes a BertClassifier head, any other head is left out and said.
The variables are read by their Model Garden names (`model_garden`).
"""

import json
import os

import numpy as np

from keras_bert.checkpoints.model_garden import (
    ACTIVATIONS,
    ENCODER_CLASSES,
    bert_weights,
    user_head,
    walk_layers,
    config_from_shapes,
    read_object_checkpoint,
    strip_scope,
)
from keras_bert.checkpoints.source import CheckpointError, SourceCheckpoint, check_against_config

SAVED_MODEL_FILE = "saved_model.pb"
KERAS_METADATA_FILE = "keras_metadata.pb"


def is_saved_model(path):
    """True when `path` is a SavedModel folder, or a folder of SavedModel subfolders."""
    return os.path.isdir(path) and (
        os.path.isfile(os.path.join(path, SAVED_MODEL_FILE)) or bool(_saved_model_subfolders(path)))


def _saved_model_subfolders(path):
    return sorted(os.path.join(path, d) for d in os.listdir(path)
                  if os.path.isfile(os.path.join(path, d, SAVED_MODEL_FILE)))


def _protobuf_strings(data):
    """Every length-delimited field value in a serialized protobuf, nested ones included.

    keras_metadata.pb (tf_keras' SavedMetadata) has no proto class in
    TensorFlow; its layers' configs are JSON strings inside it.
    """
    out, stack = [], [data]
    while stack:
        buf, i = stack.pop(), 0
        try:
            while i < len(buf):
                key, i = _varint(buf, i)
                wire = key & 7
                if wire == 0:
                    _, i = _varint(buf, i)
                elif wire == 2:
                    size, i = _varint(buf, i)
                    value = buf[i:i + size]
                    if len(value) != size:
                        raise ValueError
                    i += size
                    out.append(value)
                    stack.append(value)
                elif wire == 1:
                    i += 8
                elif wire == 5:
                    i += 4
                else:
                    raise ValueError
        except (ValueError, IndexError):
            continue  # Not a message: a string that happened to be pushed.
    return out


def _varint(buf, i):
    value = shift = 0
    while True:
        byte = buf[i]
        i += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return value, i
        if shift > 63:
            raise ValueError


def keras_layer_configs(folder):
    """The saved Keras 2 layer metadata of a SavedModel folder: a list of dicts."""
    path = os.path.join(folder, KERAS_METADATA_FILE)
    strings = []
    if os.path.isfile(path):
        with open(path, "rb") as f:
            strings = _protobuf_strings(f.read())
    configs = []
    for value in strings:
        if value.startswith(b"{") and b'"class_name"' in value:
            try:
                config = json.loads(value.decode("utf-8"))
            except (UnicodeDecodeError, ValueError):
                continue
            if isinstance(config, dict):
                configs.append(config)
    return configs


def _graph_ops(folder):
    """The op types of every function in a SavedModel's graph."""
    from tensorflow.core.protobuf import saved_model_pb2

    proto = saved_model_pb2.SavedModel()
    with open(os.path.join(folder, SAVED_MODEL_FILE), "rb") as f:
        proto.ParseFromString(f.read())
    ops = set()
    for graph in proto.meta_graphs:
        ops.update(node.op for node in graph.graph_def.node)
        for function in graph.graph_def.library.function:
            ops.update(node.op for node in function.node_def)
    return ops


def _encoder_activation(configs, where, warnings):
    """hidden_act of the saved encoder: its BertEncoder's or transformer block's config."""
    for layer in walk_layers(configs):
        if layer["class_name"] in ENCODER_CLASSES:
            config = layer["config"]
            act = config.get("activation", config.get("inner_activation"))
            if isinstance(act, str):
                if act not in ACTIVATIONS:
                    raise CheckpointError(
                        f"{where}: the encoder's activation is {act!r}; keras_bert reads "
                        f"{sorted(set(ACTIVATIONS))}.")
                return ACTIVATIONS[act]
    warnings.append(f"{where} does not say its activation (no keras_metadata.pb); Model "
                    f"Garden's default, the tanh GELU (hidden_act 'gelu_approx'), is taken.")
    return "gelu_approx"


def read_preprocess(folder):
    """(vocab.txt, lowercase, seq_length or None) of a TF Hub BERT preprocess SavedModel."""
    vocab = os.path.join(folder, "assets", "vocab.txt")
    if not os.path.isfile(vocab):
        raise CheckpointError(
            f"{folder} is a preprocess SavedModel without assets/vocab.txt: keras_bert reads "
            f"WordPiece preprocess models (bert_*_preprocess); a SentencePiece one "
            f"(ALBERT, ...) is not BERT.")
    # tensorflow-text's BertTokenizer lower-cases with the CaseFoldUTF8 op.
    lowercase = "CaseFoldUTF8" in _graph_ops(folder)
    lengths = {c.get("config", {}).get("seq_length") for c in walk_layers(
        keras_layer_configs(folder)) if c.get("class_name") == "BertPackInputs"}
    lengths.discard(None)
    return vocab, lowercase, (lengths.pop() if len(lengths) == 1 else None)


def read_tf_hub_saved_model(path):
    """Reads a TF Hub / Kaggle BERT SavedModel (or a model holding one: see the module
    docstring) into a SourceCheckpoint.

    Raises:
        CheckpointError: not a BERT SavedModel (the message names what was found),
            a TF1 hub module, a SavedModel without variables, or damaged files.
    """
    folder, preprocess = split_pair(path)
    if os.path.isfile(os.path.join(folder, "tfhub_module.pb")):
        raise CheckpointError(
            f"{folder} is a TF1 Hub module (tfhub_module.pb), which keras_bert does not read. "
            f"Use the TF2 SavedModel of the same model (tfhub.dev version 2 or later of "
            f"bert_en_*), or Google's TF1 checkpoint it came from.")
    prefix = os.path.join(folder, "variables", "variables")
    if not os.path.isfile(prefix + ".index"):
        raise CheckpointError(
            f"{folder} has {SAVED_MODEL_FILE} but no variables/variables.index: a frozen graph "
            f"or an incomplete download. Download the whole SavedModel folder again "
            f"(saved_model.pb, variables/, assets/).")
    skipped = {}
    variables = strip_scope(read_object_checkpoint(prefix, skipped))
    warnings = []
    configs = keras_layer_configs(folder)
    config = config_from_shapes(variables, _encoder_activation(configs, folder, warnings),
                                folder)
    source = SourceCheckpoint(format="tf_hub", path=path, config=config,
                              vocab_file=os.path.join(folder, "assets", "vocab.txt"),
                              warnings=warnings, ignored=skipped)
    rest = bert_weights(source, variables, folder)
    flags = [n for n in rest if variables[n][1].dtype == np.bool_ and variables[n][1].ndim == 0]
    if len(flags) == 1:  # export_tfhub's do_lower_case variable.
        source.lowercase = bool(variables[flags[0]][1])
        source.lowercase_from = f"the SavedModel's do_lower_case variable ({flags[0]})"
        source.ignored[flags[0]] = "do_lower_case, read as the casing"
        rest.remove(flags[0])
    if preprocess is not None:
        source.vocab_file, source.lowercase, source.max_seq_length = read_preprocess(preprocess)
        source.lowercase_from = f"the preprocess SavedModel {preprocess}"
    user_head(source, variables, rest, configs, folder)
    check_against_config(source, describe=source.source_name)
    return source


def split_pair(path):
    """(encoder folder, preprocess folder or None) for a SavedModel or a folder of two."""
    if os.path.isfile(os.path.join(path, SAVED_MODEL_FILE)):
        return path, None
    folders = _saved_model_subfolders(path)
    preprocess = [f for f in folders if _is_preprocess(f)]
    encoders = [f for f in folders if f not in preprocess]
    if len(encoders) != 1 or len(preprocess) > 1:
        raise CheckpointError(
            f"{path} holds the SavedModels {[os.path.basename(f) for f in folders]}: expected "
            f"one BERT encoder and at most one preprocess model (bert_*_preprocess). Pass the "
            f"encoder's folder itself, or a folder holding just the two.")
    return encoders[0], (preprocess[0] if preprocess else None)


def _is_preprocess(folder):
    """True for a BERT preprocess SavedModel: its saved Keras layers tokenize and pack."""
    classes = {c["class_name"] for c in walk_layers(keras_layer_configs(folder))}
    if classes & {"BertTokenizer", "FastWordpieceBertTokenizer", "BertPackInputs"}:
        return True
    # Without Keras metadata (older exports): a graph that tokenizes.
    return bool(_graph_ops(folder) & {"WordpieceTokenizeWithOffsets",
                                      "FastWordpieceTokenizeWithOffsets"})
