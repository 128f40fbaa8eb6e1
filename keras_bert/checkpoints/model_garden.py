"""TF Hub / Kaggle BERT SavedModels and Model Garden TF2 checkpoints: read.

Both hold the variables of TF Model Garden's `BertEncoder` (tf_keras) in a
TF2 object-based checkpoint: keys are object paths
("encoder/layer_with_weights-4/_attention_layer/_query_dense/kernel/
.ATTRIBUTES/VARIABLE_VALUE", or "variables/5/..." in a SavedModel), which
change with how the model was wrapped. The checkpoint's object graph
(`_CHECKPOINTABLE_OBJECT_GRAPH`) also keeps each variable's Keras 2 name, and
those are fixed by Model Garden's layer names
(official/nlp/modeling/networks/bert_encoder.py, layers/transformer*.py):

    word_embeddings/embeddings              [vocab, hidden]
    position_embedding/embeddings           [max_position, hidden]
    type_embeddings/embeddings              [type_vocab, hidden]
    embeddings/layer_norm/{gamma,beta}
    transformer/layer_N/self_attention/{query,key,value}/kernel [hidden, heads, head_size]
    transformer/layer_N/self_attention/{query,key,value}/bias   [heads, head_size]
    transformer/layer_N/self_attention/attention_output/kernel  [heads, head_size, hidden]
    transformer/layer_N/self_attention_layer_norm/{gamma,beta}
    transformer/layer_N/{intermediate,output}/{kernel,bias}
    transformer/layer_N/output_layer_norm/{gamma,beta}
    pooler_transform/{kernel,bias}
    (BertPretrainerV2) .../cls/predictions/transform/{dense,LayerNorm}/..,
                       .../cls/predictions/output_bias/bias
    (BertClassifier)   sentence_prediction/logits/{kernel,bias}

so this reader maps by those names and reads the values with
`tf.train.load_checkpoint`: no tensorflow_hub, tf_keras or Model Garden import.

Sources:
- a TF Hub / Kaggle encoder SavedModel folder (saved_model.pb, variables/,
  assets/vocab.txt; `export_tfhub_lib.export_model`, e.g.
  bert_en_uncased_L-12_H-768_A-12/4): the config is read from the weights'
  shapes and the saved Keras config (activation), the casing from its
  `do_lower_case` variable;
- a folder holding such an encoder and its preprocess SavedModel
  (bert_en_uncased_preprocess/3) as two subfolders: the vocabulary, casing
  (the graph lower-cases or not) and sequence length come from the
  preprocess model;
- a user's SavedModel (`model.save`) holding a `hub.KerasLayer` BERT: the
  encoder's variables are found by name; a Dense head on top (one kernel
  [hidden, K] + bias, linear) becomes a BertClassifier head, any other head
  is left out and said in one line;
- a Model Garden TF2 checkpoint (`tf.train.Checkpoint(encoder=...)`, the TF2
  bert_model.ckpt releases, `BertPretrainerV2.checkpoint_items`,
  `tf.train.Checkpoint(model=BertClassifier)`) with bert_config.json or the
  experiment's params.yaml beside it.
"""

import json
import os
import re

import numpy as np
import tensorflow as tf

from keras_bert.checkpoints.source import (
    CheckpointError,
    SourceCheckpoint,
    check_against_config,
    config_from_values,
    first_line,
    read_config_json,
)
from keras_bert.config import BertConfig

SAVED_MODEL_FILE = "saved_model.pb"
KERAS_METADATA_FILE = "keras_metadata.pb"
PARAMS_FILES = ("params.yaml", "params.yml")
_GRAPH_KEY = "_CHECKPOINTABLE_OBJECT_GRAPH"
_WORD_EMBEDDINGS = "word_embeddings/embeddings"
_VALUE_SUFFIX = "/.ATTRIBUTES/VARIABLE_VALUE"
# Model Garden's "gelu" (official/modeling/activations/gelu.py, registered as
# "Text>gelu") is the tanh approximation, like Google's.
_ACTIVATIONS = {"gelu": "gelu_approx", "Text>gelu": "gelu_approx", "relu": "relu",
                "gelu_approx": "gelu_approx"}

