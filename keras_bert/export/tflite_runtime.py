"""Running a LiteRT export (--format tflite): the LiteRT interpreter with tensorflow-text's kernels.

`litert_interpreter` opens an export with `ai_edge_litert.interpreter`
(`tf.lite.Interpreter` is deprecated) and registers tensorflow-text's custom
ops with `tflite_registrar`.

Example:
>>> interpreter = litert_interpreter("exports/sentiment-lite/1")
>>> run_tflite(interpreter, ["great movie"])["label"]
array([b'positive'], dtype=object)
>>> export = LiteRTExport("exports/sentiment-lite/1/model.tflite")   # what load_export returns
>>> export.signatures["serving_default"](text=np.array([b"great movie"], dtype=object))["label"]
array([b'positive'], dtype=object)
"""

import os

import numpy as np
import tensorflow as tf

from keras_bert import storage

TFLITE_FILE = "model.tflite"


def tflite_path(path):
    """The .tflite file of `path`: the file itself, or model.tflite in the version folder."""
    path = os.fspath(path)
    return storage.join(path, TFLITE_FILE) if storage.isdir(path) else path


def litert_interpreter(model, num_threads=None):
    """A LiteRT interpreter of a LiteRT export, tensorflow-text's kernels registered.

    Args:
        model: the export's version folder (exports/NAME/VERSION), its
            model.tflite (any .tflite file), or the flatbuffer bytes.
        num_threads: int or None (LiteRT's default).

    Returns:
        An `ai_edge_litert.interpreter.InterpreterWithCustomOps`.

    Raises:
        ImportError (no ai-edge-litert), FileNotFoundError, ValueError (no LiteRT model).
    """
    import tensorflow_text as tf_text  # Loads the framework library its kernels link.

    try:
        from ai_edge_litert import interpreter
    except ImportError as e:
        raise ImportError(
            "Running a LiteRT export needs the LiteRT interpreter, the ai-edge-litert "
            "package (a keras_bert dependency): pip install ai-edge-litert, or reinstall "
            "keras_bert (pip install -e . in its clone).") from e
    if isinstance(model, (bytes, bytearray)):
        source = {"model_content": bytes(model)}
    else:
        path = tflite_path(model)
        if not storage.isfile(path):
            raise FileNotFoundError(
                f"No LiteRT model at {path}: pass a LiteRT export's version folder "
                f"(exports/NAME/VERSION, holding {TFLITE_FILE}) or its .tflite file. "
                f"Create one with tools/export.py --format tflite.")
        # LiteRT opens local files only: a remote model is read into memory.
        source = ({"model_content": storage.read_bytes(path)} if storage.is_remote(path)
                  else {"model_path": path})
    return interpreter.InterpreterWithCustomOps(
        custom_op_registerers=tf_text.tflite_registrar.SELECT_TFTEXT_OPS,
        num_threads=num_threads, **source)


def run_tflite(interpreter, texts, signature="serving_default"):
    """Runs a signature of a LiteRT model on a list of str/bytes; returns its dict of arrays."""
    runner = interpreter.get_signature_runner(signature)
    batch = np.array([t.encode("utf-8") if isinstance(t, str) else t for t in texts],
                     dtype=object)
    return runner(text=batch)


class LiteRTSignature:
    """One signature of a LiteRT export, called as a SavedModel's signature is (with
    its `structured_input_signature`), so `keras_bert.export.predict` takes either."""

    def __init__(self, interpreter, key):
        self.key = key
        self._runner = interpreter.get_signature_runner(key)
        self.structured_input_signature = ((), {
            name: tf.TensorSpec([None if n < 0 else int(n) for n in detail["shape_signature"]],
                                tf.as_dtype(detail["dtype"]), name)
            for name, detail in self._runner.get_input_details().items()})

    def __call__(self, **inputs):
        return self._runner(**{name: np.asarray(value) for name, value in inputs.items()})


class LiteRTExport:
    """A LiteRT export loaded for running: `signatures` by key, as a loaded SavedModel's.

    Args:
        model, num_threads: see `litert_interpreter`.

    Attributes:
        interpreter: its `litert_interpreter`.
        signatures: dict signature key -> `LiteRTSignature`.
    """

    def __init__(self, model, num_threads=None):
        self.interpreter = litert_interpreter(model, num_threads)
        # Allocated once now (unknown dimensions as 1), so that LiteRT applies
        # XNNPACK, and announces it on stderr, here rather than at the first call.
        for detail in self.interpreter.get_input_details():
            self.interpreter.resize_tensor_input(
                detail["index"], [max(int(n), 1) for n in detail["shape_signature"]])
        self.interpreter.allocate_tensors()
        self.signatures = {key: LiteRTSignature(self.interpreter, key)
                           for key in self.interpreter.get_signature_list()}
