"""keras-hub preset directories (BertBackbone, BertTextClassifier) -> SourceCheckpoint.

A preset (keras-hub's `save_to_preset`, or Kaggle's) is read with h5py alone.

    PRESET/
      config.json          the backbone: {"class_name": "BertBackbone", "config": {...},
                           "registered_name": "keras_hub>BertBackbone"}
      model.weights.h5     the backbone's Keras weights
      tokenizer.json       BertTokenizer config ("lowercase", "strip_accents")
      assets/tokenizer/vocabulary.txt
      preprocessor.json    (optional) the preprocessor config ("sequence_length")
      task.json            (fine-tuned tasks) e.g. BertTextClassifier: num_classes,
      task.weights.h5      activation, dropout; the weights outside the backbone

A Keras weights file names each layer after its class, numbered in model order
("transformer_encoder", "transformer_encoder_1", ...); a variable is
`vars/INDEX` in the order the layer created it.
"""

import os

import numpy as np

from keras_bert.checkpoints.source import CheckpointError, SourceCheckpoint, check_against_config
from keras_bert.checkpoints.source import read_config_json
from keras_bert.config import BertConfig
from keras_bert.models.model_dir import h5_shapes

CONFIG_FILE = "config.json"
WEIGHTS_FILE = "model.weights.h5"
TOKENIZER_FILE = "tokenizer.json"
PREPROCESSOR_FILE = "preprocessor.json"
TASK_FILE = "task.json"
TASK_WEIGHTS_FILE = "task.weights.h5"
VOCAB_FILE = os.path.join("assets", "tokenizer", "vocabulary.txt")

# keras-hub backbones that look like BERT but are not, refused by name.
OTHER_BACKBONES = {
    "RobertaBackbone": "RoBERTa", "XLMRobertaBackbone": "XLM-RoBERTa",
    "DistilBertBackbone": "DistilBERT", "AlbertBackbone": "ALBERT",
    "ElectraBackbone": "ELECTRA", "DebertaV3Backbone": "DeBERTa-v3",
    "FNetBackbone": "FNet", "ModernBertBackbone": "ModernBERT",
}
# keras-hub's classifier task (renamed from BertClassifier in keras-hub 0.16).
_CLASSIFIER_TASKS = ("BertTextClassifier", "BertClassifier")

# Backbone weights file path -> Google name (the TransformerEncoder blocks follow).
_EMBEDDINGS = {
    "layers/reversible_embedding/vars/0": "bert/embeddings/word_embeddings",
    "layers/position_embedding/vars/0": "bert/embeddings/position_embeddings",
    "layers/embedding/vars/0": "bert/embeddings/token_type_embeddings",
    "layers/layer_normalization/vars/0": "bert/embeddings/LayerNorm/gamma",
    "layers/layer_normalization/vars/1": "bert/embeddings/LayerNorm/beta",
    "layers/dense/vars/0": "bert/pooler/dense/kernel",
    "layers/dense/vars/1": "bert/pooler/dense/bias",
}
# TransformerEncoder sub-layer -> Google name under bert/encoder/layer_N/.
_BLOCK = {
    "_self_attention_layer/query_dense": "attention/self/query",
    "_self_attention_layer/key_dense": "attention/self/key",
    "_self_attention_layer/value_dense": "attention/self/value",
    "_self_attention_layer/output_dense": "attention/output/dense",
    "_self_attention_layer_norm": "attention/output/LayerNorm",
    "_feedforward_intermediate_dense": "intermediate/dense",
    "_feedforward_output_dense": "output/dense",
    "_feedforward_layer_norm": "output/LayerNorm",
}
_HEAD_KERNEL, _HEAD_BIAS = "layers/dense/vars/0", "layers/dense/vars/1"


def _saved_config(path, name):
    """(class_name, config) of the serialized Keras object in file `name` of the preset
    `path`, or (None, {}) when the preset has no such file."""
    file = os.path.join(path, name)
    if name != CONFIG_FILE and not os.path.isfile(file):
        return None, {}
    values = read_config_json(file, f"A keras-hub preset keeps it beside {WEIGHTS_FILE}.")
    if not isinstance(values, dict) or not isinstance(values.get("config"), dict):
        raise CheckpointError(f"{file}: expected a serialized Keras object "
                              f"({{\"class_name\": ..., \"config\": {{...}}}}).")
    return values.get("class_name"), values["config"]