_BLOCK = r"transformer/layer_(?P<layer>\d+)/"
# (pattern on a Keras 2 variable name, Google name template, kind). kind says
# how the value is reshaped: "einsum_in" [H, heads, size] -> [H, H],
# "einsum_bias" [heads, size] -> [H], "einsum_out" [heads, size, H] -> [H, H].
_RULES = [
    (r"word_embeddings/embeddings", "bert/embeddings/word_embeddings", None),
    (r"position_embedding/embeddings", "bert/embeddings/position_embeddings", None),
    (r"type_embeddings/embeddings", "bert/embeddings/token_type_embeddings", None),
    (r"embeddings/layer_norm/(?P<w>gamma|beta)", "bert/embeddings/LayerNorm/{w}", None),
    (_BLOCK + r"self_attention/(?P<part>query|key|value)/kernel",
     "bert/encoder/layer_{layer}/attention/self/{part}/kernel", "einsum_in"),
    (_BLOCK + r"self_attention/(?P<part>query|key|value)/bias",
     "bert/encoder/layer_{layer}/attention/self/{part}/bias", "einsum_bias"),
    (_BLOCK + r"self_attention/attention_output/kernel",
     "bert/encoder/layer_{layer}/attention/output/dense/kernel", "einsum_out"),
    (_BLOCK + r"self_attention/attention_output/bias",
     "bert/encoder/layer_{layer}/attention/output/dense/bias", None),
    (_BLOCK + r"self_attention_layer_norm/(?P<w>gamma|beta)",
     "bert/encoder/layer_{layer}/attention/output/LayerNorm/{w}", None),
    (_BLOCK + r"intermediate/(?P<w>kernel|bias)",
     "bert/encoder/layer_{layer}/intermediate/dense/{w}", None),
    (_BLOCK + r"output/(?P<w>kernel|bias)", "bert/encoder/layer_{layer}/output/dense/{w}", None),
    (_BLOCK + r"output_layer_norm/(?P<w>gamma|beta)",
     "bert/encoder/layer_{layer}/output/LayerNorm/{w}", None),
    (r"pooler_transform/(?P<w>kernel|bias)", "bert/pooler/dense/{w}", None),
    (r"(?:.*/)?cls/predictions/transform/(?P<p>dense/kernel|dense/bias|LayerNorm/gamma"
     r"|LayerNorm/beta)", "cls/predictions/transform/{p}", None),
    (r"(?:.*/)?cls/predictions/output_bias(?:/bias)?", "cls/predictions/output_bias", None),
]
# Saved Keras classes whose config names the encoder's activation.
_ENCODER_CLASSES = ("BertEncoder", "BertEncoderV2", "TransformerEncoderBlock", "Transformer")
# Parts of Model Garden encoders that keras_bert's BertEncoder has no place for.
_REFUSED = {
    "embedding_projection": "a factorized embedding (embedding_width != hidden_size, "
                            "ALBERT-style)",
}


def is_saved_model(path):
    """True when `path` is a SavedModel folder, or a folder of SavedModel subfolders."""
    return os.path.isdir(path) and (
        os.path.isfile(os.path.join(path, SAVED_MODEL_FILE)) or bool(_saved_model_subfolders(path)))


def is_object_checkpoint(prefix):
    """True when the TF checkpoint `prefix` is object-based (TF2 `tf.train.Checkpoint`)."""
    try:
        names = tf.train.load_checkpoint(prefix).get_variable_to_shape_map()
    except (tf.errors.OpError, ValueError):
        return False
    return any(n.endswith(_VALUE_SUFFIX) for n in names)


def _saved_model_subfolders(path):
    return sorted(os.path.join(path, d) for d in os.listdir(path)
                  if os.path.isfile(os.path.join(path, d, SAVED_MODEL_FILE)))


