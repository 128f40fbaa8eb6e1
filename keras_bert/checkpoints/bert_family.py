"""BERT's config.json keys in Hugging Face layout, and its variants' names.

`huggingface.py` reads a folder; this module says how a variant differs. DistilBERT,
ELECTRA, RoBERTa and XLM-RoBERTa are post-LayerNorm BERT encoders and load as
`BertEncoder`s that `BertConfig` fields select:

  DistilBERT (model_type "distilbert")   type_vocab_size=0, use_pooler=False
      config.json: dim, hidden_dim, n_layers, n_heads, activation, dropout,
      attention_dropout. Tensors: transformer.layer.N.attention.{q,k,v,out}_lin,
      sa_layer_norm, ffn.lin1, ffn.lin2, output_layer_norm.
  ELECTRA (model_type "electra")         use_pooler=False, embedding_size=E
      BERT's keys and tensors, plus embeddings_project (Linear E -> H) when
      E != H ("bert/embeddings_project/{kernel,bias}").
  RoBERTa, XLM-RoBERTa                   type_vocab_size=1
      BERT's keys and tensors. They count positions from pad_token_id + 1, so
      the rows of the position table before it are dropped (514 -> 512).

Heads: DistilBERT's vocab_transform / vocab_layer_norm / vocab_projector and
RobertaLMHead are BERT's MLM head. A sequence classifier's dense on [CLS]
(DistilBERT's pre_classifier + ReLU, ELECTRA's classifier.dense + GELU,
RoBERTa's + tanh) is a pooler with that `pooler_act`, and its output layer
becomes BertClassifier's head, with the source's dropout: the source's
computation at inference (in training ELECTRA also drops out [CLS] before its
dense). Heads keras_bert has no layer for are left, with one warning each.
"""

import re

from keras_bert.checkpoints.source import CONFIG_KEYS, CheckpointError, config_from_values

MODEL_TYPES = ("distilbert", "electra", "roberta", "xlm-roberta")
# Model types whose position ids start at pad_token_id + 1 (transformers'
# create_position_ids_from_input_ids).
ROBERTA_TYPES = ("roberta", "xlm-roberta")
# transformers' class of each model type's encoder.
MODEL_CLASSES = {"bert": "BertModel", "distilbert": "DistilBertModel",
                 "electra": "ElectraModel", "roberta": "RobertaModel",
                 "xlm-roberta": "XLMRobertaModel"}

# transformers' ACT2FN names -> BertConfig's. "gelu" is exact (erf) there;
# "gelu_new", "gelu_fast" and "gelu_pytorch_tanh" are the tanh approximation.
_ACTIVATIONS = {
    "gelu": "gelu",
    "gelu_new": "gelu_approx",
    "gelu_fast": "gelu_approx",
    "gelu_pytorch_tanh": "gelu_approx",
    "relu": "relu",
}

# Google's keys, and the LayerNorm epsilon Google's format has not.
_CONFIG_KEYS = {**CONFIG_KEYS, "layer_norm_eps": "layer_norm_epsilon"}

# DistilBertConfig's defaults for the keys a config.json may leave out.
_DISTILBERT_DEFAULTS = {"activation": "gelu", "dropout": 0.1, "attention_dropout": 0.1,
                        "max_position_embeddings": 512, "initializer_range": 0.02}
_DISTILBERT_REQUIRED = ("vocab_size", "dim", "hidden_dim", "n_layers", "n_heads")
_DISTILBERT_KEYS = {
    "vocab_size": "vocab_size",
    "dim": "hidden_size",
    "n_layers": "num_layers",
    "n_heads": "num_heads",
    "hidden_dim": "intermediate_size",
    "dropout": "dropout_rate",
    "attention_dropout": "attention_dropout_rate",
    "max_position_embeddings": "max_position_embeddings",
    "initializer_range": "initializer_range",
}

