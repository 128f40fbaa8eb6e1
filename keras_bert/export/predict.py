"""Run an export locally, the way TF Serving (or a LiteRT app) would, with no server.

A SavedModel needs only TensorFlow and the tensorflow-text ops, a LiteRT
export the LiteRT interpreter with tensorflow-text's kernels
(`keras_bert.export.tflite_runtime`); keras_bert's models are not used: this
is what a client of the export sees. Both take the same calls and give the
same outputs (`run_signature`, `format_outputs`).

Example:
>>> loaded = load_export("exports/sentiment/1")
>>> outputs = run_signature(loaded, {"text": ["great movie"]})
>>> format_outputs({"text": ["great movie"]}, outputs)[0]
'great movie\tpositive\t0.9731'
"""

import json
import os

import numpy as np
import tensorflow as tf

from keras_bert import storage
from keras_bert.data.batching import length_sorted_batches
from keras_bert.export.tflite_runtime import TFLITE_FILE, LiteRTExport
from keras_bert.files import read_committed

#: What an export records beside saved_model.pb (settings, signatures, task facts).
INFO_FILE = "keras_bert_export.json"

# Signature inputs in the order texts are given on a command line.
FIRST_INPUTS = ("text", "question")
SECOND_INPUTS = ("text_b", "context")


def register_text_ops():
    """Registers the tensorflow-text ops an export uses (FastWordpieceTokenizeWithOffsets)."""
    import tensorflow_text  # noqa: F401  (importing registers the ops)


def is_version(name):
    """True for a TF Serving version directory name: ASCII digits only ("²" is not)."""
    return name.isascii() and name.isdecimal()


def version_numbers(export_base):
    """The sorted numbers of the version folders under `export_base` (none: [])."""
    if not storage.isdir(export_base):
        return []
    return sorted(int(name) for name in storage.listdir(export_base)
                  if is_version(name) and storage.isdir(os.path.join(export_base, name)))


#: The file that makes a version directory complete, by export format.
MODEL_FILES = {"saved_model": "saved_model.pb", "tflite": TFLITE_FILE}
FORMAT_NAMES = {"saved_model": "SavedModel", "tflite": "LiteRT export"}


def export_format(path):
    """"saved_model" or "tflite": the format of an export version folder (or of a
    .tflite file); None when it holds neither model file."""
    if storage.isfile(path):
        return "tflite" if path.endswith(".tflite") else None
    for name, file in MODEL_FILES.items():
        if storage.isfile(os.path.join(path, file)):
            return name
    return None


def _not_a(path, formats):
    """The error for an export folder of a format that the caller does not read."""
    found = export_format(path)
    if found == "tflite":
        return ValueError(
            f"{path} is a LiteRT export ({TFLITE_FILE}), and this reads SavedModels only "
            f"(TF Serving and its tools serve SavedModels): export the model directory "
            f"again without --format tflite for one; run the LiteRT export with "
            f"tools/predict.py --model {path} or keras_bert.export.litert_interpreter "
            f"(docs/litert.md).")
    wanted = " or ".join(MODEL_FILES[f] for f in formats)
    return FileNotFoundError(
        f"{path} is a file, not an export: pass the export's folder (exports/NAME or "
        f"exports/NAME/VERSION, holding {wanted})"
        + (" or a .tflite file." if "tflite" in formats else "."))


def latest_version(export_dir, formats=("saved_model",)):
    """exports/NAME -> exports/NAME/<largest integer>; a version dir (or, with "tflite"
    in `formats`, the export formats the caller reads, a .tflite file) stays as it is.

    Raises FileNotFoundError if there is no version directory, or if the latest one
    has no model file (an older version's answers would pass for the latest's);
    ValueError for an export of a format not in `formats`.
    """
    found = export_format(export_dir)
    if found in formats:
        return export_dir
    if found is not None or storage.isfile(export_dir):
        raise _not_a(export_dir, formats)
    files = " or ".join(MODEL_FILES[f] for f in formats)
    versions = version_numbers(export_dir)
    if not versions:
        raise FileNotFoundError(
            f"No {' or '.join(FORMAT_NAMES[f] for f in formats)} in {export_dir}: expected "
            f"{files} there, or integer version directories (exports/NAME/1/"
            f"{MODEL_FILES[formats[0]]}). Create one with tools/export.py."
        )
    latest = os.path.join(export_dir, str(versions[-1]))
    found = export_format(latest)
    if found is not None and found not in formats:
        raise _not_a(latest, formats)
    if found is None:
        raise FileNotFoundError(
            f"{latest} (the latest version of {export_dir}) has no {files}: it is "
            f"empty or incomplete. Export again (tools/export.py), remove it, or name a "
            f"version: {export_dir}/VERSION."
        )
    return latest


