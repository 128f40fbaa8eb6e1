"""Names users type -> a local checkpoint folder (Hugging Face Hub and its cache).

`locate_checkpoint(source)` turns what a user passes to `from_pretrained`
or tools/convert_checkpoint.py --input into a local path:
- an existing path is itself (a folder, a weights file, a TF checkpoint prefix);
- a name of `KNOWN_NAMES` ("bert-base-uncased", keras-hub's
  "bert_base_en_uncased") is its Hub id or Kaggle handle;
- a Kaggle model handle ("kaggle://OWNER/MODEL/FRAMEWORK/VARIATION/VERSION") is
  its folder in kagglehub's cache, a Hub id ("google-bert/bert-base-uncased")
  its snapshot folder in huggingface_hub's cache; either is downloaded when
  missing unless HF_HUB_OFFLINE is set.
Anything else is refused with what was looked for and how to convert.
"""

import os
import re

from keras_bert.checkpoints.source import CheckpointError, first_line

#: Well-known names -> Hugging Face Hub ids (or, for a keras-hub preset the
#: Hub does not hold, its Kaggle handle). keras-hub's BERT presets are Google's
#: releases, which the Hub holds under google-bert/ and google/.
KNOWN_NAMES = {
    # The legacy transformers names (the Hub redirects them to google-bert/).
    "bert-base-uncased": "google-bert/bert-base-uncased",
    "bert-base-cased": "google-bert/bert-base-cased",
    "bert-large-uncased": "google-bert/bert-large-uncased",
    "bert-large-cased": "google-bert/bert-large-cased",
    "bert-base-multilingual-cased": "google-bert/bert-base-multilingual-cased",
    "bert-base-chinese": "google-bert/bert-base-chinese",
    "all-MiniLM-L6-v2": "sentence-transformers/all-MiniLM-L6-v2",
    "roberta-base": "FacebookAI/roberta-base",
    "roberta-large": "FacebookAI/roberta-large",
    "distilroberta-base": "distilbert/distilroberta-base",
    "xlm-roberta-base": "FacebookAI/xlm-roberta-base",
    "xlm-roberta-large": "FacebookAI/xlm-roberta-large",
    "paraphrase-multilingual-MiniLM-L12-v2":
        "sentence-transformers/paraphrase-multilingual-MiniLM-L12-v2",
    # keras-hub presets (keras_hub.models.BertBackbone.from_preset names).
    "bert_tiny_en_uncased": "google/bert_uncased_L-2_H-128_A-2",
    "bert_small_en_uncased": "google/bert_uncased_L-4_H-512_A-8",
    "bert_medium_en_uncased": "google/bert_uncased_L-8_H-512_A-8",
    "bert_base_en_uncased": "google-bert/bert-base-uncased",
    "bert_base_en": "google-bert/bert-base-cased",
    "bert_large_en_uncased": "google-bert/bert-large-uncased",
    "bert_large_en": "google-bert/bert-large-cased",
    "bert_base_multi": "google-bert/bert-base-multilingual-cased",
    "bert_base_zh": "google-bert/bert-base-chinese",
    # keras-hub's SST-2 fine-tuned classifier has no Hub copy: its Kaggle preset.
    "bert_tiny_en_uncased_sst2": "kaggle://keras/bert/keras/bert_tiny_en_uncased_sst2/5",
}
KAGGLE = "kaggle://"

# What a download fetches: the config, tokenizer files and one weights format
# (the first of safetensors, pytorch_model.bin, tf_model.h5 the repository has).
_TEXT_FILES = ["config.json", "vocab.txt", "tokenizer_config.json", "tokenizer.json",
               "special_tokens_map.json", "sentencepiece.bpe.model", "vocab.json", "merges.txt"]
