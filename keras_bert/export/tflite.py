"""LiteRT (TFLite) export: raw strings in, labels or embeddings out, the tokenizer inside.

exports/NAME/VERSION/ model.tflite, keras_bert_export.json (format "tflite",
the signatures, and the model's ops: builtin, custom, Flex).

`BertTokenizer`'s string ops would need LiteRT's Flex delegate, so the export
tokenizes with tensorflow-text ops that have TFLite kernels (`tflite_text`) and
packs with builtin ops; the ids equal `BertTokenizer`'s on every code point.

Example:
>>> export_tflite("models/sentiment", "exports/sentiment-lite")
'.../exports/sentiment-lite/1'
>>> interpreter = litert_interpreter("exports/sentiment-lite/1")
>>> run_tflite(interpreter, ["great movie"])["label"]
array([b'positive'], dtype=object)

Running it: `keras_bert.export.tflite_runtime`, tools/predict.py, docs/litert.md.
"""

import json
import os

import tensorflow as tf
import tensorflow_text as tf_text

from keras_bert import storage
from keras_bert.export.layout import check_export_dir
from keras_bert.export.predict import INFO_FILE
from keras_bert.export.serving_module import overrides_call
from keras_bert.export.tflite_runtime import (  # noqa: F401  (run_tflite: here too)
    TFLITE_FILE, litert_interpreter, run_tflite)
from keras_bert.export.tflite_text import (
    UNKNOWN_CHAR, byte_detokenizer, kernel_word_breaks, lite_text_tables,
    normalize_for_wordpiece)
from keras_bert.files import Kind, staged_dir
from keras_bert.text.tokenizer import BertTokenizer

#: What `export_tflite` replaces (with overwrite): its own version folders.
TFLITE_VERSION_KIND = Kind("LiteRT export folder", required=(TFLITE_FILE,),
                           allowed=(TFLITE_FILE, INFO_FILE))

#: The export kinds a LiteRT export takes: their module class name -> the
#: signatures it converts ({LiteRT signature key: module method}).
TFLITE_SIGNATURES = {
    "ClassifierServingModule": {"serving_default": "_classify_texts", "embed": "_embed"},
    "BertServingModule": {"serving_default": "_embed"},
    "TextEmbedderServingModule": {"serving_default": "_embedding", "embed": "_embed"},
}


def _check_lite_options(tokenizer):
    """A clear error for each tokenizer option the LiteRT tokenizer can't follow."""
    refused = []
    if not getattr(tokenizer, "tokenize_chinese_chars", True):
        refused.append(("tokenize_chinese_chars=False", "its WordPiece kernel makes each "
                        "CJK ideograph a word of its own"))
    if getattr(tokenizer, "never_split", None):
        refused.append((f"never_split={tokenizer.never_split!r}", "its WordPiece kernel "
                        "splits every word at punctuation"))
    if getattr(tokenizer, "special_tokens_in_strings", False):
        refused.append(("special_tokens_in_strings=True", "its kernels read \"[MASK]\" "
                        "in the text as punctuation and a word"))
    if not getattr(tokenizer, "remove_control_chars", True):
        refused.append(("remove_control_chars=False", "its normalization deletes control "
                        "and format characters, and its WordPiece kernel splits words at them"))
    if refused:
        option, why = refused[0]
        raise ValueError(
            f"--format tflite can't tokenize with the tokenizer option {option}: {why}. "
            "Export a SavedModel (--format saved_model), whose graph follows every "
            "option, or build the preprocessor's BertTokenizer without it.")


class LiteTokenizer:
    """The LiteRT tokenizer of a `BertTokenizer` (whose options LiteRT's kernels
    can't follow are refused, by name): `tflite_text.normalize_for_wordpiece`,
    then `FastWordpieceTokenizeWithOffsets`."""

    def __init__(self, tokenizer):
        from keras_bert.text.tokenizer import _wordpiece_vocab

        _check_lite_options(tokenizer)
        vocabulary = tokenizer.vocabulary
        token_to_id = {token: index for index, token in enumerate(vocabulary)}
        self.tables = {name: tf.constant(array)
                       for name, array in lite_text_tables(tokenizer.normalization).items()}
        self.detokenizer = byte_detokenizer()
        self.max_chars_per_word = tokenizer.max_chars_per_word
        unreachable = {UNKNOWN_CHAR, *map(chr, kernel_word_breaks())}
        for token in vocabulary:
            held = unreachable.intersection(token)
            if held:
                raise ValueError(
                    f"The vocabulary token {token!r} holds U+{ord(min(held)):04X}, which the "
                    "LiteRT tokenizer turns into [UNK] (BERT deletes it, or tensorflow-text's "
                    "kernel splits words at it): export a SavedModel (--format saved_model), "
                    "or remove the token from vocab.txt.")
        self.wordpiece = tf_text.FastWordpieceTokenizer(
            vocab=_wordpiece_vocab(vocabulary, token_to_id),
            suffix_indicator="##",
            max_bytes_per_word=4 * tokenizer.max_chars_per_word,
            token_out_type=tf.int32,
            unknown_token="[UNK]",
            no_pretokenization=False,  # The kernel splits words itself.
        )

    def __call__(self, text):
        """int32 RaggedTensor [B, (tokens)] of WordPiece ids of a string batch [B]."""
        return self.wordpiece.tokenize(
            normalize_for_wordpiece(text, self.tables, self.detokenizer,
                                    self.max_chars_per_word))


