"""Run an exported SavedModel locally, the way TF Serving would (no server).

Needs only TensorFlow and the tensorflow-text ops; keras_bert's models are
not used: this is what a client of the export sees.

Example:
>>> loaded = load_export("exports/sentiment/1")
>>> outputs = run_signature(loaded, {"text": ["great movie"]})
>>> format_outputs({"text": ["great movie"]}, outputs)[0]
'great movie\tpositive\t0.9731'
"""

import os

import numpy as np
import tensorflow as tf

# Signature inputs in the order texts are given on a command line.
FIRST_INPUTS = ("text", "question")
SECOND_INPUTS = ("text_b", "context")


def register_text_ops():
    """Registers the tensorflow-text ops an export uses (FastWordpieceTokenizeWithOffsets)."""
    import tensorflow_text  # noqa: F401  (importing registers the ops)


def latest_version(export_dir):
    """exports/NAME -> exports/NAME/<largest integer>; a version dir stays as it is."""
    if os.path.exists(os.path.join(export_dir, "saved_model.pb")):
        return export_dir
    versions = [int(n) for n in os.listdir(export_dir) if n.isdigit()] if os.path.isdir(
        export_dir) else []
    if not versions:
        raise FileNotFoundError(
            f"No SavedModel in {export_dir}: expected saved_model.pb there, or integer "
            f"version directories (exports/NAME/1/saved_model.pb). Create one with "
            f"tools/export.py."
        )
    return os.path.join(export_dir, str(max(versions)))


def load_export(export_dir):
    """tf.saved_model.load of `export_dir` (or of its latest version)."""
    register_text_ops()
    return tf.saved_model.load(latest_version(export_dir))


def input_names(loaded, signature="serving_default"):
    """Names of the string inputs of `signature`, in command-line order."""
    if signature not in loaded.signatures:
        raise ValueError(
            f"The export has no signature {signature!r}. It has: {sorted(loaded.signatures)}."
        )
    names = sorted(loaded.signatures[signature].structured_input_signature[1])
    order = {name: i for i, name in enumerate(FIRST_INPUTS + SECOND_INPUTS)}
    return sorted(names, key=lambda name: order.get(name, len(order)))


def run_signature(loaded, inputs, signature="serving_default"):
    """Calls `signature` on lists of str; returns a dict of numpy arrays."""
    function = loaded.signatures[signature]
    specs = function.structured_input_signature[1]
    missing = sorted(set(specs) - set(inputs))
    if missing:
        raise ValueError(
            f"Signature {signature!r} needs inputs {sorted(specs)}; missing {missing}."
        )
    tensors = {
        name: tf.constant(list(inputs[name]), dtype=specs[name].dtype) for name in specs
    }
    return {name: value.numpy() for name, value in function(**tensors).items()}


def _text(value):
    return value.decode("utf-8", errors="replace") if isinstance(value, bytes) else str(value)


def format_outputs(inputs, outputs):
    """One line (or block) of text per example, for a terminal."""
    first = next(iter(inputs.values()))
    lines = []
    for i in range(len(first)):
        shown = " | ".join(_text(inputs[name][i]) for name in inputs)
        if "probabilities" in outputs:
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
    return lines