def check_tf_serving_exports(export_bases):
    """Raises ValueError naming a LiteRT export among exports/NAME folders meant
    for TF Serving (which loads SavedModels only), and the way out."""
    for base in export_bases:
        for path in [base] + [os.path.join(base, str(n)) for n in version_numbers(base)]:
            if export_format(path) == "tflite":
                raise ValueError(
                    f"{path} is a LiteRT export ({TFLITE_FILE}), and TF Serving serves "
                    f"SavedModels only. For TF Serving, export the model directory as a "
                    f"SavedModel (tools/export.py without --format tflite) to another "
                    f"exports/NAME and pass that; run the LiteRT export in an app's LiteRT "
                    f"runtime, or here with tools/predict.py --model {base} "
                    f"(docs/litert.md).")


def load_export(export_dir):
    """The export at `export_dir` (or its latest version), loaded for running: a
    SavedModel of one committed version (`keras_bert.files.read_committed`), or a
    `tflite_runtime.LiteRTExport` (any .tflite file), whose `signatures` run alike."""
    register_text_ops()
    path = latest_version(export_dir, formats=tuple(MODEL_FILES))
    if export_format(path) == "tflite":
        try:
            return LiteRTExport(path)
        except (RuntimeError, ValueError) as e:
            raise ValueError(f"Cannot load the LiteRT export {path}: {str(e).strip()}") from e

    def load():
        try:
            return tf.saved_model.load(path)
        except tf.errors.NotFoundError as e:  # A file went with a replaced version.
            raise FileNotFoundError(e.message) from e

    try:
        return read_committed(path, load, what="SavedModel")
    except (OSError, ValueError, tf.errors.OpError) as e:
        message = getattr(e, "message", None) or str(e)
        raise ValueError(f"Cannot load the SavedModel {path}: {message.strip()}") from e


def read_export_info(export_dir):
    """The keras_bert_export.json of an export (`latest_version`'s; a .tflite file:
    the one beside it) as a dict ({} when it has none)."""
    path = latest_version(export_dir, formats=tuple(MODEL_FILES))
    if storage.isfile(path):
        path = os.path.dirname(path)
    path = storage.join(path, INFO_FILE)
    if not storage.exists(path):
        return {}
    with storage.open_file(path) as f:  # One file: whole from one version.
        return json.load(f)


def input_names(loaded, signature="serving_default"):
    """Names of the string inputs of `signature`, in command-line order."""
    if signature not in loaded.signatures:
        raise ValueError(
            f"The export has no signature {signature!r}. It has: {sorted(loaded.signatures)}."
        )
    names = sorted(loaded.signatures[signature].structured_input_signature[1])
    order = {name: i for i, name in enumerate(FIRST_INPUTS + SECOND_INPUTS)}
    return sorted(names, key=lambda name: order.get(name, len(order)))


def run_signature(loaded, inputs, signature="serving_default", batch_size=64, progress=None):
    """Calls `signature` on lists of str; returns a dict of numpy arrays.

    More than `batch_size` examples run in batches of similar UTF-8 length;
    the rows come back in input order. Outputs with a token axis are padded
    with zeros (empty strings); their `mask` says which positions are real.

    Args:
        loaded: an export from `load_export`.
        inputs: dict input name -> list of str (or bytes), one per example.
        signature: the signature name.
        batch_size: int, or None for one call on everything.
        progress: callable(examples_done), called after each batch, or None.
    """
    function = loaded.signatures[signature]
    specs = function.structured_input_signature[1]
    return run_function(function, {name: spec.dtype for name, spec in specs.items()}, inputs,
                        batch_size, f"Signature {signature!r}", progress=progress)


