"""The model directory: the hand-off between convert, pretrain, finetune and export.

MODEL_DIR/
  config.json        BertConfig of the encoder
  vocab.txt          WordPiece vocabulary (when known), or the files of another
                     tokenizer (`keras_bert.text.tokenizer_files`: they say which)
  model.weights.h5   Keras weights of the whole model (no optimizer state), with
                     the config and a sha256 of the arrays stamped in (checked on load)
  task.json          task models: {"task": name, "task_config": {...}, ...}; every
                     model: its text settings (`keras_bert.text.settings`; missing
                     ones take `resolve_text_settings`' defaults), which an
                     encoder's task.json holds alone (no "task" key).

`save_model_dir` replaces only a folder of this layout (`MODEL_DIR_KIND`);
see `keras_bert.files` for the rule every writer follows.
"""

import collections
import functools
import hashlib
import json
import os
import re

import numpy as np

from keras_bert import storage
from keras_bert.config import BertConfig, embedding_width
from keras_bert.files import (
    Kind,
    prepare_output_dir,
    read_committed,
    real_path,
    recover,
    staged_dir,
)
from keras_bert.models.registry import get_task
from keras_bert.text import BertPreprocessor
from keras_bert.text import tokenizer_files
from keras_bert.text.settings import (TEXT_SETTINGS_KEYS, TextSettings, resolve_lengths,
                                      resolve_text_settings)

CONFIG_FILE = "config.json"
VOCAB_FILE = "vocab.txt"
WEIGHTS_FILE = "model.weights.h5"
TASK_FILE = "task.json"
# The task.json keys of the preprocessor, also a bare encoder's;
# `tokenizer_options`: `BertPreprocessor.saved_settings`.
TEXT_SETTINGS = TEXT_SETTINGS_KEYS + ("tokenizer_options",)
# HDF5 attributes of the weights file: the config it was saved with (an edited
# config.json is caught on load) and a sha256 of its arrays (flipped bytes are).
CONFIG_ATTR = "keras_bert_config"
CHECKSUM_ATTR = "keras_bert_weights_sha256"
# Fields that must equal the saved ones for the weights to mean the same
# thing (dropout and initializer_range may change between runs).
_WEIGHT_FIELDS = ("vocab_size", "hidden_size", "num_layers", "num_heads", "intermediate_size",
                  "hidden_act", "max_position_embeddings", "type_vocab_size",
                  "layer_norm_epsilon", "embedding_size", "use_pooler", "pooler_act")


def count_vocab_lines(path):
    with storage.open_file(path) as f:
        return sum(1 for _ in f)


def check_vocab(vocab_file, vocab_size):
    """Raises ValueError if the vocabulary of `vocab_file` (a vocab.txt's lines, or the
    ids of another tokenizer's files) does not have `vocab_size` tokens."""
    wordpiece = tokenizer_files.is_wordpiece(vocab_file)
    found = (count_vocab_lines(vocab_file) if wordpiece
             else tokenizer_files.vocabulary_size(vocab_file))
    if found != vocab_size:
        raise ValueError(
            f"{vocab_file} has {found} tokens, but the model's vocab_size is "
            f"{vocab_size} (rows of the token embedding matrix). Use the "
            f"{'vocab.txt' if wordpiece else 'tokenizer files'} that were released with "
            f"these weights."
        )


# Staging prefixes of the writers of model directories: save_model_dir's, and
# the converter's (keras_bert.checkpoints.convert).
STAGING_PREFIX = ".tmp-"
CONVERT_STAGING_PREFIX = ".convert-"
# Files that evaluation writes beside the model (`write_predictions` of span QA).
PREDICTION_FILES = ("eval_predictions.json", "eval_null_odds.json")
# The LoRA adapters beside a LoRA model's merged weights (keras_bert.models.lora).
LORA_FILE = "model.lora.h5"
#: What a model directory is, for `keras_bert.files`: save_pretrained replaces
#: a folder only if it holds nothing but files keras_bert writes there.
MODEL_DIR_KIND = Kind("keras_bert model directory", required=(CONFIG_FILE, WEIGHTS_FILE),
                      allowed=(CONFIG_FILE, WEIGHTS_FILE, TASK_FILE, LORA_FILE, *PREDICTION_FILES,
                               *sorted({name for _, names in
                                        tokenizer_files.TOKENIZER_FILES.values()
                                        for name in names})))


