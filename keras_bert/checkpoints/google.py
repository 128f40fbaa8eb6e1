"""Google's original BERT release (google-research/bert): read and write.

A release folder holds
    bert_config.json                      hyperparameters (Google's key names)
    bert_model.ckpt.index                 TF checkpoint index
    bert_model.ckpt.data-00000-of-00001   TF checkpoint values
    vocab.txt                             WordPiece vocabulary
with variables named like `bert/encoder/layer_0/attention/self/query/kernel`
(dense kernels [in, out]) and, in pretraining checkpoints, the heads
`cls/predictions/...` and `cls/seq_relationship/...`.

Read with `tf.train.load_checkpoint`, written with `tf.raw_ops.SaveV2` (the files
Google's TF1 `Saver` wrote).
"""

import glob
import json
import os
import re

import numpy as np
import tensorflow as tf

from keras_bert import storage
from keras_bert.checkpoints.source import (
    CONFIG_KEYS,
    CheckpointError,
    SourceCheckpoint,
    check_against_config,
    check_config_object,
    check_declared_sizes,
    config_from_values,
    expected_shapes,
    first_line,
    read_config_json,
)
from keras_bert.names import inside_name

CONFIG_FILE = "bert_config.json"
VOCAB_FILE = "vocab.txt"
CHECKPOINT_NAME = "bert_model.ckpt"

# Google's `hidden_act` names -> BertConfig's ("gelu" is the tanh approximation).
# "gelu_exact" is ours, for an exact-erf model: Google's code refuses it rather
# than computing another function.
_ACTIVATIONS = {"gelu": "gelu_approx", "relu": "relu", "gelu_exact": "gelu"}
_ACTIVATIONS_OUT = {v: k for k, v in _ACTIVATIONS.items()}

# Keys in some Google configs (multilingual, Chinese) that change nothing here.
_IGNOREDCONFIG_KEYS = {
    "directionality",
    "pooler_fc_size",
    "pooler_num_attention_heads",
    "pooler_num_fc_layers",
    "pooler_size_per_head",
    "pooler_type",
}

# Variables a training checkpoint holds that are not model weights.
_OPTIMIZER_SUFFIXES = ("/adam_m", "/adam_v", "/Adam", "/Adam_1", "/Momentum")
_NON_WEIGHTS = {
    "global_step": "training step counter",
    "_CHECKPOINTABLE_OBJECT_GRAPH": "TF2 object graph metadata",
}

_LAYER_RE = re.compile(r"^bert/encoder/layer_(\d+)/")


def config_from_google(values, path="bert_config.json"):
    """BertConfig from the dict in a Google `bert_config.json` (LayerNorm epsilon 1e-12)."""
    check_config_object(values, path)
    unknown = sorted(set(values) - set(CONFIG_KEYS) - _IGNOREDCONFIG_KEYS)
    if unknown:
        raise CheckpointError(
            f"{path}: unknown key(s) {unknown} for a Google BERT config. Expected "
            f"{sorted(CONFIG_KEYS)}. Is this a Hugging Face config (use "
            f"--format huggingface)?"
        )
    missing = sorted(k for k in CONFIG_KEYS if k not in values)
    if missing and not set(missing) <= {"initializer_range", "type_vocab_size"}:
        raise CheckpointError(f"{path}: missing key(s) {missing}.")
    return config_from_values(values, path, CONFIG_KEYS, _ACTIVATIONS, layer_norm_epsilon=1e-12)


def config_to_google(config):
    """The dict of a Google `bert_config.json` for a BertConfig."""
    if config.layer_norm_epsilon != 1e-12:
        raise CheckpointError(
            f"Google's BERT format has no LayerNorm epsilon (it is always 1e-12); "
            f"this model has layer_norm_epsilon={config.layer_norm_epsilon}."
        )
    values = {key: getattr(config, field) for key, field in CONFIG_KEYS.items()}
    values["hidden_act"] = _ACTIVATIONS_OUT[config.hidden_act]
    return values


def find_google_checkpoint(path):
    """Resolves a release folder or checkpoint prefix to (folder, prefix)."""
    if os.path.isfile(path + ".index"):
        return os.path.dirname(os.path.abspath(path)), path
    if not os.path.isdir(path):
        raise CheckpointError(
            f"Google checkpoint not found: {path} is neither a folder nor a "
            f"checkpoint prefix ({path}.index does not exist)."
        )
    preferred = os.path.join(path, CHECKPOINT_NAME)
    if os.path.isfile(preferred + ".index"):
        return path, preferred
    indexes = sorted(glob.glob(os.path.join(path, "*.index")))
    if len(indexes) == 1:
        return path, indexes[0][: -len(".index")]
    latest = tf.train.latest_checkpoint(path)  # The name its `checkpoint` file records.
    if latest:
        name = os.path.relpath(latest, path)  # TF1 records absolute paths: inside is fine.
        return path, os.path.join(path, inside_name(
            name, source=os.path.join(path, "checkpoint"), what="the latest checkpoint"))
    if not indexes:
        raise CheckpointError(
            f"No TF checkpoint in {path}: expected {CHECKPOINT_NAME}.index and "
            f"{CHECKPOINT_NAME}.data-00000-of-00001."
        )
    raise CheckpointError(
        f"Several checkpoints in {path}: {[os.path.basename(i) for i in indexes]}. "
        f"Pass the prefix of one (e.g. {indexes[-1][: -len('.index')]})."
    )


