"""Negative weight decay and clipping norms are refused, everywhere they enter (issue 23)."""

import os

import pytest

from keras_bert.training import create_optimizer
from keras_bert.training.finetune import FinetuneOptions
from keras_bert.training.pretrain import PretrainingConfig
from tests.conftest import run_tool



@pytest.mark.parametrize("make", [
    lambda **kw: FinetuneOptions(**kw),
    lambda **kw: PretrainingConfig(**kw),
    lambda **kw: create_optimizer(1e-4, 100, **kw),
], ids=["finetune", "pretrain", "create_optimizer"])
def test_negative_values_are_refused(make):
    with pytest.raises(ValueError, match=r"^Expected weight_decay >= 0\. "
                                         r"Received: weight_decay=-1$"):
        make(weight_decay=-1)
    with pytest.raises(ValueError, match=r"^Expected weight_decay >= 0\. "
                                         r"Received: weight_decay=-0\.01$"):
        make(weight_decay=-0.01)
    with pytest.raises(ValueError, match=r"^Expected global_clipnorm >= 0 \(0 or None: no "
                                         r"clipping\)\. Received: global_clipnorm=-1$"):
        make(global_clipnorm=-1.0)
    with pytest.raises(ValueError, match=r"Received: weight_decay=nan"):
        make(weight_decay=float("nan"))


def test_zero_and_none_still_mean_off():
    assert FinetuneOptions(weight_decay=0.0, global_clipnorm=None).global_clipnorm is None
    assert PretrainingConfig(weight_decay=0, global_clipnorm=0).global_clipnorm == 0
    optimizer = create_optimizer(1e-4, 100, weight_decay=0.0, global_clipnorm=None)
    assert optimizer.global_clipnorm is None


def test_finetune_tool_refuses_negative_weight_decay_in_one_line(tmp_path):
    status, _, stderr = run_tool(
        "finetune", "--task", "classification", "--model", tmp_path, "--train", tmp_path / "t.csv",
        "--output", tmp_path / "o", "--eval-fraction", "0.1", "--weight-decay", "-1")
    assert status != 0
    assert "Expected weight_decay >= 0. Received: weight_decay=-1" in stderr
    assert "Traceback" not in stderr
    assert not os.path.exists(tmp_path / "o")
