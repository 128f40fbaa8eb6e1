"""`import keras_bert` in a fresh interpreter: every public name, both spellings, in
either import order with Keras; nothing added to the import system; Keras' own functions."""

import json
import os
import subprocess
import sys
import textwrap

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def fresh_python(code):
    """Runs `code` in a new interpreter (this checkout first on the path); its last stdout line."""
    env = dict(os.environ, PYTHONPATH=ROOT, TF_CPP_MIN_LOG_LEVEL="3")
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, timeout=300, cwd=ROOT, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout.strip().splitlines()[-1]


@pytest.mark.parametrize("before, after", [("", ""), ("import keras", ""), ("", "import keras")])
def test_every_public_name_in_a_fresh_process(before, after):
    report = json.loads(fresh_python(f"""
        import json, sys
        {before}
        import keras_bert
        {after}
        import keras
        names = keras_bert.__all__
        attribute = {{n: type(getattr(keras_bert, n)).__name__ for n in names}}
        imported = {{}}
        for n in names:
            exec(f"from keras_bert import {{n}} as value")
            imported[n] = value is getattr(keras_bert, n)
        registered = sorted(n for n in names if isinstance(getattr(keras_bert, n), type)
                            and keras.saving.get_registered_object("keras_bert>" + n)
                            is getattr(keras_bert, n))
        finders = [type(f).__module__ for f in sys.meta_path if "keras_bert" in type(f).__module__]
        print(json.dumps({{"names": names, "attribute": attribute, "imported": imported,
                          "registered": registered, "finders": finders,
                          "load_model": keras.models.load_model.__module__,
                          "subpackages": [keras_bert.checkpoints.convert_checkpoint.__name__,
                                          keras_bert.export.export_model.__name__]}}))
    """))
    names = report["names"]
    assert {"BertClassifier", "BertEncoder", "BertPreprocessor", "BertTokenizer",
            "BertTextEmbedder", "BertConfig"} <= set(names)
    assert all(kind == "type" for kind in report["attribute"].values()), report["attribute"]
    assert all(report["imported"].values()), report["imported"]
    # Every Keras object among them registers where it is defined (not BertConfig, a dataclass,
    # nor BertTokenizer / BertPreprocessor if they are no Keras objects).
    assert {"BertClassifier", "BertEncoder", "BertMaskedLM", "BertMultiLabelClassifier",
            "BertSpanLabeler", "BertTextEmbedder", "BertTokenClassifier", "BertPretrainer",
            "TransformerEncoderBlock", "BertEmbeddings", "Pooler"} <= set(report["registered"])
    assert report["finders"] == [] and report["load_model"].startswith("keras.")
    assert report["subpackages"] == ["convert_checkpoint", "export_model"]
