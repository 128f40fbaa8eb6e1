"""Fine-tuning packs with the model's preprocessor; label names have one precedence (issue 33).

The run resolves one `BertPreprocessor` (flags > the model directory's
task.json > the task's default); that object packs every task's data (no
reader builds a packer of its own), is the trained model's preprocessor and
so what save_pretrained writes. Label names: the task option > the data
source's > the model directory's > inferred, written once
(`keras_bert.data.labels.resolve_label_names`).
"""

import dataclasses
import json
import os
import shutil

import keras
import pytest

from keras_bert.data import labels as labels_lib
from keras_bert.data.report import DataReport
from keras_bert.models import BertEncoder, load_model_dir
from keras_bert.tasks import BertClassifier, BertTokenClassifier
from keras_bert.tasks.classification import reader as classification
from keras_bert.tasks.classification.options import ClassificationOptions
from keras_bert.tasks.multi_label_classification import BertMultiLabelClassifier
from keras_bert.text import BertPacker
from keras_bert.training import finetune as finetune_lib
from tests.training.finetune_fixtures import (
    CONLL_TEXT,
    sentiment_rows,
    squad_json,
    write_json,
)

OPTIONS = dict(epochs=1, batch_size=4, jit_compile="off", log_every=100)


def _with_task_json(tiny_model_dir, root, values):
    """A copy of the session's tiny encoder directory whose task.json holds `values`."""
    model_dir = str(root / "model")
    shutil.copytree(tiny_model_dir, model_dir)
    with open(os.path.join(model_dir, "task.json"), "w") as f:
        json.dump(values, f)
    return model_dir


def _pairs_csv(path):
    rows = [(text, "movie of the year " * 3, label) for text, label in sentiment_rows(8)]
    path.write_text("text,text_b,label\n" + "".join(f"{a},{b},{c}\n" for a, b, c in rows))
    return str(path)


@pytest.fixture
def packers(monkeypatch):
    """Every `BertPacker` that packs something while the test runs."""
    seen = []
    call = BertPacker.call

    def spy(self, inputs):
        seen.append(self)
        return call(self, inputs)

    monkeypatch.setattr(BertPacker, "call", spy)
    return seen


@pytest.mark.slow
def test_a_saved_truncation_rule_is_what_the_run_packs_and_saves(tiny_model_dir, tmp_path,
                                                                 packers):
    model_dir = _with_task_json(tiny_model_dir, tmp_path, {"truncation": "round_robin"})
    task_options = ClassificationOptions(text_b_column="text_b")
    data = _pairs_csv(tmp_path / "pairs.csv")
    train = finetune_lib.read_task_data("classification", data, True, task_options)
    dev = finetune_lib.read_task_data("classification", data, False, task_options)
    trained = []

    class Record(keras.callbacks.Callback):
        def on_train_begin(self, logs=None):
            trained.append(self.model)

    output = str(tmp_path / "out")
    finetune_lib.finetune("classification", model_dir, output, train, dev,
                          finetune_lib.FinetuneOptions(max_seq_length=12, **OPTIONS),
                          callbacks=[Record()], progress="lines", task_options=task_options)
    preprocessor = trained[0].preprocessor
    assert (preprocessor.truncation, preprocessor.max_seq_length) == ("round_robin", 12)
    # The data (train and eval pairs) went through that preprocessor's packer, and no other.
    assert packers and all(p is preprocessor.packer for p in packers)
    with open(os.path.join(output, "task.json")) as f:
        info = json.load(f)
    assert (info["truncation"], info["max_seq_length"], info["lowercase"]) == (
        "round_robin", 12, True)
    again = BertClassifier.from_pretrained(output).preprocessor
    assert again.text_settings == preprocessor.text_settings


@pytest.mark.parametrize("task", ["token_classification", "span_qa", "multi_label_classification"])
def test_every_task_packs_its_data_with_the_model_s_preprocessor(task, tiny_model_dir, tmp_path,
                                                                 packers):
    model_dir = _with_task_json(tiny_model_dir, tmp_path,
                                {"max_seq_length": 80, "truncation": "round_robin"})
    if task == "token_classification":
        path = tmp_path / "train.txt"
        path.write_text(CONLL_TEXT)
    elif task == "span_qa":
        path = write_json(str(tmp_path / "squad.json"), squad_json())
    else:
        path = tmp_path / "train.csv"
        path.write_text("text,label\nthe good movie,pos|fun\nthe bad plot,neg\n")
    train = finetune_lib.read_task_data(task, str(path), True)
    held_out = finetune_lib.read_task_data(task, str(path), False)
    task_class = finetune_lib.finetune_task_class(task)
    runner = task_class(model_dir, finetune_lib.FinetuneOptions(**OPTIONS))
    runner.prepare(train, held_out)
    model = runner.build_model()
    assert model.preprocessor is runner.preprocessor
    assert model.preprocessor.text_settings.to_json() == {
        "max_seq_length": 80, "lowercase": True, "truncation": "round_robin"}
    assert packers and all(p is model.preprocessor.packer for p in packers)