def save_model_dir(model, model_dir, vocab_file=None, task_info=None, tokenizer=None):
    """Writes `model` to `model_dir` atomically (a staging folder, then a rename).

    `model_dir` may be missing, empty, or a model directory keras_bert wrote
    (`MODEL_DIR_KIND`), which is replaced (a link's target); anything else is
    refused. The optimizer state is left out (training checkpoints keep it).

    Args:
        model: a `BertEncoder` or a task model with an `.encoder`.
        model_dir: str, the directory to write.
        vocab_file: str path of a vocabulary file to copy in (with the files
            that go with it: `keras_bert.text.tokenizer_files`), or None: the
            model's `vocab_file`, else its preprocessor's tokenizer's files.
        tokenizer: a tokenizer whose files to write instead (e.g. a
            converter's); not with `vocab_file`.
        task_info: dict of extra JSON-able facts for task.json. An encoder's
            keeps only the text settings (`TEXT_SETTINGS`), from `task_info`
            or `model.task_info`.

    Raises:
        keras_bert.files.OutputError: `model_dir` is a file or a folder that
            is not a model directory keras_bert wrote.
        ValueError: the text settings pack past the encoder's positions
            (`from_pretrained` would refuse them); nothing is written.
    """
    encoder = getattr(model, "encoder", model)
    config = encoder.get_bert_config()
    if tokenizer is not None and vocab_file is not None:
        raise ValueError("Pass vocab_file or tokenizer to save_model_dir, not both.")
    if tokenizer is not None and tokenizer.vocab_size != config.vocab_size:
        raise ValueError(f"The tokenizer has {tokenizer.vocab_size} tokens, but the model's "
                         f"vocab_size is {config.vocab_size}: save the tokenizer of these "
                         f"weights.")
    if tokenizer is None:
        vocab_file = vocab_file or getattr(model, "vocab_file", None)
    if vocab_file is not None:
        check_vocab(vocab_file, config.vocab_size)
    # A text setting given as None (a preprocessor's sequence_length None)
    # overrides the loaded one and is left out.
    task = {**(getattr(model, "task_info", None) or {}), **(task_info or {})}
    task = {k: v for k, v in task.items() if not (k in TEXT_SETTINGS and v is None)}
    # What a save writes, a load must read: the load's check, before anything is written.
    resolve_lengths(TextSettings(), TextSettings.from_json(task), config.max_position_embeddings,
                    where="the model's preprocessor",
                    fix="Set model.preprocessor.sequence_length (or max_seq_length)")
    vocab_name = tokenizer_files.vocabulary_files(vocab_file)[0][1] if vocab_file else None
    if vocab_file is not None and _holds_only(model_dir, vocab_name, vocab_file):
        target = real_path(model_dir)  # Its one file is the vocabulary copied in.
    else:
        target = prepare_output_dir(model_dir, MODEL_DIR_KIND)
    # Vocabulary files inside `model_dir` (a re-save of a loaded model) are
    # copied into the staging folder before the old directory is replaced.
    with staged_dir(target, prefix=STAGING_PREFIX) as tmp:
        config.to_json_file(os.path.join(tmp, CONFIG_FILE))
        if vocab_file is not None:
            for path, name in tokenizer_files.vocabulary_files(vocab_file):
                storage.copy_file(path, os.path.join(tmp, name))
        elif tokenizer is not None or getattr(model, "preprocessor", None) is not None:
            vocab_name = os.path.basename(tokenizer_files.save_tokenizer_files(
                tokenizer or model.preprocessor.tokenizer, tmp))
        if model is not encoder:
            task = {"task": model.task_name, "task_config": model.task_config(), **task}
        else:
            task = {k: v for k, v in task.items() if k in TEXT_SETTINGS}
        if task:
            with open(os.path.join(tmp, TASK_FILE), "w", encoding="utf-8") as f:
                json.dump(task, f, indent=2, sort_keys=True)
                f.write("\n")
        save_model_weights(model, os.path.join(tmp, WEIGHTS_FILE))
        _stamp_config(os.path.join(tmp, WEIGHTS_FILE), config)
    if vocab_name is not None and storage.exists(storage.join(target, vocab_name)):
        model.vocab_file = storage.join(target if storage.is_remote(target)
                                        else os.path.abspath(model_dir), vocab_name)