_SAFETENSORS = ["model.safetensors", "model.safetensors.index.json", "model-*.safetensors"]
_PYTORCH = ["pytorch_model.bin", "pytorch_model.bin.index.json", "pytorch_model-*.bin"]
_TF = ["tf_model.h5"]
_HUB_ID = re.compile(r"[A-Za-z0-9][\w.-]*/[\w.-]+")
_TRUE = ("1", "ON", "YES", "TRUE")
HOW_TO_CONVERT = ("tools/convert_checkpoint.py --input CHECKPOINT --output MODEL_DIR converts "
                  "a Hugging Face, Google or keras-hub preset folder into a model directory")


def hub_offline():
    """True when HF_HUB_OFFLINE (or TRANSFORMERS_OFFLINE) asks for no network."""
    return any(os.environ.get(name, "").upper() in _TRUE
               for name in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"))


def hub_cache_dir():
    """huggingface_hub's cache folder, read from the environment on each call
    (huggingface_hub reads it once, at import)."""
    if os.environ.get("HF_HUB_CACHE"):
        return os.environ["HF_HUB_CACHE"]
    if os.environ.get("HUGGINGFACE_HUB_CACHE"):
        return os.environ["HUGGINGFACE_HUB_CACHE"]
    home = os.environ.get("HF_HOME") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"),
        "huggingface")
    return os.path.join(home, "hub")


def _exists(path):
    # A Google checkpoint prefix (".../bert_model.ckpt") is no file itself.
    return os.path.exists(path) or os.path.isfile(path + ".index")


def locate_checkpoint(source):
    """A local path for `source`: an existing path, or a Hub snapshot folder.

    Args:
        source: str or path-like: a folder, weights file or TF checkpoint
            prefix; a name of `KNOWN_NAMES`; or a Hub id "ORG/NAME".

    Returns:
        str, a path that exists.

    Raises:
        FileNotFoundError: nothing was found; the message says what was
            looked for (the path, the Hub cache, the names table) and whether
            the network was reached.
        CheckpointError: the Hub refused the id or huggingface_hub is missing.
    """
    source = os.fspath(source)
    if _exists(source):
        return source
    repo_id = KNOWN_NAMES.get(source, source)
    if repo_id.startswith(KAGGLE):
        return kaggle_snapshot(repo_id, asked=source)
    # "models/bert" with a local "models" folder is a mistyped path, not a Hub id.
    looks_local = source.startswith((".", "/", "~")) or (
        source not in KNOWN_NAMES and os.path.isdir(source.split("/")[0]))
    if looks_local:
        raise FileNotFoundError(
            f"Model directory not found: no such path {os.path.abspath(source)}. Pass a "
            f"keras_bert model directory, a Hugging Face, Google or keras-hub preset folder, a Hub "
            f"id or a known name (keras_bert.checkpoints.KNOWN_NAMES); {HOW_TO_CONVERT}.")
    if not _HUB_ID.fullmatch(repo_id):
        raise FileNotFoundError(
            f"{source!r} not found: no such path ({os.path.abspath(source)}), not a name "
            f"of keras_bert's table ({', '.join(sorted(KNOWN_NAMES))}) and not a Hugging "
            f"Face Hub id (ORG/NAME, read from the cache {hub_cache_dir()}). Pass a keras_bert model directory, a Hugging Face or "
            f"Google checkpoint folder, a keras-hub preset folder, a Hub id or a known name; "
            f"{HOW_TO_CONVERT}.")
    return hub_snapshot(repo_id, asked=source)


def kagglehub_cache_dir():
    """kagglehub's cache folder (KAGGLEHUB_CACHE, default ~/.cache/kagglehub)."""
    return os.environ.get("KAGGLEHUB_CACHE") or os.path.join(
        os.path.expanduser("~"), ".cache", "kagglehub")


