"""What a sentence-transformers folder says about its embeddings (standard library only).

A sentence-transformers model folder is a Hugging Face folder (config.json,
weights, vocab.txt) plus its pipeline of modules:

  modules.json                 the modules in order: Transformer (path ""),
                               Pooling ("1_Pooling"), optionally Normalize
                               ("2_Normalize", a folder that may be absent:
                               the module has no files)
  1_Pooling/config.json        pooling_mode_mean_tokens / _cls_token / _max_tokens
  sentence_bert_config.json    max_seq_length: the length it truncates texts to

A module keras_bert cannot reproduce (Dense, a pooling mode other than mean /
cls / max) is refused by name rather than skipped.
"""

import json

from keras_bert import storage

MODULES_FILE = "modules.json"
SETTINGS_FILE = "sentence_bert_config.json"
_PREFIX = "sentence_transformers.models."
#: 1_Pooling/config.json key -> our `pooling` name.
_POOLING_KEYS = {
    "pooling_mode_mean_tokens": "mean",
    "pooling_mode_cls_token": "cls",
    "pooling_mode_max_tokens": "max",
}
_UNSUPPORTED_POOLING = ("pooling_mode_mean_sqrt_len_tokens", "pooling_mode_weightedmean_tokens",
                        "pooling_mode_lasttoken")


def is_sentence_transformers_folder(folder):
    """True when `folder` is a directory holding modules.json."""
    path = storage.join(folder, MODULES_FILE)
    return storage.isdir(folder) and storage.isfile(path)


def _read_json(path, what):
    if not storage.exists(path):  # gs:// raises its own NotFoundError, not an OSError.
        raise ValueError(f"{path} is missing: modules.json names it as {what}. Restore the "
                         f"file, or pass pooling=... and normalize=... yourself.")
    try:
        return json.loads(storage.read_bytes(path).decode("utf-8"))
    except ValueError as e:
        raise ValueError(f"{path} is not valid JSON ({e}).") from None


def _pooling_of(path):
    config = _read_json(path, "the Pooling module's config")
    used = [key for key in (*_POOLING_KEYS, *_UNSUPPORTED_POOLING) if config.get(key)]
    if len(used) != 1 or used[0] not in _POOLING_KEYS:
        raise ValueError(
            f"{path} turns on {used or 'no pooling mode'}; keras_bert pools with exactly one "
            f"of {sorted(_POOLING_KEYS)} (pooling='mean', 'cls' or 'max').")
    return _POOLING_KEYS[used[0]]


def read_sentence_transformers(folder):
    """`BertTextEmbedder` arguments from a sentence-transformers folder.

    Args:
        folder: str, a directory holding modules.json.

    Returns:
        dict with "pooling" (str), "normalize" (bool) and "max_seq_length"
        (int or None when sentence_bert_config.json does not say).

    Raises:
        ValueError: a module or pooling mode keras_bert does not reproduce,
            or a file modules.json names is missing; the message names it.

    Example:
    >>> read_sentence_transformers("all-MiniLM-L6-v2")
    {'pooling': 'mean', 'normalize': True, 'max_seq_length': 256}
    """
    path = storage.join(folder, MODULES_FILE)
    modules = _read_json(path, "the module list")
    if not isinstance(modules, list) or not all(isinstance(m, dict) for m in modules):
        raise ValueError(f"{path}: expected a list of modules. Received: {modules!r:.200}")
    kinds = [str(m.get("type", "")).replace(_PREFIX, "") for m in modules]
    if not kinds or kinds[0] != "Transformer":
        raise ValueError(f"{path}: the first module must be the Transformer. Received: {kinds}")
    facts = {"pooling": None, "normalize": False, "max_seq_length": None}
    for module, kind in zip(modules[1:], kinds[1:]):
        where = storage.join(folder, str(module.get("path", "")))
        if kind == "Pooling" and facts["pooling"] is None:
            facts["pooling"] = _pooling_of(storage.join(where, "config.json"))
        elif kind == "Normalize":
            facts["normalize"] = True
        else:
            raise ValueError(
                f"{path}: module {module.get('type')!r} ({where}) is not one keras_bert "
                f"reproduces (Transformer, Pooling, Normalize). Load the folder as a plain "
                f"encoder with pooling=... and projection_dim=... of your choosing instead.")
    if facts["pooling"] is None:
        raise ValueError(f"{path} lists no Pooling module; pass pooling='mean', 'cls' or 'max'.")
    settings_path = storage.join(folder, SETTINGS_FILE)
    if storage.isfile(settings_path):
        length = _read_json(settings_path, "the text settings").get("max_seq_length")
        if isinstance(length, int) and not isinstance(length, bool) and length > 0:
            facts["max_seq_length"] = length
    return facts
