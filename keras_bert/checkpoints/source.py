"""What a checkpoint reader returns, the report of a conversion, and its error.

Every reader turns its source into one `SourceCheckpoint` whose weights carry
Google's original variable names and layout
("bert/encoder/layer_0/attention/self/query/kernel", kernels [in, out]): the
one vocabulary of the weight loader (`convert`) and the numpy reference
(`reference`), so a new source format needs only a reader.
"""

import dataclasses
import glob
import json
import math
import os

import numpy as np

from keras_bert.config import BertConfig, embedding_width
from keras_bert.text import tokenizer_files


class CheckpointError(ValueError):
    """A checkpoint can't be converted; the message names the file or tensor and
    the expected and found values."""


# Names (Google layout) of the weights each optional part needs. A part is
# loaded when all of its weights are in the source and reported missing when
# none are; a part with some but not all weights is an error.
POOLER_WEIGHTS = ("bert/pooler/dense/kernel", "bert/pooler/dense/bias")
MLM_WEIGHTS = (
    "cls/predictions/transform/dense/kernel",
    "cls/predictions/transform/dense/bias",
    "cls/predictions/transform/LayerNorm/gamma",
    "cls/predictions/transform/LayerNorm/beta",
    "cls/predictions/output_bias",
)
NSP_WEIGHTS = ("cls/seq_relationship/output_weights", "cls/seq_relationship/output_bias")


# Google's bert_config.json key -> BertConfig field. transformers' config.json
# kept Google's names; it adds "layer_norm_eps" (Google's is always 1e-12).
CONFIG_KEYS = {
    "vocab_size": "vocab_size",
    "hidden_size": "hidden_size",
    "num_hidden_layers": "num_layers",
    "num_attention_heads": "num_heads",
    "intermediate_size": "intermediate_size",
    "hidden_act": "hidden_act",
    "hidden_dropout_prob": "dropout_rate",
    "attention_probs_dropout_prob": "attention_dropout_rate",
    "max_position_embeddings": "max_position_embeddings",
    "type_vocab_size": "type_vocab_size",
    "initializer_range": "initializer_range",
}


def read_config_json(config_file, missing_hint):
    """The JSON value in a source's config file; `missing_hint`, the way out, is said
    when the file is missing (a CheckpointError, as is invalid JSON)."""
    if not os.path.isfile(config_file):
        raise CheckpointError(f"Config file not found: {config_file}. {missing_hint}")
    try:
        with open(config_file, encoding="utf-8") as f:
            return json.load(f)
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise CheckpointError(f"{config_file} is not valid JSON: {e}") from e


def check_config_object(values, path):
    """Raises CheckpointError unless a source's config file holds a JSON object."""
    if not isinstance(values, dict):
        raise CheckpointError(f"{path} must hold a JSON object of BERT settings. Received: "
                              f"a JSON {type(values).__name__}.")


def config_from_values(values, path, keys, activations, **fixed):
    """BertConfig from a source's config dict (its keys checked, "hidden_act" there):
    `keys` and `activations` rename its keys and hidden_act to BertConfig's, `fixed`
    gives fields the format does not store; `path` is for messages.

    Raises:
        CheckpointError: an unknown hidden_act, or values BertConfig refuses.
    """
    act = values["hidden_act"]
    if act not in activations:
        raise CheckpointError(
            f"{path}: hidden_act={act!r} is not supported. Expected one of "
            f"{sorted(activations)}."
        )
    fields = {
        field: values[key] for key, field in keys.items() if key in values
    }
    fields["hidden_act"] = activations[act]
    fields.update(fixed)
    try:
        return BertConfig(**fields)
    except ValueError as e:
        raise CheckpointError(f"{path}: {e}") from e


# ELECTRA's E -> H Dense after the embeddings (`embeddings_project`), when E != H.
PROJECT_WEIGHTS = ("bert/embeddings_project/kernel", "bert/embeddings_project/bias")


def encoder_weight_names(config):
    """Google names of the weights the encoder of `config` (a BertConfig) needs, pooler
    excluded (no segment table in DistilBERT; ELECTRA's `embeddings_project`)."""
    return [n for n in expected_shapes(config)
            if n.startswith("bert/") and n not in POOLER_WEIGHTS]


