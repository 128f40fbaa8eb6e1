"""Ray Train: keras_bert's jobs in a 2-worker local TensorflowTrainer train as without Ray."""

import json
import os

import numpy as np
import pytest

from tests.conftest import run_tool
from tests.training.conftest import REPO, distributed_settings
from tests.training.distributed_worker import STEPS
from tests.training.test_cluster_finetune import _args, _data, _weights
from tests.training.test_distribute import _assert_same_training


# Ray Train (and the pandas it brings, which Keras imports at start) lives in its own
# venv: `bash tools/compat.sh ray` runs this module there, as .ci/run does.
ray = pytest.importorskip(
    "ray", reason="Ray Train is not in .venv; bash tools/compat.sh ray runs these tests "
                  "in .venv-ray (the [ray] extra)")


@pytest.fixture(scope="module")
def local_ray():
    # Two CPUs: one per worker. The workers import this worktree's keras_bert.
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=True,
             runtime_env={"env_vars": {"PYTHONPATH": REPO}})
    yield
    ray.shutdown()


def _fit(loop_config, tmp_path, name):
    """Runs keras_bert's loop on 2 Ray workers; returns (Result, reports, what workers saw)."""
    from ray.train import RunConfig, ScalingConfig
    from ray.train.tensorflow import TensorflowTrainer

    from tests.training.ray_probe import ReportLog, probed_loop

    probe = tmp_path / f"probe-{name}"
    probe.mkdir()
    trainer = TensorflowTrainer(
        probed_loop, train_loop_config={**loop_config, "probe_dir": str(probe)},
        scaling_config=ScalingConfig(num_workers=2, use_gpu=False,
                                     resources_per_worker={"CPU": 1}),
        run_config=RunConfig(storage_path=str(tmp_path / "ray"), name=name,
                             callbacks=[ReportLog(str(probe / "reports.jsonl"))]))
    result = trainer.fit()
    reports = [json.loads(line) for line in (probe / "reports.jsonl").read_text().splitlines()]
    seen = [json.loads((probe / f"worker-{i}.json").read_text()) for i in range(2)]
    return result, reports, seen


def _check_workers(seen):
    # Ray set TF_CONFIG (two workers) and TF_USE_LEGACY_KERAS=1; keras_bert unset
    # the latter (tf_keras is not installed) and trained.
    assert [s["tf_config"]["task"]["index"] for s in seen] == [0, 1]
    assert all(len(s["tf_config"]["cluster"]["worker"]) == 2 for s in seen)
    assert [s["legacy_keras_at_start"] for s in seen] == ["1", "1"]
    assert [s["legacy_keras_after_import"] for s in seen] == [None, None]


@pytest.mark.slow  # A local Ray cluster with two TensorFlow workers, then the reference run.
def test_ray_finetune_matches_one_process_and_reports_each_epoch(tmp_path, local_ray):
    root = _data(tmp_path, 48)  # 6 steps an epoch, 12 in all.
    # test_cluster_finetune's run (tools/finetune.py's flags as options): no dropout,
    # global batch 8.
    config = {"job": "finetune", "task": "classification", "model": str(root / "tiny"),
              "train": str(root / "train.csv"), "eval": str(root / "dev.csv"),
              "output": str(tmp_path / "ray-out"),
              "options": {"epochs": 2, "batch_size": 8, "max_seq_length": 16,
                          "learning_rate": 1e-3, "dropout_rate": 0.0,
                          "early_stopping_patience": 0, "jit_compile": "off",
                          "log_every": 1}}
    result, reports, seen = _fit(config, tmp_path, "finetune")
    assert result.error is None, result.error
    _check_workers(seen)
    # The reference: tools/finetune.py in one process (here: no TensorFlow import) with the
    # same global batch 8, which two workers on localhost equal to 1e-6
    # (test_cluster_finetune).
    reference = tmp_path / "reference"
    code, out, err = run_tool("finetune", *_args(root, reference))
    assert code == 0, (out + err)[-3000:]
    for got, want in zip(_weights(tmp_path / "ray-out"), _weights(reference)):
        np.testing.assert_allclose(got, want, atol=1e-6)
    # Ray got each epoch's metrics from both workers (the same), and a checkpoint
    # (the model directory) with each epoch that became the best.
    task = json.loads((reference / "task.json").read_text())
    assert [[m["epoch"] for m in r["metrics"]] for r in reports] == [[1, 1], [2, 2]]
    assert all(r["metrics"][0] == r["metrics"][1] for r in reports)
    assert [r["checkpoint"] for r in reports] == [r["metrics"][0]["improved"] for r in reports]
    best = reports[task["epoch"] - 1]["metrics"][0]
    assert best["improved"] and best["accuracy"] == pytest.approx(
        task["eval_metrics"]["accuracy"], abs=1e-6)
    assert result.metrics["epoch"] == task["epoch"]  # The latest checkpoint's: the best.
    assert result.checkpoint is not None
    with result.checkpoint.as_directory() as checkpoint:
        assert sorted(os.listdir(checkpoint)) == sorted(os.listdir(tmp_path / "ray-out"))
        for got, want in zip(_weights(checkpoint), _weights(tmp_path / "ray-out")):
            np.testing.assert_array_equal(got, want)
    # The checkpoint folder is removed at the end, as by the tool.
    assert not (tmp_path / "ray-out.checkpoints").exists()


@pytest.mark.slow  # A local Ray cluster with two TensorFlow workers pretraining.
def test_ray_pretraining_matches_one_process_and_reports_every_n_steps(
        replica_data, single, tmp_path, local_ray):
    from keras_bert.models import BertPretrainer

    # test_distribute's run (its two TF_CONFIG workers match this one process).
    settings = distributed_settings(replica_data, tmp_path, "auto")
    config = {"job": "pretrain", "train": replica_data, "output": str(tmp_path / "run"),
              "bert_config": settings["bert_config"], "report_every": 2,
              "config": {"num_train_steps": STEPS, "batch_size": 16, "learning_rate": 1e-2,
                         "warmup_steps": 0, "global_clipnorm": 0.1, "log_every": 1,
                         "checkpoint_every": 100, "shuffle_buffer_size": 1, "seed": 2}}
    result, reports, seen = _fit(config, tmp_path, "pretrain")
    assert result.error is None, result.error
    _check_workers(seen)
    # Every 2 steps and at the end, from both workers; each with a model directory.
    assert [[m["step"] for m in r["metrics"]] for r in reports] == [[2, 2], [4, 4], [5, 5]]
    assert all(r["checkpoint"] for r in reports)
    ref_weights, ref_record = single
    # Logs are running means since the last reset (log_every 1): the step's loss.
    assert [r["metrics"][0]["loss"] for r in reports] == pytest.approx(
        [ref_record["losses"][i] for i in (1, 3, 4)], rel=1e-5)
    with result.checkpoint.as_directory() as checkpoint:
        weights = BertPretrainer.from_pretrained(checkpoint).get_weights()
    _assert_same_training((weights, {"losses": ref_record["losses"]}), single)