def _google_name(name):
    for pattern, template, kind in _RULES:
        match = re.fullmatch(pattern, name)
        if match:
            return template.format(**match.groupdict()), kind
    return None, None


def read_object_checkpoint(prefix, skipped=None):
    """(Keras 2 variable name -> (checkpoint key, numpy value)) of a TF2 checkpoint.

    Training state (optimizer slots and counters, `save_counter`) is left out
    and, when `skipped` (a dict) is given, listed there: key -> why.

    Names come from the checkpoint's object graph (each variable's `full_name`);
    a name held twice (a weight shared by two layers: the word embeddings and
    the MLM head's embedding_table) is kept once when the values agree.

    Raises:
        CheckpointError: the checkpoint cannot be read, is not object-based, holds
            partitioned variables, or holds one name twice with different values.
    """
    from tensorflow.core.protobuf import trackable_object_graph_pb2

    try:
        reader = tf.train.load_checkpoint(prefix)
        shapes = reader.get_variable_to_shape_map()
        graph = trackable_object_graph_pb2.TrackableObjectGraph()
        graph.ParseFromString(reader.get_tensor(_GRAPH_KEY))
    except (tf.errors.OpError, ValueError) as e:
        raise CheckpointError(
            f"Cannot read the TF2 checkpoint {prefix}.index: {first_line(e)}. The file is "
            f"missing, truncated, or not an object-based (tf.train.Checkpoint) checkpoint.") from e
    found = {}
    for node in graph.nodes:
        for attribute in node.attributes:
            key, name = attribute.checkpoint_key, attribute.full_name
            if key not in shapes or attribute.name != "VARIABLE_VALUE":
                continue
            if "/.OPTIMIZER_SLOT/" in key or key.startswith(("optimizer/", "save_counter/")):
                if skipped is not None:
                    skipped[key] = "training state (optimizer slot or counter)"
                continue
            if re.search(r"/part_\d+$", name):
                raise CheckpointError(
                    f"{prefix}: {name} is a partitioned (sharded) variable, which keras_bert "
                    f"does not read. Where Model Garden runs, restore it into an unpartitioned "
                    f"model and save it again with tf.train.Checkpoint(encoder=encoder).")
            name = re.sub(r":\d+$", "", name)
            try:
                value = reader.get_tensor(key)
            except Exception as e:  # OpError, or IndexError for a short data file.
                raise CheckpointError(
                    f"Cannot read {key} from {prefix}.data-*: {first_line(e)}. The checkpoint "
                    f"data file is truncated, corrupt or missing.") from e
            if name in found:
                if np.array_equal(found[name][1], value):
                    continue
                raise CheckpointError(
                    f"{prefix}: two variables are named {name} ({found[name][0]} and {key}) "
                    f"with different values; keras_bert cannot tell which is the encoder's.")
            found[name] = (key, np.asarray(value))
    return found


def strip_scope(variables):
    """`variables` with the encoder's outer name scope, if any, taken off its names.

    Model Garden names the encoder's variables at the top scope
    ("word_embeddings/embeddings"); a model that built it under a scope
    ("bert_encoder/word_embeddings/embeddings") keeps the same names below it.
    """
    scopes = {n[:-len(_WORD_EMBEDDINGS)] for n in variables if n.endswith(_WORD_EMBEDDINGS)}
    scope = scopes.pop() if len(scopes) == 1 else ""
    if not scope.endswith("/"):
        return variables
    return {n[len(scope):] if n.startswith(scope) else n: value
            for n, value in variables.items()}