def expected_shapes(config):
    """Google name -> shape that `config` (a BertConfig) implies, for every weight."""
    h, i, v = config.hidden_size, config.intermediate_size, config.vocab_size
    e = embedding_width(config)  # The tables' width: H, or ELECTRA's E.
    shapes = {"bert/embeddings/word_embeddings": (v, e)}
    if config.type_vocab_size:
        shapes["bert/embeddings/token_type_embeddings"] = (config.type_vocab_size, e)
    shapes.update({
        "bert/embeddings/position_embeddings": (config.max_position_embeddings, e),
        "bert/embeddings/LayerNorm/gamma": (e,),
        "bert/embeddings/LayerNorm/beta": (e,),
        "cls/predictions/transform/dense/kernel": (h, e),
        "cls/predictions/transform/dense/bias": (e,),
        "cls/predictions/transform/LayerNorm/gamma": (e,),
        "cls/predictions/transform/LayerNorm/beta": (e,),
        "cls/predictions/output_bias": (v,),
        "cls/seq_relationship/output_weights": (2, h),
        "cls/seq_relationship/output_bias": (2,),
    })
    if config.use_pooler:
        shapes.update({"bert/pooler/dense/kernel": (h, h), "bert/pooler/dense/bias": (h,)})
    if e != h:
        shapes.update({PROJECT_WEIGHTS[0]: (e, h), PROJECT_WEIGHTS[1]: (h,)})
    for n in range(config.num_layers):
        prefix = f"bert/encoder/layer_{n}/"
        for dense, shape in (
            ("attention/self/query", (h, h)),
            ("attention/self/key", (h, h)),
            ("attention/self/value", (h, h)),
            ("attention/output/dense", (h, h)),
            ("intermediate/dense", (h, i)),
            ("output/dense", (i, h)),
        ):
            shapes[prefix + dense + "/kernel"] = shape
            shapes[prefix + dense + "/bias"] = (shape[1],)
        for norm in ("attention/output/LayerNorm", "output/LayerNorm"):
            shapes[prefix + norm + "/gamma"] = (h,)
            shapes[prefix + norm + "/beta"] = (h,)
    return shapes


@dataclasses.dataclass
class SourceCheckpoint:
    """A checkpoint read into memory, in Google's names and layout.

    Attributes:
        format: one of `convert.FORMATS`.
        path: the folder or checkpoint prefix that was read.
        config: BertConfig read from the source's config file.
        weights: dict, Google variable name -> float32 numpy array in Google's
            layout (dense kernels [in, out]; NSP output_weights [2, hidden]).
        source_names: dict, Google variable name -> the name(s) of the source
            tensor(s) it came from, for error messages.
        vocab_file: path of the source's vocab.txt.
        lowercase: bool or None when the source doesn't say.
        lowercase_from: str, where `lowercase` was read (for the report).
        tokenizer_options: dict of `BertTokenizer` arguments besides casing that
            the source's tokenizer sets away from their defaults.
        max_seq_length: int or None, the text length the source's own
            preprocessor used, when it says.
        head: dict or None: a fine-tuned label head the source carries,
            {"task": registered task name, "kernel": [hidden, num_classes],
            "bias": [num_classes], "label_names": list of str or None,
            "source_names": str, optional "options": more task model
            arguments, e.g. {"dropout_rate": 0.1}}.
        ignored: dict, source tensor name -> why it was deliberately skipped.
        unused: list of source tensor names that no BERT weight maps to;
            reported, never loaded.
        warnings: list of str.
    """

    format: str
    path: str
    config: object
    vocab_file: str
    weights: dict = dataclasses.field(default_factory=dict)
    source_names: dict = dataclasses.field(default_factory=dict)
    lowercase: object = None
    lowercase_from: object = None
    tokenizer_options: dict = dataclasses.field(default_factory=dict)
    max_seq_length: object = None
    head: object = None
    ignored: dict = dataclasses.field(default_factory=dict)
    unused: list = dataclasses.field(default_factory=list)
    warnings: list = dataclasses.field(default_factory=list)

    def source_name(self, name):
        """The source tensor name(s) behind a Google name, for messages."""
        return self.source_names.get(name, name)

    def has_part(self, part_weights):
        """True when all of `part_weights` are present; False when none are; a
        CheckpointError (a damaged checkpoint) when only some are."""
        present = [n for n in part_weights if n in self.weights]
        if present and len(present) != len(part_weights):
            missing = [n for n in part_weights if n not in self.weights]
            raise CheckpointError(
                f"{self.path}: incomplete checkpoint, found {present} but not "
                f"{missing}. The checkpoint is damaged or was written by a "
                f"different model."
            )
        return bool(present)