def _holds_only(folder, name, source):
    """True if `folder` holds only `name`, and that file is `source` itself."""
    if storage.is_remote(folder):
        return False  # A remote folder is replaced as a whole (its vocab.txt is read first).
    path = os.path.join(folder, name)
    return (source is not None and os.path.isdir(folder) and os.listdir(folder) == [name]
            and real_path(path) == real_path(source))


def save_model_weights(model, path):
    """`model.save_weights(path)` without a compiled model's optimizer slots (AdamW's
    two moments: twice the model's size); a model directory holds the model only."""
    optimizer = getattr(model, "optimizer", None)
    if optimizer is None:
        return model.save_weights(path)
    from keras.src.saving import saving_lib

    saving_lib.save_weights_only(model, path, objects_to_skip=[optimizer])


def load_model_weights(model, path):
    """`model.load_weights(path)` without the optimizer, which a task compiled at
    construction may hold and a model directory's file has no values for."""
    optimizer = getattr(model, "optimizer", None)
    if optimizer is None:
        return model.load_weights(path)
    from keras.src.saving import saving_lib

    saving_lib.load_weights_only(model, path, objects_to_skip=[optimizer])


def weights_checksum(h5_file):
    """sha256 (hex) of the arrays of an open h5py File, in sorted name order.

    Each array contributes its name, dtype, shape and bytes, so a flipped
    byte, a renamed or reshaped array all change it; HDF5 attributes (the
    config stamp itself) do not take part.
    """
    import h5py

    names = []
    h5_file.visititems(lambda name, item: names.append(name)
                       if isinstance(item, h5py.Dataset) else None)
    digest = hashlib.sha256()
    for name in sorted(names):
        data = np.ascontiguousarray(h5_file[name][()])
        digest.update(f"{name}|{data.dtype.str}|{data.shape}|".encode("utf-8"))
        digest.update(data.tobytes())
    return digest.hexdigest()


def _stamp_config(weights_path, config):
    import h5py

    with h5py.File(weights_path, "a") as f:
        f.attrs[CONFIG_ATTR] = config.to_json()
        f.attrs[CHECKSUM_ATTR] = weights_checksum(f)


def check_checksum(weights_path):
    """Raises ValueError if `weights_path` does not match the checksum saved in it
    (files without one pass)."""
    saved, found = _read_weights_file(weights_path, lambda f: (
        _attribute(f, CHECKSUM_ATTR), CHECKSUM_ATTR in f.attrs and weights_checksum(f)))
    if saved is not None and found != saved:
        raise ValueError(f"{weights_path} is corrupt (checksum mismatch): re-save or re-convert "
                         f"the model.")