def _bert_weights(source, variables, where):
    """Moves the BERT variables of `variables` into `source` (Google names).

    Returns the names that are not BERT's, in order.
    """
    rest = []
    for name, (key, value) in variables.items():
        google, kind = _google_name(name)
        if google is None:
            refused = next((why for part, why in _REFUSED.items() if part in name), None)
            if refused:
                raise CheckpointError(
                    f"{where}: {name} is {refused}; keras_bert's BertEncoder has no place for "
                    f"it. Only BERT encoders with embedding width = hidden size load.")
            rest.append(name)
            continue
        value = np.asarray(value, np.float32)
        if kind == "einsum_in":
            value = value.reshape(value.shape[0], -1)
        elif kind == "einsum_bias":
            value = value.reshape(-1)
        elif kind == "einsum_out":
            value = value.reshape(-1, value.shape[-1])
        source.weights[google] = np.ascontiguousarray(value)
        source.source_names[google] = f"{name} ({key})"
    return rest


def config_from_shapes(variables, hidden_act, where):
    """BertConfig from the shapes of Model Garden's encoder variables."""
    def shape(name):
        if name not in variables:
            found = ", ".join(list(variables)[:5]) or "no variables"
            raise CheckpointError(
                f"{where}: no variable {name}, so this is not a Model Garden BERT encoder "
                f"(found: {found}). keras_bert reads TF Hub / Kaggle BERT encoders "
                f"(bert_en_*_L-*_H-*_A-*) and models holding one.")
        return variables[name][1].shape

    layers = sorted({int(m.group(1)) for m in (
        re.match(r"transformer/layer_(\d+)/", n) for n in variables) if m})
    vocab, hidden = shape("word_embeddings/embeddings")
    query = shape("transformer/layer_0/self_attention/query/kernel")
    return BertConfig(
        vocab_size=int(vocab), hidden_size=int(hidden), num_layers=len(layers),
        num_heads=int(query[1]),
        intermediate_size=int(shape("transformer/layer_0/intermediate/kernel")[1]),
        hidden_act=hidden_act,
        max_position_embeddings=int(shape("position_embedding/embeddings")[0]),
        type_vocab_size=int(shape("type_embeddings/embeddings")[0]),
        layer_norm_epsilon=1e-12)


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
    for layer in _walk_layers(configs):
        if layer["class_name"] in _ENCODER_CLASSES:
            config = layer["config"]
            act = config.get("activation", config.get("inner_activation"))
            if isinstance(act, str):
                if act not in _ACTIVATIONS:
                    raise CheckpointError(
                        f"{where}: the encoder's activation is {act!r}; keras_bert reads "
                        f"{sorted(set(_ACTIVATIONS))}.")
                return _ACTIVATIONS[act]
    warnings.append(f"{where} does not say its activation (no keras_metadata.pb); Model "
                    f"Garden's default, the tanh GELU (hidden_act 'gelu_approx'), is taken.")
    return "gelu_approx"


def _read_preprocess(folder):
    """(vocab.txt, lowercase, seq_length or None) of a TF Hub BERT preprocess SavedModel."""
    vocab = os.path.join(folder, "assets", "vocab.txt")
    if not os.path.isfile(vocab):
        raise CheckpointError(
            f"{folder} is a preprocess SavedModel without assets/vocab.txt: keras_bert reads "
            f"WordPiece preprocess models (bert_*_preprocess); a SentencePiece one "
            f"(ALBERT, ...) is not BERT.")
    # tensorflow-text's BertTokenizer lower-cases with the CaseFoldUTF8 op.
    lowercase = "CaseFoldUTF8" in _graph_ops(folder)
    lengths = {c.get("config", {}).get("seq_length") for c in _walk_layers(
        keras_layer_configs(folder)) if c.get("class_name") == "BertPackInputs"}
    lengths.discard(None)
    return vocab, lowercase, (lengths.pop() if len(lengths) == 1 else None)


def _walk_layers(configs):
    """Every layer config (dicts with class_name and config) in the metadata, nested too.

    class_name loses its package ("Text>BertEncoder" -> "BertEncoder").
    """
    stack, out = list(configs), []
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            if isinstance(item.get("class_name"), str) and isinstance(item.get("config"), dict):
                out.append({**item, "class_name": item["class_name"].split(">")[-1]})
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return out