def _read_h5(path, config):
    """Every array of a Keras .weights.h5 file, by its path inside the file; sizes
    checked against `config` before any is read (`h5_shapes`)."""
    import h5py

    try:
        with h5py.File(path, "r") as f:
            return {name: np.asarray(f[name])
                    for name in h5_shapes(f, config, path, error=CheckpointError)}
    except OSError as e:
        raise CheckpointError(f"{path} is not a readable Keras weights file: {e}") from e


def config_from_keras_hub(values, path):
    """BertConfig from a keras-hub BertBackbone config dict (always the tanh GELU,
    LayerNorm epsilon 1e-12 and one `dropout` rate)."""
    missing = [k for k in ("vocabulary_size", "num_layers", "num_heads", "hidden_dim",
                           "intermediate_dim") if k not in values]
    if missing:
        raise CheckpointError(f"{path}: missing key(s) {missing} of a BertBackbone config.")
    try:
        return BertConfig(
            vocab_size=values["vocabulary_size"], hidden_size=values["hidden_dim"],
            num_layers=values["num_layers"], num_heads=values["num_heads"],
            intermediate_size=values["intermediate_dim"], hidden_act="gelu_approx",
            dropout_rate=values.get("dropout", 0.1),
            attention_dropout_rate=values.get("dropout", 0.1),
            max_position_embeddings=values.get("max_sequence_length", 512),
            type_vocab_size=values.get("num_segments", 2), layer_norm_epsilon=1e-12)
    except ValueError as e:
        raise CheckpointError(f"{path}: {e}") from e


def _block_name(i):
    # Keras numbers repeated layer classes in model order: the first is unnumbered.
    return "layers/transformer_encoder" + (f"_{i}" if i else "")


def read_keras_hub_preset(path):
    """Reads a keras-hub BERT preset directory into a SourceCheckpoint.

    Args:
        path: the preset folder (see the module docstring).

    Raises:
        CheckpointError: a missing file, a backbone other than BertBackbone
            (named), a head keras_bert's BertClassifier cannot reproduce, or a
            tensor whose shape differs from what config.json implies.

    Example:
    >>> source = read_keras_hub_preset("presets/bert_tiny_en_uncased_sst2")  # a folder
    >>> source.head["kernel"].shape
    (128, 2)
    """
    config_file = os.path.join(path, CONFIG_FILE)
    class_name, values = _saved_config(path, CONFIG_FILE)
    if class_name != "BertBackbone":
        name = OTHER_BACKBONES.get(class_name)
        what = f"a {name} preset (keras-hub {class_name})" if name else (
            f"a keras-hub {class_name} preset")
        family = name in ("DistilBERT", "ELECTRA")
        raise CheckpointError(
            f"{config_file}: this is {what}, not BertBackbone; keras_bert loads BERT only: "
            f"other architectures differ in position ids, normalization or names."
            + (f" keras_bert reads {name} from its Hugging Face folder or Hub id "
               f"(config.json + model.safetensors), not from a keras-hub preset." if family
               else ""))
    if os.path.isfile(os.path.join(path, "model.weights.json")):
        raise CheckpointError(
            f"{path} holds sharded weights (model.weights.json); keras_bert reads one "
            f"{WEIGHTS_FILE}: re-save the preset with save_to_preset(max_shard_size=None).")
    config = config_from_keras_hub(values, config_file)
    weights_file = os.path.join(path, WEIGHTS_FILE)
    if not os.path.isfile(weights_file):
        raise CheckpointError(f"{weights_file} is missing: the preset has no backbone weights.")
    arrays = _read_h5(weights_file, config)

    source = SourceCheckpoint(format="keras_hub", path=path, config=config,
                              vocab_file=os.path.join(path, VOCAB_FILE))
    h = config.hidden_size
    names = dict(_EMBEDDINGS)
    for i in range(config.num_layers):
        for sub, google in _BLOCK.items():
            prefix = f"{_block_name(i)}/{sub}/vars/"
            suffixes = ("gamma", "beta") if google.endswith("LayerNorm") else ("kernel", "bias")
            for index, suffix in enumerate(suffixes):
                names[prefix + str(index)] = f"bert/encoder/layer_{i}/{google}/{suffix}"
    for name, value in sorted(arrays.items()):
        google = names.get(name)
        if google is None:
            if value.size:
                source.unused.append(f"{WEIGHTS_FILE}:{name}")
            continue
        value = np.asarray(value, np.float32)
        # MultiHeadAttention keeps heads apart: query/key/value kernels
        # [H, heads, head_dim] and biases [heads, head_dim], the output
        # kernel [heads, head_dim, H]; Google's are [H, H] and [H].
        if "/attention/self/" in google:
            value = value.reshape((h, h) if google.endswith("kernel") else (h,))
        elif "/attention/output/dense/kernel" in google and value.ndim == 3:
            value = value.reshape(h, h)
        source.weights[google] = np.ascontiguousarray(value)
        source.source_names[google] = f"{WEIGHTS_FILE}:{name}"

    tokenizer = _saved_config(path, TOKENIZER_FILE)[1]
    if isinstance(tokenizer.get("lowercase"), bool):
        source.lowercase = tokenizer["lowercase"]
        source.lowercase_from = f"{os.path.join(path, TOKENIZER_FILE)} lowercase"
        strip = tokenizer.get("strip_accents", False)
        if isinstance(strip, bool) and strip != source.lowercase:
            # keras-hub's BertTokenizer lower-cases without stripping accents
            # (Google's uncased BERT strips them): its own rule is kept.
            source.tokenizer_options["strip_accents"] = strip
    length = _saved_config(path, PREPROCESSOR_FILE)[1].get("sequence_length")
    if isinstance(length, int) and 3 <= length <= config.max_position_embeddings:
        source.max_seq_length = length
    source.head = _read_head(source, path)
    check_against_config(source, describe=lambda g: source.source_names.get(g, g))
    return source