def test_the_label_names_precedence(tiny_model_dir, tmp_path):
    train = classification.ClassificationExamples(
        ["a", "b", "c"], None, ["pos", "neg", "pos"], ["f:2", "f:3", "f:4"], DataReport("f"))
    resolve = labels_lib.resolve_label_names
    assert resolve(None, None, train.labels) == ["neg", "pos"]  # Inferred: sorted.
    assert resolve(None, ["pos", "neg"], train.labels) == ["pos", "neg"]  # Saved.
    assert resolve(None, ["pos", "neg"], train.labels, declared=["x", "y"]) == ["x", "y"]
    assert resolve(["b", "a"], ["pos", "neg"], train.labels, declared=["x", "y"]) == ["b", "a"]
    assert resolve([], ["pos", "neg"], train.labels) == ["pos", "neg"]  # Empty: not given.
    with pytest.raises(ValueError, match=r"at least 2 label names. Received: \['pos'\] from the "
                       r"training data \(f\).*--label-names\. Or not\."):
        resolve(None, None, ["pos"], source="f", minimum=2, why=" Or not.")

    # Through the tasks: a model directory of the same task gives its names
    # (in its order, not the sorted one); the option beats them.
    encoder = load_model_dir(tiny_model_dir, BertEncoder)
    vocab = os.path.join(tiny_model_dir, "vocab.txt")
    cases = [
        ("classification", BertClassifier(encoder, 2, label_names=["pos", "neg"]), train),
        ("multi_label_classification",
         BertMultiLabelClassifier(encoder, 2, label_names=["pos", "neg"]),
         dataclasses.replace(train, labels=[["pos"], ["neg"], []])),
        ("token_classification", BertTokenClassifier(encoder, 2, label_names=["B-X", "O"]),
         None),
    ]
    for task, model, examples in cases:
        saved_dir = str(tmp_path / task)
        model.save_pretrained(saved_dir, vocab_file=vocab)
        task_class = finetune_lib.finetune_task_class(task)
        runner = task_class(saved_dir, finetune_lib.FinetuneOptions(**OPTIONS))
        if examples is None:  # Tags: "O" first when inferred.
            from keras_bert.tasks.token_classification.reader import ConllSentences

            examples = ConllSentences([["w", "v"]], [["O", "B-X"]], ["f:1"], DataReport("f"))
            labels = examples.tags
        else:
            labels = examples.labels
        assert runner.resolve_label_names(None, examples, labels) == model.label_names, task
        assert runner.resolve_label_names(["u", "v"], examples, labels) == ["u", "v"]
    # Another task's directory gives none: inferred.
    runner = finetune_lib.finetune_task_class("classification")(
        str(tmp_path / "token_classification"), finetune_lib.FinetuneOptions(**OPTIONS))
    assert runner.resolve_label_names(None, train) == ["neg", "pos"]


def test_read_data_leaves_its_options_as_given(tmp_path):
    tfds = pytest.importorskip("tensorflow_datasets")
    path = tmp_path / "train.csv"
    path.write_text("text,label\na good movie,1\na bad movie,0\n")
    options = ClassificationOptions()
    with tfds.testing.mock_data(num_examples=4):
        # A ClassLabel's names, and no ClassLabel (regression), come back as data.
        named = finetune_lib.read_task_data("classification", "tfds:glue/sst2", True, options)
        numbers = finetune_lib.read_task_data("classification", "tfds:glue/stsb", True, options)
    assert options == ClassificationOptions()
    assert (named.label_names, named.regression) == (["negative", "positive"], False)
    assert (numbers.label_names, numbers.regression) == (None, True)
    for task in ("classification", "multi_label_classification"):
        options = finetune_lib.get_task(task).make_options()
        before = dataclasses.replace(options)
        finetune_lib.read_task_data(task, str(path), True, options)
        assert options == before, task


def test_no_task_reader_or_fine_tuning_builds_its_own_text_path():
    # Text becomes ids through the model's preprocessor: no fine-tuning module
    # or reader makes a tokenizer, packer or preprocessor, nor resolves settings.
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    package = os.path.join(root, "keras_bert")
    files = [os.path.join(package, "training", "finetune.py")]
    tasks = os.path.join(package, "tasks")
    for task in sorted(os.listdir(tasks)):
        for name in ("finetune.py", "reader.py"):
            if os.path.isfile(os.path.join(tasks, task, name)):
                files.append(os.path.join(tasks, task, name))
    assert len(files) >= 9
    for path in files:
        with open(path, encoding="utf-8") as f:
            code = f.read()
        for made in ("BertPreprocessor(", "BertTokenizer(", "BertPacker(",
                     "resolve_text_settings("):
            assert made not in code, f"{path} calls {made}"