def run_function(function, dtypes, inputs, batch_size=64, what="The signature", progress=None):
    """`run_signature` for any `function(**{name: Tensor})` returning a dict, its
    inputs of `dtypes` ({name: tf.DType}); `what` names it in errors."""
    missing = sorted(set(dtypes) - set(inputs))
    if missing:
        raise ValueError(f"{what} needs inputs {sorted(dtypes)}; missing {missing}.")
    columns = {name: list(inputs[name]) for name in dtypes}
    counts = {name: len(column) for name, column in columns.items()}
    if len(set(counts.values())) > 1:
        raise ValueError(f"{what} needs one value per example in every input. "
                         f"Received: {counts}.")
    count = len(next(iter(columns.values())))

    done = 0

    def call(index):
        nonlocal done
        tensors = {
            name: tf.constant([columns[name][i] for i in index], dtype=dtypes[name])
            for name in dtypes
        }
        outputs = {name: np.asarray(value) for name, value in function(**tensors).items()}
        done += len(index)
        if progress is not None:
            progress(done)
        return outputs

    if batch_size is None or count <= batch_size:
        return call(range(count))
    lengths = [
        sum(len(_as_bytes(columns[name][i])) for name in dtypes) for i in range(count)
    ]
    parts = [(index, call(index)) for index in length_sorted_batches(lengths, batch_size)]
    return {name: _merge_rows(count, [(index, out[name]) for index, out in parts])
            for name in parts[0][1]}


def _as_bytes(value):
    return value if isinstance(value, bytes) else str(value).encode("utf-8", "replace")


def _merge_rows(count, parts):
    """Rows of per-batch arrays put back at their indices, padded to the largest."""
    shape = np.max([array.shape[1:] for _, array in parts], axis=0).astype(int).tolist()
    dtype = parts[0][1].dtype
    merged = np.full([count] + shape, b"" if dtype == object else 0, dtype=dtype)
    for index, array in parts:
        merged[(np.asarray(index),) + tuple(slice(0, n) for n in array.shape[1:])] = array
    return merged


def _text(value):
    return value.decode("utf-8", errors="replace") if isinstance(value, bytes) else str(value)


def format_outputs(inputs, outputs, label_names=None):
    """One line (or block) of text per example, for a terminal.

    Args:
        inputs: dict input name -> list of str, as given to `run_signature`.
        outputs: dict of numpy arrays, what it returned.
        label_names: list of str naming the columns of a multi-label
            `predicted` (the export's keras_bert_export.json "label_names",
            `read_export_info`); None: "0".."C-1".
    """
    first = next(iter(inputs.values()))
    lines = []
    for i in range(len(first)):
        shown = " | ".join(_text(inputs[name][i]) for name in inputs)
        if "predicted" in outputs and "probabilities" in outputs:
            # Multi-label: every predicted label with its probability ("-": none).
            names = label_names or [str(c) for c in range(outputs["predicted"].shape[-1])]
            chosen = [f"{names[c]}:{outputs['probabilities'][i][c]:.4f}"
                      for c in np.flatnonzero(outputs["predicted"][i])]
            lines.append(f"{shown}\t{' '.join(chosen) or '-'}")
        elif "probabilities" in outputs:
            label = _text(outputs["label"][i])
            lines.append(f"{shown}\t{label}\t{outputs['probabilities'][i].max():.4f}")
        elif "score" in outputs and "answer" not in outputs:
            lines.append(f"{shown}\t{outputs['score'][i]:.4f}")
        elif "answer" in outputs:
            lines.append(
                f"{shown}\t{_text(outputs['answer'][i])!r}\t[{outputs['start'][i]}:"
                f"{outputs['end'][i]}]\t{outputs['score'][i]:.4f}"
            )
        elif "tokens" in outputs:
            mask = outputs["mask"][i].astype(bool)
            pieces = [
                f"{_text(t)}/{_text(l)}({p:.2f})@{s}:{e}"
                for t, l, p, s, e in zip(
                    outputs["tokens"][i][mask], outputs["label"][i][mask],
                    outputs["probability"][i][mask], outputs["start"][i][mask],
                    outputs["end"][i][mask],
                )
            ]
            lines.append(f"{shown}\t" + " ".join(pieces))
        else:
            parts = []
            for name in sorted(outputs):
                value = np.asarray(outputs[name][i])
                head = np.array2string(value.ravel()[:4], precision=4, separator=", ")
                parts.append(f"{name}{list(value.shape)}={head}")
            lines.append(f"{shown}\t" + "\t".join(parts))
            continue
        if "num_windows" in outputs:  # A long-document model: windows read of the text.
            lines[-1] += f"\twindows={outputs['num_windows'][i]}"
    return lines