def pack_single(ids, max_seq_length, cls_token_id, sep_token_id, pad_token_id,
                sequence_length=None, pad_to_multiple_of=1):
    """[CLS] ids [SEP] of int32 RaggedTensor `ids` [B, (tokens)], truncated and padded
    as `BertPacker` packs one segment, with gathers and selects (LiteRT lacks
    RaggedRange and RaggedTensorToTensor).

    Returns:
        dict of int32 Tensors [B, S] (token_ids, segment_ids, padding_mask),
        S = `sequence_length`, else the longest packed row (at least 2) rounded up
        to `pad_to_multiple_of` (at most max_seq_length).
    """
    values = tf.concat([tf.cast(ids.values, tf.int32), [pad_token_id]], 0)  # Never empty.
    splits = tf.cast(ids.row_splits, tf.int32)
    kept = tf.minimum(splits[1:] - splits[:-1], (sequence_length or max_seq_length) - 2)  # (B,)
    if sequence_length:
        width = tf.constant(sequence_length, tf.int32)
    else:
        width = tf.reduce_max(tf.concat([kept, [0]], 0)) + 2
        if pad_to_multiple_of > 1:
            width = tf.minimum((width + pad_to_multiple_of - 1) // pad_to_multiple_of
                               * pad_to_multiple_of, max_seq_length)
    # expand_dims, not [:, tf.newaxis]: LiteRT has no strided slice with new axes.
    position = tf.expand_dims(tf.range(width), 0)  # (1, S)
    kept = tf.expand_dims(kept, 1)  # (B, 1)
    index = tf.clip_by_value(tf.expand_dims(splits[:-1], 1) + position - 1, 0,
                             tf.shape(values)[0] - 1)
    token = tf.gather(values, index)  # (B, S)
    token = tf.where(position == 0, cls_token_id, token)
    token = tf.where(position == kept + 1, sep_token_id, token)
    real = position <= kept + 1
    return {
        "token_ids": tf.where(real, token, pad_token_id),
        "segment_ids": tf.zeros_like(token),
        "padding_mask": tf.cast(real, tf.int32),
    }


def _lite_functions(module):
    """{signature key: concrete function} of `module` with the LiteRT tokenizer and packer."""
    kind = type(module).__name__
    if kind not in TFLITE_SIGNATURES:
        raise ValueError(
            f"--format tflite exports classifiers and encoders (embeddings); this model's "
            f"serving module is {kind}. Export it as a SavedModel (--format saved_model).")
    if getattr(module, "pairs", False) or getattr(module, "sub_batches", 1) != 1:
        raise ValueError(
            "--format tflite exports single-text classifiers without sub-batches; drop "
            "--pairs / --sub-batches (or export a SavedModel).")
    if module.jit_compile:
        raise ValueError("--format tflite runs without XLA; drop --jit-compile.")
    if overrides_call(module._keras.preprocessor):
        raise ValueError(
            f"--format tflite tokenizes with LiteRT's own kernels, and this model's "
            f"preprocessor ({type(module._keras.preprocessor).__name__}) has its own call, "
            f"which has none: export a SavedModel (--format saved_model).")
    tokenizer = module._keras.tokenizer
    if not isinstance(tokenizer, BertTokenizer):
        raise ValueError(
            f"--format tflite tokenizes with LiteRT's WordPiece kernels; this model's "
            f"{type(tokenizer).__name__} runs tensorflow-text ops that have no LiteRT kernel "
            f"(SentencePiece's op, BPE's regex split and lookups). Export a SavedModel "
            f"(--format saved_model), which TF Serving serves with raw strings.")
    lite_tokenizer = LiteTokenizer(tokenizer)
    # One attention kernel set, no tf.cond: the LiteRT converter picks its own.
    module.serving_kernels = False

    # The module's own signature code, the LiteRT tokenizer and packer shadowing
    # its methods (the module is built for the conversion alone).
    module.tokenize = lambda text: lite_tokenizer(text)
    module.pack = lambda segments: pack_single(
        segments[0], module.max_seq_length, tokenizer.cls_token_id, tokenizer.sep_token_id,
        tokenizer.pad_token_id, module.sequence_length, module.pad_to_multiple_of)
    module._classify_texts = lambda text: module._classify((text,))
    strings = tf.TensorSpec([None], tf.string, name="text")
    return {key: tf.function(lambda text, m=getattr(module, method): m(text),
                             input_signature=[strings], autograph=False).get_concrete_function()
            for key, method in TFLITE_SIGNATURES[kind].items()}


