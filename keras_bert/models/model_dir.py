"""The model directory: the hand-off between convert, pretrain, finetune and export.

MODEL_DIR/
  config.json        BertConfig of the encoder
  vocab.txt          WordPiece vocabulary (when known)
  model.weights.h5   Keras weights of the whole model
  task.json          task models only: {"task": name, "task_config": {...}, ...}
"""

import collections
import json
import os
import re
import shutil

from keras_bert.config import BertConfig
from keras_bert.models.registry import get_task
from keras_bert.staging import make_staging_dir
from keras_bert.text import BertPreprocessor, BertTokenizer, infer_lowercase, save_vocabulary

CONFIG_FILE = "config.json"
VOCAB_FILE = "vocab.txt"
WEIGHTS_FILE = "model.weights.h5"
TASK_FILE = "task.json"
# The weights file keeps a copy of the config it was saved with (an HDF5
# attribute): a config.json edited afterwards (num_heads changes no shape)
# is caught on load.
CONFIG_ATTR = "keras_bert_config"
# Fields that must equal the saved ones for the weights to mean the same
# thing (dropout and initializer_range may change between runs).
_WEIGHT_FIELDS = ("vocab_size", "hidden_size", "num_layers", "num_heads", "intermediate_size",
                  "hidden_act", "max_position_embeddings", "type_vocab_size",
                  "layer_norm_epsilon")


def count_vocab_lines(path):
    with open(path, encoding="utf-8") as f:
        return sum(1 for _ in f)


def check_vocab(vocab_file, vocab_size):
    """Raises ValueError if `vocab_file` does not have `vocab_size` lines."""
    found = count_vocab_lines(vocab_file)
    if found != vocab_size:
        raise ValueError(
            f"{vocab_file} has {found} tokens, but the model's vocab_size is "
            f"{vocab_size} (rows of the token embedding matrix). Use the vocab.txt "
            f"that was released with these weights."
        )


def save_model_dir(model, model_dir, vocab_file=None, task_info=None):
    """Writes `model` to `model_dir` atomically (a temp dir, then a rename).

    Args:
        model: a `BertEncoder` or a task model with an `.encoder`.
        model_dir: str, the directory to write; replaced if it exists.
        vocab_file: str path of vocab.txt to copy in, or None to use the
            vocabulary the model was loaded with (`model.vocab_file`), if any.
        task_info: dict of extra JSON-able facts for task.json
            (e.g. max_seq_length).
    """
    encoder = getattr(model, "encoder", model)
    config = encoder.get_bert_config()
    vocab_file = vocab_file or getattr(model, "vocab_file", None)
    if vocab_file is not None:
        check_vocab(vocab_file, config.vocab_size)
    model_dir = os.path.abspath(model_dir)
    parent = os.path.dirname(model_dir)
    os.makedirs(parent, exist_ok=True)
    tmp = make_staging_dir(parent, ".tmp-", os.path.basename(model_dir))
    # mkdtemp makes a 0700 directory; give the model directory the usual
    # permissions (0777 less the umask) so other users and servers can read it.
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(tmp, 0o777 & ~umask)
    try:
        config.to_json_file(os.path.join(tmp, CONFIG_FILE))
        if vocab_file is not None:
            shutil.copyfile(vocab_file, os.path.join(tmp, VOCAB_FILE))
        elif getattr(model, "preprocessor", None) is not None:
            save_vocabulary(model.preprocessor.tokenizer.vocabulary,
                            os.path.join(tmp, VOCAB_FILE))
        if model is not encoder:
            task = {
                "task": model.task_name,
                "task_config": model.task_config(),
                **(getattr(model, "task_info", None) or {}),
                **(task_info or {}),
            }
            with open(os.path.join(tmp, TASK_FILE), "w", encoding="utf-8") as f:
                json.dump(task, f, indent=2, sort_keys=True)
                f.write("\n")
        model.save_weights(os.path.join(tmp, WEIGHTS_FILE))
        _stamp_config(os.path.join(tmp, WEIGHTS_FILE), config)
        if os.path.isdir(model_dir):
            old = model_dir + ".old"
            shutil.rmtree(old, ignore_errors=True)
            os.rename(model_dir, old)
            os.rename(tmp, model_dir)
            shutil.rmtree(old)
        else:
            os.rename(tmp, model_dir)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    if os.path.exists(os.path.join(model_dir, VOCAB_FILE)):
        model.vocab_file = os.path.join(model_dir, VOCAB_FILE)


