"""Hugging Face BERT folders (transformers' `BertModel`, `BertForPreTraining`, ...).

A folder holds
    config.json                    hyperparameters (transformers' key names)
    model.safetensors              weights (or sharded: model.safetensors.index.json)
    pytorch_model.bin              older weights file (read only if torch is installed)
    vocab.txt                      WordPiece vocabulary
    tokenizer.json                 the fast tokenizer: WordPiece vocabulary (preferred
                                   to vocab.txt) and BertNormalizer options; or XLM-R's
                                   Unigram model, or RoBERTa's byte-level BPE
    sentencepiece.bpe.model        XLM-R's SentencePiece model (`SentencePieceTokenizer`)
    vocab.json, merges.txt         RoBERTa's byte-level BPE (`BytePairTokenizer`)
    tokenizer_config.json          optional; gives do_lower_case (our lowercase)
Tensor names are `embeddings.word_embeddings.weight`, `encoder.layer.0.attention.
self.query.weight`, ... with a `bert.` prefix in models that carry heads
(`cls.predictions.*`, `cls.seq_relationship.*`). PyTorch Linear weights are
[out, in]; they are transposed to Google's [in, out] here.
DistilBERT, ELECTRA, RoBERTa and XLM-RoBERTa folders are read too, as BertEncoder
variants (`keras_bert.checkpoints.bert_family`). torch is imported only for
pytorch_model.bin.
"""

import atexit
import json
import os
import re
import shutil
import tempfile

import numpy as np

from keras_bert.checkpoints import bert_family
from keras_bert.checkpoints.source import (
    POOLER_WEIGHTS,
    CheckpointError,
    SourceCheckpoint,
    check_against_config,
    check_config_object,
    count_vocab_lines,
    first_line,
    read_config_json,
)
from keras_bert.names import inside_name

CONFIG_FILE = "config.json"
VOCAB_FILE = "vocab.txt"
TOKENIZER_FILE = "tokenizer.json"
SAFETENSORS_FILE = "model.safetensors"
SAFETENSORS_INDEX = "model.safetensors.index.json"
PYTORCH_FILE = "pytorch_model.bin"
PYTORCH_INDEX = "pytorch_model.bin.index.json"
# A folder's weights files, preferred in this order (and to tf_model.h5).
WEIGHTS_FILES = (SAFETENSORS_FILE, SAFETENSORS_INDEX, PYTORCH_FILE, PYTORCH_INDEX)


_DENSE = (
    r"attention\.self\.(?:query|key|value)|attention\.output\.dense"
    r"|intermediate\.dense|output\.dense"
)
_NORM = r"attention\.output\.LayerNorm|output\.LayerNorm"

