"""transformers' TensorFlow BERT folders: the `tf_model.h5` of `TFBertModel`, `TFBertFor...`.

A folder written by a TF model's `save_pretrained` holds
    config.json       transformers' config, as for PyTorch folders
                      ("architectures" is saved without the "TF" prefix)
    tf_model.h5       Keras 2 HDF5 weights (`model.save_weights`)
    vocab.txt         WordPiece vocabulary
    tokenizer_config.json  optional; gives do_lower_case (our lowercase)
The h5 file's root attribute `layer_names` lists the model's top layers; each
layer's group lists its `weight_names`, e.g.
"tf_bert_for_sequence_classification/bert/encoder/layer_._0/attention/self/query/kernel:0",
whose first part, the model's scope, is dropped (as transformers does). Keras
kernels are [in, out], Google's layout, so only the NSP kernel is transposed.

Read with h5py only (no transformers, no tf_keras). A folder with PyTorch
weights besides tf_model.h5 is read as a PyTorch folder (`convert.detect_format`).
"""

import os
import re

import numpy as np

from keras_bert.checkpoints import bert_family
from keras_bert.checkpoints.huggingface import (
    CONFIG_FILE,
    VOCAB_FILE,
    head_task,
    make_head,
    read_config_file,
    read_lowercase,
)
from keras_bert.checkpoints.source import (
    CheckpointError,
    SourceCheckpoint,
    check_against_config,
    first_line,
    read_config_json,
)
from keras_bert.models.model_dir import h5_shapes

TF_WEIGHTS_FILE = "tf_model.h5"
TF_WEIGHTS_INDEX = "tf_model.h5.index.json"

_DENSE = (r"attention/self/(?:query|key|value)|attention/output/dense"
          r"|intermediate/dense|output/dense")
_NORM = r"attention/output/LayerNorm|output/LayerNorm"
# (pattern on the weight name without scope and ":0", Google name template).
# Applied with re.fullmatch. Encoder layers are "layer_._N" (transformers'
# list-of-layers naming); "layer_N" is accepted too.
_RULES = [
    (r"bert/embeddings/word_embeddings/weight", "bert/embeddings/word_embeddings"),
    (r"bert/embeddings/(?P<kind>token_type|position)_embeddings/embeddings",
     "bert/embeddings/{kind}_embeddings"),
    (r"bert/embeddings/LayerNorm/(?P<w>gamma|beta)", "bert/embeddings/LayerNorm/{w}"),
    (rf"bert/encoder/layer_(?:\._)?(?P<layer>\d+)/(?P<path>{_DENSE})/(?P<w>kernel|bias)",
     "bert/encoder/layer_{layer}/{path}/{w}"),
    (rf"bert/encoder/layer_(?:\._)?(?P<layer>\d+)/(?P<path>{_NORM})/(?P<w>gamma|beta)",
     "bert/encoder/layer_{layer}/{path}/{w}"),
    (r"bert/pooler/dense/(?P<w>kernel|bias)", "bert/pooler/dense/{w}"),
    (r"mlm___cls/predictions/transform/(?P<path>dense/kernel|dense/bias"
     r"|LayerNorm/gamma|LayerNorm/beta)", "cls/predictions/transform/{path}"),
    (r"mlm___cls/predictions/bias", "cls/predictions/output_bias"),
    (r"nsp___cls/seq_relationship/kernel", "cls/seq_relationship/output_weights"),
    (r"nsp___cls/seq_relationship/bias", "cls/seq_relationship/output_bias"),
]
# Keras' NSP kernel is [hidden, 2]; Google's output_weights are [2, hidden].
_TRANSPOSED = {"cls/seq_relationship/output_weights"}


def read_h5_weights(weights_file, config):
    """The weights of a Keras 2 h5 weights file (a `tf_model.h5`), in file order,
    dataset sizes checked against `config` (a BertConfig) before any is read.

    Returns:
        list of (name, stored name, float32 numpy array): `name` is the stored
        weight name without the model's scope and the ":0" suffix; a weight
        shared by two layers is listed once per layer.

    Raises:
        CheckpointError: the file is missing, truncated or corrupt, or not a
            Keras 2 weights file.
    """
    import h5py

    if not os.path.isfile(weights_file):
        raise CheckpointError(f"Weights file not found: {weights_file}")
    weights = []
    try:
        with h5py.File(weights_file, "r") as f:
            h5_shapes(f, config, weights_file, error=CheckpointError)
            # A whole model saved with model.save() keeps its weights in a group.
            root = f["model_weights"] if "layer_names" not in f.attrs and (
                "model_weights" in f) else f
            if "layer_names" not in root.attrs:
                raise CheckpointError(
                    f"{weights_file} is not a Keras 2 weights file as transformers' TF "
                    f"save_pretrained writes (no layer_names attribute; found "
                    f"{sorted(root.keys())[:5]}). A keras_bert model directory keeps "
                    f"model.weights.h5 beside its own config.json; a Hugging Face folder "
                    f"keeps tf_model.h5, model.safetensors or pytorch_model.bin.")
            for layer in _strings(root.attrs["layer_names"]):
                group = root[layer]
                for stored in _strings(group.attrs.get("weight_names", [])):
                    value = np.asarray(group[stored][()], np.float32)
                    name = re.sub(r":\d+$", "", stored)
                    # Drop the model's scope ("tf_bert_model/"), as transformers does.
                    name = name.split("/", 1)[1] if "/" in name else name
                    weights.append((name, stored, value))
    except CheckpointError:
        raise
    except (OSError, KeyError, ValueError, TypeError, RuntimeError) as e:
        # h5py raises OSError for a truncated or damaged file, KeyError for a
        # listed weight that is missing.
        raise CheckpointError(
            f"Cannot read {weights_file}: {first_line(e)}. The file is truncated or corrupt; "
            f"download it again, or save it again with save_pretrained.") from e
    return weights