def h5_shapes(h5_file, config, path, error=ValueError):
    """{dataset name: shape} of an open h5py File, from its metadata; every h5 reader calls
    it first. Raises `error` naming `path` and the dataset when it declares more values
    than the largest array of a `config` model, or more than the file stores for it."""
    import h5py

    h, i = config.hidden_size, config.intermediate_size
    # The fused query/key/value kernel is [hidden, 3 * hidden].
    most = max(config.vocab_size, config.max_position_embeddings, i, h) * max(
        3 * h, i, embedding_width(config))
    shapes = {}

    def visit(name, item):
        if not isinstance(item, h5py.Dataset):
            return
        declared, stored = item.size * item.dtype.itemsize, item.id.get_storage_size()
        if item.size > most or (item.compression is None and stored < declared):
            raise error(
                f"{path}: dataset {name!r} declares shape {tuple(item.shape)} ({item.size:,} "
                f"values, {stored:,} of its {declared:,} bytes stored); a model of this config "
                f"(vocab_size={config.vocab_size}, hidden_size={h}, intermediate_size={i}) "
                f"holds arrays of at most {most:,} values, all stored. The file is damaged or "
                f"not this model's: nothing was read; get or save it again.")
        shapes[name] = tuple(item.shape)

    h5_file.visititems(visit)
    return shapes


def _weight_shapes(weights_path, config):
    """{dataset name: shape} of a Keras .weights.h5 file, and its saved config dict."""
    shapes, saved = _read_weights_file(weights_path, lambda f: (
        h5_shapes(f, config, weights_path), _attribute(f, CONFIG_ATTR)))
    # A compiled model also saves its optimizer's slots ("optimizer/..."):
    # only the model's own weights ("layers/...", "vars/...") count.
    return ({k: v for k, v in shapes.items() if not k.startswith("optimizer/")},
            json.loads(saved) if saved else None)


def _read_weights_file(weights_path, read):
    """`read(h5py.File)` of a Keras weights file; an unreadable file is a ValueError."""
    import h5py

    try:
        with h5py.File(weights_path, "r") as f:
            return read(f)
    except OSError as e:
        raise ValueError(f"{weights_path} is not a readable Keras weights file: {e}") from e


def _attribute(h5_file, name):
    """An HDF5 attribute as str (or None)."""
    value = h5_file.attrs.get(name)
    return value.decode("utf-8") if isinstance(value, bytes) else value


def _encoder_size(config):
    """The number of weights of the encoder `config` describes (embeddings, blocks, pooler)."""
    h, i = config.hidden_size, config.intermediate_size
    e = embedding_width(config)
    embeddings = (config.vocab_size + config.max_position_embeddings + config.type_vocab_size
                  + 2) * e
    project = (e * h + h) if e != h else 0
    block = 4 * (h * h + h) + 2 * h * i + i + h + 4 * h
    pooler = h * h + h if config.use_pooler else 0
    return embeddings + project + config.num_layers * block + pooler


def check_config_before_build(weights_path, config, config_path):
    """Raises ValueError unless `config` fits the weights file, before any tensor exists.

    The config stamped in the weights (if any) must equal `config` on
    `_WEIGHT_FIELDS`, and its encoder may not be larger than the file's arrays
    (an edited `intermediate_size: 4000000` would allocate gigabytes first).

    Returns:
        ({array name: shape}, the stamped config dict or None).
    """
    shapes, saved = _weight_shapes(weights_path, config)
    if saved is not None:
        differ = [f"{k}={getattr(config, k)!r} (the weights were saved with {saved[k]!r})"
                  for k in _WEIGHT_FIELDS if k in saved and saved[k] != getattr(config, k)]
        if differ:
            raise ValueError(
                f"{config_path} does not match {weights_path}: {', '.join(differ)}. The "
                f"weights and config.json must come from the same model: restore config.json."
            )
    held = sum(int(np.prod(shape)) for shape in shapes.values())
    wanted = _encoder_size(config)
    if wanted > held:
        raise ValueError(
            f"{config_path} describes an encoder of {wanted:,} weights (hidden_size="
            f"{config.hidden_size}, intermediate_size={config.intermediate_size}, num_layers="
            f"{config.num_layers}, vocab_size={config.vocab_size}), but {weights_path} holds "
            f"{held:,}: they are not from the same model. Restore config.json.")
    return shapes, saved