_DISTILBERT_LAYER = {
    "attention.q_lin": "attention/self/query",
    "attention.k_lin": "attention/self/key",
    "attention.v_lin": "attention/self/value",
    "attention.out_lin": "attention/output/dense",
    "ffn.lin1": "intermediate/dense",
    "ffn.lin2": "output/dense",
}
_DISTILBERT_NORMS = {"sa_layer_norm": "attention/output/LayerNorm",
                     "output_layer_norm": "output/LayerNorm"}


def linear_rules(pattern, google, renames=None):
    """The rules (see `rules`) of a PyTorch Linear `pattern` -> Google's dense `google`."""
    return [(rf"{pattern}\.weight", f"{google}/kernel", True, renames),
            (rf"{pattern}\.bias", f"{google}/bias", False, renames)]


def norm_rules(pattern, google, renames=None):
    """The rules (see `rules`) of a LayerNorm `pattern` -> Google's `google`."""
    return [(rf"{pattern}\.(?:weight|gamma)", f"{google}/gamma", False, renames),
            (rf"{pattern}\.(?:bias|beta)", f"{google}/beta", False, renames)]


_LAYER = r"transformer\.layer\.(?P<layer>\d+)\.(?P<part>{})"
_DISTILBERT_RULES = [
    (r"embeddings\.(?P<path>word|position)_embeddings\.weight",
     "bert/embeddings/{path}_embeddings", False, None),
    *norm_rules(r"embeddings\.LayerNorm", "bert/embeddings/LayerNorm"),
    *linear_rules(_LAYER.format("|".join(re.escape(k) for k in _DISTILBERT_LAYER)),
                  "bert/encoder/layer_{layer}/{part}", _DISTILBERT_LAYER),
    *norm_rules(_LAYER.format("|".join(_DISTILBERT_NORMS)),
                "bert/encoder/layer_{layer}/{part}", _DISTILBERT_NORMS),
]
_POOLER = "bert/pooler/dense"
_TRANSFORM = "cls/predictions/transform"
# DistilBertForMaskedLM's head is BERT's MLM head under other names; a sequence
# classifier's dense on [CLS] is the pooler (see the module doc).
_DISTILBERT_HEAD_RULES = [
    *linear_rules(r"pre_classifier", _POOLER),
    *linear_rules(r"vocab_transform", f"{_TRANSFORM}/dense"),
    *norm_rules(r"vocab_layer_norm", f"{_TRANSFORM}/LayerNorm"),
    (r"vocab_projector\.bias", "cls/predictions/output_bias", False, None),
]
_ELECTRA_RULES = linear_rules(r"embeddings_project", "bert/embeddings_project")
_ELECTRA_HEAD_RULES = linear_rules(r"classifier\.dense", _POOLER)
# The sequence classifiers' dense on [CLS]: the pooler's activation.
_CLASSIFIER_POOLER_ACT = {"distilbert": "relu", "electra": "gelu", "roberta": "tanh",
                          "xlm-roberta": "tanh"}
# Their output layer, where BERT's is "classifier".
_CLASSIFIER_LAYER = {"distilbert": "classifier", "electra": "classifier.out_proj",
                     "roberta": "classifier.out_proj", "xlm-roberta": "classifier.out_proj"}
_ROBERTA_HEAD_RULES = [
    *_ELECTRA_HEAD_RULES,
    *linear_rules(r"lm_head\.dense", f"{_TRANSFORM}/dense"),
    *norm_rules(r"lm_head\.layer_norm", f"{_TRANSFORM}/LayerNorm"),
    (r"lm_head\.bias", "cls/predictions/output_bias", False, None),
]