def _strings(values):
    return [v.decode("utf-8") if isinstance(v, bytes) else str(v) for v in values]


def read_transformers_tf_checkpoint(path):
    """Reads a transformers TF BERT folder (tf_model.h5) into a SourceCheckpoint.

    TFBertModel, its pretraining heads, and the fine-tuned sequence, token and
    question-answering heads (`SourceCheckpoint.head`).

    Args:
        path: the folder (config.json, tf_model.h5, vocab.txt), or the
            tf_model.h5 inside it.

    Raises:
        CheckpointError: a missing, truncated or corrupt file, a config that
            is not BERT, or a weight whose shape differs from config.json's.

    Example:
    >>> source = read_transformers_tf_checkpoint("my_tf_classifier")
    >>> source.head["label_names"]
    ['negative', 'positive']
    """
    if os.path.isfile(path):
        folder, weights_file = os.path.dirname(os.path.abspath(path)), path
    elif os.path.isdir(path):
        folder, weights_file = path, os.path.join(path, TF_WEIGHTS_FILE)
    else:
        raise CheckpointError(f"transformers TF checkpoint not found: {path}")
    if not os.path.isfile(weights_file) and os.path.isfile(
            os.path.join(folder, TF_WEIGHTS_INDEX)):
        raise CheckpointError(
            f"{folder} holds a sharded {TF_WEIGHTS_INDEX}, which keras_bert does not read. "
            f"Where transformers < 5 runs, save the model as one file "
            f"(model.save_pretrained(folder, max_shard_size=\"20GB\")), or as safetensors "
            f"with torch (BertModel.from_pretrained(folder, from_tf=True).save_pretrained("
            f"folder), the task class in place of BertModel).")
    config_file = os.path.join(folder, CONFIG_FILE)
    hint = (f"transformers' save_pretrained writes {CONFIG_FILE} beside {TF_WEIGHTS_FILE}; "
            f"copy it from where the model came from.")
    # Before the config is read as BERT's: a DistilBERT config has other keys.
    found = read_config_json(config_file, hint)
    model_type = bert_family.model_type_of(found) if isinstance(found, dict) else None
    if model_type in bert_family.MODEL_TYPES:
        raise CheckpointError(
            f"{folder}: a {model_type} {TF_WEIGHTS_FILE}; keras_bert reads BERT's variants "
            f"from their PyTorch weights (model.safetensors or pytorch_model.bin), "
            f"not from transformers' TF h5. Get the folder with model.safetensors (the Hub "
            f"repositories hold both), or where transformers < 5 runs, save it with "
            f"{bert_family.MODEL_CLASSES[model_type]}.from_pretrained(folder, from_tf=True)"
            f".save_pretrained(folder).")
    values, config = read_config_file(config_file, hint)
    stored_weights = read_h5_weights(weights_file, config)

    source = SourceCheckpoint(format="transformers_tf", path=path, config=config,
                              vocab_file=os.path.join(folder, VOCAB_FILE))
    source.lowercase, source.lowercase_from = read_lowercase(folder, values)
    task, layer = head_task(values)
    head_tensors = {}
    for name, stored, value in stored_weights:
        google, _ = bert_family.match(_RULES, name)
        if google is None:
            if task is not None and name in (f"{layer}/kernel", f"{layer}/bias"):
                head_tensors[name.rsplit("/", 1)[1]] = (stored, value)
            else:
                source.unused.append(stored)
            continue
        if google in _TRANSPOSED:
            value = value.T
        if google in source.weights:
            # TFBertForPreTraining / ForMaskedLM list the word embeddings again
            # under the MLM head, which ties its output projection to them.
            if np.array_equal(source.weights[google], value):
                source.ignored[stored] = f"the same weight as {source.source_names[google]}"
                continue
            raise CheckpointError(
                f"{weights_file}: both {source.source_names[google]} and {stored} hold "
                f"{google}, with different values; the file is ambiguous.")
        source.weights[google] = np.ascontiguousarray(value)
        source.source_names[google] = stored
    if task is not None and len(head_tensors) == 2:
        (kernel_name, kernel), (bias_name, bias) = head_tensors["kernel"], head_tensors["bias"]
        source.head = make_head(source, values, task, kernel, bias,
                                f"{kernel_name}, {bias_name}", config_file)
    else:
        source.unused += [stored for stored, _ in head_tensors.values()]

    check_against_config(
        source, describe=lambda g: source.source_names.get(g) or _tf_name(g),
        transposed=_TRANSPOSED)
    return source


def _tf_name(google_name):
    """The TF weight name (without scope) of a Google name, for messages."""
    special = {
        "bert/embeddings/word_embeddings": "bert/embeddings/word_embeddings/weight:0",
        "cls/predictions/output_bias": "mlm___cls/predictions/bias:0",
        "cls/seq_relationship/output_weights": "nsp___cls/seq_relationship/kernel:0",
        "cls/seq_relationship/output_bias": "nsp___cls/seq_relationship/bias:0",
    }
    if google_name in special:
        return special[google_name]
    name = re.sub(r"layer_(\d+)", r"layer_._\1", google_name)
    name = re.sub(r"^cls/predictions/", "mlm___cls/predictions/", name)
    if name.endswith("_embeddings"):
        name += "/embeddings"
    return name + ":0"
