"""export_model: a model directory (or a Keras model) -> a TF Serving SavedModel.

exports/NAME/VERSION/ saved_model.pb, variables/, assets/vocab.txt,
keras_bert_export.json (what was exported: task, signatures, lengths),
assets.extra/tf_serving_warmup_requests (TF Serving's warmup, tf_serving.py).
"""

import json
import os
import tempfile

import tensorflow as tf
from tensorflow.core.protobuf import saved_model_pb2

from keras_bert import storage
from keras_bert.export import int8, tuning
from keras_bert.export.predict import INFO_FILE, is_version  # noqa: F401
from keras_bert.export.serving_module import BertServingModule, overrides_call
from keras_bert.export.tf_serving import write_warmup_requests
from keras_bert import sources
from keras_bert.export import tflite
from keras_bert.export.layout import (  # noqa: F401 (public names of this module too)
    EXPORT_VERSION_KIND,
    STAGING_PREFIX,
    NextVersion,
    check_export_dir,
    next_version,
    resolve_export_dir,
)
from keras_bert.files import claim_numbered, real_path, staged_dir
from keras_bert.models import BertEncoder, load_model_dir
from keras_bert.models.encoder import encoder_of
from keras_bert.models.lora import merged_copy
from keras_bert.models.model_dir import build_preprocessor
from keras_bert.text.tokenizer_files import save_tokenizer_files


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
                         max_seq_length=None, sequence_length=None, pad_to_multiple_of=None,
                         jit_compile=False, pad_to_max_seq_length=False,
                         serving_module_class=None, **task_options):
    """The `BertServingModule` (or the task's subclass) for a Keras model.

    The module runs the model's own preprocessor, so the export answers as the
    model's `predict` on strings does; the arguments below change a copy of it.
    A model without one gets the one its task.json describes (`build_preprocessor`).

    Args:
        model: a `BertEncoder` or a task model.
        vocab_file: vocab.txt path, saved as the export's asset; default
            `model.vocab_file`, else the preprocessor's vocabulary.
        task_info: dict overriding task.json facts.
        lowercase, max_seq_length, sequence_length, pad_to_multiple_of: None
            (the preprocessor's), or the export's own (tools/export.py flags).
        jit_compile: see `BertServingModule`.
        pad_to_max_seq_length: bool, `sequence_length=max_seq_length`.
        serving_module_class: the `BertServingModule` subclass to build;
            default the model's `serving_module_class`, else `BertServingModule`.
        **task_options: the task's serving options (its module's
            `TASK_OPTIONS`), overriding task.json.

    Returns:
        A `BertServingModule`.
    """
    # An export runs plain weights: a LoRA model's adapters merged into a copy.
    model = merged_copy(model)
    info = _task_config(model, task_info)
    encoder = encoder_of(model)
    preprocessor = getattr(model, "preprocessor", None)
    vocab_file = vocab_file or getattr(model, "vocab_file", None) or (
        getattr(preprocessor.tokenizer, "vocabulary_file", None)
        if preprocessor is not None else None)
    if vocab_file is None and preprocessor is not None:
        # A model from a .keras file holds its vocabulary in memory (from its assets).
        vocab_file = save_tokenizer_files(preprocessor.tokenizer,
                                          tempfile.mkdtemp(prefix="keras_bert-vocab-"))
    if vocab_file is None:
        raise ValueError(
            "No vocabulary: pass vocab_file='.../vocab.txt' (tools/export.py --vocab-file), "
            "or export a model directory that has one (save_pretrained(dir, vocab_file=...))."
        )
    if preprocessor is None or (lowercase is not None
                                and lowercase != preprocessor.tokenizer.lowercase):
        saved = info if preprocessor is None else preprocessor.text_settings
        preprocessor = build_preprocessor(
            vocab_file, encoder.max_position_embeddings, saved, max_seq_length=max_seq_length,
            lowercase=lowercase, where="the model's task.json" if preprocessor is None else
            "the model's preprocessor",
            tokenizer=None if preprocessor is None else preprocessor.tokenizer)
    changes = {"max_seq_length": max_seq_length, "sequence_length": sequence_length,
               "pad_to_multiple_of": pad_to_multiple_of}
    if pad_to_max_seq_length:
        length = max_seq_length or preprocessor.max_seq_length
        if sequence_length not in (None, length):
            raise ValueError(
                f"pad_to_max_seq_length pads to max_seq_length ({length}); drop "
                f"sequence_length={sequence_length!r}."
            )
        changes["sequence_length"] = length
    preprocessor = preprocessor.with_settings(
        **{k: v for k, v in changes.items() if v is not None})
    task = info.get("task")
    # The task model's own class names its module (not the registry).
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
        preprocessor=preprocessor,
        vocab_file=vocab_file,
        jit_compile=jit_compile,
        **options,
    )