# Source tensors keras_bert has no layer for, by the head they belong to:
# (pattern, what the head is). Reported as left, in one warning each.
_LEFT_HEADS = {
    "distilbert": [
        (r"pre_classifier\..*|classifier\..*",
         "a DistilBERT head other than the sequence, token and span ones (e.g. "
         "DistilBertForMultipleChoice's pre_classifier, classifier)"),
    ],
    "electra": [
        (r"classifier\..*|sequence_summary\..*",
         "an ELECTRA head other than the sequence, token and span ones (e.g. "
         "ElectraForMultipleChoice's sequence_summary, classifier)"),
        (r"discriminator_predictions\..*",
         "the ELECTRA discriminator's replaced-token head (discriminator_predictions)"),
        (r"generator_predictions\..*|generator_lm_head\..*",
         "the ELECTRA generator's masked-LM head (generator_predictions, generator_lm_head)"),
    ],
    **{model_type: [
        (r"classifier\..*",
         "a RoBERTa head other than the sequence, token and span ones (e.g. "
         "RobertaForMultipleChoice's classifier)"),
    ] for model_type in ROBERTA_TYPES},
}
# The tied decoder weight of each MLM head (checked equal to the word embeddings).
DECODER_WEIGHTS = {"distilbert": "vocab_projector.weight", "roberta": "lm_head.decoder.weight",
                   "xlm-roberta": "lm_head.decoder.weight"}
# The decoder's bias, the same tensor as the head's bias in transformers.
DECODER_BIASES = {"roberta": "lm_head.decoder.bias", "xlm-roberta": "lm_head.decoder.bias"}


def model_type_of(values):
    """A config.json's model_type; without one (uploads older than the key), "distilbert"
    or "electra" when its architectures name such a class, else "bert"."""
    model_type = values.get("model_type")
    if model_type:
        return model_type
    for architecture in values.get("architectures") or []:
        base = re.sub(r"^TF|(?:Model|For\w+)$", "", str(architecture)).lower()
        if base in MODEL_TYPES:
            return base
    return "bert"


def config_from_family(values, path):
    """BertConfig of a DistilBERT or ELECTRA config.json (`values`, its dict).

    Raises:
        CheckpointError: a missing key, sinusoidal position embeddings
            (DistilBERT), relative positions (ELECTRA), or values BertConfig refuses.
    """
    model_type = model_type_of(values)
    # A sequence classifier's dense on [CLS] is the pooler; else there is none.
    pooler = (dict(use_pooler=True, pooler_act=_CLASSIFIER_POOLER_ACT[model_type])
              if is_sequence_classifier(values) else dict(use_pooler=False))
    if model_type == "distilbert":
        missing = [k for k in _DISTILBERT_REQUIRED if k not in values]
        if missing:
            raise CheckpointError(f"{path}: missing key(s) {missing} of a DistilBERT config.")
        if values.get("sinusoidal_pos_embds"):
            raise CheckpointError(
                f"{path}: sinusoidal_pos_embds is true; keras_bert reads DistilBERT with "
                f"learned position embeddings only (every released DistilBERT has "
                f"sinusoidal_pos_embds false). Re-save the model with the table it was "
                f"trained with as learned position embeddings, or use one of those.")
        values = {**_DISTILBERT_DEFAULTS, **values, "hidden_act": values.get(
            "activation", _DISTILBERT_DEFAULTS["activation"])}
        return config_from_values(values, path, _DISTILBERT_KEYS, _ACTIVATIONS,
                                  type_vocab_size=0, layer_norm_epsilon=1e-12, **pooler)
    if model_type in ROBERTA_TYPES:
        check_bert_keys(values, path, "a RoBERTa")
        offset = position_offset(values)
        positions = values["max_position_embeddings"]
        if not isinstance(positions, int) or positions <= offset:
            raise CheckpointError(
                f"{path}: max_position_embeddings={positions!r}; a {model_type} model counts "
                f"positions from pad_token_id + 1 = {offset}, so it needs more than {offset}.")
        # RobertaModel has BERT's pooler; a sequence classifier's is its classifier.dense.
        return config_from_bert_keys(
            {**values, "max_position_embeddings": positions - offset}, path)
    check_bert_keys(values, path, "an ELECTRA")
    # E = H (ELECTRA-base, -large) needs no projection: BERT's tables.
    size = values.get("embedding_size", values["hidden_size"])
    return config_from_bert_keys(values, path, **pooler, embedding_size=(
        None if size == values["hidden_size"] else size))


def position_offset(values):
    """The rows of a RoBERTa config's position table before its first real position:
    pad_token_id + 1 (transformers' padding_idx + 1; 2 in every released model)."""
    pad = values.get("pad_token_id", 1)
    return (pad if isinstance(pad, int) and pad >= 0 else 1) + 1