def _stamp_config(weights_path, config):
    import h5py

    with h5py.File(weights_path, "a") as f:
        f.attrs[CONFIG_ATTR] = config.to_json()


def _weight_shapes(weights_path):
    """{dataset name: shape} of a Keras .weights.h5 file, and its saved config dict."""
    import h5py

    shapes = {}
    try:
        with h5py.File(weights_path, "r") as f:
            # A compiled model also saves its optimizer's slots ("optimizer/..."):
            # only the model's own weights ("layers/...", "vars/...") count.
            f.visititems(lambda name, item: shapes.__setitem__(name, tuple(item.shape))
                         if isinstance(item, h5py.Dataset)
                         and not name.startswith("optimizer/") else None)
            saved = f.attrs.get(CONFIG_ATTR)
    except OSError as e:
        raise ValueError(f"{weights_path} is not a readable Keras weights file: {e}") from e
    if isinstance(saved, bytes):
        saved = saved.decode("utf-8")
    return shapes, (json.loads(saved) if saved else None)


def check_weights(weights_path, model, config, config_path):
    """Raises ValueError unless the weights file fits `model` exactly.

    Every array of the file must have a variable of the same shape in the
    model and the reverse (Keras would load a prefix of the encoder blocks
    and ignore the rest), and the config saved with the weights (if any)
    must equal `config` on the fields that give the weights their meaning.
    """
    shapes, saved = _weight_shapes(weights_path)
    if saved is not None:
        differ = [f"{k}={getattr(config, k)!r} (the weights were saved with {saved[k]!r})"
                  for k in _WEIGHT_FIELDS if k in saved and saved[k] != getattr(config, k)]
        if differ:
            raise ValueError(
                f"{config_path} does not match {weights_path}: {', '.join(differ)}. The "
                f"weights and config.json must come from the same model: restore config.json."
            )
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


# Types of the task.json keys keras_bert reads ("task_config" keys included).
_INT, _NUMBER, _BOOL = (int,), (int, float), (bool,)
_TASK_JSON_TYPES = {
    "task": (str,), "task_config": (dict,), "lowercase": _BOOL, "max_seq_length": _INT,
    "pairs": _BOOL, "regression": _BOOL, "version_2_with_negative": _BOOL,
    "doc_stride": _INT, "max_query_length": _INT, "max_answer_length": _INT,
    "max_windows": _INT, "null_score_diff_threshold": _NUMBER, "num_classes": _INT,
    "dropout_rate": _NUMBER, "label_names": (list,), "pretraining_steps": _INT, "epoch": _INT,
}
_TASK_JSON_MINIMUM = {"max_seq_length": 3, "doc_stride": 1, "max_query_length": 1,
                      "max_answer_length": 1, "max_windows": 1, "num_classes": 1,
                      "pretraining_steps": 0, "epoch": 0}
_TYPE_NAMES = {_INT: "an integer", _NUMBER: "a number", _BOOL: "true or false",
               (str,): "a string", (dict,): "a JSON object", (list,): "a list of strings"}


def _check_task_json(values, path, prefix=""):
    for key, value in values.items():
        expected = _TASK_JSON_TYPES.get(key)
        if expected is None or value is None and key in ("dropout_rate", "label_names"):
            continue
        ok = isinstance(value, expected) and (expected == _BOOL or not isinstance(value, bool))
        if ok and key == "label_names":
            ok = all(isinstance(name, str) for name in value)
        if not ok:
            raise ValueError(
                f"{path}: {prefix}{key} must be {_TYPE_NAMES[expected]}. Received: "
                f"{key}={value!r}. Fix the file (it is written by save_pretrained)."
            )
        least = _TASK_JSON_MINIMUM.get(key)
        if least is not None and value < least:
            raise ValueError(f"{path}: {prefix}{key} must be >= {least}. Received: "
                             f"{key}={value!r}.")
        if key == "task_config":
            _check_task_json(value, path, prefix="task_config.")


