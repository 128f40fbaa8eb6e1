"""The TensorFlow side of `benchmark.py serving-e2e` and `serving-accuracy`: a server process.

It imports only tensorflow (keras and keras_bert cannot be imported here)
and loads tensorflow-text's FastWordpieceTokenizer kernels as TF Serving
links them (`import tensorflow_text` itself would import keras); it loads
each SavedModel with `tf.saved_model.load` and times the `serving_default`
signature on raw strings when the parent asks, so that the parent can
interleave these runs with PyTorch's (`_torch_worker.py`, same protocol).
A LiteRT export (a folder holding model.tflite) is served instead by
ai-edge-litert's interpreter with tensorflow-text's LiteRT ops and one thread
per CPU; that process imports neither tensorflow nor tensorflow_text (it loads
only the TensorFlow framework library those ops link, and their registrar).

Protocol: argv[1] is a JSON file {"exports": {name: dir}, "texts": [str]}.
Each stdin line is a JSON request; each answer is one stdout line
"RESULT <json>":
  {"run": name, "batch_size": 64}  -> {"seconds": float}   all texts, in order
  {"run": name, "batch_size": 1, "count": n[, "start": s]} -> {"seconds": [float] * n}
                                     texts s to s + n (default s = 0), one a call
  {"outputs": name, "count": n[, "batch_size": b]}
                                  -> {"probabilities": [[float]], "label": [str]}
                                     the first n texts, in requests of b (default n)
"""

import json
import os
import sys
import time


def answer_requests(systems, texts):
    """Answers stdin's requests; systems: name -> serve(list of str) -> (probabilities
    as a numpy array, label names). A timed call includes making its inputs and reading
    its outputs."""
    print("RESULT " + json.dumps({"loaded": sorted(systems)}), flush=True)
    for line in sys.stdin:
        request = json.loads(line)
        if "outputs" in request:
            serve, count = systems[request["outputs"]], request["count"]
            size = request.get("batch_size", count) or 1
            answer = {"probabilities": [], "label": []}
            for i in range(0, count, size):
                probabilities, labels = serve(texts[i:min(i + size, count)])
                answer["probabilities"] += probabilities.tolist()
                answer["label"] += labels
        elif request["batch_size"] == 1:
            serve, seconds = systems[request["run"]], []
            start = request.get("start", 0)
            for text in texts[start:start + request["count"]]:
                start = time.perf_counter()
                serve([text])
                seconds.append(time.perf_counter() - start)
            answer = {"seconds": seconds}
        else:
            serve, size = systems[request["run"]], request["batch_size"]
            start = time.perf_counter()
            for i in range(0, len(texts), size):
                serve(texts[i:i + size])
            answer = {"seconds": time.perf_counter() - start}
        print("RESULT " + json.dumps(answer), flush=True)


def package_dir(name):
    """A package's folder, found without importing it."""
    import importlib.util

    return importlib.util.find_spec(name).submodule_search_locations[0]


def litert_server(path, text_ops):
    """serve() of a LiteRT export: ai-edge-litert with the registrar of tensorflow-text's
    ops (text_ops: tensorflow_text's folder)."""
    import ctypes
    import importlib.machinery
    import importlib.util

    import numpy as np
    from ai_edge_litert import interpreter

    # The registrar links libtensorflow_framework; load that library, not tensorflow.
    ctypes.CDLL(os.path.join(package_dir("tensorflow"), "libtensorflow_framework.so.2"),
                mode=ctypes.RTLD_GLOBAL)
    file = os.path.join(text_ops, "core", "pybinds", "tflite_registrar.so")
    spec = importlib.util.spec_from_file_location(
        "tflite_registrar", file, loader=importlib.machinery.ExtensionFileLoader("tflite_registrar", file))
    registrar = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(registrar)
    lite = interpreter.InterpreterWithCustomOps(  # Every tensorflow-text op it has.
        custom_op_registerers=[getattr(registrar, name) for name in dir(registrar)
                               if name.startswith("Add")], num_threads=os.cpu_count(),
        model_path=os.path.join(path, "model.tflite"))
    runner = lite.get_signature_runner("serving_default")

    def serve(texts):
        out = runner(text=np.array([t.encode("utf-8") for t in texts], dtype=object))
        return out["probabilities"], [s.decode() for s in out["label"]]
    return serve


def main():
    text_ops = package_dir("tensorflow_text")  # Before its import is blocked.
    for name in ("keras", "keras_bert", "tf_keras", "tensorflow_text"):
        sys.modules[name] = None  # import -> ImportError, as on a serving host
    with open(sys.argv[1], encoding="utf-8") as f:
        setup = json.load(f)
    if all(os.path.isfile(os.path.join(path, "model.tflite")) for path in setup["exports"].values()):
        answer_requests({name: litert_server(path, text_ops)
                         for name, path in setup["exports"].items()}, setup["texts"])
        return
    import tensorflow as tf

    tf.load_op_library(os.path.join(text_ops, "python", "ops", "_fast_wordpiece_tokenizer.so"))

    def server(path):
        signature = tf.saved_model.load(path).signatures["serving_default"]

        def serve(texts):
            out = signature(text=tf.constant(texts))
            return out["probabilities"].numpy(), [s.decode() for s in out["label"].numpy()]
        return serve

    answer_requests({name: server(path) for name, path in setup["exports"].items()},
                    setup["texts"])


if __name__ == "__main__":
    # Run by path, this file's folder comes first on sys.path; its siblings
    # (benchmark modules) are no business of a serving process.
    sys.path = [p for p in sys.path if os.path.abspath(p or ".") != os.path.dirname(
        os.path.abspath(__file__))]
    main()
