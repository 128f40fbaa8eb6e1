"""Text settings: how a model turns text into ids, saved with the model, resolved once.

A model's text settings are the facts of its preprocessor: the longest packed
sequence (`max_seq_length`), whether the tokenizer lower-cases (`lowercase`),
how a pair is cut to fit (`truncation`) and, when every batch is padded to one
fixed length, that length (`sequence_length`; None pads each batch to its own
longest text). They are saved in the model
directory's task.json, under these same keys (an encoder's task.json holds
only them), and every reader (fine-tuning, `from_pretrained`, the
preprocessor, export, feature extraction, conversion) gets them from
`resolve_text_settings`, with one precedence:

    explicit argument (a flag, a keyword) > saved settings > documented default

The two lengths are one setting to think about: the one not given follows
the other (`resolve_lengths`). The defaults: max_seq_length min(512,
max_position_embeddings), or the caller's own shorter default (fine-tuning:
128, span QA 384; feature extraction 128), never past
max_position_embeddings; lowercase guessed from
the vocabulary (`infer_lowercase`), with a warning that says so;
truncation "longest_first" (the paper's rule).
"""

import dataclasses
import logging

from keras_bert.text.vocab import infer_lowercase

logger = logging.getLogger("keras_bert.text")

#: The packer's truncation rules (see `BertPacker`).
TRUNCATIONS = ("longest_first", "round_robin")
DEFAULT_TRUNCATION = "longest_first"
#: The default max_seq_length when the caller has none: BERT's 512, or the
#: model's max_position_embeddings when smaller.
DEFAULT_MAX_SEQ_LENGTH = 512
#: The smallest max_seq_length: "[CLS] x [SEP]".
MIN_SEQ_LENGTH = 3
#: The task.json keys of the settings (TextSettings' fields).
TEXT_SETTINGS_KEYS = ("max_seq_length", "lowercase", "truncation", "sequence_length")
#: The settings every model has (`sequence_length` None is a value: batch-longest padding).
_REQUIRED_KEYS = ("max_seq_length", "lowercase", "truncation")


@dataclasses.dataclass(frozen=True)
class TextSettings:
    """The text settings of a model; a field is None where it is not known (not saved).

    `resolve_text_settings` returns them complete; a model directory's
    task.json may hold some of them (`from_json`).

    Args:
        max_seq_length: int >= 3, the longest packed sequence ([CLS] ... [SEP]).
        lowercase: bool, True for an uncased vocabulary.
        truncation: "longest_first" or "round_robin" (see `BertPacker`).
        sequence_length: int >= 3 or None: every batch padded (and cut) to
            exactly this length; None pads each batch to its longest text.

    Example:
    >>> TextSettings(max_seq_length=128, lowercase=True).to_json()
    {'max_seq_length': 128, 'lowercase': True}
    """

    max_seq_length: int = None
    lowercase: bool = None
    truncation: str = None
    sequence_length: int = None

    def __post_init__(self):
        _check_fields(dataclasses.asdict(self))

    @property
    def complete(self):
        """True when every required field is known (`sequence_length` None is a value)."""
        return all(getattr(self, k) is not None for k in _REQUIRED_KEYS)

    def to_json(self):
        """The known fields as a dict of JSON values (task.json keys)."""
        return {k: getattr(self, k) for k in TEXT_SETTINGS_KEYS if getattr(self, k) is not None}

    @classmethod
    def from_json(cls, values, where="task.json"):
        """The settings among `values` (a parsed task.json; other keys are ignored).

        Args:
            values: dict, or None (no settings saved).
            where: str, the file, named in errors.

        Raises:
            ValueError: a setting has the wrong type ("lowercase": "false")
                or value; the message names `where` and the key.
        """
        if values is None:
            return cls()
        if isinstance(values, cls):
            return values
        if not isinstance(values, dict):
            raise ValueError(f"{where} must hold a JSON object. Received: a JSON "
                             f"{type(values).__name__}.")
        fields = {k: values.get(k) for k in TEXT_SETTINGS_KEYS}
        _check_fields(fields, where=where)
        return cls(**fields)


_TYPES = {"max_seq_length": "an integer", "sequence_length": "an integer or null",
          "lowercase": "true or false",
          "truncation": f"one of {list(TRUNCATIONS)}"}


def _check_fields(fields, where=None):
    """Raises ValueError naming the first field (None = unknown) of the wrong type or value."""
    for key, value in fields.items():
        if value is None:
            continue
        if key in ("max_seq_length", "sequence_length"):
            ok = isinstance(value, int) and not isinstance(value, bool)
        elif key == "lowercase":
            ok = isinstance(value, bool)
        else:
            ok = value in TRUNCATIONS
        fix = (f" Fix the file (save_pretrained writes it) or pass {key}= explicitly."
               if where else "")
        prefix = f"{where}: " if where else ""
        if not ok:
            raise ValueError(f"{prefix}{key} must be {_TYPES[key]}. Received: "
                             f"{key}={value!r}.{fix}")
        if key in ("max_seq_length", "sequence_length") and value < MIN_SEQ_LENGTH:
            raise ValueError(f"{prefix}{key} must be >= {MIN_SEQ_LENGTH} (room for "
                             f"[CLS] and [SEP]). Received: {key}={value!r}.{fix}")