# Rules on the name without the model prefix (`bert_family.rules`); "{path}" is
# group "path" with dots turned into slashes.
_LAYER = r"encoder\.layer\.(?P<layer>\d+)\.(?P<path>{})"
_RULES = [
    (r"embeddings\.(?P<path>word|token_type|position)_embeddings\.weight",
     "bert/embeddings/{path}_embeddings", False),
    *bert_family.norm_rules(r"embeddings\.LayerNorm", "bert/embeddings/LayerNorm"),
    *bert_family.linear_rules(_LAYER.format(_DENSE), "bert/encoder/layer_{layer}/{path}"),
    *bert_family.norm_rules(_LAYER.format(_NORM), "bert/encoder/layer_{layer}/{path}"),
    *bert_family.linear_rules(r"pooler\.dense", "bert/pooler/dense"),
]
# Heads carry no model prefix.
_HEAD_RULES = [
    *bert_family.linear_rules(r"cls\.predictions\.transform\.dense",
                              "cls/predictions/transform/dense"),
    *bert_family.norm_rules(r"cls\.predictions\.transform\.LayerNorm",
                            "cls/predictions/transform/LayerNorm"),
    (r"cls\.predictions\.bias", "cls/predictions/output_bias", False),
    # PyTorch's NSP Linear weight is [2, H], the same as Google's output_weights.
    (r"cls\.seq_relationship\.weight", "cls/seq_relationship/output_weights", False),
    (r"cls\.seq_relationship\.bias", "cls/seq_relationship/output_bias", False),
]
# Buffers saved with the weights that are not weights.
_BUFFERS = {"embeddings.position_ids": "position id buffer (0..max_position-1)"}
# Architectures that look like BERT but are not, refused by name.
OTHER_ARCHITECTURES = {
    "roberta": "RoBERTa", "xlm-roberta": "XLM-RoBERTa", "camembert": "CamemBERT",
    "distilbert": "DistilBERT", "albert": "ALBERT", "electra": "ELECTRA",
    "deberta": "DeBERTa", "deberta-v2": "DeBERTa-v2", "mpnet": "MPNet",
    "modernbert": "ModernBERT", "megatron-bert": "Megatron-BERT", "mobilebert": "MobileBERT",
    "longformer": "Longformer", "bart": "BART", "t5": "T5", "gpt2": "GPT-2",
    "nomic_bert": "NomicBERT",
}
# transformers' fine-tuned heads keras_bert has a task for: the architecture
# name's suffix -> (registered task, the head layer's name). `classifier` is a
# Linear on the pooled (sequence) or per-token (token) output, after dropout;
# `qa_outputs` a Linear of 2 units (start, end) on every token.
HEAD_TASKS = {
    "ForSequenceClassification": ("classification", "classifier"),
    "ForTokenClassification": ("token_classification", "classifier"),
    "ForQuestionAnswering": ("span_qa", "qa_outputs"),
}
_DECODER_WEIGHT = "cls.predictions.decoder.weight"
_DECODER_BIAS = "cls.predictions.decoder.bias"
# "DistilBERT (model_type 'distilbert'), ...": what config_from_huggingface's refusals offer.
_VARIANTS = ", ".join(f"{OTHER_ARCHITECTURES[k]} (model_type {k!r})"
                      for k in bert_family.MODEL_TYPES)
_WORD_EMBEDDINGS = "embeddings.word_embeddings.weight"


def _other_architecture(architectures):
    """(class name, model_type) of a non-BERT class in config.json's architectures
    ("RobertaForSequenceClassification", "TFDistilBertModel"), or None."""
    known = {re.sub(r"[-_]", "", key): key for key in OTHER_ARCHITECTURES}
    for architecture in architectures if isinstance(architectures, list) else []:
        base = re.sub(r"^TF|(?:Model|For\w+|LMHead\w*)$", "", str(architecture)).lower()
        if base in known:
            return str(architecture), known[base]
    return None


def read_config_file(config_file, missing_hint):
    """`(values, config)`: a transformers config.json's dict and its BertConfig;
    `missing_hint` is the way out said when the file is missing."""
    values = read_config_json(config_file, missing_hint)
    return values, config_from_huggingface(values, config_file)


def config_from_huggingface(values, path="config.json"):
    """BertConfig from the dict in a transformers BERT `config.json`."""
    check_config_object(values, path)
    model_type = bert_family.model_type_of(values)
    other = _other_architecture(values.get("architectures"))
    if model_type == "bert" and other:
        name = OTHER_ARCHITECTURES[other[1]]
        raise CheckpointError(
            f"{path}: this is a {name} checkpoint (architectures {other[0]!r}), not BERT; "
            f"keras_bert loads BERT and its variants {_VARIANTS}: other architectures "
            f"differ in position ids, normalization or names."
            + (f" This config.json says model_type 'bert' (or none); a {name} folder that "
               f"transformers saved says {other[1]!r}: set it in config.json."
               if other[1] in bert_family.MODEL_TYPES else ""))
    if model_type in bert_family.MODEL_TYPES:
        return bert_family.config_from_family(values, path)
    if model_type != "bert":
        name = OTHER_ARCHITECTURES.get(model_type, "")
        what = f"a {name} checkpoint (model_type={model_type!r})" if name else (
            f"model_type={model_type!r}")
        raise CheckpointError(
            f"{path}: this is {what}, and model_type={model_type!r} is not BERT; "
            f"keras_bert loads BERT (model_type 'bert') and its variants {_VARIANTS}: "
            f"other architectures differ in position ids, normalization or names."
        )
    bert_family.check_bert_keys(values, path, "a BERT")
    return bert_family.config_from_bert_keys(values, path)


