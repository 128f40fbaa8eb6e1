"""Runs every string signature of SavedModels and writes the outputs as JSON.

A standalone script (it imports only numpy and tensorflow, and loads
tensorflow-text's op libraries the way TF Serving links them), run by
`keras_bert.export.runtime_check` in this runtime and in an older one:

  python -I runtime_probe.py REQUEST.json OUTPUT.json

REQUEST.json: {"export_dirs": [...], "texts": [base64 of UTF-8 bytes, ...],
"function": true or false}. Each all-string signature runs through a TF1
Session over the MetaGraph ("session", as TF Serving's C++ loader does), on
`texts` and on an empty batch, and, unless "function" is false, through
`tf.saved_model.load` ("function"); a second input gets `texts` rotated by one.
"""

import base64
import glob
import importlib.util
import json
import os
import sys

# Found before imports are blocked: its op libraries are loaded by path.
_TEXT_SPEC = importlib.util.find_spec("tensorflow_text")
for _name in ("keras", "keras_bert", "tf_keras", "tensorflow_text"):
    sys.modules[_name] = None  # import -> ImportError: the server has no Python.

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402


def load_text_ops():
    """Loads every tensorflow-text op library (TF Serving links its ops_lib)."""
    if _TEXT_SPEC is None:
        return []
    root = _TEXT_SPEC.submodule_search_locations[0]
    loaded = []
    for path in sorted(glob.glob(os.path.join(root, "python", "ops", "_*.so"))):
        try:
            tf.load_op_library(path)
            loaded.append(os.path.basename(path))
        except (tf.errors.NotFoundError, OSError):
            pass  # A library that needs another one first; the others still load.
    return loaded


def encode(value):
    array = np.asarray(value)
    if array.dtype == object:
        data = [base64.b64encode(v).decode("ascii") for v in array.ravel().tolist()]
    else:
        data = array.ravel().tolist()
    return {"dtype": str(array.dtype), "shape": list(array.shape), "data": data}


def string_signatures(meta_graph):
    """{name: [input names]} of the signatures whose inputs are all tf.string."""
    result = {}
    for name, signature in sorted(meta_graph.signature_def.items()):
        if name.startswith("__") or not signature.inputs:
            continue
        if all(t.dtype == tf.string.as_datatype_enum for t in signature.inputs.values()):
            # text before text_b, question before context.
            order = {"text": 0, "question": 0, "text_b": 1, "context": 1}
            result[name] = sorted(signature.inputs, key=lambda k: (order.get(k, 2), k))
    return result


def feeds(names, texts):
    batch = [texts, texts[1:] + texts[:1]]
    return {name: batch[min(i, 1)] for i, name in enumerate(names)}


def probe(export_dir, texts, function=True):
    result = {"signatures": {}}
    with tf.Graph().as_default(), tf.compat.v1.Session() as session:
        meta = tf.compat.v1.saved_model.loader.load(session, ["serve"], export_dir)
        signatures = string_signatures(meta)
        for name, inputs in signatures.items():
            sig = meta.signature_def[name]
            out = result["signatures"].setdefault(name, {"inputs": inputs})
            for label, batch in (("session", texts), ("session_empty", [])):
                values = feeds(inputs, batch)
                fetched = session.run(
                    {k: v.name for k, v in sig.outputs.items()},
                    {sig.inputs[k].name: np.array(v, dtype=object) for k, v in values.items()})
                out[label] = {k: encode(v) for k, v in fetched.items()}
    if not function:
        return result
    loaded = tf.saved_model.load(export_dir)
    for name, inputs in signatures.items():
        values = feeds(inputs, texts)
        outputs = loaded.signatures[name](**{k: tf.constant(v, tf.string)
                                             for k, v in values.items()})
        result["signatures"][name]["function"] = {k: encode(v.numpy())
                                                  for k, v in outputs.items()}
    return result


def main():
    with open(sys.argv[1], encoding="utf-8") as f:
        request = json.load(f)
    texts = [base64.b64decode(t) for t in request["texts"]]
    report = {"tensorflow": tf.__version__, "text_op_libraries": load_text_ops(),
              "exports": {}}
    try:
        from importlib.metadata import version

        report["tensorflow_text"] = version("tensorflow-text")
    except Exception:  # noqa: BLE001 (not installed: reported as None)
        report["tensorflow_text"] = None
    for export_dir in request["export_dirs"]:
        try:
            report["exports"][export_dir] = probe(export_dir, texts,
                                                  request.get("function", True))
        except Exception as e:  # noqa: BLE001 (reported, compared as a failure)
            report["exports"][export_dir] = {"error": f"{type(e).__name__}: {e}"[:4000]}
    with open(sys.argv[2], "w", encoding="utf-8") as f:
        json.dump(report, f)


if __name__ == "__main__":
    main()
