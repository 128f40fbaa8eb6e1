"""Op-set guard: every export runs on stock TF Serving (core TF + allowlisted text ops)."""

import pytest

from keras_bert.export.op_set import (
    ALLOWED_TEXT_OPS,
    disallowed_ops,
    graph_ops,
    non_core_ops,
)
from tests.export.conftest import write_library_op_export
from tests.export.export_kinds import KINDS


def test_every_export_kind_uses_only_core_ops_and_the_allowlist(three_exports):
    paths = [three_exports[kind] for kind in KINDS]
    bad = disallowed_ops(paths)
    assert not bad, "\n".join(
        f"{path}: ops that stock TF Serving may not link: {ops}. Use core TensorFlow ops "
        f"or one of {list(ALLOWED_TEXT_OPS)} (see keras_bert/export/op_set.py)."
        for path, ops in bad.items())
    # What the guard saw: the whole graphs, library functions included,
    # where the one text op lives (so a new text op would be seen too).
    for kind, path in three_exports.items():
        ops = graph_ops(path)
        assert "FastWordpieceTokenizeWithOffsets" in ops, kind
        assert {"StatefulPartitionedCall", "MatMul", "Softmax"} <= set(ops), kind
        assert len(ops) > 50, (kind, len(ops))
    # Today the allowlist is used exactly: the tokenizer is the only non-core op.
    assert non_core_ops(paths) == {path: ["FastWordpieceTokenizeWithOffsets"] for path in paths}


def test_guard_names_an_op_that_only_a_library_function_uses(tmp_path):
    # A SavedModel whose only non-core op sits in a function body, as
    # keras-nlp's RoundRobinTrim did (tensorflow/serving#2267).
    path = write_library_op_export(tmp_path)
    assert graph_ops(path) == ["FastWordpieceTokenizeWithOffsets", "Identity", "Placeholder",
                               "RoundRobinTrim"]
    assert disallowed_ops([path]) == {path: ["RoundRobinTrim"]}


@pytest.mark.slow  # Tens of seconds of the default tier's time (round 10).
def test_the_text_embedding_export_uses_only_core_ops_and_the_allowlist(tmp_path_factory):
    from tests.conftest import built_once
    from tests.export.test_embedding_export import build_embedding_export

    path = built_once(tmp_path_factory, "embedder", build_embedding_export)["export_dir"]
    assert not disallowed_ops([path])
    assert non_core_ops([path]) == {path: ["FastWordpieceTokenizeWithOffsets"]}
    assert {"FastWordpieceTokenizeWithOffsets", "MatMul", "Softmax"} <= set(graph_ops(path))