def find_weights_file(folder):
    """The weights file of a Hugging Face folder, preferring safetensors."""
    for name in WEIGHTS_FILES:
        candidate = os.path.join(folder, name)
        if os.path.isfile(candidate):
            return candidate
    tf_only = os.path.isfile(os.path.join(folder, "tf_model.h5"))
    raise CheckpointError(
        f"No weights file in {folder}: expected {SAFETENSORS_FILE} "
        f"(or {SAFETENSORS_INDEX}, {PYTORCH_FILE})"
        + ("; its tf_model.h5 is read with format \"transformers_tf\" (--format "
           "transformers_tf, or leave the format out)." if tf_only else ".")
    )


def load_tensors(weights_file):
    """dict, tensor name -> numpy array, from a safetensors or PyTorch file (or every
    shard a `.index.json` lists)."""
    if weights_file.endswith(".index.json"):
        try:
            with open(weights_file, encoding="utf-8") as f:
                weight_map = json.load(f)["weight_map"]
            if not isinstance(weight_map, dict):
                raise TypeError("weight_map is not a JSON object")
        except (OSError, ValueError, KeyError, TypeError) as e:
            raise CheckpointError(f"Cannot read shard index {weights_file}: {e}") from e
        folder = os.path.dirname(weights_file)
        tensors = {}
        for shard in sorted(set(weight_map.values())):
            # A shard is a weights file inside the folder, never an index (no loops).
            if str(shard).endswith(".index.json"):
                raise CheckpointError(f"{weights_file} is damaged: shard {shard!r} is an "
                                      f"index, not a weights file. Download it again.")
            tensors.update(load_tensors(os.path.join(folder, inside_name(
                shard, source=weights_file, what="a shard"))))
        missing = sorted(set(weight_map) - set(tensors))
        if missing:
            raise CheckpointError(
                f"{weights_file} lists tensors its shards lack: {missing[:5]}."
            )
        return tensors
    if not os.path.isfile(weights_file):
        raise CheckpointError(f"Weights file not found: {weights_file}")
    if weights_file.endswith(".safetensors"):
        return _load_safetensors(weights_file)
    return _load_pytorch(weights_file)


def _load_safetensors(path):
    from safetensors import safe_open

    tensors = {}
    try:
        with safe_open(path, framework="numpy") as f:
            for name in f.keys():
                tensors[name] = f.get_tensor(name)
    except Exception as e:  # safetensors raises its own error types.
        message = first_line(e)
        hint = (
            " numpy has no bfloat16: save the model in float32 or float16."
            if "bf16" in message.lower() or "bfloat16" in message.lower()
            else " The file is truncated or corrupt; download it again."
        )
        raise CheckpointError(f"Cannot read {path}: {message}.{hint}") from e
    return tensors


def _load_pytorch(path):
    try:
        import torch
    except ImportError as e:
        raise CheckpointError(
            f"{path} is a PyTorch pickle, and reading it needs PyTorch "
            f"(`pip install torch`). Or convert it to model.safetensors where "
            f"torch is installed: transformers' "
            f"`BertModel.from_pretrained(folder).save_pretrained(folder, "
            f"safe_serialization=True)`."
        ) from e
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as e:  # torch raises RuntimeError, EOFError, pickle errors.
        if "Weights only load failed" in str(e):
            # The pickle calls code or builds objects other than tensors.
            raise CheckpointError(
                f"{path} is not a plain tensor file: its pickle asks to run code or build "
                f"objects other than tensors, and was refused for safety (never loaded with "
                f"weights_only=False). Get model.safetensors for this model instead."
            ) from e
        raise CheckpointError(
            f"Cannot read {path}: {first_line(e)}. The file is truncated or corrupt; "
            f"download it again."
        ) from e
    if not isinstance(state, dict):
        raise CheckpointError(f"{path} holds a {type(state).__name__}, not a state dict.")
    return {
        name: value.detach().to(torch.float32).numpy()
        if value.is_floating_point()
        else value.numpy()
        for name, value in state.items()
    }


