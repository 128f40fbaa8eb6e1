"""The TensorFlow side of `benchmark.py serving-e2e` and `serving-accuracy`: a server process.

It imports only tensorflow (keras and keras_bert cannot be imported here)
and loads tensorflow-text's FastWordpieceTokenizer kernels as TF Serving
links them (`import tensorflow_text` itself would import keras); it loads
each SavedModel with `tf.saved_model.load` and times the `serving_default`
signature on raw strings when the parent asks, so that the parent can
interleave these runs with PyTorch's.

Protocol: argv[1] is a JSON file {"exports": {name: dir}, "texts": [str]}.
Each stdin line is a JSON request; each answer is one stdout line
"RESULT <json>":
  {"run": name, "batch_size": 64}  -> {"seconds": float}   all texts, in order
  {"run": name, "batch_size": 1, "count": n} -> {"seconds": [float] * n}
  {"outputs": name, "count": n[, "batch_size": b]}
                                  -> {"probabilities": [[float]], "label": [str]}
                                     the first n texts, in requests of b (default n)
"""

import importlib.util
import json
import os
import sys
import time

# Run by path, this file's folder comes first on sys.path; its siblings
# (benchmark modules) are no business of a serving process.
sys.path = [p for p in sys.path if os.path.abspath(p or ".") != os.path.dirname(
    os.path.abspath(__file__))]

for _name in ("keras", "keras_bert", "tf_keras"):
    sys.modules[_name] = None  # import -> ImportError, as on a serving host

import tensorflow as tf  # noqa: E402

tf.load_op_library(os.path.join(
    importlib.util.find_spec("tensorflow_text").submodule_search_locations[0],
    "python", "ops", "_fast_wordpiece_tokenizer.so"))


def main():
    with open(sys.argv[1], encoding="utf-8") as f:
        setup = json.load(f)
    texts = setup["texts"]
    signatures = {name: tf.saved_model.load(path).signatures["serving_default"]
                  for name, path in setup["exports"].items()}
    print("RESULT " + json.dumps({"loaded": sorted(signatures)}), flush=True)
    for line in sys.stdin:
        request = json.loads(line)
        if "outputs" in request:
            serve, count = signatures[request["outputs"]], request["count"]
            size = request.get("batch_size", count) or 1
            answer = {"probabilities": [], "label": []}
            for i in range(0, count, size):
                out = serve(text=tf.constant(texts[i:min(i + size, count)]))
                answer["probabilities"] += out["probabilities"].numpy().tolist()
                answer["label"] += [s.decode() for s in out["label"].numpy()]
        elif request["batch_size"] == 1:
            serve = signatures[request["run"]]
            seconds = []
            for text in texts[:request["count"]]:
                start = time.perf_counter()
                out = serve(text=tf.constant([text]))  # Tensor creation counts too.
                out["probabilities"].numpy(), out["label"].numpy()
                seconds.append(time.perf_counter() - start)
            answer = {"seconds": seconds}
        else:
            serve, size = signatures[request["run"]], request["batch_size"]
            start = time.perf_counter()
            for i in range(0, len(texts), size):
                out = serve(text=tf.constant(texts[i:i + size]))
                out["probabilities"].numpy(), out["label"].numpy()
            answer = {"seconds": time.perf_counter() - start}
        print("RESULT " + json.dumps(answer), flush=True)


if __name__ == "__main__":
    main()
