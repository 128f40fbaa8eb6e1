"""The PyTorch side of `benchmark.py serving-e2e` and `serving-accuracy`: a server process.

It imports only torch and transformers (tensorflow, keras and keras_bert cannot
be imported here) and serves transformers' BertForSequenceClassification +
BertTokenizerFast from a folder that `peers.save_torch_classifier` wrote:
per-request padding, truncation to the export's max_seq_length,
`torch.inference_mode`, float32, threads = the process's CPUs. An export whose
"quantize" is "int8" is `torch.ao.quantization.quantize_dynamic` over every
nn.Linear (int8 weights, activations quantized per call).

Protocol: `_serving_worker.py`'s, with {"exports": {name: {"dir": folder,
"quantize": null or "int8", "max_length": int}}, "texts": [str]} as argv[1].
"""

import importlib.util
import json
import os
import sys
import warnings

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path = [p for p in sys.path if os.path.abspath(p or ".") != _HERE]
for _name in ("tensorflow", "keras", "keras_bert", "tf_keras"):
    sys.modules[_name] = None  # import -> ImportError: none of them serves here

import torch  # noqa: E402
import transformers  # noqa: E402

_spec = importlib.util.spec_from_file_location(
    "_serving_worker", os.path.join(_HERE, "_serving_worker.py"))
_serving_worker = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_serving_worker)  # Its protocol; it imports nothing at the top.
answer_requests = _serving_worker.answer_requests


def load(spec):
    """serve(texts) -> (probabilities [n, classes] numpy, label names)."""
    tokenizer = transformers.BertTokenizerFast.from_pretrained(spec["dir"])
    model = transformers.BertForSequenceClassification.from_pretrained(
        spec["dir"], torch_dtype=torch.float32).eval()
    if spec.get("quantize") == "int8":
        with warnings.catch_warnings():  # torch.ao's deprecation notices
            warnings.simplefilter("ignore")
            model = torch.ao.quantization.quantize_dynamic(
                model, {torch.nn.Linear}, dtype=torch.qint8)
    names = model.config.id2label

    def serve(texts):
        inputs = tokenizer(texts, padding=True, truncation=True, max_length=spec["max_length"],
                           return_tensors="pt")
        with torch.inference_mode():
            probabilities = torch.softmax(model(**inputs).logits, dim=-1)
        return probabilities.numpy(), [names[i] for i in probabilities.argmax(-1).tolist()]

    return serve


def main():
    with open(sys.argv[1], encoding="utf-8") as f:
        setup = json.load(f)
    torch.set_num_threads(len(os.sched_getaffinity(0)))
    answer_requests({name: load(spec) for name, spec in setup["exports"].items()},
                    setup["texts"])


if __name__ == "__main__":
    main()
