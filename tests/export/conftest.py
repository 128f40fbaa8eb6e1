"""Helpers of the export tests: tiny fine-tuned models and a clean loader process.

The session fixtures built from them (classifier_export, task_exports,
three_exports, clean_process) live in tests/conftest.py, so that each is
built once per run.
"""

import json
import os
import shutil
import subprocess
import sys
import textwrap

import keras
import numpy as np
import tensorflow as tf
from google.protobuf import descriptor_pool, message_factory
from tensorflow.core.framework import function_pb2
from tensorflow.core.protobuf import saved_model_pb2

from keras_bert.export import export_model
from keras_bert.models import BertEncoder
from keras_bert.tasks import BertClassifier, BertSpanLabeler, BertTokenClassifier
from keras_bert.text import BertPreprocessor, BertTokenizer
from tests.conftest import EXPORT_VOCAB as VOCAB
from tests.conftest import tiny_config

LABELS = ["negative", "neutral", "positive"]
MAX_SEQ_LENGTH = 24  # task.json max_seq_length; the encoder takes 32 positions.

TRAIN_TEXTS = [
    ("a good movie", 2), ("a great film", 2), ("the film was very good", 2),
    ("a bad movie", 0), ("an awful film", 0), ("the movie was not good", 0),
    ("the cat", 1), ("a dog jumped over the fox", 1), ("what is it ?", 1),
]


def write_vocab(directory):
    path = os.path.join(directory, "vocab.txt")
    with open(path, "w", encoding="utf-8") as f:
        f.write("".join(token + "\n" for token in VOCAB))
    return path


def tiny_encoder(seed=0):
    keras.utils.set_random_seed(seed)
    config = tiny_config(vocab_size=len(VOCAB), max_position_embeddings=32)
    return BertEncoder(**config.to_dict())


def write_library_op_export(directory):
    """Writes a synthetic SavedModel whose only non-core op sits in a function body.

    keras-nlp's RoundRobinTrim did so (tensorflow/serving#2267): the op guards
    must read library functions, not only the top-level graph.

    Args:
        directory: pathlib.Path; the export is written to `directory / "1"`.

    Returns:
        The version directory as a str. Its ops: Placeholder (graph), then
        RoundRobinTrim, FastWordpieceTokenizeWithOffsets and Identity (function).
    """
    proto = saved_model_pb2.SavedModel()
    graph = proto.meta_graphs.add().graph_def
    graph.node.add(name="x", op="Placeholder")
    function = function_pb2.FunctionDef()
    function.signature.name = "trim"
    function.node_def.add(name="t", op="RoundRobinTrim")
    function.node_def.add(name="w", op="FastWordpieceTokenizeWithOffsets")
    function.node_def.add(name="i", op="Identity")
    graph.library.function.append(function)
    os.makedirs(directory / "1")
    (directory / "1" / "saved_model.pb").write_bytes(proto.SerializeToString())
    return str(directory / "1")


def proto_message_class(file, name, dependencies=()):
    """The message class `name` of a hand-written FileDescriptorProto.

    For TF Serving protos that tensorflow-serving-api does not ship
    (monitoring and batching configs): the tests parse the files the tools
    write with the real field numbers and types.

    Args:
        file: a `descriptor_pb2.FileDescriptorProto`.
        name: str, the message's full name ("tensorflow.serving.test.X").
        dependencies: generated modules whose DESCRIPTOR the file imports
            (e.g. `wrappers_pb2`), added to the pool first.

    Returns:
        The generated message class.
    """
    pool = descriptor_pool.DescriptorPool()
    for module in dependencies:
        pool.AddSerializedFile(module.DESCRIPTOR.serialized_pb)
    pool.Add(file)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName(name))


def two_versions(export_dir, model_dir):
    """Copies one export as versions 1 and 2 of `model_dir` (a copy stands for a second export)."""
    shutil.copytree(export_dir, model_dir / "1")
    shutil.copytree(export_dir, model_dir / "2")
    return model_dir


def preprocessor(vocab_file, max_seq_length=MAX_SEQ_LENGTH):
    """The in-Python reference: batch-longest packing, as the export does."""
    return BertPreprocessor(BertTokenizer(vocab_file), sequence_length=None,
                            max_seq_length=max_seq_length)


def fit_a_few_steps(model, inputs, targets, loss, sample_weight=None):
    """Moves the weights away from their initialization (non-trivial outputs)."""
    model.compile(optimizer=keras.optimizers.Adam(3e-2), loss=loss)
    model.fit(inputs, targets, sample_weight=sample_weight, epochs=8, verbose=0)