def resolve_text_settings(saved=None, max_position_embeddings=None, vocab_file=None, *,
                          max_seq_length=None, lowercase=None, truncation=None,
                          sequence_length=None, default_max_seq_length=None,
                          where="task.json"):
    """The text settings a model uses: explicit argument > saved > documented default.

    The one place that decides them (and checks max_seq_length against the
    model); every reader of a model directory calls it.

    Args:
        saved: the saved settings: a parsed task.json (dict; other keys are
            ignored), a `TextSettings` (a preprocessor's), or None.
        max_position_embeddings: int, the model's; max_seq_length must not
            exceed it. None when no model is at hand (only the lower bound
            is checked then).
        vocab_file: str path of vocab.txt (or a list of tokens): the
            lowercase default is guessed from it when nothing else says.
        max_seq_length: int or None, an explicit value (a flag, a keyword).
        lowercase: bool or None, an explicit value.
        truncation: str or None, an explicit value.
        sequence_length: int or None, an explicit fixed length (None: the
            saved one, else batch-longest padding); max_seq_length follows it
            when not given (`resolve_lengths`).
        default_max_seq_length: int or None, the caller's own default
            (fine-tuning 128, span QA 384); None: 512. Either is capped at
            max_position_embeddings.
        where: str, what `saved` came from (a task.json path), named in
            errors and in the warning when lowercase is guessed.

    Returns:
        A complete `TextSettings`.

    Raises:
        ValueError: a value has the wrong type, or what packing reaches
            (sequence_length, else max_seq_length) is not in [3,
            max_position_embeddings]; the message names the value, where it
            came from and the way out.

    Example:
    >>> resolve_text_settings({"lowercase": False}, 512, "vocab.txt", max_seq_length=128)
    TextSettings(max_seq_length=128, lowercase=False, truncation='longest_first', sequence_length=None)
    """
    explicit = TextSettings(max_seq_length, lowercase, truncation, sequence_length)
    saved = TextSettings.from_json(saved, where=where)
    value, fixed = resolve_lengths(explicit, saved, max_position_embeddings,
                                   default_max_seq_length, where)

    casing = explicit.lowercase
    if casing is None:
        casing = saved.lowercase
    if casing is None:
        if vocab_file is None:
            raise ValueError(f"{where} does not say whether the model lower-cases text, and "
                             f"there is no vocab.txt to guess it from: pass lowercase=True "
                             f"or False (--lowercase / --no-lowercase).")
        casing = infer_lowercase(vocab_file)
        shown = vocab_file if isinstance(vocab_file, str) else "the vocabulary"
        logger.warning(
            "%s does not say whether the model lower-cases text: lowercase=%s, guessed from "
            "vocab.txt (%s); pass lowercase= (--lowercase / --no-lowercase) to choose.",
            where, casing, shown)

    rule = explicit.truncation or saved.truncation or DEFAULT_TRUNCATION
    return TextSettings(max_seq_length=value, lowercase=casing, truncation=rule,
                        sequence_length=fixed)


def resolve_lengths(explicit, saved, max_position_embeddings=None, default_max_seq_length=None,
                    where="task.json", fix=None):
    """(max_seq_length, sequence_length) of `resolve_text_settings`; the one not given follows.

    A fixed `sequence_length` given alone brings max_seq_length up to it; a
    max_seq_length given alone drops the saved fixed length (each batch then
    pads to its longest text). What packing reaches (the fixed length, else
    max_seq_length) must fit the model's positions: a saved max_seq_length
    past them is kept while a fixed length within them is what packs.

    Args:
        explicit: `TextSettings` of the values given.
        saved: `TextSettings` of the values saved in `where`.
        max_position_embeddings, default_max_seq_length, where: see
            `resolve_text_settings`.
        fix: str, the way out named for a saved length past the positions
            (default: fix `where` or pass max_seq_length).

    Returns:
        (int, int or None).
    """
    fixed, fixed_from = explicit.sequence_length, "given"
    if fixed is None and explicit.max_seq_length is None:
        fixed, fixed_from = saved.sequence_length, f"saved in {where}"
    value, origin = explicit.max_seq_length, "given"
    if value is None and saved.max_seq_length is not None and (
            explicit.sequence_length is None or saved.max_seq_length >= fixed):
        value, origin = saved.max_seq_length, f"saved in {where}"
    if value is None and fixed is not None:
        value, origin = fixed, fixed_from  # It follows the fixed length.
    if value is None:
        value = default_max_seq_length or DEFAULT_MAX_SEQ_LENGTH
        if max_position_embeddings is not None:
            value = min(value, max_position_embeddings)
        origin = "the default"
    if fixed is not None and fixed > value:  # Both given, or an edited task.json.
        raise ValueError(
            f"Expected sequence_length <= max_seq_length. Received: sequence_length={fixed!r} "
            f"({fixed_from}), max_seq_length={value!r} ({origin}). Give one of them: the "
            f"other follows it.")
    name, reach, reach_from = (("sequence_length", fixed, fixed_from) if fixed is not None
                               else ("max_seq_length", value, origin))
    if max_position_embeddings is not None and not (
            MIN_SEQ_LENGTH <= reach <= max_position_embeddings):
        if reach_from == "given":
            fix = f"Pass a {name}"
        raise ValueError(
            f"Expected {name} in [{MIN_SEQ_LENGTH}, {max_position_embeddings}] (the model's "
            f"max_position_embeddings). Received: {name}={reach!r} ({reach_from}). "
            f"{fix or f'Fix {where}, or pass a max_seq_length (--max-seq-length)'} in that "
            f"range.")
    return value, fixed
