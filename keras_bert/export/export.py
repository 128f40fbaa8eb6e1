"""export_model: a model directory (or a Keras model) -> a TF Serving SavedModel.

exports/NAME/VERSION/ saved_model.pb, variables/, assets/vocab.txt,
keras_bert_export.json (what was exported: task, signatures, lengths).
"""

import json
import os
import shutil
import tempfile

import tensorflow as tf
from tensorflow.core.protobuf import saved_model_pb2

from keras_bert.export.classifier import ClassifierServingModule
from keras_bert.export.serving_module import BertServingModule
from keras_bert.export.span_qa import SpanQAServingModule
from keras_bert.export.token_classifier import TokenClassifierServingModule
from keras_bert.models import BertEncoder, load_model_dir
from keras_bert.text import BertTokenizer, infer_lowercase

# task.json "task" -> serving module; "pretraining" and bare encoders get embed.
SERVING_MODULES = {
    "classification": ClassifierServingModule,
    "token_classification": TokenClassifierServingModule,
    "span_qa": SpanQAServingModule,
}
INFO_FILE = "keras_bert_export.json"
# task.json keys that become SpanQAServingModule arguments.
_QA_KEYS = ("max_query_length", "doc_stride", "max_answer_length", "null_score_diff_threshold")


def next_version(export_base):
    """1 + the largest integer directory name under `export_base` (1 if none)."""
    versions = [
        int(name)
        for name in (os.listdir(export_base) if os.path.isdir(export_base) else [])
        if name.isdigit() and os.path.isdir(os.path.join(export_base, name))
    ]
    return max(versions, default=0) + 1


def resolve_export_dir(output, version=None):
    """exports/NAME -> exports/NAME/<next version>; exports/NAME/7 stays as it is."""
    output = os.path.normpath(output)
    if os.path.basename(output).isdigit():
        if version is not None and int(os.path.basename(output)) != int(version):
            raise ValueError(
                f"output={output!r} already ends in a version; it differs from "
                f"version={version!r}. Pass exports/NAME with version, or exports/NAME/VERSION."
            )
        return output
    if version is None:
        version = next_version(output)
    if not isinstance(version, int) or version < 0:
        raise ValueError(
            f"Expected version to be an int >= 0 (TF Serving serves integer "
            f"directories). Received: version={version!r}"
        )
    return os.path.join(output, str(version))


def _task_config(model, task_info):
    """The dict that task.json would have, from the model or `task_info`."""
    info = dict(getattr(model, "task_info", None) or {})
    info.update(task_info or {})
    if hasattr(model, "task_config") and "task_config" not in info:
        info["task_config"] = model.task_config()
    if getattr(model, "task_name", None):
        info.setdefault("task", model.task_name)
    return info


def build_serving_module(model, vocab_file=None, task_info=None, lowercase=None,
                         max_length=None, pairs=None, sequence_length=None,
                         pad_to_multiple_of=1, jit_compile=False, **task_options):
    """The `BertServingModule` (or task subclass) for a Keras model.

    Args:
        model: a `BertEncoder` or a task model (BertClassifier,
            BertTokenClassifier, BertSpanLabeler, BertPretrainer).
        vocab_file: vocab.txt path; default `model.vocab_file` (set by
            from_pretrained).
        task_info: dict overriding task.json facts (label names via
            task_config, max_seq_length, lowercase, pairs, doc_stride, ...).
        lowercase: bool; default task.json "lowercase" (tools/finetune.py
            writes it), else guessed with `keras_bert.text.infer_lowercase`.
        max_length: int; default task.json max_seq_length, else the model's
            max_position_embeddings.
        pairs: bool, classifier takes (text, text_b); default task.json
            "pairs" (tools/finetune.py writes it), else False.
        sequence_length, pad_to_multiple_of, jit_compile: see
            `BertServingModule`.
        **task_options: span QA only: SpanQAServingModule options
            (doc_stride, max_query_length, max_answer_length, max_windows,
            allow_no_answer, null_score_diff_threshold), overriding task.json.

    Returns:
        A `BertServingModule`.
    """
    vocab_file = vocab_file or getattr(model, "vocab_file", None)
    if vocab_file is None:
        raise ValueError(
            "No vocabulary: pass vocab_file='.../vocab.txt', or export a model "
            "directory that has one (save_pretrained(dir, vocab_file=...))."
        )
    info = _task_config(model, task_info)
    if lowercase is None:
        lowercase = info.get("lowercase", info.get("do_lower_case"))
    if lowercase is None:
        lowercase = infer_lowercase(vocab_file)
    encoder = getattr(model, "encoder", model)
    max_length = max_length or info.get("max_seq_length") or encoder.max_position_embeddings
    common = dict(
        model=model,
        tokenizer=BertTokenizer(vocab_file, lowercase=bool(lowercase)),
        vocab_file=vocab_file,
        max_length=int(max_length),
        sequence_length=sequence_length,
        pad_to_multiple_of=pad_to_multiple_of,
        jit_compile=jit_compile,
    )
    task = info.get("task")
    module_cls = SERVING_MODULES.get(task, BertServingModule)
    if task_options and module_cls is not SpanQAServingModule:
        raise ValueError(
            f"{sorted(task_options)} apply to span QA exports only; this model's task "
            f"is {task!r}."
        )
    if module_cls is BertServingModule:
        # Encoders and pretrainers export embed/encode: the heads are not needed.
        return BertServingModule(**dict(common, model=encoder))
    if module_cls is SpanQAServingModule:
        options = {k: info[k] for k in _QA_KEYS if k in info}
        if "version_2_with_negative" in info:
            options["allow_no_answer"] = bool(info["version_2_with_negative"])
        options.update(task_options)
        return SpanQAServingModule(**common, **options)
    label_names = info.get("task_config", {}).get("label_names")
    if module_cls is ClassifierServingModule:
        pairs = bool(info.get("pairs")) if pairs is None else pairs
        return ClassifierServingModule(**common, label_names=label_names, pairs=pairs)
    return module_cls(**common, label_names=label_names)