def check_weights(weights_path, model, config, config_path):
    """Raises ValueError unless the weights file fits `model` exactly: each array
    a variable of its shape and the reverse (Keras would load a prefix of the
    encoder blocks and ignore the rest), and `check_config_before_build`."""
    shapes, _ = check_config_before_build(weights_path, config, config_path)
    found = collections.Counter(shapes.values())
    expected = collections.Counter(tuple(v.shape) for v in model.weights)
    if found != expected:
        blocks = sorted({m.group(0) for name in shapes
                         for m in [re.search(r"transformer_encoder_block(_\d+)?(?=/)", name)] if m})
        hint = (f" The weights have {len(blocks)} encoder blocks; config.json says "
                f"num_layers={config.num_layers}." if len(blocks) != config.num_layers else "")
        unused, missing = sorted((found - expected).keys()), sorted((expected - found).keys())
        detail = "; ".join(part for part in (
            unused and f"arrays of shapes {unused[:3]} would be unused",
            missing and f"variables of shapes {missing[:3]} would not be loaded") if part)
        raise ValueError(
            f"{weights_path} holds {len(shapes)} arrays, but the {type(model).__name__} built "
            f"from {config_path} has {len(model.weights)} weights ({detail}).{hint} The "
            f"weights and config.json must come from the same model."
        )


# The generic task.json keys; each task's own are in its TaskSpec's task_json
# (keras_bert/models/registry.py). Keys in neither are not checked.
_GENERIC_TASK_JSON = {
    "task": {"type": "string"},
    "task_config": {"type": "object"},
    # The text settings are checked by TextSettings.from_json (read_task_info).
    "epoch": {"type": "integer", "minimum": 0},
}
# Python types and names of the schema's types (a bool, an int in Python, is
# refused where a number is expected).
_SCHEMA_TYPES = {"integer": ((int,), "an integer"), "number": ((int, float), "a number"),
                 "boolean": ((bool,), "true or false"), "string": ((str,), "a string"),
                 "object": ((dict,), "a JSON object"), "strings": ((list,), "a list of strings"),
                 "numbers": ((list,), "a list of numbers")}


def task_json_schema(task):
    """The task.json schema of `task`: the generic keys and its TaskSpec's.

    Args:
        task: str, the task.json "task" value; an unknown (or non-string)
            name gets the generic keys only (loading it fails later, naming
            the known tasks).
    """
    schema = dict(_GENERIC_TASK_JSON)
    try:
        spec = get_task(task) if isinstance(task, str) else None
    except ValueError:
        spec = None
    if spec is not None and spec.task_json:
        schema.update(spec.task_json)
    return schema


def _check_task_json(values, path, schema, prefix=""):
    for key, value in values.items():
        rule = schema.get(key)
        if rule is None or value is None and rule.get("nullable"):
            continue
        kind = rule["type"]
        types, name = _SCHEMA_TYPES[kind]
        ok = isinstance(value, types) and (
            kind == "boolean" or not isinstance(value, bool))
        if ok and kind == "strings":
            ok = all(isinstance(name, str) for name in value)
        if ok and kind == "numbers":
            ok = all(isinstance(number, (int, float)) and not isinstance(number, bool)
                     for number in value)
        if not ok:
            raise ValueError(
                f"{path}: {prefix}{key} must be {name}. Received: "
                f"{key}={value!r}. Fix the file (it is written by save_pretrained)."
            )
        least = rule.get("minimum")
        if least is not None and value < least:
            raise ValueError(f"{path}: {prefix}{key} must be >= {least}. Received: "
                             f"{key}={value!r}.")
        if key == "task_config":
            _check_task_json(value, path, schema, prefix="task_config.")


