"""`import keras_bert` is cheap: names load on first use (PEP 562), light modules load alone.

Each check that depends on what a fresh process has imported runs in a
subprocess (this one has TensorFlow loaded already).
"""

import glob
import json
import os
import resource
import subprocess
import sys
import textwrap

import pytest

from keras_bert._lazy import lazy_exports
from tests.tasks.conftest import encoder, vocab_file  # noqa: F401 (fixtures)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TOOLS = sorted(p for p in glob.glob(os.path.join(ROOT, "tools", "*.py"))
               if not os.path.basename(p).startswith("_"))
HEAVY = ("tensorflow", "keras", "numpy", "torch")


def run_python(code, *args):
    """Runs `code` in a fresh interpreter with this checkout first on the path; its stdout."""
    env = dict(os.environ, PYTHONPATH=ROOT, TF_CPP_MIN_LOG_LEVEL="3")
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(code), *args],
                          capture_output=True, text=True, timeout=300, cwd=ROOT, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def test_light_modules_and_every_tool_s_parser_load_no_tensorflow():
    out = run_python(f"""
        import importlib.util, json, os, sys
        HEAVY = {HEAVY!r}
        report = {{}}
        import keras_bert.config, keras_bert.data.task_options
        import keras_bert.training.finetune_fields
        import keras_bert.tasks.classification.options
        import keras_bert.tasks.multi_label_classification.options
        import keras_bert.tasks.span_qa.options
        import keras_bert.tasks.token_classification.options
        report["options"] = [m for m in HEAVY if m in sys.modules]
        sys.path.insert(0, os.path.join({ROOT!r}, "tools"))
        for path in sys.argv[1:]:
            name = os.path.basename(path)[:-3]
            spec = importlib.util.spec_from_file_location(name + "_tool", path)
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
            module.build_parser()
            report[name] = [m for m in HEAVY if m in sys.modules]
        print(json.dumps(report))
    """, *TOOLS)
    report = json.loads(out)
    assert len(report) == len(TOOLS) + 1 and len(TOOLS) >= 15
    assert report == {name: [] for name in report}, report


def test_every_tool_s_help_takes_under_a_second_of_cpu():
    # CPU time, not wall time: the machine's other work does not count.
    for path in TOOLS:
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        done = subprocess.run([sys.executable, path, "--help"], capture_output=True, text=True,
                              timeout=60, cwd=ROOT)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        seconds = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        assert done.returncode == 0 and done.stdout.startswith("usage: "), path
        assert seconds < 1.0, (path, seconds)


def test_public_names_load_on_first_use_and_tasks_register_on_demand():
    out = run_python("""
        import sys
        import keras_bert
        print("tensorflow" in sys.modules, "keras_bert.tasks.classification.model" in sys.modules)
        from keras_bert import BertClassifier, BertConfig
        from keras_bert.tasks.classification.model import BertClassifier as same
        print(BertClassifier is same, BertConfig.from_preset("tiny").hidden_size > 0,
              "tensorflow" in sys.modules)
        from keras_bert.models.registry import get_task, task_names
        print(" ".join(task_names()))
        print(get_task("span_qa").model is keras_bert.BertSpanLabeler,
              keras_bert.tasks.span_qa.TASK is get_task("span_qa"))
        from keras_bert.training.finetune import FinetuneOptions, fine_tunable_tasks
        print(" ".join(fine_tunable_tasks()))
        try:
            FinetuneOptions(doc_stride=64)
        except TypeError as e:
            print("SpanQAOptions(doc_stride=...)" in str(e))
    """)
    assert out.splitlines() == [
        "False False",
        "True True True",
        "classification masked_lm multi_label_classification pretraining span_qa "
        "text_embedding token_classification",
        "True True",
        "classification multi_label_classification span_qa text_embedding token_classification",
        "True",
    ]


def test_keras_loaded_first_gets_the_classes_registered_at_import(tmp_path):
    # The README's `import keras; import keras_bert; keras.models.load_model(...)`.
    out = run_python("""
        import keras
        import keras_bert
        for name in ("BertClassifier", "BertEncoder", "TransformerEncoderBlock"):
            print(keras.saving.get_registered_object("keras_bert>" + name) is getattr(
                keras_bert, name))
    """)
    assert out.split() == ["True", "True", "True"]