def _model_prefix(names):
    """The prefix before `embeddings.word_embeddings.weight` ("" or "bert.")."""
    for name in names:
        if name.endswith(_WORD_EMBEDDINGS):
            return name[: -len(_WORD_EMBEDDINGS)]
    return None


def read_huggingface_checkpoint(path):
    """Reads a Hugging Face BERT folder into a SourceCheckpoint.

    Args:
        path: the folder, or the weights file inside it.

    Returns:
        SourceCheckpoint in Google's names and layout; buffers and the tied MLM
        decoder weight in `ignored`, tensors BERT has no place for in `unused`.

    Raises:
        CheckpointError: a missing or unreadable file, a non-BERT config, or a
            tensor whose shape differs from what config.json implies.

    Example:
    >>> source = read_huggingface_checkpoint("all-MiniLM-L6-v2")
    >>> source.weights["bert/encoder/layer_0/attention/self/query/kernel"].shape
    (384, 384)
    """
    if os.path.isfile(path):
        folder, weights_file = os.path.dirname(os.path.abspath(path)), path
    elif os.path.isdir(path):
        folder, weights_file = path, None
    else:
        raise CheckpointError(f"Hugging Face checkpoint not found: {path}")
    config_file = os.path.join(folder, CONFIG_FILE)
    values, config = read_config_file(
        config_file, f"A Hugging Face model folder keeps {CONFIG_FILE} beside its weights.")
    weights_file = weights_file or find_weights_file(folder)
    tensors = load_tensors(weights_file)
    vocab_warnings = []
    kind = tokenizer_kind(folder)
    wordpiece = kind == "wordpiece"
    if wordpiece:
        vocab_file = read_vocabulary(folder, vocab_warnings)
        written = os.path.dirname(vocab_file) != folder  # tokenizer.json's, written out.
        num_tokens = count_vocab_lines(vocab_file) if written else None
        where = os.path.join(folder, TOKENIZER_FILE)
    else:
        vocab_file, num_tokens = read_tokenizer_files(folder)
        where = f"the {kind} tokenizer of {folder}"
    if num_tokens is not None and num_tokens != config.vocab_size:
        raise CheckpointError(
            f"Vocabulary size mismatch: {where} has {num_tokens} tokens, {config_file} says "
            f"vocab_size={config.vocab_size}. Use the tokenizer files that were released with "
            f"these weights.")

    source = SourceCheckpoint(format="huggingface", path=path, config=config,
                              vocab_file=vocab_file, warnings=vocab_warnings)
    if wordpiece:  # SentencePiece and BPE files say how they normalize text.
        source.lowercase, source.lowercase_from = read_lowercase(folder, values)
        source.tokenizer_options = read_tokenizer_options(folder)
    prefix = _model_prefix(tensors)
    model_type = bert_family.model_type_of(values)
    if prefix is None:
        raise CheckpointError(
            f"{weights_file}: no tensor named [{model_type}.]{_WORD_EMBEDDINGS}; this "
            f"is not a {model_type} checkpoint."
        )
    # DistilBERT's names are its own; ELECTRA's are BERT's and its projection.
    family = bert_family.rules(model_type)
    decoder_weight = bert_family.DECODER_WEIGHTS.get(model_type, _DECODER_WEIGHT)
    decoder_bias = bert_family.DECODER_BIASES.get(model_type, _DECODER_BIAS)
    # A RoBERTa sequence classifier's pooler is its classifier.dense; the encoder's own
    # pooler, which transformers < 3.1 saved with it (roberta-large-mnli), is not run.
    unused_pooler = (model_type in bert_family.ROBERTA_TYPES
                     and bert_family.is_sequence_classifier(values))
    transposed = set()
    for name in sorted(tensors):
        stripped = name[len(prefix):] if name.startswith(prefix) else None
        if unused_pooler and stripped in ("pooler.dense.weight", "pooler.dense.bias"):
            source.ignored[name] = ("not run by RobertaForSequenceClassification, whose "
                                    "pooler is classifier.dense")
            continue
        google, transpose = None, False
        if stripped is not None and model_type != "distilbert":
            google, transpose = bert_family.match(_RULES, stripped)
        if google is None and stripped is not None and family:
            google, transpose = bert_family.match(family[0], stripped)
        if google is None:
            google, transpose = (bert_family.match(family[1], name) if family
                                 else bert_family.match(_HEAD_RULES, name))
            if google in POOLER_WEIGHTS and not config.use_pooler:
                # A dense on [CLS] of a head other than the sequence classifier's
                # (multiple choice): left, and reported (`bert_family.left_heads`).
                google = None
        if google is None:
            stripped = name[len(prefix):] if name.startswith(prefix) else name
            if stripped in _BUFFERS:
                source.ignored[name] = _BUFFERS[stripped]
            elif name not in (decoder_weight, decoder_bias):
                source.unused.append(name)
            continue
        if google in source.weights:
            raise CheckpointError(
                f"{weights_file}: both {source.source_names[google]} and {name} "
                f"hold {google}; the checkpoint is ambiguous."
            )
        value = np.asarray(tensors[name], dtype=np.float32)
        if transpose:
            if value.ndim != 2:
                raise CheckpointError(
                    f"{name}: expected a 2-D Linear weight, found shape {value.shape}."
                )
            value = value.T
            transposed.add(google)
        source.weights[google] = np.ascontiguousarray(value)
        source.source_names[google] = name
    if model_type in bert_family.ROBERTA_TYPES:
        _drop_position_offset(source, values)
    _tied_decoder(source, tensors, prefix, decoder_weight, decoder_bias)
    source.head = _read_head(source, values, tensors, config_file, model_type)
    source.warnings += bert_family.left_heads(model_type, source.unused)

    check_against_config(
        source,
        describe=lambda g: source.source_names.get(g) or huggingface_name(g, prefix),
        transposed=transposed,
    )
    return source