def model_signatures(source):
    """({signature name: tf.function}, label names or None) of what `export_model(source,
    ...)` would export (a model directory or any source `from_pretrained` takes), to run
    in this process: tools/predict.py on a model folder."""
    model = load_model_dir(sources.resolve_source(source), BertEncoder)
    info = getattr(model, "task_info", None) or {}
    return build_serving_module(model).signatures(), info.get("label_names")


def export_model(model_or_dir, output, version=None, overwrite=False, warmup=True,
                 dtype=None, format="saved_model", quantize=None, calibration_texts=None,
                 tune_texts=None,
                 tune_seconds=tuning.TUNE_SECONDS, log=None, **options):
    """Exports a model for TF Serving (or LiteRT): raw-string signatures, vocab as an asset.

    Args:
        model_or_dir: a model directory, any other source `from_pretrained`
            takes (`keras_bert.sources.resolve_source`), or a Keras model.
        output: exports/NAME (a new version directory is made inside:
            1 + the largest existing one) or exports/NAME/VERSION.
        version: int, the version under exports/NAME (default: next).
        overwrite: bool, replace an existing version directory. TF Serving
            does not reload a version it already serves; export a new one.
        warmup: bool, write TF Serving's warmup requests
            (assets.extra/tf_serving_warmup_requests; see `tf_serving.py`).
        dtype: None, "float32" or "mixed_bfloat16": the Keras dtype policy
            the model directory is loaded with (a Keras model keeps its own).
        format: "saved_model" (TF Serving) or "tflite": a LiteRT model
            (exports/NAME/VERSION/model.tflite) of a classifier or encoder
            (`keras_bert.export.tflite`; `warmup` does not apply).
        quantize: None or "int8" (a model directory only). A SavedModel:
            the encoder blocks' Dense layers run oneDNN's int8 matmul
            (`keras_bert.export.int8`; x86, float32 only). LiteRT: the
            converter's dynamic-range quantization.
        calibration_texts: with quantize: list of str, or the path of a file
            (one text a line, or a CSV/TSV with a `text` column) whose texts
            calibrate the activation ranges; None: ranges taken per call.
        tune_texts: with `sub_batches="auto"`: list of str, or the path of
            a file with one text a line, that the candidates are timed on;
            default `tuning.synthetic_texts`.
        tune_seconds: float, budget of the timed rounds of the tuning.
        log: callable for the tuning's one-line summary, or None.
        **options: `build_serving_module` arguments. `sub_batches="auto"`
            (classifier SavedModels; tools/export.py's default) exports the
            sub-batch counts measured fastest per request size on this
            machine (`keras_bert.export.tuning`); for other exports it means
            no sub-batching. The Python default is sub_batches=1.

    Returns:
        str, the version directory written.

    Example:
    >>> export_model("models/sentiment", "exports/sentiment")
    'exports/sentiment/1'
    """
    if dtype not in (None, "float32", "mixed_bfloat16"):
        raise ValueError(f"Expected dtype None, 'float32' or 'mixed_bfloat16'. "
                         f"Received: dtype={dtype!r}")
    if quantize not in (None, "int8"):
        raise ValueError(f"Expected quantize None or 'int8' (--quantize). "
                         f"Received: quantize={quantize!r}")
    if quantize and not isinstance(model_or_dir, (str, os.PathLike)):
        raise ValueError("export_model(quantize='int8') quantizes the model it loads; give its "
                         "model directory (a Keras model is not changed in place).")
    if calibration_texts is not None and not quantize:
        raise ValueError("calibration_texts (--calibration-data) calibrates an int8 export; "
                         "add quantize='int8' (--quantize int8) or drop it.")
    if calibration_texts is not None and format == "tflite":
        raise ValueError("A LiteRT int8 export quantizes its activations per call: drop "
                         "calibration_texts (--calibration-data) for --format tflite.")
    if isinstance(calibration_texts, (str, os.PathLike)):  # A bad file fails before long work.
        calibration_texts = int8.read_calibration_texts(calibration_texts)
    if format not in ("saved_model", "tflite"):
        raise ValueError(f"Expected format 'saved_model' or 'tflite' (--format). "
                         f"Received: format={format!r}")
    auto = options.get("sub_batches") == "auto"
    if auto:
        del options["sub_batches"]
        if isinstance(tune_texts, (str, os.PathLike)):  # A bad file fails before long work.
            tune_texts = tuning.read_tune_texts(tune_texts)
    kind = tflite.TFLITE_VERSION_KIND if format == "tflite" else EXPORT_VERSION_KIND
    export_dir = resolve_export_dir(output, version)
    # Before any long work: a refused output fails at once.
    inputs = [model_or_dir] if isinstance(model_or_dir, (str, os.PathLike)) else []
    check_export_dir(export_dir, overwrite, inputs=inputs, kind=kind)
    if isinstance(model_or_dir, (str, os.PathLike)):
        encoder_kwargs = {} if dtype in (None, "float32") else {"dtype": dtype}
        model = load_model_dir(sources.resolve_source(model_or_dir), BertEncoder,
                               **encoder_kwargs)
    else:
        model = model_or_dir
        policy = encoder_of(model).embeddings.dtype_policy.name
        if dtype is not None and policy != dtype:
            raise ValueError(
                f"export_model(dtype={dtype!r}) re-loads a model directory, but a Keras model "
                f"with dtype policy {policy!r} was given. Pass its model "
                f"directory, or build the model with dtype={dtype!r}.")
    module = build_serving_module(model, **options)
    if quantize and format == "saved_model":
        module._keras.int8 = int8.quantize_module(module, calibration_texts)
    elif format == "saved_model":
        # A copy of the weights as they are now, for the saved graph (the module is not
        # kept: a model's own `serving_module()` reads its variables, whole blocks).
        module.halve_blocks(module.serving_kernels)
    if auto:
        _tune(module, format, tune_texts, tune_seconds, log)
    if format == "tflite":
        return tflite.save_tflite(module, export_dir, overwrite, quantize)
    return save_serving_module(module, export_dir, overwrite, warmup)