def read_task_info(model_dir):
    """The parsed task.json of `model_dir`, or None for a bare encoder.

    Raises ValueError naming the file and key if it is not a JSON object or
    a key keras_bert reads has the wrong type ("lowercase": "false" is not
    false).
    """
    path = os.path.join(model_dir, TASK_FILE)
    if not os.path.exists(path):
        return None
    with open(path, encoding="utf-8") as f:
        try:
            info = json.load(f)
        except json.JSONDecodeError as e:
            raise ValueError(f"{path} is not valid JSON: {e}") from e
    if not isinstance(info, dict):
        raise ValueError(f"{path} must hold a JSON object. Received: a JSON {type(info).__name__}.")
    _check_task_json(info, path)
    return info


def load_model_dir(model_dir, encoder_cls, **encoder_kwargs):
    """Rebuilds the model saved in `model_dir` (the type task.json names).

    Returns:
        A `BertEncoder` or task model with its weights loaded; its
        `vocab_file` attribute is the directory's vocab.txt (or None) and
        `task_info` the contents of task.json (or None).
    """
    if not os.path.isdir(model_dir):
        raise FileNotFoundError(f"Model directory not found: {model_dir}")
    config_path = os.path.join(model_dir, CONFIG_FILE)
    weights_path = os.path.join(model_dir, WEIGHTS_FILE)
    for path in (config_path, weights_path):
        if not os.path.exists(path):
            raise FileNotFoundError(
                f"{path} is missing: {model_dir} is not a complete model directory "
                f"(expected {CONFIG_FILE}, {WEIGHTS_FILE}, optional {VOCAB_FILE} and "
                f"{TASK_FILE}). Create one with tools/convert_checkpoint.py or "
                f"save_pretrained()."
            )
    config = BertConfig.from_json_file(config_path)
    vocab_path = os.path.join(model_dir, VOCAB_FILE)
    if os.path.exists(vocab_path):
        check_vocab(vocab_path, config.vocab_size)
    else:
        vocab_path = None
    encoder = encoder_cls(**config.to_dict(), **encoder_kwargs)
    task = read_task_info(model_dir)
    if task is None:
        model = encoder
    else:
        task_path = os.path.join(model_dir, TASK_FILE)
        spec = get_task(task.get("task"), where=task_path)
        try:
            model = spec.model(encoder=encoder, **task.get("task_config", {}))
        except (TypeError, ValueError) as e:
            raise ValueError(f"{task_path}: task_config does not build a "
                             f"{spec.model.__name__}: {e}") from e
    check_weights(weights_path, model, config, config_path)
    try:
        model.load_weights(weights_path)
    except (ValueError, KeyError, OSError) as e:
        raise ValueError(
            f"Could not load {weights_path} into a {type(model).__name__} built from "
            f"{config_path}: {e}. The weights and config.json must come from the same "
            f"model."
        ) from e
    model.vocab_file = vocab_path
    model.task_info = task
    return model


def build_preprocessor(vocab_file, max_position_embeddings, task_info=None,
                       max_seq_length=None, lowercase=None):
    """The `BertPreprocessor` a task model of a model directory carries.

    Each batch is padded to its own longest text (`sequence_length=None`)
    and texts are truncated to `max_seq_length`.

    Args:
        vocab_file: str, the directory's vocab.txt.
        max_position_embeddings: int, the encoder's.
        task_info: dict, the parsed task.json (or None).
        max_seq_length: int or None: None takes task.json's, else
            min(512, max_position_embeddings).
        lowercase: bool or None: None takes task.json's, else
            `infer_lowercase(vocab_file)`.
    """
    task_info = task_info or {}
    if max_seq_length is None:
        max_seq_length = task_info.get("max_seq_length")
    if max_seq_length is None:
        max_seq_length = min(512, max_position_embeddings)
    if not isinstance(max_seq_length, int) or not 3 <= max_seq_length <= max_position_embeddings:
        raise ValueError(
            f"Expected max_seq_length in [3, {max_position_embeddings}] (the model's "
            f"max_position_embeddings). Received: max_seq_length={max_seq_length!r}"
        )
    if lowercase is None:
        lowercase = task_info.get("lowercase")
    if lowercase is None:
        lowercase = infer_lowercase(vocab_file)
    return BertPreprocessor(
        BertTokenizer(vocab_file, lowercase=lowercase),
        sequence_length=None,
        max_seq_length=max_seq_length,
    )