def read_tf_hub_saved_model(path):
    """Reads a TF Hub / Kaggle BERT SavedModel (or a model holding one) into a SourceCheckpoint.

    Args:
        path: an encoder SavedModel folder; a folder holding an encoder and its
            preprocess SavedModel as subfolders; or a user's SavedModel with a
            hub.KerasLayer BERT and a classification head.

    Raises:
        CheckpointError: not a BERT SavedModel (the message names what was found),
            a TF1 hub module, a SavedModel without variables, or damaged files.
    """
    folder, preprocess = _split_pair(path)
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
    source = SourceCheckpoint(format="tf_hub", path=path, config=config, weights={},
                              source_names={},
                              vocab_file=os.path.join(folder, "assets", "vocab.txt"),
                              warnings=warnings, ignored=skipped)
    rest = _bert_weights(source, variables, folder)
    flags = [n for n in rest if variables[n][1].dtype == np.bool_ and variables[n][1].ndim == 0]
    if len(flags) == 1:  # export_tfhub's do_lower_case variable.
        source.lowercase = bool(variables[flags[0]][1])
        source.lowercase_from = f"the SavedModel's do_lower_case variable ({flags[0]})"
        source.ignored[flags[0]] = "do_lower_case, read as the casing"
        rest.remove(flags[0])
    if preprocess is not None:
        source.vocab_file, source.lowercase, source.max_seq_length = _read_preprocess(preprocess)
        source.lowercase_from = f"the preprocess SavedModel {preprocess}"
    _user_head(source, variables, rest, configs, folder)
    check_against_config(source, describe=source.source_name)
    return source


def _split_pair(path):
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
    classes = {c["class_name"] for c in _walk_layers(keras_layer_configs(folder))}
    if classes & {"BertTokenizer", "FastWordpieceBertTokenizer", "BertPackInputs"}:
        return True
    # Without Keras metadata (older exports): a graph that tokenizes.
    return bool(_graph_ops(folder) & {"WordpieceTokenizeWithOffsets",
                                      "FastWordpieceTokenizeWithOffsets"})


def _user_head(source, variables, rest, configs, folder):
    """Maps a usual Dense head (kernel [hidden, K] + bias [K], linear) on a hub.KerasLayer BERT."""
    hidden = source.config.hidden_size
    head = {n.rsplit("/", 1)[0] for n in rest if n.endswith(("/kernel", "/bias"))}
    if len(head) == 1 and not [n for n in rest if not n.startswith(next(iter(head)) + "/")]:
        layer = head.pop()
        kernel = variables.get(layer + "/kernel", (None, None))[1]
        bias = variables.get(layer + "/bias", (None, None))[1]
        logits = layer.endswith("logits")  # Model Garden's BertClassifier head.
        activation = "linear" if logits else next(
            (c["config"].get("activation") for c in _walk_layers(configs)
             if c["class_name"] == "Dense" and c["config"].get("name") == layer), None)
        if (kernel is not None and bias is not None and kernel.shape[:1] == (hidden,)
                and bias.shape == kernel.shape[1:] and activation == "linear"):
            source.head = {
                "task": "classification", "kernel": np.asarray(kernel, np.float32),
                "bias": np.asarray(bias, np.float32), "label_names": None,
                "source_names": f"{layer}/kernel, {layer}/bias"}
            return
        why = (f"its activation is {activation!r}, not linear" if activation != "linear" else
               "it is not one Dense layer on the pooled output")
    elif rest:
        why = "it is not one Dense layer on the pooled output"
    else:
        return
    source.unused.extend(rest)
    message = (f"{folder}: loaded the BERT backbone only; the head ({', '.join(rest[:6])}) is "
               f"left out because {why}. Fine-tune a new head (BertClassifier.from_pretrained"
               f"(..., num_classes=K)).")
    source.warnings.append(message)  # build_model logs it: one line.


