"""The TensorFlow side of `benchmark.py serving-e2e` and `serving-accuracy`: a server process.

It imports only tensorflow (keras and keras_bert cannot be imported here)
and loads tensorflow-text's FastWordpieceTokenizer kernels as TF Serving
links them (`import tensorflow_text` itself would import keras); it loads
each SavedModel with `tf.saved_model.load` and times the `serving_default`
signature on raw strings when the parent asks, so that the parent can
interleave these runs with PyTorch's (`_torch_worker.py`, same protocol).

Protocol: argv[1] is a JSON file {"exports": {name: dir}, "texts": [str]}.
Each stdin line is a JSON request; each answer is one stdout line
"RESULT <json>":
  {"run": name, "batch_size": 64}  -> {"seconds": float}   all texts, in order
  {"run": name, "batch_size": 1, "count": n} -> {"seconds": [float] * n}
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
            for text in texts[:request["count"]]:
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


def main():
    import importlib.util

    for name in ("keras", "keras_bert", "tf_keras"):
        sys.modules[name] = None  # import -> ImportError, as on a serving host
    import tensorflow as tf

    tf.load_op_library(os.path.join(
        importlib.util.find_spec("tensorflow_text").submodule_search_locations[0],
        "python", "ops", "_fast_wordpiece_tokenizer.so"))
    with open(sys.argv[1], encoding="utf-8") as f:
        setup = json.load(f)

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