def huggingface_name(google_name, prefix="bert."):
    """The transformers tensor name of a Google variable name (for messages).

    >>> huggingface_name("bert/encoder/layer_3/output/dense/kernel")
    'bert.encoder.layer.3.output.dense.weight'
    """
    special = {
        "cls/predictions/output_bias": "cls.predictions.bias",
        "cls/seq_relationship/output_weights": "cls.seq_relationship.weight",
        "cls/seq_relationship/output_bias": "cls.seq_relationship.bias",
    }
    if google_name in special:
        return special[google_name]
    name = re.sub(r"layer_(\d+)", r"layer.\1", google_name)
    name = re.sub(r"/(kernel|gamma)$", ".weight", name)
    name = re.sub(r"/beta$", ".bias", name)
    name = re.sub(r"_embeddings$", "_embeddings.weight", name)
    name = name.replace("/", ".")
    return prefix + name[len("bert."):] if name.startswith("bert.") else name


def _drop_position_offset(source, values):
    """Drops the rows of a RoBERTa position table before its first real position
    (`bert_family.position_offset`), so that row i is position i as in BERT."""
    key = "bert/embeddings/position_embeddings"
    if key in source.weights:
        offset = bert_family.position_offset(values)
        source.weights[key] = source.weights[key][offset:]
        source.source_names[key] = f"{source.source_names[key]}[{offset}:]"