def build_classifier_export(root):
    """A fine-tuned tiny 3-class classifier under `root`: its model dir, export and vocab."""
    vocab_file = write_vocab(root)
    classifier = BertClassifier(tiny_encoder(), num_classes=3, label_names=LABELS)
    texts = tf.constant([t for t, _ in TRAIN_TEXTS])
    fit_a_few_steps(
        classifier, preprocessor(vocab_file)(texts), np.array([y for _, y in TRAIN_TEXTS]),
        keras.losses.SparseCategoricalCrossentropy(from_logits=True),
    )
    model_dir = os.path.join(root, "model")
    classifier.save_pretrained(model_dir, vocab_file=vocab_file,
                               task_info={"max_seq_length": MAX_SEQ_LENGTH})
    export_dir = export_model(model_dir, os.path.join(root, "exports", "sentiment"))
    return {"model_dir": model_dir, "export_dir": export_dir, "vocab_file": vocab_file}


# Texts of the tagger and span-QA exports (tests/export/test_task_exports.py).
TAGS = ["O", "ANIMAL", "WORD"]
TAG_TEXTS = [
    "The fox jumped over the dog!", "  Café   naïve  cats,", "", "x",
    "a " + "dog " * 40,  # Truncated to the model's length.
]
QA_MAX_SEQ_LENGTH = 20
QUESTIONS = ["who jumped ?", "what was good", "where", "what is it?", "who"]
CONTEXTS = [
    "The fox jumped over the dog.",
    # Longer than one window: read in doc_stride windows.
    "The movie was very good, the film was bad, the cat was awful and the dog was great. " * 2,
    "",
    "Café!",
    "x " * 5000,  # 10k characters: 16 windows, the rest unread.
]