def read_task_info(model_dir):
    """The parsed task.json of `model_dir`, or None for a bare encoder.

    Raises ValueError naming the file and key if it is not a JSON object or a
    key has the wrong type ("lowercase": "false") or is below its minimum
    (`task_json_schema`).
    """
    path = storage.join(model_dir, TASK_FILE)
    if not storage.exists(path):
        return None
    with storage.open_file(path) as f:
        try:
            info = json.load(f)
        except json.JSONDecodeError as e:
            raise ValueError(f"{path} is not valid JSON: {e}") from e
    if not isinstance(info, dict):
        raise ValueError(f"{path} must hold a JSON object. Received: a JSON {type(info).__name__}.")
    _check_task_json(info, path, task_json_schema(info.get("task")))
    TextSettings.from_json(info, where=path)
    return info


def _required_files(model_dir, names, why):
    """The paths of `names` in `model_dir`; FileNotFoundError naming the missing
    directory or first missing file, followed by `why` (how to make it)."""
    if not storage.isdir(model_dir):
        raise FileNotFoundError(f"Model directory not found: {model_dir}")
    paths = [storage.join(model_dir, name) for name in names]
    for path in paths:
        if not storage.exists(path):
            raise FileNotFoundError(f"{path} is missing: {why}")
    return paths


def load_model_dir(model_dir, encoder_cls, **encoder_kwargs):
    """Rebuilds the model saved in `model_dir` (the task task.json names, imported
    on demand by `registry.get_task`).

    config.json is checked against the weights' stamp and size before the model
    is built. The files are read from one committed version
    (`keras_bert.files.read_committed`; `recover` puts back a parked directory).

    Returns:
        A `BertEncoder` or task model with its weights loaded; its `vocab_file` is
        the directory's vocabulary file and `task_info` its task.json (or None).
    """
    remote = storage.object_store(model_dir)
    if remote:  # Read from the local copy of its committed version (no writer touches it).
        model_dir = storage.local_copy(model_dir, "model directory",
                                       prefixes=(STAGING_PREFIX, CONVERT_STAGING_PREFIX))
    elif not os.path.lexists(model_dir):
        for prefix in (STAGING_PREFIX, CONVERT_STAGING_PREFIX):
            recover(model_dir, prefix)
    load = functools.partial(_load_model_dir, model_dir, encoder_cls, **encoder_kwargs)
    with storage.naming_source(model_dir):  # A local copy's errors name its remote folder.
        return load() if remote else read_committed(model_dir, load, what="model directory")


def _load_model_dir(model_dir, encoder_cls, **encoder_kwargs):
    config_path, weights_path = _required_files(
        model_dir, (CONFIG_FILE, WEIGHTS_FILE),
        f"{model_dir} is not a complete model directory (expected {CONFIG_FILE}, "
        f"{WEIGHTS_FILE}, optional vocabulary files and {TASK_FILE}). Create one with "
        f"tools/convert_checkpoint.py or save_pretrained().")
    config = BertConfig.from_json_file(config_path)
    vocab_path = tokenizer_files.vocabulary_file(model_dir)
    if vocab_path is not None:
        check_vocab(vocab_path, config.vocab_size)
    task = read_task_info(model_dir)
    check_config_before_build(weights_path, config, config_path)
    encoder = encoder_cls(**config.to_dict(), **encoder_kwargs)
    if task is None or "task" not in task:
        model = encoder  # A bare encoder (its task.json holds text settings only).
    else:
        task_path = os.path.join(model_dir, TASK_FILE)
        spec = get_task(task.get("task"), where=task_path)
        try:
            model = spec.model(encoder=encoder, **task.get("task_config", {}))
        except (TypeError, ValueError) as e:
            raise ValueError(f"{task_path}: task_config does not build a "
                             f"{spec.model.__name__}: {e}") from e
    check_weights(weights_path, model, config, config_path)
    check_checksum(weights_path)
    try:
        load_model_weights(model, weights_path)
    except (ValueError, KeyError, OSError) as e:
        raise ValueError(
            f"Could not load {weights_path} into a {type(model).__name__} built from "
            f"{config_path}: {e}. The weights and config.json must come from the same "
            f"model."
        ) from e
    model.vocab_file = vocab_path
    model.task_info = task
    return model


