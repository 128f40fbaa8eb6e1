"""Which ops an export needs a server to link: TensorFlow core, plus an allowlist.

TF Serving links core TensorFlow and tensorflow-text's `ops_lib`, but an op
that appeared in a newer tensorflow-text (or any custom op) fails at load
time with `Op type not registered` (keras-nlp's BERT exports hit this with
`TFText>RoundRobinTrim`, tensorflow/serving#2267). `non_core_ops` lists the
ops of a SavedModel that a process importing only `tensorflow` does not
register; every op an export uses must be core or in `ALLOWED_TEXT_OPS`.

Example:
>>> non_core_ops(["exports/sentiment/1"])
{'exports/sentiment/1': ['FastWordpieceTokenizeWithOffsets']}
"""

import json
import os
import subprocess
import sys

#: tensorflow-text ops that stock TF Serving has linked for years: the fast
#: WordPiece tokenizer (tensorflow-text >= 2.7, in TF Serving's builds from
#: 2.7 on; TF Serving up to 2.19 linked tensorflow-text 2.12.1, 2.20 links 2.20).
ALLOWED_TEXT_OPS = ("FastWordpieceTokenizeWithOffsets",)

# Runs in a fresh interpreter that imports tensorflow and nothing of
# tensorflow-text, keras or keras_bert: what it registers is core TensorFlow.
_CORE_CHECK = """
import json, sys
for _name in ("tensorflow_text", "keras", "keras_bert", "tf_keras"):
    sys.modules[_name] = None  # import -> ImportError
from tensorflow.python.framework import op_def_registry
names = json.loads(sys.stdin.read())
print(json.dumps(sorted(n for n in names if op_def_registry.get(n) is None)))
"""


def graph_ops(export_dir):
    """The op names of a SavedModel: its MetaGraph's nodes and every library function's.

    Args:
        export_dir: str, a SavedModel directory (with saved_model.pb).

    Returns:
        sorted list of str.
    """
    from tensorflow.core.protobuf import saved_model_pb2

    proto = saved_model_pb2.SavedModel()
    with open(os.path.join(export_dir, "saved_model.pb"), "rb") as f:
        proto.ParseFromString(f.read())
    ops = set()
    for meta_graph in proto.meta_graphs:
        graph = meta_graph.graph_def
        ops.update(node.op for node in graph.node)
        for function in graph.library.function:
            ops.update(node.op for node in function.node_def)
    return sorted(ops)


def core_missing(op_names, python=None):
    """The names in `op_names` that a process importing only tensorflow lacks.

    Args:
        op_names: iterable of str.
        python: the interpreter to ask (default this one).
    """
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", CUDA_VISIBLE_DEVICES="")
    env.pop("PYTHONPATH", None)
    done = subprocess.run(
        [python or sys.executable, "-I", "-c", _CORE_CHECK], input=json.dumps(sorted(op_names)),
        capture_output=True, text=True, timeout=300, env=env, cwd="/",
    )
    if done.returncode != 0:
        raise RuntimeError(f"The core-op check failed (rc={done.returncode}):\n"
                           f"{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def non_core_ops(export_dirs, python=None):
    """{export dir: sorted ops that core TensorFlow does not register}.

    One subprocess for all exports (importing TensorFlow takes seconds).
    """
    ops = {path: graph_ops(path) for path in export_dirs}
    missing = set(core_missing(set().union(*ops.values()), python)) if ops else set()
    return {path: sorted(set(names) & missing) for path, names in ops.items()}


def disallowed_ops(export_dirs, allowed=ALLOWED_TEXT_OPS, python=None):
    """{export dir: ops neither core nor in `allowed`}, only for exports that have some."""
    result = {}
    for path, ops in non_core_ops(export_dirs, python).items():
        bad = sorted(set(ops) - set(allowed))
        if bad:
            result[path] = bad
    return result
