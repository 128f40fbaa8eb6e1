"""BertConfig: the one set of BERT hyperparameters, with JSON round trip and presets."""

import dataclasses
import json
import numbers

from keras_bert import storage

ACTIVATIONS = ("gelu", "gelu_approx", "relu")
# The pooler's: BERT's tanh, or the activation of the dense on [CLS] that
# DistilBERT's (ReLU) and ELECTRA's (GELU) sequence classifiers have instead.
POOLER_ACTIVATIONS = ("tanh",) + ACTIVATIONS
# Keras dtype policies that pretraining and fine-tuning run under (--dtype).
DTYPES = ("float32", "mixed_bfloat16", "mixed_float16")


def _compact(num_layers, hidden_size):
    # Turc et al. 2019: A = H / 64 heads, I = 4H.
    return dict(
        num_layers=num_layers,
        hidden_size=hidden_size,
        num_heads=hidden_size // 64,
        intermediate_size=4 * hidden_size,
    )


# The fields that select DistilBERT / ELECTRA variants of the encoder, and BERT's values.
VARIANT_DEFAULTS = {"embedding_size": None, "use_pooler": True, "pooler_act": "tanh"}

PRESETS = {
    "tiny": _compact(2, 128),
    "mini": _compact(4, 256),
    "small": _compact(4, 512),
    "medium": _compact(8, 512),
    "base": _compact(12, 768),
    "large": dict(num_layers=24, hidden_size=1024, num_heads=16, intermediate_size=4096),
}


@dataclasses.dataclass
class BertConfig:
    """Hyperparameters of a BERT encoder (Devlin et al., 2018).

    Field names are the same everywhere: constructor arguments of `BertEncoder`,
    keys of `config.json`, and command-line flags (`--hidden-size`).

    Args:
        vocab_size: int, number of WordPiece tokens.
        hidden_size: int, width H of every encoder layer.
        num_layers: int, number L of transformer encoder blocks.
        num_heads: int, attention heads A; must divide `hidden_size`.
        intermediate_size: int, width of the feed-forward inner layer.
        hidden_act: "gelu" (exact erf, Hugging Face), "gelu_approx" (tanh
            approximation, Google's original BERT) or "relu".
        dropout_rate: float in [0, 1), dropout on embeddings and sub-layer outputs.
        attention_dropout_rate: float in [0, 1), dropout on attention probabilities.
        max_position_embeddings: int, longest sequence the model takes.
        type_vocab_size: int, number of segment ids; 0 (DistilBERT: no segment
            embeddings) or 1 (RoBERTa) ignores the `segment_ids` input.
        initializer_range: float, stddev of the truncated normal initializer.
        layer_norm_epsilon: float, LayerNorm epsilon.
        embedding_size: int or None, width E of the embedding tables when it
            differs from `hidden_size` (ELECTRA: a Dense E -> H follows the
            embedding LayerNorm). None: BERT's tables of width H.
        use_pooler: bool, whether the encoder has BERT's pooler. False
            (DistilBERT, ELECTRA): `pooled_output` is the [CLS] vector itself.
        pooler_act: the pooler's activation, "tanh" (BERT) or one of
            `hidden_act`'s (a DistilBERT or ELECTRA classifier's dense on [CLS]).

    Example:
    >>> config = BertConfig.from_preset("tiny", vocab_size=1000)
    >>> config.num_heads
    2
    """

    vocab_size: int = 30522
    hidden_size: int = 768
    num_layers: int = 12
    num_heads: int = 12
    intermediate_size: int = 3072
    hidden_act: str = "gelu"
    dropout_rate: float = 0.1
    attention_dropout_rate: float = 0.1
    max_position_embeddings: int = 512
    type_vocab_size: int = 2
    initializer_range: float = 0.02
    layer_norm_epsilon: float = 1e-12
    embedding_size: object = None
    use_pooler: bool = True
    pooler_act: str = "tanh"

    def __post_init__(self):
        check_hyperparameters(**self.to_dict())

    @classmethod
    def from_preset(cls, name, **overrides):
        """A named size ("tiny", "mini", "small", "medium", "base", "large")."""
        if name not in PRESETS:
            raise ValueError(
                f"Unknown BertConfig preset: name={name!r}. "
                f"Choose one of {sorted(PRESETS)}."
            )
        return cls(**{**PRESETS[name], **overrides})

    def to_dict(self):
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, values):
        if not isinstance(values, dict):
            raise ValueError(
                f"A BertConfig is a JSON object of fields. Received: a {type(values).__name__}."
            )
        fields = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(values) - fields)
        if unknown:
            raise ValueError(
                f"Unknown BertConfig field(s) {unknown}. Expected only {sorted(fields)}."
            )
        return cls(**values)

    def to_json(self):
        """The fields as JSON; the encoder-variant fields only when set away from BERT's
        (so a BERT config.json reads the same in keras_bert versions without them)."""
        values = {k: v for k, v in self.to_dict().items()
                  if not (k in VARIANT_DEFAULTS and v == VARIANT_DEFAULTS[k])}
        return json.dumps(values, indent=2, sort_keys=True)

    @classmethod
    def from_json(cls, text):
        return cls.from_dict(json.loads(text))

    def to_json_file(self, path):
        with storage.open_file(path, "w") as f:
            f.write(self.to_json() + "\n")

    @classmethod
    def from_json_file(cls, path):
        if not storage.exists(path):
            raise FileNotFoundError(f"BertConfig file not found: {path}")
        with storage.open_file(path) as f:
            try:
                return cls.from_json(f.read())
            except json.JSONDecodeError as e:
                raise ValueError(f"{path} is not valid JSON: {e}") from e
            except (ValueError, TypeError) as e:
                raise ValueError(f"{path}: {e}") from e