@dataclasses.dataclass
class ConversionReport:
    """What a conversion loaded, skipped and checked.

    Attributes:
        format: the source's format (`convert.FORMATS`).
        source: path that was read.
        output: the model directory written, or None.
        config: the BertConfig of the converted model.
        loaded_parts: subset of ["encoder", "pooler", "mlm_head", "nsp_head"].
        missing_parts: the optional parts ("pooler", "mlm_head", "nsp_head")
            the source has no weights for.
        num_source_tensors: how many tensors the source holds.
        ignored: dict, source tensor -> reason it was skipped on purpose.
        unused: list of source tensors no BERT weight maps to.
        warnings: list of str.
        max_abs_diff: dict, output name -> max |converted - reference| over real
            positions, filled in by the numeric check (empty without it).
        reference: what the check compared against ("transformers", "numpy", ...).
        text_settings: dict, the task.json text settings written with the
            model, as taken from the source (`convert.text_settings`).
        label_names: list of str or None, a carried-over head's labels.
    """

    format: str
    source: str
    config: object
    output: object = None
    loaded_parts: list = dataclasses.field(default_factory=list)
    missing_parts: list = dataclasses.field(default_factory=list)
    num_source_tensors: int = 0
    ignored: dict = dataclasses.field(default_factory=dict)
    unused: list = dataclasses.field(default_factory=list)
    warnings: list = dataclasses.field(default_factory=list)
    max_abs_diff: dict = dataclasses.field(default_factory=dict)
    reference: object = None
    text_settings: dict = dataclasses.field(default_factory=dict)
    label_names: object = None

    def summary(self):
        """A few human-readable lines."""
        c = self.config
        lines = [
            f"Converted {self.format} checkpoint {self.source}",
            f"  config: L={c.num_layers} H={c.hidden_size} A={c.num_heads} "
            f"I={c.intermediate_size} vocab={c.vocab_size} act={c.hidden_act}"
            + variant_summary(c),
            f"  source tensors: {self.num_source_tensors} "
            f"({len(self.ignored)} ignored on purpose, {len(self.unused)} unused)",
            f"  loaded: {', '.join(self.loaded_parts)}",
        ]
        if self.text_settings:
            lines.append("  text settings: " + ", ".join(
                f"{k}={v}" for k, v in sorted(self.text_settings.items())))
        if self.label_names:
            lines.append(f"  labels: {', '.join(self.label_names)}")
        if self.missing_parts:
            lines.append(
                f"  missing in source (not created): {', '.join(self.missing_parts)}"
            )
        if self.unused:
            shown = ", ".join(self.unused[:10])
            more = f" and {len(self.unused) - 10} more" if len(self.unused) > 10 else ""
            lines.append(f"  unused source tensors: {shown}{more}")
        for w in self.warnings:
            lines.append(f"  warning: {w}")
        if self.max_abs_diff:
            diffs = ", ".join(f"{k}={v:.3g}" for k, v in self.max_abs_diff.items())
            lines.append(f"  check vs {self.reference}: max |diff| {diffs}")
        if self.output:
            lines.append(f"  wrote {os.path.abspath(self.output)}")
        return "\n".join(lines)


def variant_summary(config):
    """" E=128 segments=none pooler=none": what a BertConfig sets away from BERT's
    encoder (DistilBERT, ELECTRA), for the report's config line; "" for BERT."""
    parts = []
    if config.embedding_size and config.embedding_size != config.hidden_size:
        parts.append(f"E={config.embedding_size}")
    if config.type_vocab_size < 2:
        parts.append(f"segments={config.type_vocab_size or 'none'}")
    if not config.use_pooler:
        parts.append("pooler=none")
    elif config.pooler_act != "tanh":
        parts.append(f"pooler_act={config.pooler_act}")
    return "".join(" " + p for p in parts)


def first_line(error):
    """The first line of an error's message (an OpError's str() adds a stack
    trace), or its type's name when it has none."""
    message = str(error).strip()
    return message.splitlines()[0] if message else type(error).__name__


def check_declared_sizes(reader, prefix):
    """Raises CheckpointError if a variable of `reader` (`tf.train.load_checkpoint(prefix)`)
    declares more bytes than the prefix's data files hold: reading allocates the declared shape."""
    data_files = glob.glob(glob.escape(prefix) + ".data-*")
    if not data_files:
        return  # The reader names the missing file.
    held = sum(os.path.getsize(p) for p in data_files)
    dtypes = reader.get_variable_to_dtype_map()
    for name, shape in sorted(reader.get_variable_to_shape_map().items()):
        declared = math.prod(shape) * dtypes[name].size
        if declared > held:
            raise CheckpointError(
                f"{prefix}.index: variable {name} declares shape {tuple(shape)} ({declared:,} "
                f"bytes), but the checkpoint's data files hold {held:,} bytes in all. The "
                f"checkpoint is damaged: nothing was read; download or save it again.")


def count_vocab_lines(vocab_file):
    """Number of tokens in a vocab.txt (one token a line; a final newline is optional)."""
    if not os.path.isfile(vocab_file):
        raise CheckpointError(
            f"Vocabulary file not found: {vocab_file}. A BERT checkpoint folder "
            f"needs its vocab.txt beside the weights."
        )
    with open(vocab_file, "rb") as f:
        data = f.read()
    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    return len(lines)