def _tied_decoder(source, tensors, prefix, decoder_weight=_DECODER_WEIGHT,
                  decoder_bias=_DECODER_BIAS):
    """The MLM decoder: its weight is ignored when it equals the word embeddings
    (keras_bert ties them), else reported; its bias stands in for the head's
    bias when that one is absent."""
    if decoder_weight in tensors:
        decoder = np.asarray(tensors[decoder_weight], np.float32)
        words = source.weights.get("bert/embeddings/word_embeddings")
        if words is not None and decoder.shape == words.shape and np.array_equal(decoder, words):
            source.ignored[decoder_weight] = f"tied to {prefix}{_WORD_EMBEDDINGS}"
        else:
            source.unused.append(decoder_weight)
            source.warnings.append(
                f"{decoder_weight} differs from {prefix}{_WORD_EMBEDDINGS}; "
                f"keras_bert ties the MLM output projection to the token "
                f"embeddings, so the decoder weight is not used."
            )
    if decoder_bias in tensors:
        bias = np.asarray(tensors[decoder_bias], np.float32)
        key = "cls/predictions/output_bias"
        if key not in source.weights:
            source.weights[key] = bias
            source.source_names[key] = decoder_bias
        elif np.array_equal(source.weights[key], bias):
            source.ignored[decoder_bias] = f"same tensor as {source.source_names[key]}"
        else:
            source.unused.append(decoder_bias)
            source.warnings.append(
                f"{decoder_bias} differs from {source.source_names[key]}; the latter "
                f"is used, as transformers does."
            )


def _read_json(path):
    try:
        with open(path, encoding="utf-8") as f:
            value = json.load(f)
        return value if isinstance(value, dict) else {}
    except (OSError, ValueError):
        return {}


def tokenizer_json_vocabulary(path):
    """The tokens (list of str, index = id) of a tokenizer.json's WordPiece model,
    or None when it holds another model.

    Raises:
        CheckpointError: the file is not JSON, or its vocabulary's ids are not
            0..N-1 each once, its word prefix is not "##", or a token holds a
            line break.
    """
    try:
        with open(path, encoding="utf-8") as f:
            values = json.load(f)
    except (OSError, ValueError) as e:
        raise CheckpointError(
            f"Cannot read {path}: {first_line(e)}. Download the folder's tokenizer.json "
            f"again (or delete it to use the folder's vocab.txt).") from e
    model = values.get("model") if isinstance(values, dict) else None
    if not isinstance(model, dict) or model.get("type") != "WordPiece":
        return None
    vocab = model.get("vocab")
    prefix = model.get("continuing_subword_prefix", "##")
    if prefix != "##":
        raise CheckpointError(
            f"{path}: its WordPiece model continues words with {prefix!r}; BERT's "
            f"vocabularies (and keras_bert's tokenizer) use '##'.")
    ids = sorted(vocab.values()) if isinstance(vocab, dict) else None
    if not vocab or ids != list(range(len(vocab))):
        raise CheckpointError(
            f"{path}: model.vocab is not a map of tokens to the ids 0..N-1 each once "
            f"(found {type(vocab).__name__} of {len(vocab or ())} entries); the file is "
            f"damaged. Download it again, or delete it to use the folder's vocab.txt.")
    tokens = [None] * len(vocab)
    for token, index in vocab.items():
        tokens[index] = token
    broken = [t for t in tokens if "\n" in t or "\r" in t or t != t.strip()]
    if broken:
        raise CheckpointError(
            f"{path}: token(s) {broken[:3]} hold line breaks or surrounding spaces, which "
            f"a vocab.txt (one token a line) cannot keep.")
    return tokens


def tokenizer_kind(folder):
    """"wordpiece", "sentencepiece" (XLM-R's) or "byte_pair" (RoBERTa's): the tokenizer a
    Hugging Face folder's files are for (tokenizer.json's model first); "wordpiece"
    when nothing says."""
    model = _read_json(os.path.join(folder, TOKENIZER_FILE)).get("model")
    model_type = model.get("type") if isinstance(model, dict) else None
    if model_type == "WordPiece":
        return "wordpiece"

    def has(*names):
        return all(os.path.isfile(os.path.join(folder, name)) for name in names)

    if model_type is None and has(VOCAB_FILE):
        return "wordpiece"
    if model_type == "Unigram" or has("sentencepiece.bpe.model") or has("sentencepiece.model"):
        return "sentencepiece"
    if model_type == "BPE" or has("vocab.json", "merges.txt"):
        return "byte_pair"
    return "wordpiece"