def check_bert_keys(values, path, what):
    """Raises CheckpointError unless a config.json of BERT's keys (BERT's, ELECTRA's)
    describes an encoder keras_bert has: absolute positions, bidirectional,
    every key there. `what` ("a BERT") names the model in the message."""
    position_type = values.get("position_embedding_type", "absolute")
    if position_type != "absolute":
        raise CheckpointError(
            f"{path}: position_embedding_type={position_type!r} is not supported; "
            f"keras_bert has absolute position embeddings only."
        )
    if values.get("is_decoder") or values.get("add_cross_attention"):
        raise CheckpointError(
            f"{path}: is_decoder/add_cross_attention is set; keras_bert converts "
            f"bidirectional BERT encoders only."
        )
    missing = sorted(
        k
        for k in _CONFIG_KEYS
        if k not in values and k not in ("initializer_range", "layer_norm_eps")
    )
    if missing:
        raise CheckpointError(f"{path}: missing key(s) {missing} of {what} config.")


def config_from_bert_keys(values, path, **fixed):
    """BertConfig from a config.json of BERT's keys; `fixed`: fields it does not store."""
    return config_from_values(values, path, _CONFIG_KEYS, _ACTIVATIONS, **fixed)


def is_sequence_classifier(values):
    """Whether a config.json's architectures name a ...ForSequenceClassification."""
    return any(str(a).endswith("ForSequenceClassification")
               for a in values.get("architectures") or [])


def head_layer(model_type, task, layer):
    """The source's name of a fine-tuned head's output layer (ELECTRA's classifier is
    "classifier.out_proj"); `layer` is BERT's."""
    if task == "classification" and model_type in _CLASSIFIER_LAYER:
        return _CLASSIFIER_LAYER[model_type]
    return layer


def head_options(model_type, values):
    """More task model arguments of a fine-tuned classifier: its dropout rate."""
    if model_type == "distilbert":
        rate = values.get("seq_classif_dropout")
    elif model_type in ("electra",) + ROBERTA_TYPES:
        rate = values.get("classifier_dropout")
        rate = values.get("hidden_dropout_prob") if rate is None else rate
    else:
        return {}
    return {} if not isinstance(rate, (int, float)) else {"dropout_rate": float(rate)}


def rules(model_type):
    """(encoder rules, head rules) of a model type, None for BERT's own.

    Each rule is (pattern on the name without the model prefix, Google name
    template, transpose, renames): `renames` maps the "part" group to Google's
    path (DistilBERT's q_lin -> attention/self/query).
    """
    if model_type == "distilbert":
        return _DISTILBERT_RULES, _DISTILBERT_HEAD_RULES
    if model_type == "electra":
        return _ELECTRA_RULES, _ELECTRA_HEAD_RULES
    if model_type in ROBERTA_TYPES:
        return [], _ROBERTA_HEAD_RULES
    return None


def match(rule_list, name):
    """(Google name, the rule's third entry: transpose, or None) of `name` by the first
    rule of `rule_list` (`rules`) it fullmatches, else (None, None). Dots in a group
    become slashes."""
    for pattern, template, *rest in rule_list:
        found = re.fullmatch(pattern, name)
        if found:
            groups = dict(found.groupdict())
            renames = rest[1] if len(rest) > 1 else None
            if renames and "part" in groups:
                groups["part"] = renames[groups["part"]]
            google = template.format(**{k: v.replace(".", "/") for k, v in groups.items()})
            return google, rest[0] if rest else None
    return None, None


def left_heads(model_type, unused):
    """One warning (str) for each head of `unused` source tensor names keras_bert has no
    layer for."""
    warnings = []
    for pattern, what in _LEFT_HEADS.get(model_type, []):
        names = [n for n in unused if re.fullmatch(pattern, n)]
        if names:
            warnings.append(
                f"{what} is left: keras_bert has no layer for it, so the backbone is loaded "
                f"and a task model gets a new head (fine-tune it). Left: {', '.join(names)}.")
    return warnings

