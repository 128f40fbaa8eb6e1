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

from keras_bert import storage

#: tensorflow-text ops that stock TF Serving has linked since 2.7 (all in
#: `TF_TEXT_2_12_OPS`): fast WordPiece, SentencePiece and the regex split.
ALLOWED_TEXT_OPS = ("FastWordpieceTokenizeWithOffsets", "RegexSplitWithOffsets",
                    "SentencepieceOp", "SentencepieceTokenizeOp",
                    "SentencepieceTokenizeWithOffsetsOp", "SentencepieceIdToStringOp",
                    "SentencepieceStringToIdOp", "SentencepieceDetokenizeOp",
                    "SentencepieceVocabSizeOp")

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
    """The sorted op names of a SavedModel directory: its MetaGraph's nodes and every
    library function's."""
    from tensorflow.core.protobuf import saved_model_pb2

    proto = saved_model_pb2.SavedModel()
    proto.ParseFromString(storage.read_bytes(storage.join(export_dir, "saved_model.pb")))
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
    return json.loads(isolated_python(python or sys.executable, ["-c", _CORE_CHECK],
                                      "The core-op check", 300, json.dumps(sorted(op_names))))


def isolated_python(python, args, what, timeout, stdin=None, cwd="/"):
    """The last stdout line of `python -I *args`, run with its own packages only (no
    PYTHONPATH), quiet and on CPU; a RuntimeError naming `what` if it fails."""
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", CUDA_VISIBLE_DEVICES="")
    env.pop("PYTHONPATH", None)
    done = subprocess.run([python, "-I", *args], input=stdin, capture_output=True, text=True,
                          timeout=timeout, env=env, cwd=cwd)
    if done.returncode != 0:
        raise RuntimeError(f"{what} failed (rc={done.returncode}):\n{done.stderr[-3000:]}")
    return (done.stdout.strip().splitlines() or [""])[-1]


# {(op names, python): the names core TensorFlow lacks}: each answer costs a
# TensorFlow start, and the op-set and tensorflow-text checks ask alike.
_CORE_MISSING = {}


def non_core_ops(export_dirs, python=None):
    """{export dir: sorted ops that core TensorFlow does not register}.

    One subprocess for all exports (importing TensorFlow takes seconds).
    """
    ops = {path: graph_ops(path) for path in export_dirs}
    names = frozenset().union(*ops.values()) if ops else frozenset()
    key = (names, python)
    if key not in _CORE_MISSING:
        _CORE_MISSING[key] = set(core_missing(names, python)) if names else set()
    missing = _CORE_MISSING[key]
    return {path: sorted(set(names) & missing) for path, names in ops.items()}


def disallowed_ops(export_dirs, allowed=ALLOWED_TEXT_OPS, python=None):
    """{export dir: ops neither core nor in `allowed`}, only for exports that have some."""
    ops = non_core_ops(export_dirs, python)
    return {path: sorted(set(names) - set(allowed)) for path, names in ops.items()
            if set(names) - set(allowed)}


# === The tensorflow-text inside older TF Serving images ===

#: The ops that tensorflow-text 2.12.1 registers: the tensorflow-text linked
#: into TF Serving images 2.12 to 2.19 (tensorflow/serving PR #4057 moved
#: 2.20 to tensorflow-text 2.20). Made by tools/tf_text_op_list.py; the
#: file's header says how.
TF_TEXT_2_12_OPS = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "tf_text_2_12_ops.txt")

# Runs with the interpreter of a TensorFlow whose release matches the
# tensorflow-text wheel's: loads each op library and lists the ops it defines.
_TEXT_OPS_LIST = """
import glob, importlib.util, json, os, sys
sys.modules["keras"] = None
import tensorflow as tf
from tensorflow.core.framework import op_def_pb2
from tensorflow.python.client import pywrap_tf_session
root = importlib.util.find_spec("tensorflow_text").submodule_search_locations[0]
ops, failed = {}, {}
for path in sorted(glob.glob(os.path.join(root, "python", "ops", "_*.so"))):
    try:
        # What tf.load_op_library does, keeping the library's own OpList
        # (its OP_LIST attribute is newer than TensorFlow 2.12).
        handle = pywrap_tf_session.TF_LoadLibrary(path)
        op_list = op_def_pb2.OpList.FromString(pywrap_tf_session.TF_GetOpList(handle))
    except Exception as e:
        failed[os.path.basename(path)] = str(e)[:300]
        continue
    for op in op_list.op:
        ops[op.name] = os.path.basename(path)
from importlib.metadata import version
print(json.dumps({"tensorflow": tf.__version__, "tensorflow_text": version("tensorflow-text"),
                  "ops": ops, "failed": failed}))
"""


def tf_text_registered_ops(python):
    """What the tensorflow-text installed for `python` (with a TensorFlow of its
    release) registers: {"tensorflow", "tensorflow_text": versions, "ops": {op name:
    library file}, "failed": {library file: error}}."""
    return json.loads(isolated_python(python, ["-c", _TEXT_OPS_LIST],
                                      f"Listing tensorflow-text's ops with {python}", 600))


def read_op_list(path=TF_TEXT_2_12_OPS):
    """The op names of an op-list file (one a line; '#' starts a comment), a frozenset."""
    with storage.open_file(path) as f:
        return frozenset(line.split("#")[0].strip() for line in f
                         if line.split("#")[0].strip())


def missing_in_tf_text(export_dirs, op_list=TF_TEXT_2_12_OPS, python=None):
    """{export dir: its non-core ops that the tensorflow-text of `op_list` lacks}, only
    for exports that have some: ops an older TF Serving would answer with
    "Op type not registered"."""
    return disallowed_ops(export_dirs, read_op_list(op_list), python)