def read_tokenizer_files(folder):
    """(vocabulary file, its number of ids) of a folder's SentencePiece or byte-level BPE
    tokenizer, written to a temporary folder in a model directory's layout.

    Raises:
        CheckpointError: the files are missing, damaged or not the layout the class reads.
    """
    from keras_bert.text import BytePairTokenizer, SentencePieceTokenizer
    from keras_bert.text.tokenizer_files import save_tokenizer_files

    cls = (SentencePieceTokenizer if tokenizer_kind(folder) == "sentencepiece"
           else BytePairTokenizer)
    try:
        tokenizer = cls.from_folder(folder)
    except (OSError, ValueError) as e:
        raise CheckpointError(f"{folder}: its {cls.__name__} cannot be read: {e}") from e
    return save_tokenizer_files(tokenizer, _temporary_dir()), tokenizer.vocab_size


def _temporary_dir():
    """A new folder deleted at exit."""
    staging = tempfile.mkdtemp(prefix="keras_bert-hf-vocab-")
    atexit.register(shutil.rmtree, staging, ignore_errors=True)
    return staging


def read_vocabulary(folder, warnings):
    """The vocab.txt path of a Hugging Face folder's vocabulary.

    tokenizer.json's WordPiece vocabulary when the folder has one (what
    transformers uses), written to a temporary vocab.txt; a vocab.txt that
    disagrees is not used, and a note is appended to `warnings`. Else the
    folder's vocab.txt.
    """
    vocab_file = os.path.join(folder, VOCAB_FILE)
    tokenizer_file = os.path.join(folder, TOKENIZER_FILE)
    if not os.path.isfile(tokenizer_file):
        return vocab_file
    tokens = tokenizer_json_vocabulary(tokenizer_file)
    if tokens is None:
        if not os.path.isfile(vocab_file):
            raise CheckpointError(
                f"{tokenizer_file} holds none of the tokenizer models keras_bert reads "
                f"(WordPiece, XLM-R's Unigram, RoBERTa's byte-level BPE) and the folder has no "
                f"{VOCAB_FILE}: add the tokenizer files released with these weights.")
        warnings.append(f"{tokenizer_file} holds no WordPiece model; the vocabulary is "
                        f"{vocab_file}.")
        return vocab_file
    if os.path.isfile(vocab_file):
        from keras_bert.text.vocab import load_vocabulary

        try:
            listed = load_vocabulary(vocab_file)[0]
        except ValueError:
            listed = None
        if listed == tokens:
            return vocab_file
        warnings.append(
            f"{vocab_file} differs from the WordPiece vocabulary of {tokenizer_file} "
            f"({len(listed) if listed is not None else 'unreadable'} vs {len(tokens)} tokens"
            + (f", first difference at id {_first_difference(listed, tokens)}"
               if listed is not None else "")
            + "); tokenizer.json is used, as transformers' tokenizer of this folder does. "
            "Delete one of them to silence this.")
    written = os.path.join(_temporary_dir(), VOCAB_FILE)
    with open(written, "w", encoding="utf-8") as f:
        f.write("\n".join(tokens) + "\n")
    return written


def _first_difference(a, b):
    return next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))


def read_lowercase(folder, config_values=None):
    """(lowercase, where it was read), or (None, None) when the folder doesn't say:
    tokenizer_config.json `do_lower_case`, tokenizer.json's BertNormalizer
    `lowercase`, then config.json `do_lower_case`."""
    value = _read_json(os.path.join(folder, "tokenizer_config.json")).get("do_lower_case")
    if isinstance(value, bool):
        return value, "tokenizer_config.json do_lower_case"
    normalizer = _read_json(os.path.join(folder, "tokenizer.json")).get("normalizer")
    value = normalizer.get("lowercase") if isinstance(normalizer, dict) else None
    if isinstance(value, bool):
        return value, "tokenizer.json normalizer lowercase"
    value = (config_values or {}).get("do_lower_case")
    if isinstance(value, bool):
        return value, "config.json do_lower_case"
    return None, None