def kaggle_snapshot(handle, asked=None):
    """The preset folder in kagglehub's cache of a Kaggle model handle
    "kaggle://OWNER/MODEL/FRAMEWORK/VARIATION/VERSION"; `asked`, what the user
    typed, is for messages."""
    named = f"{asked!r} (Kaggle {handle})" if asked and asked != handle else handle
    parts = handle[len(KAGGLE):].split("/")
    if len(parts) != 5 or not all(parts):
        raise FileNotFoundError(
            f"{named} is not a Kaggle model handle: expected "
            f"kaggle://OWNER/MODEL/FRAMEWORK/VARIATION/VERSION.")
    owner, model, framework, variation, version = parts
    base = os.path.join(kagglehub_cache_dir(), "models", owner, model, framework, variation)
    folder = os.path.join(base, version)
    # kagglehub marks a finished download with VERSION.complete beside it.
    if os.path.isdir(folder) and os.path.isfile(os.path.join(base, f"{version}.complete")):
        return folder
    how = (f"Download it where there is network (`kagglehub.model_download("
           f"\"{handle[len(KAGGLE):]}\")`, then copy the cache or set KAGGLEHUB_CACHE), or pass "
           f"the downloaded keras-hub preset folder")
    if hub_offline():
        raise FileNotFoundError(
            f"{named} is not in kagglehub's cache ({folder}) and HF_HUB_OFFLINE is set, so no "
            f"network was reached. {how}.")
    try:
        import kagglehub
    except ImportError as e:
        raise CheckpointError(
            f"{named} is a Kaggle model not in kagglehub's cache ({folder}); downloading it "
            f"needs kagglehub (`pip install kagglehub`). {how}.") from e
    try:
        return kagglehub.model_download(handle[len(KAGGLE):])
    except Exception as e:  # kagglehub raises its own and requests' errors.
        raise FileNotFoundError(
            f"{named} is not in kagglehub's cache ({folder}) and kagglehub could not download "
            f"it ({first_line(e)}). {how}.") from e


def hub_snapshot(repo_id, asked=None):
    """The local snapshot folder of Hub repository `repo_id` (see module doc)."""
    asked = asked or repo_id
    named = f"{asked!r} (Hub id {repo_id})" if asked != repo_id else repo_id
    cache = hub_cache_dir()
    try:
        import huggingface_hub
        from huggingface_hub import errors
    except ImportError as e:
        raise CheckpointError(
            f"{named} is a Hugging Face Hub id, and reading it needs huggingface_hub "
            f"(`pip install huggingface_hub`); or pass the downloaded folder.") from e
    offline = hub_offline()

    def download(patterns):
        return huggingface_hub.snapshot_download(
            repo_id, cache_dir=cache, allow_patterns=patterns, local_files_only=offline)

    try:
        folder = download(_TEXT_FILES + _SAFETENSORS)
        # The first two names of each list are its single-file ones.
        if not any(os.path.exists(os.path.join(folder, n)) for n in _SAFETENSORS[:2]):
            folder = download(_TEXT_FILES + _PYTORCH)
        if not any(os.path.exists(os.path.join(folder, n))
                   for n in _SAFETENSORS[:2] + _PYTORCH[:2]):
            folder = download(_TEXT_FILES + _TF)
    except errors.RepositoryNotFoundError as e:
        raise FileNotFoundError(
            f"{named} is not a repository on the Hugging Face Hub (or it is private or "
            f"gated: log in with `hf auth login`). Names keras_bert knows: "
            f"{', '.join(sorted(KNOWN_NAMES))}.") from e
    except errors.RevisionNotFoundError as e:
        raise FileNotFoundError(f"{named}: revision not found on the Hub: {e}") from e
    except (errors.LocalEntryNotFoundError, errors.HfHubHTTPError, OSError, ValueError) as e:
        if offline:
            why = "HF_HUB_OFFLINE is set, so no network was reached"
        elif isinstance(e, errors.LocalEntryNotFoundError):
            # What huggingface_hub raises when the connection fails.
            why = "the Hub could not be reached (no network was reached), so nothing was downloaded"
        else:
            why = f"the Hub refused the download ({first_line(e)})"
        raise FileNotFoundError(
            f"{named} is not in the Hugging Face cache {cache} and {why}. Download it where "
            f"there is network (`hf download {repo_id}`, then copy the cache or set "
            f"HF_HUB_CACHE), or pass its downloaded folder; {HOW_TO_CONVERT}.") from e
    return folder