def build_task_exports(root):
    """A fine-tuned tiny tagger and span-QA model under `root` (saved as `root`/tagger and
    `root`/qa): their exports and vocab."""
    vocab_file = write_vocab(root)
    tokenizer = BertTokenizer(vocab_file)
    result = {"vocab_file": vocab_file, "root": root}

    tagger = BertTokenClassifier(tiny_encoder(1), num_classes=3, label_names=TAGS)
    inputs = preprocessor(vocab_file)(tf.constant(TAG_TEXTS[:2]))
    animals = {tokenizer.token_to_id(t) for t in ("fox", "dog", "cat")}
    tags = np.vectorize(lambda i: 1 if i in animals else 2 if i > 4 else 0)(
        inputs["token_ids"].numpy())
    fit_a_few_steps(tagger, inputs, tags,
                    keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                    sample_weight=inputs["padding_mask"])
    tagger.save_pretrained(os.path.join(root, "tagger"), vocab_file=vocab_file)

    qa = BertSpanLabeler(tiny_encoder(2))
    inputs = preprocessor(vocab_file)((tf.constant(QUESTIONS[:2]), tf.constant(CONTEXTS[:1] * 2)))
    fit_a_few_steps(qa, inputs, {"start_logits": np.array([5, 6]), "end_logits": np.array([6, 8])},
                    keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    qa.save_pretrained(os.path.join(root, "qa"), vocab_file=vocab_file,
                       task_info={"max_seq_length": QA_MAX_SEQ_LENGTH, "doc_stride": 4,
                                  "max_query_length": 6, "max_answer_length": 5})
    for name in ("tagger", "qa"):
        result[name + "_export"] = export_model(os.path.join(root, name),
                                                os.path.join(root, "exports", name))
    return result


# The clean process: keras, keras_bert and tf_keras cannot be imported (as on
# a TF Serving host, where no Python runs at all), and the tensorflow-text
# kernels are registered by loading its op library, as TF Serving links it.
_PREAMBLE = """
import importlib.util, json, os, sys
for _name in ("keras", "keras_bert", "tf_keras"):
    sys.modules[_name] = None  # import -> ImportError
import numpy as np
import tensorflow as tf
from tensorflow.core.protobuf import saved_model_pb2
from tensorflow.python.framework import op_def_registry
ARGS = json.loads(sys.argv[1])
result = {"non_core_ops": {}}
# Ops of each export that core TensorFlow does not register (before any
# tensorflow-text library is loaded): what a server must link besides TF.
for _path in ARGS.get("export_dirs", []):
    _proto = saved_model_pb2.SavedModel()
    with open(os.path.join(_path, "saved_model.pb"), "rb") as _f:
        _proto.ParseFromString(_f.read())
    _graph = _proto.meta_graphs[0].graph_def
    _used = {n.op for n in _graph.node} | {
        n.op for f in _graph.library.function for n in f.node_def}
    result["non_core_ops"][_path] = sorted(o for o in _used if op_def_registry.get(o) is None)
# The op libraries of the tokenizers (WordPiece, SentencePiece, BPE's regex split), as a
# server links them.
for _library in ("_fast_wordpiece_tokenizer.so", "_sentencepiece_tokenizer.so",
                 "_regex_split_ops.so"):
    tf.load_op_library(os.path.join(
        importlib.util.find_spec("tensorflow_text").submodule_search_locations[0],
        "python", "ops", _library))


def jsonable(tensor):
    # A tensor as JSON: nested lists, strings decoded from UTF-8.
    value = np.asarray(tensor).tolist()
    def convert(x):
        if isinstance(x, list):
            return [convert(y) for y in x]
        return x.decode("utf-8", errors="replace") if isinstance(x, bytes) else x
    return convert(value)


def session_signature(export_dir, name, **inputs):
    # Runs a signature the way TF Serving does: a TF1 Session over the
    # MetaGraph, variables restored by its Saver (not tf.saved_model.load).
    with tf.Graph().as_default(), tf.compat.v1.Session() as session:
        meta = tf.compat.v1.saved_model.loader.load(session, ["serve"], export_dir)
        signature = meta.signature_def[name]
        fetches = {k: v.name for k, v in signature.outputs.items()}
        feeds = {signature.inputs[k].name: v for k, v in inputs.items()}
        return session.run(fetches, feeds)
"""

_POSTAMBLE = """
result["python_modules"] = sorted(
    k for k, v in sys.modules.items()
    if v is not None and k.split(".")[0] in ("keras", "keras_bert", "tf_keras", "tensorflow_text"))
print("RESULT " + json.dumps(result))
"""


def run_clean_process(body, **args):
    """Runs `body` (Python code that fills `result`) in a fresh clean process.

    `ARGS` holds `args` (JSON); `result` must be JSON-able. Returns `result`
    plus "python_modules", the keras* / tensorflow_text modules that got
    imported (must be none), and "non_core_ops": {export dir: ops that core
    TensorFlow lacks} for each dir of the `export_dirs` argument.
    """
    script = _PREAMBLE + textwrap.dedent(body) + _POSTAMBLE
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", CUDA_VISIBLE_DEVICES="")
    env.pop("PYTHONPATH", None)  # Nothing of the repository on the path.
    process = subprocess.run(
        [sys.executable, "-c", script, json.dumps(args)],
        capture_output=True, text=True, timeout=300, env=env, cwd="/",
    )
    lines = [line for line in process.stdout.splitlines() if line.startswith("RESULT ")]
    assert process.returncode == 0 and lines, (
        f"clean process failed (rc={process.returncode}):\n{process.stdout[-3000:]}\n"
        f"{process.stderr[-5000:]}"
    )
    return json.loads(lines[-1][len("RESULT "):])


def run_clean_checks(checks):
    """Runs several clean-process checks in ONE fresh clean process, one after the other.

    Args:
        checks: {name: (body, args)}: `body` as for `run_clean_process`, run
            as a function of `ARGS` (its `args`) and `result`.

    Returns:
        {name: result}, each with "args" (its `args`), "python_modules" (of
        the whole process) and "non_core_ops" for its own `export_dirs`
        argument; a check that raised has "error" (its traceback) instead.
    """
    functions = []
    for name, (body, _) in checks.items():
        functions.append(f"def _check_{name}(ARGS, result):\n"
                         + textwrap.indent(textwrap.dedent(body), "    ") + "\n    return result\n")
    # One check's failure is that check's (its traceback), not the others'.
    calls = "import traceback\n" + "".join(
        f"try:\n    result[{name!r}] = _check_{name}(ARGS[{name!r}], {{}})\n"
        f"except Exception:\n    result[{name!r}] = {{'error': traceback.format_exc()}}\n"
        for name in checks)
    export_dirs = [d for _, args in checks.values() for d in args.get("export_dirs", [])]
    everything = run_clean_process("\n".join(functions) + calls, export_dirs=export_dirs,
                                   **{name: args for name, (_, args) in checks.items()})
    results = {}
    for name, (_, args) in checks.items():
        results[name] = dict(everything[name], args=args,
                             python_modules=everything["python_modules"],
                             non_core_ops={d: everything["non_core_ops"][d]
                                           for d in args.get("export_dirs", [])})
    return results