def check_vocab(source):
    """Raises CheckpointError if the vocabulary, config and embedding table disagree."""
    if tokenizer_files.is_wordpiece(source.vocab_file):
        num_tokens = count_vocab_lines(source.vocab_file)
    else:  # Another tokenizer's files (SentencePiece, BPE), read by its class.
        num_tokens = tokenizer_files.vocabulary_size(source.vocab_file)
    config_size = source.config.vocab_size
    table = source.weights.get("bert/embeddings/word_embeddings")
    table_rows = None if table is None else table.shape[0]
    if num_tokens != config_size or (table_rows is not None and num_tokens != table_rows):
        raise CheckpointError(
            f"Vocabulary size mismatch: {source.vocab_file} has {num_tokens} "
            f"tokens, the config says vocab_size={config_size}"
            + (
                f", the embedding table {source.source_name('bert/embeddings/word_embeddings')} "
                f"has {table_rows} rows"
                if table_rows is not None
                else ""
            )
            + ". Use the tokenizer files that were released with these weights."
        )


def check_against_config(source, describe=None, transposed=()):
    """Checks a SourceCheckpoint against its own config (weights present, shapes,
    vocabulary size, finite values); raises CheckpointError.

    Args:
        source: SourceCheckpoint.
        describe: function, Google name -> the name the source format uses
            for that tensor (for messages); identity by default.
        transposed: Google names whose source tensor is stored transposed
            (PyTorch Linear weights), so messages quote the source's shape.
    """
    describe = describe or (lambda name: name)
    if not source.weights:
        found = ", ".join(source.unused[:5]) or "nothing"
        raise CheckpointError(
            f"{source.path}: no BERT weights found (found: {found}). Expected "
            f"google-research/bert or Hugging Face BertModel tensor names; TF2 "
            f"Model Garden and Keras checkpoints are not this format."
        )
    required = encoder_weight_names(source.config)
    missing = [n for n in required if n not in source.weights]
    if missing:
        raise CheckpointError(
            f"{source.path}: missing encoder weight(s) {_first_five(missing, describe)}. The "
            f"checkpoint is incomplete, or its config (num_layers="
            f"{source.config.num_layers}) does not describe it."
        )
    for part in (POOLER_WEIGHTS, MLM_WEIGHTS, NSP_WEIGHTS):
        source.has_part(part)

    shapes = expected_shapes(source.config)
    extra = [n for n in sorted(source.weights) if n not in shapes]
    if extra:
        raise CheckpointError(
            f"{source.path}: weight(s) {_first_five(extra, describe)} have no place in a model "
            f"of its config (num_layers={source.config.num_layers}): the config describes "
            f"fewer layers than the checkpoint has. Use the config released with these weights."
        )
    errors = []
    for name, value in sorted(source.weights.items()):
        expected, found = tuple(shapes[name]), tuple(value.shape)
        if name in transposed:
            expected, found = expected[::-1], found[::-1]
        if expected != found:
            errors.append(f"{describe(name)}: expected shape {expected}, found {found}")
    if errors:
        c = source.config
        raise CheckpointError(
            f"Shape mismatch between the config and the weights of {source.path} "
            f"(config: vocab_size={c.vocab_size}, hidden_size={c.hidden_size}, "
            f"intermediate_size={c.intermediate_size}, max_position_embeddings="
            f"{c.max_position_embeddings}, type_vocab_size={c.type_vocab_size}):\n  "
            + "\n  ".join(errors)
        )
    check_vocab(source)
    check_finite(source, describe)


def check_finite(source, describe=None):
    """Raises CheckpointError naming the first weight that holds NaN or inf.

    Every value is checked: the numeric check's sentences may not reach a bad
    row (an embedding row of a rare token).

    Args:
        source: SourceCheckpoint (its weights and its fine-tuned head).
        describe: function, Google name -> the source format's name.
    """
    describe = describe or (lambda name: name)
    named = [(describe(name), value) for name, value in sorted(source.weights.items())]
    if source.head is not None:
        names = source.head.get("source_names") or source.head["task"] + " head"
        named += [(f"{names} (kernel)", source.head["kernel"]),
                  (f"{names} (bias)", source.head["bias"])]
    for name, value in named:
        finite = np.isfinite(value)
        if not finite.all():
            bad = np.argwhere(~finite)
            first = tuple(int(i) for i in bad[0])
            raise CheckpointError(
                f"{source.path}: the weight {name} holds {len(bad)} NaN or infinite value(s) "
                f"(the first at index {list(first)}: {value[first]}). The checkpoint is damaged "
                f"or was saved by a run that diverged; use an earlier checkpoint of it.")


def _first_five(names, describe):
    """"a, b, c, d, e and 3 more": the first five names as `describe` gives them."""
    shown = ", ".join(describe(n) for n in names[:5])
    return shown + (f" and {len(names) - 5} more" if len(names) > 5 else "")