def test_keras_imported_after_keras_bert_still_gets_the_classes_registered():
    # `import keras_bert; import keras; keras.models.load_model(...)`: the classes
    # are imported right after Keras is, not before (the first import stays light).
    out = run_python("""
        import sys
        import keras_bert
        print("tensorflow" in sys.modules)
        import keras
        print(keras.saving.get_registered_object("keras_bert>BertClassifier") is
              keras_bert.BertClassifier)
    """)
    assert out.split() == ["False", "True"]


@pytest.mark.slow  # Tens of seconds of the default tier's time (round 10).
def test_a_keras_file_loads_whichever_keras_bert_module_imported_keras(tmp_path):
    path = str(tmp_path / "m.keras")
    run_python(f"""
        import keras_bert
        from tests.conftest import tiny_config
        encoder = keras_bert.BertEncoder(**tiny_config().to_dict())
        keras_bert.BertClassifier(encoder, num_classes=2).save({path!r})
    """)
    # keras_bert.text imports Keras mid-import: the classes come on the first load_model.
    out = run_python(f"""
        import keras_bert.text
        import keras
        print(type(keras.models.load_model({path!r})).__name__)
    """)
    assert out.split()[-1] == "BertClassifier"


def test_preprocessor_from_pretrained_needs_no_model_import(encoder, vocab_file, tmp_path):
    model_dir = str(tmp_path / "encoder")
    encoder.save_pretrained(model_dir, vocab_file=vocab_file)
    out = run_python("""
        import sys
        from keras_bert.text import BertPreprocessor
        print("keras_bert.models" in sys.modules)
        preprocessor = BertPreprocessor.from_pretrained(sys.argv[1], max_seq_length=12)
        print(tuple(preprocessor(["a good movie " * 8])["token_ids"].shape))  # Truncated.
    """, model_dir)
    assert out.splitlines() == ["False", "(1, 12)"]


@pytest.fixture
def lazy_package(tmp_path, monkeypatch):
    """A package `lazy_pkg` whose names are lazy; `lazy_pkg.calls` records module runs."""
    package = tmp_path / "lazy_pkg"
    package.mkdir()
    (package / "heavy.py").write_text("import lazy_pkg\nlazy_pkg.calls.append('heavy')\n"
                                      "Model = type('Model', (), {})\nSIZE = 3\n")
    (package / "extra.py").write_text("VALUE = 7\n")
    (package / "__init__.py").write_text(
        "from keras_bert._lazy import lazy_exports\n"
        "calls = []\n"
        "__getattr__, __dir__, __all__ = lazy_exports(__name__, {'heavy': ['Model', 'SIZE']})\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    yield __import__("lazy_pkg")
    for name in [n for n in sys.modules if n == "lazy_pkg" or n.startswith("lazy_pkg.")]:
        del sys.modules[name]


def test_lazy_exports_load_once_on_first_use(lazy_package):
    assert lazy_package.calls == [] and lazy_package.__all__ == ["Model", "SIZE"]
    assert {"Model", "SIZE", "extra", "heavy"} <= set(dir(lazy_package))
    assert lazy_package.calls == []  # dir() imports nothing.
    model = lazy_package.Model
    assert model is sys.modules["lazy_pkg.heavy"].Model and lazy_package.calls == ["heavy"]
    assert lazy_package.SIZE == 3 and lazy_package.Model is model
    assert lazy_package.calls == ["heavy"] and vars(lazy_package)["Model"] is model  # Cached.
    assert lazy_package.extra.VALUE == 7  # A submodule is an attribute on first use.
    with pytest.raises(AttributeError, match="module 'lazy_pkg' has no attribute 'nothing'"):
        lazy_package.nothing
    from lazy_pkg import SIZE  # `from ... import` goes through the same path.
    assert SIZE == 3


def test_lazy_exports_refuse_a_missing_name_with_the_module_s_own_error(lazy_package):
    getattr_, _, _ = lazy_exports("lazy_pkg", {"heavy": ["Missing"]})
    with pytest.raises(AttributeError, match="lazy_pkg.heavy' has no attribute 'Missing'"):
        getattr_("Missing")