def convert_module(module, quantize=None):
    """The LiteRT flatbuffer (bytes) of a classifier or encoder serving module.

    Without SELECT_TF_OPS, an op lacking a LiteRT kernel fails here rather than
    in the app. quantize="int8": the converter's dynamic-range quantization.
    """
    import tempfile

    functions = _lite_functions(module)
    # Through a SavedModel: the converter keeps the signature keys from there.
    with tempfile.TemporaryDirectory(prefix="keras_bert-tflite-") as saved:
        tf.saved_model.save(module, saved, signatures=functions)
        converter = tf.lite.TFLiteConverter.from_saved_model(
            saved, signature_keys=list(functions))
        converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS]
        converter.allow_custom_ops = True  # The two tensorflow-text ops.
        if quantize:
            converter.optimizations = [tf.lite.Optimize.DEFAULT]
        return converter.convert()


def tflite_ops(flatbuffer):
    """{"builtin": [...], "custom": [...], "flex": [...]}: the op names a LiteRT model
    uses (Flex ops: the custom ops named "Flex...", run by the Flex delegate)."""
    from tensorflow.lite.python import schema_py_generated as schema
    from tensorflow.lite.python import schema_util

    names = {v: k for k, v in vars(schema.BuiltinOperator).items() if not k.startswith("_")}
    model = schema.Model.GetRootAsModel(flatbuffer, 0)
    result = {"builtin": set(), "custom": set(), "flex": set()}
    for i in range(model.OperatorCodesLength()):
        code = model.OperatorCodes(i)
        builtin = schema_util.get_builtin_code_from_operator_code(code)
        if builtin == schema.BuiltinOperator.CUSTOM:
            name = code.CustomCode().decode()
            result["flex" if name.startswith("Flex") else "custom"].add(name)
        else:
            result["builtin"].add(names[builtin])
    return {k: sorted(v) for k, v in result.items()}


def tflite_signatures(flatbuffer):
    """{signature key: {"inputs": [...], "outputs": [...]}} of a LiteRT model."""
    return {k: {"inputs": sorted(v["inputs"]), "outputs": sorted(v["outputs"])}
            for k, v in litert_interpreter(flatbuffer).get_signature_list().items()}


def tflite_info(module, flatbuffer, quantize=None):
    """What keras_bert_export.json records for a LiteRT export."""
    return {
        "quantize": quantize,
        "format": "tflite",
        "module": type(module).__name__,
        "max_seq_length": module.max_seq_length,
        "sequence_length": module.sequence_length,
        "dtype": module.dtype_policy,
        "tokenizer": "ByteSplitWithOffsets + builtin ops + FastWordpieceDetokenize (BERT's "
                     "normalization) + FastWordpieceTokenizeWithOffsets (tensorflow-text TFLite "
                     "kernels: register tensorflow_text.tflite_registrar.SELECT_TFTEXT_OPS, as "
                     "keras_bert.export.litert_interpreter does)",
        "ops": tflite_ops(flatbuffer),
        "signatures": tflite_signatures(flatbuffer),
        "size_bytes": len(flatbuffer),
    }


def save_tflite(module, export_dir, overwrite=False, quantize=None):
    """Converts `module` and writes model.tflite + keras_bert_export.json atomically;
    returns the version directory written."""
    real = check_export_dir(export_dir, overwrite, kind=TFLITE_VERSION_KIND)
    flatbuffer = convert_module(module, quantize)
    with staged_dir(real, prefix=".tmp-export-", replace=overwrite) as staged:
        with open(os.path.join(staged, TFLITE_FILE), "wb") as f:
            f.write(flatbuffer)
        with open(os.path.join(staged, INFO_FILE), "w", encoding="utf-8") as f:
            json.dump(tflite_info(module, flatbuffer, quantize), f, indent=2, sort_keys=True)
            f.write("\n")
    return storage.abspath(export_dir)
