"""Any checkpoint -> a keras_bert model directory, converted once into a cache.

`keras_bert/__init__.py` registers `resolve_source` with `keras_bert.sources`,
so every `from_pretrained(source)` takes, besides a model directory:
- a Hugging Face folder (config.json, model.safetensors or pytorch_model.bin,
  vocab.txt, tokenizer files), BertModel or a fine-tuned
  BertForSequenceClassification / BertForTokenClassification /
  BertForQuestionAnswering (head and id2label names carried over);
- a transformers-TF folder (config.json, tf_model.h5, vocab.txt) of TFBertModel
  or the same fine-tuned TFBertFor... classes (`transformers_tf.py`); a folder
  with both keeps reading model.safetensors / pytorch_model.bin;
- a Hugging Face Hub id or a name of `hub.KNOWN_NAMES` (from the Hub's cache
  when HF_HUB_OFFLINE is set);
- a Google TF1 checkpoint folder;
- a keras-hub preset folder (BertBackbone, or a fine-tuned BertTextClassifier
  whose head comes along; `keras_hub_preset.read_keras_hub_preset`).

The conversion is written once, by `convert_checkpoint` (a staged folder
renamed into place), to KERAS_BERT_CACHE/converted/NAME-KEY (default
~/.cache/keras_bert). KEY hashes the source's real path and the names, sizes
and modification times of its files (a Hub snapshot's path holds its
revision), so an edited or re-downloaded checkpoint is converted again.
"""

import hashlib
import logging
import os
import re

from keras_bert import sources
from keras_bert.checkpoints.convert import convert_checkpoint
from keras_bert.checkpoints.hub import KNOWN_NAMES, locate_checkpoint
from keras_bert.checkpoints.source import CheckpointError

CACHE_ENV = "KERAS_BERT_CACHE"
# Bumped when the converter writes model directories differently, so older
# cached conversions are not reused.
CACHE_VERSION = 2  # 2: a BertForQuestionAnswering folder converts to a span_qa model.
logger = logging.getLogger(__name__)


def cache_root():
    """KERAS_BERT_CACHE, else $XDG_CACHE_HOME/keras_bert (~/.cache/keras_bert)."""
    if os.environ.get(CACHE_ENV):
        return os.path.abspath(os.path.expanduser(os.environ[CACHE_ENV]))
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "keras_bert")


def cache_key(path):
    """sha256 (hex) of a checkpoint's real path and its files' names, sizes, mtimes."""
    path = os.path.realpath(path)
    folder = path if os.path.isdir(path) else os.path.dirname(path)
    digest = hashlib.sha256(f"v{CACHE_VERSION}|{path}|".encode("utf-8"))
    for name in sorted(os.listdir(folder)):
        entry = os.path.join(folder, name)
        if os.path.isfile(entry):  # Follows the Hub cache's links to its blobs.
            stat = os.stat(entry)
            digest.update(f"{name}|{stat.st_size}|{stat.st_mtime_ns}|".encode("utf-8"))
    return digest.hexdigest()


def converted_dir(source, local):
    """Where the conversion of `source` (found at `local`) is cached."""
    name = KNOWN_NAMES.get(source, source)
    if os.path.exists(source) or os.path.exists(source + ".index"):
        name = os.path.basename(os.path.normpath(local))
    slug = re.sub(r"[^\w.-]+", "--", name).strip("-.") or "checkpoint"
    return os.path.join(cache_root(), "converted", f"{slug}-{cache_key(local)[:16]}")


def resolve_source(source):
    """The model directory of `source`, converting it into the cache if needed.

    Args:
        source: a keras_bert model directory, a Hugging Face or Google
            checkpoint folder, a Hub id, or a name of `KNOWN_NAMES`.

    Returns:
        str, the path of a keras_bert model directory.

    Raises:
        FileNotFoundError: the source was not found (the message says where
            it was looked for).
        CheckpointError: the checkpoint is not BERT, or is damaged.
    """
    source = os.fspath(source)
    if sources.is_model_dir(source):
        return source
    local = locate_checkpoint(source)
    target = converted_dir(source, local)
    if sources.is_model_dir(target):
        return target
    logger.info("Converting %s into %s (once; later loads read the cache)", local, target)
    try:
        convert_checkpoint(local, target, log=logger.info)
    except CheckpointError as e:
        if sources.is_model_dir(target):
            return target  # Another process converted it meanwhile.
        if os.path.isdir(local) and "Cannot tell the format" in str(e):
            raise CheckpointError(
                f"{local} is not a keras_bert model directory (config.json + "
                f"model.weights.h5), nor a Hugging Face (config.json), Google "
                f"(bert_config.json) or keras-hub preset (config.json naming "
                f"keras_hub>BertBackbone) checkpoint folder.") from e
        raise
    return target
