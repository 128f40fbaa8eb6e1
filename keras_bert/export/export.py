"""export_model: a model directory (or a Keras model) -> a TF Serving SavedModel.

exports/NAME/VERSION/ saved_model.pb, variables/, assets/vocab.txt,
keras_bert_export.json (what was exported: task, signatures, lengths),
assets.extra/tf_serving_warmup_requests (TF Serving's warmup, tf_serving.py).
"""

import inspect
import json
import os
import tempfile

import numpy as np
import tensorflow as tf
from tensorflow.core.protobuf import saved_model_pb2

from keras_bert.export.predict import is_version, run_function
from keras_bert.export.serving_module import BertServingModule
from keras_bert.export.tf_serving import write_warmup_requests
from keras_bert.files import Kind, OutputError, check_not_input, prepare_output_dir, staged_dir
from keras_bert.models import BertEncoder, load_model_dir
from keras_bert.text import BertTokenizer, infer_lowercase, save_vocabulary

INFO_FILE = "keras_bert_export.json"


def next_version(export_base):
    """1 + the largest integer directory name under `export_base` (1 if none)."""
    versions = [
        int(name)
        for name in (os.listdir(export_base) if os.path.isdir(export_base) else [])
        if is_version(name) and os.path.isdir(os.path.join(export_base, name))
    ]
    return max(versions, default=0) + 1


def resolve_export_dir(output, version=None):
    """exports/NAME -> exports/NAME/<next version>; exports/NAME/7 stays as it is."""
    output = os.path.normpath(output)
    if is_version(os.path.basename(output)):
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
                         max_seq_length=None, sequence_length=None, pad_to_multiple_of=1,
                         jit_compile=False, pad_to_max_seq_length=False,
                         serving_module_class=None, **task_options):
    """The `BertServingModule` (or the task's subclass) for a Keras model.

    A task model with a preprocessor (`from_pretrained` attaches one) is
    exported with that preprocessor's tokenizer and max_seq_length, so the
    export answers as the model's own `predict` on strings does.

    Args:
        model: a `BertEncoder` or a task model (BertClassifier,
            BertTokenClassifier, BertSpanLabeler, BertPretrainer).
        vocab_file: vocab.txt path; default `model.vocab_file` (set by
            from_pretrained), else the preprocessor's vocabulary.
        task_info: dict overriding task.json facts (label names via
            task_config, max_seq_length, lowercase, pairs, doc_stride, ...).
        lowercase: bool; default the preprocessor's, else task.json
            "lowercase", else guessed with `keras_bert.text.infer_lowercase`.
        max_seq_length: int; default the preprocessor's, else task.json
            max_seq_length, else the model's max_position_embeddings.
        sequence_length, pad_to_multiple_of, jit_compile: see
            `BertServingModule`.
        pad_to_max_seq_length: bool, pad every batch to exactly the
            (resolved) max_seq_length: `sequence_length=max_seq_length`
            (tools/export.py --pad-to-max-seq-length).
        serving_module_class: the `BertServingModule` subclass to build;
            default the model's `serving_module_class` (its task folder's
            serving module), else `BertServingModule` (encoders, pretrainers).
        **task_options: the task's serving options (its module's
            `TASK_OPTIONS`: `pairs`, `sub_batches` for classifiers; doc_stride,
            max_query_length, max_answer_length, max_windows,
            version_2_with_negative, null_score_diff_threshold for span QA),
            overriding task.json.

    Returns:
        A `BertServingModule`.
    """
    info = _task_config(model, task_info)
    encoder = getattr(model, "encoder", model)
    preprocessor = getattr(model, "preprocessor", None)
    tokenizer = preprocessor.tokenizer if preprocessor is not None else None
    vocab_file = vocab_file or getattr(model, "vocab_file", None) or (
        tokenizer.vocabulary_file if tokenizer is not None else None)
    if vocab_file is None and tokenizer is not None:
        # A model from a .keras file holds its vocabulary in memory (from its assets).
        vocab_file = os.path.join(tempfile.mkdtemp(prefix="keras_bert-vocab-"), "vocab.txt")
        save_vocabulary(tokenizer.vocabulary, vocab_file)
    if vocab_file is None:
        raise ValueError(
            "No vocabulary: pass vocab_file='.../vocab.txt' (tools/export.py --vocab-file), "
            "or export a model directory that has one (save_pretrained(dir, vocab_file=...))."
        )
    if lowercase is None and tokenizer is not None:
        lowercase = tokenizer.lowercase
    if lowercase is None:
        lowercase = info.get("lowercase")
    if lowercase is None:
        lowercase = infer_lowercase(vocab_file)
    if tokenizer is None or tokenizer.lowercase != lowercase:
        tokenizer = BertTokenizer(vocab_file, lowercase=lowercase)
    if max_seq_length is None and preprocessor is not None:
        max_seq_length = preprocessor.max_seq_length
    if max_seq_length is None:
        max_seq_length = info.get("max_seq_length")
    if max_seq_length is None:
        max_seq_length = encoder.max_position_embeddings
    if pad_to_max_seq_length:
        if sequence_length not in (None, max_seq_length):
            raise ValueError(
                f"pad_to_max_seq_length pads to max_seq_length ({max_seq_length}); drop "
                f"sequence_length={sequence_length!r}."
            )
        sequence_length = max_seq_length
    task = info.get("task")
    # The task model's own class names its module (no registry: a model's
    # `predict` never loops back through the task registry).
    module_cls = serving_module_class or getattr(model, "serving_module_class", None) or (
        BertServingModule)
    unknown = sorted(set(task_options) - set(module_cls.TASK_OPTIONS))
    if unknown:
        raise ValueError(
            f"{unknown} are not serving options of task {task!r}; it takes "
            f"{sorted(module_cls.TASK_OPTIONS) or 'none'}."
        )
    options = module_cls.options_from_task_info(info)
    options.update(task_options)
    return module_cls(
        model=model if module_cls is not BertServingModule else encoder,
        tokenizer=tokenizer,
        vocab_file=vocab_file,
        max_seq_length=max_seq_length,
        sequence_length=sequence_length,
        pad_to_multiple_of=pad_to_multiple_of,
        jit_compile=jit_compile,
        **options,
    )


