"""Static check: every export kind loads in TF Serving 2.12-2.19 (tensorflow-text 2.12.1's ops)."""

import json
import os

import pytest

import keras_bert.tasks  # noqa: F401 (registers every task)
from keras_bert.export.op_set import TF_TEXT_2_12_OPS, missing_in_tf_text, read_op_list
from keras_bert.models.registry import get_task, task_names
from tests.export.conftest import write_library_op_export


def test_tf_text_2_12_op_list_is_the_wheels():
    ops = read_op_list()
    with open(TF_TEXT_2_12_OPS, encoding="utf-8") as f:
        header = f.readline()
    assert header.startswith("# The ops that tensorflow-text 2.12.1 registers")
    assert f"({len(ops)} ops)" in header
    # The fast WordPiece kernel (2.7) is there; ops added in later releases are not.
    assert "FastWordpieceTokenizeWithOffsets" in ops
    assert "WordpieceTokenizeWithOffsets" in ops and "RegexSplitWithOffsets" in ops
    assert "FastBertNormalize" in ops
    # keras-nlp's packer op, which TF Serving could not load (tensorflow/serving#2267).
    assert "TFText>RoundRobinTrim" not in ops


@pytest.mark.slow
def test_every_export_kind_uses_only_ops_of_tf_text_2_12(three_exports, tmp_path_factory):
    from tests.conftest import built_once
    from tests.export.test_embedding_export import build_embedding_export

    # Every kind tests/export/export_kinds.py builds (a kind added there is checked too), and
    # the text embedder's export that test_embedding_export.py checks (built once a run) ...
    embedder = built_once(tmp_path_factory, "embedder", build_embedding_export)["export_dir"]
    paths = list(three_exports.values()) + [embedder]
    missing = missing_in_tf_text(paths)
    assert not missing, "\n".join(
        f"{path}: ops that tensorflow-text 2.12.1 (TF Serving 2.12-2.19) does not register: "
        f"{ops}. Use core TensorFlow ops or an op of {TF_TEXT_2_12_OPS}." for path, ops in
        missing.items())
    # ... and every registered task's serving module is among them.
    modules = set()
    for path in paths:
        with open(os.path.join(path, "keras_bert_export.json"), encoding="utf-8") as f:
            modules.add(json.load(f)["module"])
    for name in task_names():
        serving = get_task(name).serving
        assert serving is None or serving.__name__ in modules, (
            f"Task {name!r} ({serving.__name__}) has no export in the op checks: add one to "
            f"tests/export/export_kinds.py (build_exports).")


def test_an_op_newer_than_tf_text_2_12_is_named(tmp_path):
    # test_op_set's synthetic export, seen against tensorflow-text 2.12's op list.
    path = write_library_op_export(tmp_path)
    assert missing_in_tf_text([path]) == {path: ["RoundRobinTrim"]}
