"""Where `from_pretrained(source)` finds its model directory.

A source is a keras_bert model directory or a checkpoint users already hold
(Hugging Face, transformers-TF, Google TF1, keras-hub, a known name). Models
and text must not import the converter or the model-directory reader (they
sit above them), so `keras_bert/__init__.py` registers those here
(`register_source_resolver`, `register_preprocessor_loader`).
"""

import json
import os

from keras_bert import storage

# Files that make a folder a keras_bert model directory
# (keras_bert.models.model_dir.CONFIG_FILE, WEIGHTS_FILE).
_MODEL_DIR_FILES = ("config.json", "model.weights.h5")

_resolver = None
_preprocessor_loader = None


def is_model_dir(path):
    """True if `path` is a folder holding config.json and model.weights.h5
    (and is not a keras-hub preset, which has both files too)."""
    return os.path.isdir(path) and all(
        os.path.isfile(os.path.join(path, name)) for name in _MODEL_DIR_FILES
    ) and keras_hub_class(path) is None


def keras_hub_class(path):
    """The class a keras-hub preset folder's config.json names ("BertBackbone"), or None.

    keras-hub (or keras-nlp) writes config.json as a serialized Keras object,
    registered_name "keras_hub>CLASS"; a keras_bert config.json is flat.
    """
    config = _read_config(path)
    if not isinstance(config, dict) or not isinstance(config.get("config"), dict):
        return None
    registered = str(config.get("registered_name") or "")
    module = str(config.get("module") or "")
    if registered.startswith(("keras_hub>", "keras_nlp>")) or module.startswith(
            ("keras_hub.", "keras_nlp.")):
        return config.get("class_name")
    return None


def _read_config(path):
    """The JSON in `path`/config.json, or None if it is missing or unreadable."""
    try:
        with open(os.path.join(path, "config.json"), encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def _looks_like_model_dir(path):
    """A damaged model directory (e.g. its weights file deleted) is still one:
    `load_model_dir` then names what is missing. Its config.json has
    BertConfig's field names (num_layers), not transformers' (num_hidden_layers)."""
    if not os.path.isdir(path) or keras_hub_class(path) is not None:
        return False
    if any(os.path.isfile(os.path.join(path, name)) for name in ("model.weights.h5", "task.json")):
        return True
    config = _read_config(path)
    return isinstance(config, dict) and "num_layers" in config and "model_type" not in config


def register_source_resolver(function):
    """Sets the function that turns any other source (str) into the path of a
    keras_bert model directory, or raises an error saying what was looked for."""
    global _resolver
    _resolver = function


def resolve_source(source):
    """The model directory (str) for `source` (a model directory, a checkpoint
    folder, a Hub id or a known name): itself if it is one, else the resolver's."""
    source = os.fspath(source)
    if storage.is_remote(source):
        # A remote source is a model directory, read from a local copy of its
        # committed version (converters read local folders only).
        storage.check_filesystem(source, flag="The model")
        return storage.local_copy(source, "model directory")
    problem = wrong_kind(source)
    if problem:
        raise ValueError(problem)
    if is_model_dir(source) or _looks_like_model_dir(source) or _resolver is None:
        # Without a resolver, `load_model_dir` says what is missing.
        return source
    return _resolver(source)


# Files of a model or checkpoint folder that are no checkpoint on their own
# (weights files, .safetensors / .bin / tf_model.h5, are: a converter reads them).
_FOLDER_FILES = ("config.json", "task.json", "vocab.txt", "tokenizer.json",
                 "tokenizer_config.json", "special_tokens_map.json", "bert_config.json",
                 "preprocessor.json", "metadata.json")


# Files a converter reads on their own (keras_bert.checkpoints.convert), and data files.
_WEIGHTS_SUFFIXES = (".safetensors", ".bin", ".h5", ".index.json", ".index", ".ckpt")
_DATA_SUFFIXES = (".csv", ".tsv", ".txt", ".json", ".jsonl", ".tfrecord", ".parquet", ".gz")


def _is_export(path):
    """True for a serving export: a SavedModel folder, or a folder of integer versions holding one.

    A SavedModel with variables but no keras_bert export record is another's
    model (a TF Hub BERT encoder), which the converter reads.
    """
    if os.path.isfile(os.path.join(path, "saved_model.pb")):
        return not _is_foreign_saved_model(path)
    return any(name.isdigit() and os.path.isfile(os.path.join(path, name, "saved_model.pb"))
               and not _is_foreign_saved_model(os.path.join(path, name))
               for name in os.listdir(path))


def _is_foreign_saved_model(path):
    return os.path.isfile(os.path.join(path, "variables", "variables.index")) and (
        not os.path.isfile(os.path.join(path, "keras_bert_export.json")))


def wrong_kind(source):
    """Why `source` is none of the things `from_pretrained` loads, or None.

    Catches what users pass by mistake: a file of a model folder (its
    config.json, a keras_bert model directory's model.weights.h5), a file
    that is no checkpoint (train.csv), and an export (a SavedModel folder,
    a versioned exports/NAME folder, a LiteRT .tflite file or folder).
    """
    if os.path.isfile(source):
        folder = os.path.dirname(os.path.abspath(source))
        name = os.path.basename(source)
        if name == "saved_model.pb" or name.endswith(".tflite"):
            return _export_message(source)
        if name in _FOLDER_FILES or is_model_dir(folder) or _looks_like_model_dir(folder):
            return (f"{source} is a file of the folder {folder}: from_pretrained takes the "
                    f"folder. Pass from_pretrained({folder!r}).")
        if not name.endswith(_WEIGHTS_SUFFIXES):
            data = name.lower().endswith(_DATA_SUFFIXES)
            return (f"{source} is {'a data file' if data else 'no checkpoint'}, not a model: "
                    f"from_pretrained takes a model directory (save_pretrained's), a checkpoint "
                    f"folder or weights file ({' '.join(_WEIGHTS_SUFFIXES)}), a Hub id or a "
                    f"known name ('bert-base-uncased')."
                    + (" Train on data with model.fit or tools/finetune.py." if data else ""))
        return None
    if os.path.isdir(source) and not os.path.isfile(os.path.join(source, "config.json")) and (
            _is_export(source) or any(n.endswith(".tflite") for n in os.listdir(source))):
        return _export_message(source)
    return None


def _export_message(path):
    return (f"{path} is an export (a SavedModel or LiteRT file): exports are for serving "
            f"(TF Serving, tools/predict.py, tf.saved_model.load), and from_pretrained does not "
            f"read them back. Load the model directory it was exported from (config.json + "
            f"model.weights.h5, what save_pretrained or tools/finetune.py wrote).")


def register_preprocessor_loader(function):
    """Sets the function (model_dir, **kwargs) -> BertPreprocessor."""
    global _preprocessor_loader
    _preprocessor_loader = function


def load_preprocessor(source, **kwargs):
    """The `BertPreprocessor` of `source`'s model directory (see `resolve_source`)."""
    if _preprocessor_loader is None:
        raise RuntimeError("No preprocessor loader registered: import keras_bert first.")
    return _preprocessor_loader(resolve_source(source), **kwargs)