def _read_head(source, path):
    """The BertTextClassifier head (pooled -> dropout -> dense) of task.json, or None
    (other tasks' weights are reported unused; an activation on the logits is refused)."""
    task_file = os.path.join(path, TASK_FILE)
    if not os.path.isfile(task_file):
        return None
    class_name, values = _saved_config(path, TASK_FILE)
    weights_file = os.path.join(path, TASK_WEIGHTS_FILE)
    arrays = _read_h5(weights_file, source.config) if os.path.isfile(weights_file) else {}
    if class_name not in _CLASSIFIER_TASKS:
        source.unused += [f"{TASK_WEIGHTS_FILE}:{n}" for n, v in sorted(arrays.items())
                          if v.size and not n.startswith("optimizer/")]
        source.warnings.append(f"{task_file} names the keras-hub task {class_name}; "
                               f"keras_bert loads its BertBackbone only.")
        return None
    activation = values.get("activation")
    if activation not in (None, "linear"):
        raise CheckpointError(
            f"{task_file}: the keras-hub {class_name} applies activation={activation!r} to "
            f"its logits, and keras_bert's BertClassifier outputs logits (its predict_proba "
            f"gives probabilities). Re-save the keras-hub model with activation=None, or load "
            f"the encoder alone from a copy of the preset without {TASK_FILE}.")
    if _HEAD_KERNEL not in arrays or _HEAD_BIAS not in arrays:
        raise CheckpointError(
            f"{weights_file}: no logits Dense ({_HEAD_KERNEL}, {_HEAD_BIAS}) for the "
            f"{class_name} that {task_file} names; the preset is incomplete.")
    kernel = np.asarray(arrays[_HEAD_KERNEL], np.float32)  # [hidden, num_classes]
    bias = np.asarray(arrays[_HEAD_BIAS], np.float32)
    hidden = source.config.hidden_size
    if kernel.ndim != 2 or kernel.shape[0] != hidden or bias.shape != (kernel.shape[1],):
        raise CheckpointError(
            f"{weights_file}: logits kernel {kernel.shape} and bias {bias.shape}; a head on "
            f"hidden_size={hidden} needs [{hidden}, num_classes] and [num_classes].")
    if values.get("num_classes") not in (None, kernel.shape[1]):
        raise CheckpointError(f"{task_file}: num_classes={values['num_classes']} but the "
                              f"logits kernel in {weights_file} has {kernel.shape[1]} columns.")
    options = {}
    if isinstance(values.get("dropout"), (int, float)):
        options["dropout_rate"] = float(values["dropout"])
    return {"task": "classification", "kernel": kernel, "bias": bias, "label_names": None,
            "options": options,
            "source_names": f"{TASK_WEIGHTS_FILE}:{_HEAD_KERNEL}, {_HEAD_BIAS}"}