def _check_int(name, value, minimum):
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(
            f"BertConfig.{name} must be an integer >= {minimum}. Received: {name}={value!r}"
        )


def check_rate(name, value, owner=None):
    """Raises ValueError unless `value` is a dropout rate in [0, 1); `owner`
    ("BertConfig") prefixes the name in the message."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < 1:
        where = f"{owner}.{name}" if owner else name
        raise ValueError(f"Expected {where} in [0, 1). Received: {name}={value!r}")


def check_count(name, value):
    """Raises ValueError unless `value` is an int >= 1 (a numpy int too, never a bool)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
        raise ValueError(f"Expected {name} to be an int >= 1. Received: {name}={value!r}")


def _check_positive(name, value):
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        raise ValueError(
            f"BertConfig.{name} must be a number > 0. Received: {name}={value!r}"
        )


def check_hyperparameters(
    vocab_size,
    hidden_size,
    num_layers,
    num_heads,
    intermediate_size,
    hidden_act,
    dropout_rate,
    attention_dropout_rate,
    max_position_embeddings,
    type_vocab_size,
    initializer_range,
    layer_norm_epsilon,
    embedding_size=None,
    use_pooler=True,
    pooler_act="tanh",
):
    """Raises ValueError naming the first invalid hyperparameter."""
    _check_int("vocab_size", vocab_size, 1)
    _check_int("hidden_size", hidden_size, 1)
    _check_int("num_layers", num_layers, 0)
    _check_int("num_heads", num_heads, 1)
    _check_int("intermediate_size", intermediate_size, 1)
    _check_int("max_position_embeddings", max_position_embeddings, 1)
    _check_int("type_vocab_size", type_vocab_size, 0)
    if embedding_size is not None:
        _check_int("embedding_size", embedding_size, 1)
    if not isinstance(use_pooler, bool):
        raise ValueError(
            f"BertConfig.use_pooler must be true or false. Received: use_pooler={use_pooler!r}")
    if pooler_act not in POOLER_ACTIVATIONS:
        raise ValueError(
            f"BertConfig.pooler_act must be one of {POOLER_ACTIVATIONS}. "
            f"Received: pooler_act={pooler_act!r}")
    if hidden_size % num_heads:
        raise ValueError(
            f"BertConfig.hidden_size must be divisible by num_heads. Received: "
            f"hidden_size={hidden_size}, num_heads={num_heads}."
        )
    if hidden_act not in ACTIVATIONS:
        raise ValueError(
            f"BertConfig.hidden_act must be one of {ACTIVATIONS}. "
            f"Received: hidden_act={hidden_act!r}"
        )
    check_rate("dropout_rate", dropout_rate, "BertConfig")
    check_rate("attention_dropout_rate", attention_dropout_rate, "BertConfig")
    _check_positive("initializer_range", initializer_range)
    _check_positive("layer_norm_epsilon", layer_norm_epsilon)


def embedding_width(config):
    """The width of the embedding tables of a BertConfig (or encoder): E or H."""
    return config.embedding_size or config.hidden_size


def has_embeddings_project(config):
    """Whether an E -> H Dense follows the embeddings (ELECTRA with E != H)."""
    return embedding_width(config) != config.hidden_size