def export_model(model_or_dir, output, version=None, overwrite=False, **options):
    """Exports a model for TF Serving: raw-string signatures, vocab as an asset.

    Args:
        model_or_dir: a model directory (str; loaded with its task.json) or
            a Keras model (`BertEncoder` or task model).
        output: exports/NAME (a new version directory is made inside:
            1 + the largest existing one) or exports/NAME/VERSION.
        version: int, the version under exports/NAME (default: next).
        overwrite: bool, replace an existing version directory. TF Serving
            does not reload a version it already serves; export a new one.
        **options: `build_serving_module` arguments (vocab_file, lowercase,
            max_length, pairs, sequence_length, pad_to_multiple_of,
            jit_compile, doc_stride, ...).

    Returns:
        str, the version directory written.

    Example:
    >>> export_model("models/sentiment", "exports/sentiment")
    'exports/sentiment/1'
    """
    if isinstance(model_or_dir, (str, os.PathLike)):
        model = load_model_dir(os.fspath(model_or_dir), BertEncoder)
    else:
        model = model_or_dir
    module = build_serving_module(model, **options)
    return save_serving_module(module, resolve_export_dir(output, version), overwrite)


def save_serving_module(module, export_dir, overwrite=False):
    """Writes `module` to `export_dir` atomically (TF Serving never sees half a version)."""
    export_dir = os.path.abspath(export_dir)
    if os.path.exists(export_dir) and not overwrite:
        raise FileExistsError(
            f"{export_dir} exists. Export to a new version (leave the version "
            f"out to get the next one), or pass overwrite=True (--overwrite)."
        )
    parent = os.path.dirname(export_dir)
    os.makedirs(parent, exist_ok=True)
    # Not an integer name: TF Serving ignores it while it is being written.
    tmp = tempfile.mkdtemp(prefix=".tmp-export-", dir=parent)
    try:
        saved = os.path.join(tmp, "saved_model")
        tf.saved_model.save(module, saved, signatures=module.signatures())
        with open(os.path.join(saved, INFO_FILE), "w", encoding="utf-8") as f:
            json.dump(export_info(module, saved), f, indent=2, sort_keys=True)
            f.write("\n")
        if os.path.exists(export_dir):
            shutil.rmtree(export_dir)
        os.rename(saved, export_dir)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return export_dir


def export_info(module, saved_model_dir):
    """What keras_bert_export.json records: settings, and the signatures as
    TF Serving reads them from saved_model.pb (input/output keys, dtypes, shapes)."""
    proto = saved_model_pb2.SavedModel()
    with open(os.path.join(saved_model_dir, "saved_model.pb"), "rb") as f:
        proto.ParseFromString(f.read())

    def describe(tensors):
        return {
            name: {
                "dtype": tf.dtypes.as_dtype(info.dtype).name,
                "shape": [None if d.size < 0 else d.size for d in info.tensor_shape.dim],
            }
            for name, info in sorted(tensors.items())
        }

    signature_defs = proto.meta_graphs[0].signature_def
    return {
        "module": type(module).__name__,
        "max_length": module.max_length,
        "sequence_length": module.sequence_length,
        "pad_to_multiple_of": module.pad_to_multiple_of,
        "jit_compile": module.jit_compile,
        "signatures": {
            name: {"inputs": describe(sig.inputs), "outputs": describe(sig.outputs)}
            for name, sig in sorted(signature_defs.items())
            if not name.startswith("__")  # __saved_model_init_op
        },
    }
