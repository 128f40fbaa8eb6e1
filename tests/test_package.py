"""`import keras_bert` as users run it: every public name in both spellings, `.keras`
reloads and a model directory's saved text lengths, in fresh interpreters, whichever of `keras` and `keras_bert` is imported first
(issue 45); nothing added to the import system; Keras' own functions.

Each import order is one process (the names are batched), since a process that has
imported TensorFlow once cannot show what a fresh one does.
"""

import json
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# Each order: its imports, and the name used first (a task class, where a half-finished
# import shows) and how: `keras_bert.X` or `from keras_bert import X`.
ORDERS = {"keras_bert alone": ("import keras_bert", "BertClassifier", "attribute"),
          "keras, then keras_bert": ("import keras\nimport keras_bert", "BertTextEmbedder",
                                     "from"),
          "keras_bert, then keras": ("import keras_bert\nimport keras", "BertMaskedLM",
                                     "from")}

# Every public name, both spellings, with what a fresh process can see of the import:
# the import hooks on sys.meta_path, Keras' load_model, each Keras class's registration.
NAMES = """
import sys
first, how = sys.argv[2:4]
names, seen = [first] + [n for n in keras_bert.__all__ if n != first], {}
for name in names:
    scope = {}
    if how == "from":  # the first name's first use, in one spelling or the other
        exec(f"from keras_bert import {name}", scope)
    attribute = getattr(keras_bert, name)
    exec(f"from keras_bert import {name}", scope)
    seen[name] = scope[name] is attribute and attribute is not None
import keras
registered = {name: keras.saving.get_registered_object(keras.saving.get_registered_name(
    getattr(keras_bert, name))) is getattr(keras_bert, name) for name in names
    if isinstance(getattr(keras_bert, name), type) and name != "BertTask"  # an abstract base
    and issubclass(getattr(keras_bert, name), keras.layers.Layer)}
report = {"names": seen, "registered": registered,
          "hooks": [repr(f) for f in sys.meta_path if "keras_bert" in type(f).__module__],
          "load_model": keras.models.load_model.__module__.split(".")[0],
          "subpackages": [keras_bert.checkpoints.convert_checkpoint.__name__,
                          keras_bert.export.export_model.__name__]}
"""

# A compiled classifier (fit one step on strings: its optimizer has state) and a compiled
# embedder (never fit), saved as .keras with their predictions (built in the first process,
# after the names are checked).
BUILD = """
import numpy as np
from keras_bert.text import save_vocabulary
work = sys.argv[1]
texts = ["the movie is good", "a bad film", "i love it", "awful , awful film"]
words = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + sorted(set(" ".join(texts).split()))
save_vocabulary(words, f"{work}/vocab.txt")
keras.utils.set_random_seed(1)
config = keras_bert.BertConfig.from_preset("tiny", vocab_size=len(words))
keras_bert.BertEncoder(**config.to_dict()).save_pretrained(f"{work}/encoder",
                                                          vocab_file=f"{work}/vocab.txt")
classifier = keras_bert.BertClassifier.from_pretrained(f"{work}/encoder", num_classes=2)
classifier.fit(texts, [1, 0, 1, 0], epochs=1, batch_size=4, verbose=0)
embedder = keras_bert.BertTextEmbedder.from_pretrained(f"{work}/encoder")
for model in (classifier, embedder):
    name = type(model).__name__
    model.save(f"{work}/{name}.keras")
    np.save(f"{work}/{name}.npy", model.predict(texts, verbose=0))
# Issue 45 item 3's classifier: packed to 16 on a 32-position encoder (shorter than every
# default length), saved as a model directory.
short = keras_bert.BertClassifier(
    keras_bert.BertEncoder(**{**config.to_dict(), "max_position_embeddings": 32}), num_classes=2,
    preprocessor=keras_bert.BertPreprocessor.from_vocab_file(f"{work}/vocab.txt",
                                                             sequence_length=16))
short.save_pretrained(f"{work}/lengths")
np.save(f"{work}/lengths.npy", short.predict(texts, verbose=0))
"""