def load_preprocessor(model_dir, max_seq_length=None, lowercase=None):
    """The `BertPreprocessor` of a model directory (`BertPreprocessor.from_pretrained`);
    `max_seq_length` and `lowercase`: see `build_preprocessor`."""
    why = (f"a preprocessor needs the {CONFIG_FILE} and the vocabulary files (one of "
           f"{', '.join(tokenizer_files.TOKENIZER_FILES)}) of a model directory. Create one "
           f"with tools/convert_checkpoint.py or save_pretrained(vocab_file=...).")
    config_path, = _required_files(model_dir, (CONFIG_FILE,), why)
    vocab_path = tokenizer_files.vocabulary_file(model_dir)
    if vocab_path is None:
        raise FileNotFoundError(f"{model_dir} holds no vocabulary: {why}")
    config = BertConfig.from_json_file(config_path)
    check_vocab(vocab_path, config.vocab_size)
    return build_preprocessor(vocab_path, config.max_position_embeddings,
                              read_task_info(model_dir), max_seq_length=max_seq_length,
                              lowercase=lowercase, where=os.path.join(model_dir, TASK_FILE))


def build_preprocessor(vocab_file, max_position_embeddings, task_info=None,
                       max_seq_length=None, lowercase=None, default_max_seq_length=None,
                       where=TASK_FILE, tokenizer=None):
    """The `BertPreprocessor` a model of a model directory carries.

    Each batch is padded to its own longest text; the settings come from
    `resolve_text_settings`: the arguments > task.json > the defaults.

    Args:
        vocab_file: str, the directory's vocabulary file.
        max_position_embeddings: int, the encoder's.
        task_info: dict, the parsed task.json (or None), or the
            `TextSettings` saved with the model.
        max_seq_length: int or None: None takes task.json's, else
            `default_max_seq_length`, else min(512, max_position_embeddings).
        lowercase: bool or None: None takes task.json's, else
            `infer_lowercase(vocab_file)` (with a warning).
        where: str, the task.json path, named in errors.
        tokenizer: a tokenizer of the vocabulary whose options to keep.
    """
    options = task_info.get("tokenizer_options") if isinstance(task_info, dict) else None
    if options is not None and not isinstance(options, dict):
        raise ValueError(f"{where}: tokenizer_options must be a JSON object of tokenizer "
                         f"arguments. Received: tokenizer_options={options!r}.")
    if tokenizer is None and not tokenizer_files.is_wordpiece(vocab_file):
        tokenizer = _tokenizer(vocab_file, lowercase, options, where)
    if tokenizer is not None and not tokenizer_files.is_wordpiece(tokenizer) and (
            lowercase is None):
        lowercase = tokenizer.lowercase  # Its files say how it normalizes text.
    settings = resolve_text_settings(
        task_info, max_position_embeddings, vocab_file, max_seq_length=max_seq_length,
        lowercase=lowercase, default_max_seq_length=default_max_seq_length, where=where)
    if tokenizer is None:
        tokenizer = _tokenizer(vocab_file, settings.lowercase, options, where)
    return BertPreprocessor.from_text_settings(vocab_file, settings, tokenizer=tokenizer)


def _tokenizer(vocab_file, lowercase, options, where):
    """`tokenizer_files.load_tokenizer`, its errors on saved options naming `where`."""
    try:
        return tokenizer_files.load_tokenizer(vocab_file, lowercase, options)
    except (TypeError, ValueError) as error:
        if not options:
            raise
        raise ValueError(f"{where}: tokenizer_options {options!r} do not make the "
                         f"tokenizer of {vocab_file}: {error}. Fix the file (save_pretrained "
                         f"writes it).") from None