def _tune(module, format, texts, seconds, log):
    """Sets the sub-batching measured fastest on `module` (export_model "auto")."""
    reason = (f"format={format!r} runs a request as one batch" if format != "saved_model"
              else f"{type(module).__name__} has no sub-batching"
              if "sub_batches" not in module.TASK_OPTIONS
              else "a classifier with windows runs a request as one batch"
              if getattr(module, "window_stride", None) is not None
              else "the preprocessor has its own call (no token counts to sort by)"
              if overrides_call(module._keras.preprocessor) else None)
    if reason:
        module._keras.tuning = {"skipped": reason}
    else:
        if texts is None:
            texts = tuning.synthetic_texts(module._keras.tokenizer.vocabulary)
        module._keras.tuning = tuning.tune_sub_batches(module, texts, seconds=seconds)
    if log:
        log(tuning.describe(module._keras.tuning))


def save_serving_module(module, export_dir, overwrite=False, warmup=True):
    """Writes `module` to `export_dir` atomically (TF Serving never sees half a version).

    Written into a staging folder beside it (not an integer name: TF Serving
    ignores it), then committed in one step (`keras_bert.files.staged_dir`);
    without `overwrite`, a version another process committed meanwhile is kept
    (FileExistsError). A `NextVersion` is claimed now (taken: the next free one).

    Returns:
        str, the version folder written (absolute).
    """
    if isinstance(export_dir, NextVersion):
        # Exclusive: another export may have taken this number since it was chosen.
        claimed = claim_numbered(os.path.dirname(real_path(export_dir)), STAGING_PREFIX,
                                 is_version)
        export_dir = os.path.join(os.path.dirname(storage.abspath(export_dir)),
                                  os.path.basename(claimed))
    real = check_export_dir(export_dir, overwrite)
    model_name = os.path.basename(os.path.dirname(storage.abspath(export_dir)))
    with staged_dir(real, prefix=STAGING_PREFIX, replace=overwrite) as saved:
        tf.saved_model.save(module, saved, signatures=module.signatures())
        with open(os.path.join(saved, INFO_FILE), "w", encoding="utf-8") as f:
            json.dump(export_info(module, saved), f, indent=2, sort_keys=True)
            f.write("\n")
        if warmup:
            write_warmup_requests(saved, model_name=model_name)
    return storage.abspath(export_dir)


def export_info(module, saved_model_dir):
    """What keras_bert_export.json records: settings, and the signatures as
    TF Serving reads them from saved_model.pb (input/output keys, dtypes, shapes)."""
    proto = saved_model_pb2.SavedModel()
    proto.ParseFromString(storage.read_bytes(storage.join(saved_model_dir, "saved_model.pb")))

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
        "lowercase": module.lowercase,
        "truncation": module.truncation,
        "sequence_length": module.sequence_length,
        "pad_to_multiple_of": module.pad_to_multiple_of,
        "jit_compile": module.jit_compile,
        "dtype": module.dtype_policy,
        # int8 exports (quantize="int8"): how (keras_bert.export.int8).
        "quantize": "int8" if getattr(module._keras, "int8", None) else None,
        **({"int8": module._keras.int8} if getattr(module._keras, "int8", None) else {}),
        # Classifier exports: length-sorted sub-batches per request (1: none).
        **({"sub_batches": module.sub_batches if isinstance(module.sub_batches, int) else
            [list(pair) for pair in module.sub_batches]} if hasattr(module, "sub_batches")
           else {}),
        # export_model(sub_batches="auto"): what was measured and chosen (tuning.py).
        **({"tuning": module._keras.tuning} if getattr(module._keras, "tuning", None) else {}),
        **module.export_metadata(),
        "signatures": {
            name: {"inputs": describe(sig.inputs), "outputs": describe(sig.outputs)}
            for name, sig in sorted(signature_defs.items())
            if not name.startswith("__")  # __saved_model_init_op
        },
    }
