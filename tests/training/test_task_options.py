"""A task owns its options: its TaskSpec carries its options dataclass and task.json schema.

tools/finetune.py builds its task flags from the specs, model_dir.py checks
task.json with the spec's schema, and FinetuneOptions keeps generic settings.
"""

import dataclasses
import json
import os
import sys

import pytest

from keras_bert.models import model_dir as model_dir_lib
from keras_bert.models import registry
from keras_bert.tasks.classification.options import ClassificationOptions
from keras_bert.tasks.span_qa.options import SpanQAOptions
from keras_bert.training import finetune as finetune_lib
from tests.conftest import tool_module
from tests.training.finetune_fixtures import make_model_dir

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tools"))

import _cli  # noqa: E402  (tools/_cli.py)


@dataclasses.dataclass
class WindowOptions:
    """A made-up task's options, to show that flags follow the spec."""

    window_size: int = dataclasses.field(default=4, metadata={"help": "Tokens per window."})
    stride_mode: str = dataclasses.field(
        default="even", metadata={"help": "How windows advance.", "choices": ("even", "odd"),
                                  "flag": "--stride"})


class _WindowModel:
    pass


@pytest.fixture
def window_task(monkeypatch):
    """A task "windows" registered (for this test only) with options and a task.json schema."""
    spec = registry.TaskSpec("windows", model=_WindowModel, finetune=object, options=WindowOptions,
                             task_json={"window_size": {"type": "integer", "minimum": 2}})
    monkeypatch.setitem(registry._REGISTRY, "windows", spec)
    return spec


def test_a_task_s_flags_come_from_its_spec(window_task):
    tool = tool_module("finetune")
    tasks = {name: registry.get_task(name).options
             for name in finetune_lib.fine_tunable_tasks()}
    assert tasks["windows"] is WindowOptions
    parser = tool.build_parser(tasks)
    actions = {a.dest: a for a in parser._actions}
    assert "windows" in actions["task"].choices
    assert actions["window_size"].option_strings == ["--window-size"]
    assert actions["window_size"].help == "Tokens per window."
    assert actions["window_size"].default == 4
    assert actions["stride_mode"].option_strings == ["--stride"]
    assert tuple(actions["stride_mode"].choices) == ("even", "odd")

    args = tool.parse_args(["--task", "windows", "--model", "m", "--output", "o", "--train", "t",
                            "--eval", "e", "--window-size", "8", "--stride", "odd"], tasks)
    assert tool.task_option_values(args) == {"window_size": 8, "stride_mode": "odd"}
    assert window_task.make_options(**tool.task_option_values(args)) == WindowOptions(8, "odd")


def test_another_task_s_flag_is_refused(capsys):
    tool = tool_module("finetune")
    with pytest.raises(SystemExit):
        tool.parse_args(["--task", "classification", "--model", "m", "--output", "o",
                         "--train", "t", "--eval", "e", "--doc-stride", "64"])
    assert "--doc-stride is a span_qa option; --task classification" in capsys.readouterr().err
    args = tool.parse_args(["--task", "token_classification", "--model", "m", "--output", "o",
                            "--train", "t", "--eval", "e", "--label-names", "O,B-PER",
                            "--unknown-labels", "skip"])
    assert tool.task_option_values(args) == {"label_names": ["O", "B-PER"],
                                             "unknown_labels": "skip", "window_stride": None,
                                             "max_windows": 8}


def test_the_tools_view_of_task_options_is_the_registry_s():
    # tools/finetune.py's --task choices: the fine-tunable tasks, with their specs' classes.
    light = _cli.task_options()
    assert sorted(light) == sorted(finetune_lib.fine_tunable_tasks())
    for name, options in light.items():
        assert options is registry.get_task(name).options, name