def export_model(model_or_dir, output, version=None, overwrite=False, warmup=True,
                 dtype=None, **options):
    """Exports a model for TF Serving: raw-string signatures, vocab as an asset.

    Args:
        model_or_dir: a model directory (str; loaded with its task.json) or
            a Keras model (`BertEncoder` or task model).
        output: exports/NAME (a new version directory is made inside:
            1 + the largest existing one) or exports/NAME/VERSION.
        version: int, the version under exports/NAME (default: next).
        overwrite: bool, replace an existing version directory. TF Serving
            does not reload a version it already serves; export a new one.
        warmup: bool, write TF Serving's warmup requests
            (assets.extra/tf_serving_warmup_requests; see `tf_serving.py`).
        dtype: None, "float32" or "mixed_bfloat16": the Keras dtype policy
            the model directory is loaded with. "mixed_bfloat16" multiplies in
            bfloat16 (float32 variables and outputs); it pays on CPUs with
            AMX or AVX512-BF16 at large batches (BENCHMARKS.md). A Keras
            model is exported with its own policy.
        **options: `build_serving_module` arguments (vocab_file, lowercase,
            max_seq_length, pairs, sequence_length, pad_to_multiple_of,
            jit_compile, doc_stride, ...).

    Returns:
        str, the version directory written.

    Example:
    >>> export_model("models/sentiment", "exports/sentiment")
    'exports/sentiment/1'
    """
    if dtype not in (None, "float32", "mixed_bfloat16"):
        raise ValueError(f"Expected dtype None, 'float32' or 'mixed_bfloat16'. "
                         f"Received: dtype={dtype!r}")
    export_dir = resolve_export_dir(output, version)
    # Before any long work: a refused output fails at once.
    inputs = [model_or_dir] if isinstance(model_or_dir, (str, os.PathLike)) else []
    check_export_dir(export_dir, overwrite, inputs=inputs)
    if isinstance(model_or_dir, (str, os.PathLike)):
        encoder_kwargs = {} if dtype in (None, "float32") else {"dtype": dtype}
        model = load_model_dir(os.fspath(model_or_dir), BertEncoder, **encoder_kwargs)
    else:
        model = model_or_dir
        policy = getattr(model, "encoder", model).pooler.dtype_policy.name
        if dtype is not None and policy != dtype:
            raise ValueError(
                f"export_model(dtype={dtype!r}) re-loads a model directory, but a Keras model "
                f"with dtype policy {policy!r} was given. Pass its model "
                f"directory, or build the model with dtype={dtype!r}.")
    module = build_serving_module(model, **options)
    return save_serving_module(module, export_dir, overwrite, warmup)


#: What `save_serving_module` replaces (with overwrite): a version folder
#: holding saved_model.pb and nothing but what an export writes.
EXPORT_VERSION_KIND = Kind(
    "SavedModel version folder", required=("saved_model.pb",),
    allowed=("saved_model.pb", "fingerprint.pb", "variables", "assets", "assets.extra",
             INFO_FILE))