def read_tokenizer_options(folder):
    """The folder's tokenizer settings besides casing that differ from BERT's defaults,
    as `BertTokenizer` arguments, from tokenizer_config.json, else tokenizer.json."""
    config = _read_json(os.path.join(folder, "tokenizer_config.json"))
    fast = _read_json(os.path.join(folder, TOKENIZER_FILE))
    normalizer = fast.get("normalizer")
    normalizer = normalizer if isinstance(normalizer, dict) else {}
    model = fast.get("model") if isinstance(fast.get("model"), dict) else {}
    options = {}
    longest = model.get("max_input_chars_per_word") if model.get("type") == "WordPiece" else None
    if isinstance(longest, int) and longest > 0 and longest != 100:
        options["max_chars_per_word"] = longest
    strip = config.get("strip_accents", normalizer.get("strip_accents"))
    if isinstance(strip, bool):
        options["strip_accents"] = strip
    chinese = config.get("tokenize_chinese_chars", normalizer.get("handle_chinese_chars"))
    if chinese is False:
        options["tokenize_chinese_chars"] = False
    # BertNormalizer's clean_text=False keeps control characters (and whitespace
    # as written, which splits words all the same).
    controls = config.get("remove_control_chars", normalizer.get("clean_text"))
    if controls is False:
        options["remove_control_chars"] = False
    never = config.get("never_split")
    if isinstance(never, list) and never and all(isinstance(t, str) for t in never):
        options["never_split"] = never
    return options


def head_task(values):
    """(task, head layer name) of a config.json's fine-tuned architecture, else
    (None, None)."""
    for architecture in values.get("architectures") or []:
        for suffix, found in HEAD_TASKS.items():
            if str(architecture).endswith(suffix):
                return found
    return None, None


def make_head(source, values, task, kernel, bias, names, config_file):
    """The `SourceCheckpoint.head` dict of a fine-tuned head of `task`, shapes checked
    (kernel [hidden, num_labels], bias [num_labels]), label names from config.json's
    id2label; `names` and `config_file` are for messages."""
    hidden = source.config.hidden_size
    architecture = (values.get("architectures") or [task])[0]
    if kernel.ndim != 2 or kernel.shape[0] != hidden or bias.shape != (kernel.shape[1],) or (
            task == "span_qa" and kernel.shape[1] != 2):
        units = "2" if task == "span_qa" else "num_labels"
        raise CheckpointError(
            f"{names}: found shapes {kernel.shape} and {bias.shape} (as [hidden, units]); a "
            f"{architecture} head of hidden_size={hidden} needs [{hidden}, {units}] and "
            f"[{units}]. The weights do not belong to this config.json.")
    num_labels = kernel.shape[1]
    label_names = None
    id2label = values.get("id2label")
    if task != "span_qa" and isinstance(id2label, dict):
        try:
            found = {int(k): str(v) for k, v in id2label.items()}
        except ValueError:
            found = {}
        if sorted(found) == list(range(num_labels)) and len(set(found.values())) == num_labels:
            label_names = [found[i] for i in range(num_labels)]
        else:
            source.warnings.append(
                f"{config_file}: id2label {id2label} does not name the {num_labels} labels of "
                f"{names}; labels are unnamed.")
    return {"task": task, "kernel": np.ascontiguousarray(kernel, np.float32),
            "bias": np.asarray(bias, np.float32), "label_names": label_names,
            "source_names": names}


def _read_head(source, values, tensors, config_file, model_type="bert"):
    """The `SourceCheckpoint.head` dict of a fine-tuned Linear head (`HEAD_TASKS`,
    `bert_family.head_layer`), or None (its tensors stay in `unused`)."""
    task, layer = head_task(values)
    layer = bert_family.head_layer(model_type, task, layer)
    weight_name, bias_name = f"{layer}.weight", f"{layer}.bias"
    if task is None or weight_name not in tensors or bias_name not in tensors:
        return None
    weight = np.asarray(tensors[weight_name], np.float32)  # [num_labels, hidden]
    head = make_head(source, values, task, weight.T, np.asarray(tensors[bias_name], np.float32),
                     f"{weight_name}, {bias_name}", config_file)
    for name in (weight_name, bias_name):
        source.unused.remove(name)
    if task == "classification":
        head["options"] = bert_family.head_options(model_type, values)
    return head