def test_task_json_is_checked_with_the_spec_s_schema(tmp_path, window_task):
    def write(info):
        with open(tmp_path / "task.json", "w") as f:
            json.dump(info, f)

    write({"task": "windows", "window_size": 1})
    with pytest.raises(ValueError, match=r"window_size must be >= 2\. Received: window_size=1"):
        model_dir_lib.read_task_info(str(tmp_path))
    write({"task": "windows", "task_config": {"window_size": "4"}})
    with pytest.raises(ValueError, match=r"task_config\.window_size must be an integer"):
        model_dir_lib.read_task_info(str(tmp_path))
    write({"task": "windows", "window_size": 3, "max_seq_length": 64})
    assert model_dir_lib.read_task_info(str(tmp_path))["window_size"] == 3
    # Generic keys are model_dir.py's, whatever the task.
    write({"task": "windows", "max_seq_length": 2})
    with pytest.raises(ValueError, match=r"max_seq_length must be >= 3"):
        model_dir_lib.read_task_info(str(tmp_path))
    # span_qa's keys come from span_qa's spec.
    assert registry.get_task("span_qa").task_json["doc_stride"] == {"type": "integer",
                                                                   "minimum": 1}
    write({"task": "span_qa", "doc_stride": 0})
    with pytest.raises(ValueError, match=r"doc_stride must be >= 1"):
        model_dir_lib.read_task_info(str(tmp_path))


def test_generic_options_refuse_task_fields_naming_the_task_s_class():
    with pytest.raises(TypeError, match=r"FinetuneOptions has no 'doc_stride'.*"
                       r"task_options=SpanQAOptions\(doc_stride=\.\.\.\)"):
        finetune_lib.FinetuneOptions(doc_stride=64)
    with pytest.raises(TypeError, match=r"ClassificationOptions\(label_names=.*"
                       r"TokenClassificationOptions\(label_names="):
        finetune_lib.FinetuneOptions(label_names=["a", "b"])
    generic = {f.name for f in dataclasses.fields(finetune_lib.FinetuneOptions)}
    for name in registry.task_names():
        options = registry.get_task(name).options
        if options is not None:
            task_fields = {f.name for f in dataclasses.fields(options)}
            assert not generic & task_fields, (name, generic & task_fields)
    assert finetune_lib.FinetuneOptions(epochs=2).epochs == 2


def test_task_options_validate_naming_the_value():
    with pytest.raises(ValueError, match=r"doc_stride to be an int >= 1\. Received: doc_stride=0"):
        SpanQAOptions(doc_stride=0)
    with pytest.raises(ValueError, match=r"unknown_labels='ignore'"):
        ClassificationOptions(unknown_labels="ignore")
    with pytest.raises(ValueError, match=r"'doc_stride' is not a classification option"):
        registry.get_task("classification").make_options(doc_stride=3)


def test_read_task_data_takes_the_task_s_options(tmp_path):
    path = tmp_path / "train.csv"
    path.write_text("sentence,y\ngood film,pos\nbad film,neg\n")
    examples = finetune_lib.read_task_data("classification", str(path), True,
                                           ClassificationOptions(text_column="sentence",
                                                                 label_column="y"))
    assert list(examples.texts) == ["good film", "bad film"]
    assert list(examples.labels) == ["pos", "neg"]
    examples = finetune_lib.read_task_data("classification", str(path), True,
                                           text_column="sentence", label_column="y")
    assert list(examples.labels) == ["pos", "neg"]
    with pytest.raises(TypeError, match=r"task_options for 'classification' must be "
                       r"ClassificationOptions\. Received: SpanQAOptions"):
        finetune_lib.read_task_data("classification", str(path), True, SpanQAOptions())


@pytest.mark.slow
def test_finetune_uses_task_options(tmp_path):
    model_dir = make_model_dir(str(tmp_path / "tiny"))
    path = tmp_path / "train.csv"
    path.write_text("sentence,y\n" + "good film,pos\nbad film,neg\n" * 4)
    task_options = ClassificationOptions(text_column="sentence", label_column="y",
                                         label_names=["pos", "neg"])
    data = finetune_lib.read_task_data("classification", str(path), True, task_options)
    finetune_lib.finetune(
        "classification", model_dir, str(tmp_path / "out"), data, data,
        finetune_lib.FinetuneOptions(epochs=1, batch_size=8, max_seq_length=16,
                                     jit_compile="off", log_every=100),
        task_options=task_options, progress="lines")
    with open(tmp_path / "out" / "task.json") as f:
        info = json.load(f)
    assert info["task_config"]["label_names"] == ["pos", "neg"]  # Not the sorted order.
    with pytest.raises(TypeError, match="must be ClassificationOptions"):
        finetune_lib.finetune("classification", model_dir, str(tmp_path / "out2"), data, data,
                              task_options=SpanQAOptions())