def _read_params(path):
    """The encoder settings of a Model Garden experiment's params.yaml, as BertConfig."""
    import yaml

    try:
        with open(path, encoding="utf-8") as f:
            params = yaml.safe_load(f)
    except (OSError, yaml.YAMLError) as e:
        raise CheckpointError(f"Cannot read {path}: {first_line(e)}") from e
    encoder = ((params or {}).get("task") or {}).get("model", {}).get("encoder") or {}
    kind = encoder.get("type", "bert")
    values = encoder.get(kind) if isinstance(encoder.get(kind), dict) else None
    if kind != "bert" or values is None:
        raise CheckpointError(
            f"{path}: task.model.encoder is {kind!r}, not a 'bert' encoder with its settings. "
            f"keras_bert reads Model Garden BERT encoders only.")
    if values.get("norm_first"):
        raise CheckpointError(f"{path}: norm_first=True is a pre-LayerNorm encoder; keras_bert's "
                              f"BERT is post-LayerNorm.")
    if values.get("embedding_size") not in (None, values.get("hidden_size")):
        raise CheckpointError(f"{path}: embedding_size={values['embedding_size']} differs from "
                              f"hidden_size; keras_bert's BertEncoder has no embedding projection.")
    keys = {"vocab_size": "vocab_size", "hidden_size": "hidden_size",
            "num_layers": "num_layers", "num_attention_heads": "num_heads",
            "intermediate_size": "intermediate_size", "hidden_act": "hidden_act",
            "dropout_rate": "dropout_rate", "attention_dropout_rate": "attention_dropout_rate",
            "max_position_embeddings": "max_position_embeddings",
            "type_vocab_size": "type_vocab_size", "initializer_range": "initializer_range"}
    values = {**values, "hidden_act": values.get("hidden_activation") or "gelu"}
    return config_from_values(values, path, keys, _ACTIVATIONS, layer_norm_epsilon=1e-12)


def _read_config(folder):
    from keras_bert.checkpoints.google import CONFIG_FILE, config_from_google

    config_file = os.path.join(folder, CONFIG_FILE)
    if os.path.isfile(config_file):
        values = read_config_json(config_file, "")
        # Model Garden's legacy BertConfig.to_dict adds these two.
        if values.pop("embedding_size", None) not in (None, values.get("hidden_size")):
            raise CheckpointError(f"{config_file}: embedding_size differs from hidden_size; "
                                  f"keras_bert's BertEncoder has no embedding projection.")
        values.pop("backward_compatible", None)
        return config_from_google(values, config_file)
    for name in PARAMS_FILES:
        if os.path.isfile(os.path.join(folder, name)):
            return _read_params(os.path.join(folder, name))
    raise CheckpointError(
        f"{folder}: a Model Garden TF2 checkpoint needs its config beside it: {CONFIG_FILE} "
        f"(the TF2 releases) or the experiment's params.yaml (what train.py writes in its "
        f"model_dir). Copy one of them from where the checkpoint came from.")


def read_model_garden_checkpoint(path):
    """Reads a Model Garden TF2 BERT checkpoint (object-based) into a SourceCheckpoint.

    Args:
        path: a folder (bert_model.ckpt.* or one checkpoint, bert_config.json or
            params.yaml, vocab.txt) or a checkpoint prefix.

    Raises:
        CheckpointError: no config, not a BERT encoder, or damaged files.
    """
    from keras_bert.checkpoints.google import _guess_lowercase, find_google_checkpoint

    folder, prefix = find_google_checkpoint(path)
    config = _read_config(folder)
    skipped = {}
    variables = strip_scope(read_object_checkpoint(prefix, skipped))
    source = SourceCheckpoint(format="model_garden", path=path, config=config, weights={},
                              source_names={}, vocab_file=os.path.join(folder, "vocab.txt"),
                              lowercase=_guess_lowercase(folder), ignored=skipped)
    if source.lowercase is not None:
        source.lowercase_from = f"folder name {os.path.basename(os.path.normpath(folder))!r}"
    rest = _bert_weights(source, variables, prefix)
    _user_head(source, variables, rest, [], prefix)
    check_against_config(source, describe=source.source_name)
    return source