def _classify(name):
    """Why a checkpoint variable is skipped on purpose, or None for a weight."""
    if name in _NON_WEIGHTS:
        return _NON_WEIGHTS[name]
    if name.endswith(_OPTIMIZER_SUFFIXES):
        return "optimizer slot"
    return None


def read_google_checkpoint(path):
    """Reads a Google BERT release into a SourceCheckpoint.

    Args:
        path: the release folder (bert_config.json, bert_model.ckpt.*,
            vocab.txt) or a checkpoint prefix with the config and vocabulary
            beside it.

    Returns:
        SourceCheckpoint with float32 numpy weights; optimizer slots in
        `ignored`, variables BERT has no place for in `unused`.

    Raises:
        CheckpointError: a missing or unreadable file, or a variable whose
            shape differs from what bert_config.json implies.

    Example:
    >>> source = read_google_checkpoint("uncased_L-12_H-768_A-12")
    >>> source.weights["bert/pooler/dense/kernel"].shape
    (768, 768)
    """
    folder, prefix = find_google_checkpoint(path)
    config_file = os.path.join(folder, CONFIG_FILE)
    values = read_config_json(
        config_file, f"A Google BERT release keeps {CONFIG_FILE} beside "
        f"{os.path.basename(prefix)}.index.")
    config = config_from_google(values, config_file)

    try:
        reader = tf.train.load_checkpoint(prefix)
        shape_map = reader.get_variable_to_shape_map()
    except (tf.errors.OpError, ValueError) as e:
        raise CheckpointError(
            f"Cannot read TF checkpoint {prefix}.index: {first_line(e)}. "
            f"The file is missing, truncated or not a TF checkpoint."
        ) from e
    check_declared_sizes(reader, prefix)

    source = SourceCheckpoint(
        format="google", path=path, config=config, vocab_file=os.path.join(folder, VOCAB_FILE)
    )
    source.lowercase, source.lowercase_from = guess_lowercase(folder)
    known = expected_shapes(config)
    for name in sorted(shape_map):
        reason = _classify(name)
        if reason is not None:
            source.ignored[name] = reason
            continue
        if name not in known:
            match = _LAYER_RE.match(name)
            if match and int(match.group(1)) >= config.num_layers:
                raise CheckpointError(
                    f"{prefix}: variable {name} belongs to layer "
                    f"{match.group(1)}, but {config_file} says "
                    f"num_hidden_layers={config.num_layers}."
                )
            source.unused.append(name)
            continue
        try:
            value = reader.get_tensor(name)
        except Exception as e:  # OpError, or IndexError for a short data file.
            data_files = sorted(glob.glob(glob.escape(prefix) + ".data-*"))
            raise CheckpointError(
                f"Cannot read {name} from {', '.join(data_files) or prefix + '.data-*'}: "
                f"{first_line(e)}. The checkpoint data file is truncated, corrupt "
                f"or missing."
            ) from e
        source.weights[name] = np.asarray(value, dtype=np.float32)
        source.source_names[name] = name
    check_against_config(source)
    return source


def write_google_checkpoint(path, weights, config, vocab_file=None):
    """Writes weights under Google's names as a release folder
    (`read_google_checkpoint` and `tf.train.load_checkpoint` read it back).

    Args:
        path: folder to create (local or remote; no commit marker: read it
            once written).
        weights: dict, Google variable name -> numpy array in Google's layout,
            e.g. `SourceCheckpoint.weights`.
        config: BertConfig, written as bert_config.json.
        vocab_file: optional vocab.txt to copy beside the checkpoint.
    """
    storage.makedirs(path)
    names = sorted(weights)
    tf.raw_ops.SaveV2(  # Through TensorFlow's file systems: gs:// too.
        prefix=storage.join(path, CHECKPOINT_NAME),
        tensor_names=names,
        shape_and_slices=[""] * len(names),
        tensors=[np.asarray(weights[n]) for n in names],
    )
    text = json.dumps(config_to_google(config), indent=2, sort_keys=True) + "\n"
    storage.write_bytes(storage.join(path, CONFIG_FILE), text.encode("utf-8"))
    if vocab_file is not None:
        storage.copy_file(vocab_file, storage.join(path, VOCAB_FILE))


def guess_lowercase(folder):
    """(lowercase, where it was read) from a release's folder name ("uncased_..." /
    "cased_..."), or (None, None) if neither."""
    name = os.path.basename(os.path.normpath(folder))
    lowered = name.lower()
    lowercase = True if "uncased" in lowered else False if "cased" in lowered else None
    return lowercase, None if lowercase is None else f"folder name {name!r}"
