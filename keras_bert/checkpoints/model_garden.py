"""Model Garden TF2 checkpoints: read; and the Model Garden names TF Hub SavedModels share.

Model Garden's `BertEncoder` (tf_keras) is what TF2 object-based checkpoints
(the TF2 bert_model.ckpt releases, `tf.train.Checkpoint(encoder=...)`, ...)
and TF Hub / Kaggle BERT SavedModels (`keras_bert.checkpoints.tf_hub`) hold.
Their keys are object paths, which change with how the model was wrapped; the
checkpoint's object graph also keeps each variable's Keras 2 name, fixed by
Model Garden's layer names:

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

read with `tf.train.load_checkpoint` (no tensorflow_hub, tf_keras or Model
Garden import). A TF2 checkpoint's config is its bert_config.json or the
experiment's params.yaml beside it.
"""

import os
import re

import numpy as np
import tensorflow as tf

from keras_bert.checkpoints import bert_family
from keras_bert.checkpoints.source import (
    CheckpointError,
    SourceCheckpoint,
    check_against_config,
    check_declared_sizes,
    config_from_values,
    first_line,
    read_config_json,
)
from keras_bert.config import BertConfig

PARAMS_FILES = ("params.yaml", "params.yml")
_GRAPH_KEY = "_CHECKPOINTABLE_OBJECT_GRAPH"
_WORD_EMBEDDINGS = "word_embeddings/embeddings"
_VALUE_SUFFIX = "/.ATTRIBUTES/VARIABLE_VALUE"
# Model Garden's "gelu" (official/modeling/activations/gelu.py, registered as
# "Text>gelu") is the tanh approximation, like Google's.
ACTIVATIONS = {"gelu": "gelu_approx", "Text>gelu": "gelu_approx", "relu": "relu",
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
ENCODER_CLASSES = ("BertEncoder", "BertEncoderV2", "TransformerEncoderBlock", "Transformer")
# Parts of Model Garden encoders that keras_bert's BertEncoder has no place for.
_REFUSED = {
    "embedding_projection": "a factorized embedding (embedding_width != hidden_size, "
                            "ALBERT-style)",
}


def is_object_checkpoint(prefix):
    """True when the TF checkpoint `prefix` is object-based (TF2 `tf.train.Checkpoint`)."""
    try:
        names = tf.train.load_checkpoint(prefix).get_variable_to_shape_map()
    except (tf.errors.OpError, ValueError):
        return False
    return any(n.endswith(_VALUE_SUFFIX) for n in names)


def read_object_checkpoint(prefix, skipped=None):
    """(Keras 2 variable name -> (checkpoint key, numpy value)) of a TF2 checkpoint.

    Training state is left out and, when `skipped` (a dict) is given, listed
    there: key -> why. A name held twice (a weight shared by two layers) is kept
    once when the values agree.

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
    check_declared_sizes(reader, prefix)
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
    """`variables` with the encoder's outer name scope, if any ("bert_encoder/"),
    taken off its names."""
    scopes = {n[:-len(_WORD_EMBEDDINGS)] for n in variables if n.endswith(_WORD_EMBEDDINGS)}
    scope = scopes.pop() if len(scopes) == 1 else ""
    if not scope.endswith("/"):
        return variables
    return {n[len(scope):] if n.startswith(scope) else n: value
            for n, value in variables.items()}


def bert_weights(source, variables, where):
    """Moves the BERT variables of `variables` into `source` (Google names); returns
    the names that are not BERT's, in order."""
    rest = []
    for name, (key, value) in variables.items():
        google, kind = bert_family.match(_RULES, name)
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


def walk_layers(configs):
    """Every layer config (dicts with class_name and config) in the metadata, nested too;
    class_name loses its package ("Text>BertEncoder" -> "BertEncoder")."""
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


def user_head(source, variables, rest, configs, folder):
    """Maps a usual Dense head (kernel [hidden, K] + bias [K], linear) on a hub.KerasLayer BERT."""
    hidden = source.config.hidden_size
    head = {n.rsplit("/", 1)[0] for n in rest if n.endswith(("/kernel", "/bias"))}
    if len(head) == 1 and not [n for n in rest if not n.startswith(next(iter(head)) + "/")]:
        layer = head.pop()
        kernel = variables.get(layer + "/kernel", (None, None))[1]
        bias = variables.get(layer + "/bias", (None, None))[1]
        logits = layer.endswith("logits")  # Model Garden's BertClassifier head.
        activation = "linear" if logits else next(
            (c["config"].get("activation") for c in walk_layers(configs)
             if c["class_name"] == "Dense" and c["config"].get("name") == layer), None)
        if (kernel is not None and bias is not None and kernel.shape[:1] == (hidden,)
                and bias.shape == kernel.shape[1:] and activation == "linear"):
            if "cls/predictions/output_bias" in source.weights and bias.shape == (2,):
                # The legacy BertPretrainer's next-sentence head: Dense on the pooled
                # output, as Google's cls/seq_relationship (output_weights [2, hidden]).
                for google, value in (("output_weights", kernel.T), ("output_bias", bias)):
                    source.weights["cls/seq_relationship/" + google] = np.ascontiguousarray(
                        value, np.float32)
                    source.source_names["cls/seq_relationship/" + google] = layer
                return
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
    keys = {key: key for key in (
        "vocab_size", "hidden_size", "num_layers", "intermediate_size", "hidden_act",
        "dropout_rate", "attention_dropout_rate", "max_position_embeddings",
        "type_vocab_size", "initializer_range")}
    keys["num_attention_heads"] = "num_heads"
    values = {**values, "hidden_act": values.get("hidden_activation") or "gelu"}
    return config_from_values(values, path, keys, ACTIVATIONS, layer_norm_epsilon=1e-12)


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
    from keras_bert.checkpoints.google import find_google_checkpoint, guess_lowercase

    folder, prefix = find_google_checkpoint(path)
    config = _read_config(folder)
    skipped = {}
    variables = strip_scope(read_object_checkpoint(prefix, skipped))
    source = SourceCheckpoint(format="model_garden", path=path, config=config,
                              vocab_file=os.path.join(folder, "vocab.txt"), ignored=skipped)
    source.lowercase, source.lowercase_from = guess_lowercase(folder)
    rest = bert_weights(source, variables, prefix)
    user_head(source, variables, rest, [], prefix)
    check_against_config(source, describe=source.source_name)
    return source