LOAD = """
import numpy as np
work = sys.argv[1]
texts = ["the movie is good", "a bad film", "i love it", "awful , awful film"]
for name in ("BertClassifier", "BertTextEmbedder"):
    model = keras.models.load_model(f"{work}/{name}.keras")
    report[name] = {
        "class": type(model).__name__, "compiled": model.compiled,
        "optimizer": [type(model.optimizer).__name__, int(model.optimizer.iterations),
                      model.optimizer.epsilon_form],
        "diff": float(np.abs(model.predict(texts, verbose=0)
                             - np.load(f"{work}/{name}.npy")).max())}
"""

# The model directory of the short classifier, loaded by a process that never saw it saved.
LOAD_LENGTHS = """
short = keras_bert.BertClassifier.from_pretrained(f"{work}/lengths")
report["lengths"] = {
    "lengths": [short.preprocessor.sequence_length, short.preprocessor.max_seq_length],
    "diff": float(np.abs(short.predict(texts, verbose=0) - np.load(f"{work}/lengths.npy")).max())}
"""


def run_fresh(code, *args):
    """`code` in a fresh interpreter (nothing imported before it); its last stdout line."""
    done = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True,
                          timeout=600, cwd=ROOT, env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"))
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.splitlines()[-1])


@pytest.fixture(scope="module")
def reports(tmp_path_factory):
    work = str(tmp_path_factory.mktemp("package"))
    found = {}
    for order, (imports, first, how) in ORDERS.items():
        steps = [imports, NAMES]
        if order == "keras_bert alone":
            steps.append(BUILD)
        else:
            steps.append(LOAD)
        if order == "keras, then keras_bert":
            steps.append(LOAD_LENGTHS)
        steps.append("import json\nprint(json.dumps(report))")
        found[order] = run_fresh("\n".join(steps), work, first, how)
    return found


def test_every_public_name_imports_both_ways_in_every_order(reports):
    names = reports["keras_bert alone"]["names"]
    assert {"BertConfig", "BertEncoder", "BertClassifier", "BertTextEmbedder", "BertMaskedLM",
            "BertPreprocessor", "BertTokenizer", "TransformerEncoderBlock"} <= set(names)
    for order, report in reports.items():
        assert report["names"] == dict.fromkeys(names, True), order
        # Every public Keras class is registered by `import keras_bert` alone.
        assert report["registered"] and all(report["registered"].values()), (order, report)
        assert {"BertClassifier", "BertEncoder", "BertMaskedLM", "BertMultiLabelClassifier",
                "BertSpanLabeler", "BertTextEmbedder", "BertTokenClassifier", "BertPretrainer",
                "TransformerEncoderBlock", "BertEmbeddings", "Pooler"} <= set(report["registered"])
        assert report["hooks"] == [] and report["load_model"] == "keras", (order, report)
        assert report["subpackages"] == ["convert_checkpoint", "export_model"], order


@pytest.mark.parametrize("order", ["keras, then keras_bert", "keras_bert, then keras"])
@pytest.mark.parametrize("name", ["BertClassifier", "BertTextEmbedder"])
def test_a_compiled_task_reloads_from_keras_in_a_fresh_process(reports, order, name):
    loaded = reports[order][name]
    assert loaded["class"] == name and loaded["compiled"]
    # keras_bert's AdamW with its state (the classifier's one fit step) and torch's epsilon.
    assert loaded["optimizer"] == ["AdamW", int(name == "BertClassifier"), "torch"]
    assert loaded["diff"] < 1e-5


def test_a_fresh_process_loads_a_model_directory_s_saved_lengths(reports):
    # Was: "max_seq_length=512 (saved in ...)" (issue 45 item 3); in process:
    # tests/test_one_text_setting.py::test_the_issue_classifier_loads_its_own_directory.
    loaded = reports["keras, then keras_bert"]["lengths"]
    assert loaded["lengths"] == [16, 16]
    assert loaded["diff"] < 1e-5