def check_export_dir(export_dir, overwrite=False, inputs=()):
    """Raises unless `export_dir` (exports/NAME/VERSION) may be written.

    A new version folder is always fine; an existing one (even empty: TF
    Serving may be watching it) needs `overwrite` and must be an export
    (`EXPORT_VERSION_KIND`); neither it nor exports/NAME may be an input.

    Returns:
        str, its real path (links resolved).
    """
    base = os.path.dirname(os.path.abspath(export_dir))
    check_not_input(base, inputs, flag="The export folder")
    if os.path.exists(base) and not os.path.isdir(base):
        raise OutputError(f"The export folder {base} is a file: give exports/NAME, a folder "
                          f"for the versions (e.g. --output exports/sentiment).")
    real = prepare_output_dir(export_dir, EXPORT_VERSION_KIND, inputs=inputs,
                              overwrite_flag="overwrite=True (--overwrite)")
    if os.path.lexists(real) and not overwrite:
        raise FileExistsError(
            f"{export_dir} exists. Export to a new version (leave the version "
            f"out to get the next one), or pass overwrite=True (--overwrite)."
        )
    return real


def save_serving_module(module, export_dir, overwrite=False, warmup=True):
    """Writes `module` to `export_dir` atomically (TF Serving never sees half a version).

    The version is written into a staging folder beside it (not an integer
    name: TF Serving ignores it) and renamed into place; an existing version
    (with `overwrite`) is replaced only once the new one is complete.
    """
    real = check_export_dir(export_dir, overwrite)
    model_name = os.path.basename(os.path.dirname(os.path.abspath(export_dir)))
    with staged_dir(real, prefix=".tmp-export-") as saved:
        tf.saved_model.save(module, saved, signatures=module.signatures())
        with open(os.path.join(saved, INFO_FILE), "w", encoding="utf-8") as f:
            json.dump(export_info(module, saved), f, indent=2, sort_keys=True)
            f.write("\n")
        if warmup:
            write_warmup_requests(saved, model_name=model_name)
    return os.path.abspath(export_dir)


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
        "max_seq_length": module.max_seq_length,
        "sequence_length": module.sequence_length,
        "pad_to_multiple_of": module.pad_to_multiple_of,
        "jit_compile": module.jit_compile,
        "dtype": module.dtype_policy,
        # Classifier exports: length-sorted sub-batches per request (1: none).
        **({"sub_batches": module.sub_batches} if hasattr(module, "sub_batches") else {}),
        "signatures": {
            name: {"inputs": describe(sig.inputs), "outputs": describe(sig.outputs)}
            for name, sig in sorted(signature_defs.items())
            if not name.startswith("__")  # __saved_model_init_op
        },
    }


def serving_module_of(model):
    """The serving module of a task model, built once and kept on the model.

    It is the module `export_model` would save (same tokenizer, packing and
    answer logic, no XLA), called in this process: a task model's
    `predict` on strings answers through it, so the Python API and the
    export share one implementation. It reads the model's variables, so
    later training shows in its answers.
    """
    preprocessor = getattr(model, "preprocessor", None)
    if preprocessor is None:
        model._require_preprocessor()
    cached = getattr(model, "_keras_bert_serving_module", None)
    if cached is None or cached[0] is not preprocessor:
        module = build_serving_module(model)
        # object.__setattr__: Keras must not track the tf.Module as a layer.
        object.__setattr__(model, "_keras_bert_serving_module", (preprocessor, module))
        cached = (preprocessor, module)
    return cached[1]


def predict_text(model, inputs, signature=None, batch_size=64, function=None):
    """Runs a serving signature of `model` on raw strings, in this process.

    Args:
        model: a task model with a preprocessor.
        inputs: tuple of string batches, in the signature's input order
            (`(texts,)`, `(questions, contexts)`).
        signature: str, default the module's DEFAULT_SIGNATURE.
        batch_size: int, batches of similar length (see `run_function`).
        function: None, or a callable module -> the module's tf.function to
            run instead of a signature (one that is not exported).

    Returns:
        dict of numpy arrays: what the exported signature returns.
    """
    module = serving_module_of(model)
    if function is not None:
        function = function(module)
    else:
        function = getattr(module, module.SIGNATURES[signature or module.DEFAULT_SIGNATURE])
    names = list(inspect.signature(function.python_function).parameters)
    if len(inputs) != len(names):
        raise ValueError(
            f"{type(model).__name__}.predict takes {len(names)} string input(s) "
            f"({', '.join(names)}). Received: {len(inputs)}."
        )
    columns = {name: [_text_value(v) for v in np.asarray(
        value.numpy() if hasattr(value, "numpy") else value, dtype=object).ravel()]
        for name, value in zip(names, inputs)}
    return run_function(function, {name: tf.string for name in names}, columns, batch_size,
                        f"{type(model).__name__}.predict")


def _text_value(value):
    return value.encode("utf-8") if isinstance(value, str) else value
