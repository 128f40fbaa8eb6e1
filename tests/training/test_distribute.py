"""Multi-worker and mirrored training match one process with the same global batch."""

import json
import os
import socket

import numpy as np
import pytest
import tensorflow as tf

from keras_bert.training import resolve_strategy, worker_info
from tests import writer_harness
from tests.training.conftest import distributed_settings, load_dump, subprocess_env
from tests.training.distributed_worker import STEPS

WORKER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "distributed_worker.py")


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# `single`, the one-process reference: tests/training/conftest.py.


def _assert_same_training(result, reference):
    (weights, record), (ref_weights, ref_record) = result, reference
    assert len(record["losses"]) == STEPS
    np.testing.assert_allclose(record["losses"], ref_record["losses"], rtol=1e-5)
    assert record["losses"][-1] < record["losses"][0]  # It trained.
    # Summing two replicas' halves rounds the gradient differently from one
    # batch. Adam divides by sqrt(v_hat) + epsilon, so for a weight whose
    # gradient is near 0 that rounding becomes a visible step difference;
    # PyTorch's epsilon form (AdamW) damps it 30x less at step 1 than Keras'
    # did: measured up to 4e-6 (Keras' form 6e-7), against steps of ~1e-2.
    for w, r in zip(weights, ref_weights):
        np.testing.assert_allclose(w, r, atol=1e-5)


def _start(settings, forker, **env):
    """distributed_worker.py with `settings` in a process of its own, forked from `forker`."""
    return writer_harness.start(WORKER, json.dumps(settings), env=subprocess_env(**env),
                                forker=forker)


def _wait(procs, timeout=300):
    """The exit statuses of `procs`; kills those still running after `timeout` seconds."""
    try:
        return [p.wait(timeout=timeout) for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()


@pytest.mark.slow  # two worker processes over local gRPC
def test_two_workers_on_localhost_match_one_process(replica_data, single, tmp_path, forker):
    ports = [_free_port(), _free_port()]
    cluster = {"worker": [f"127.0.0.1:{p}" for p in ports]}
    # strategy "auto" must pick MultiWorkerMirroredStrategy from TF_CONFIG;
    # jit_compile "auto" is on (float32): XLA forward/backward per replica.
    procs = [_start(distributed_settings(replica_data, tmp_path, "auto"), forker,
                    TF_CONFIG=json.dumps({"cluster": cluster,
                                          "task": {"type": "worker", "index": index}}))
             for index in range(2)]
    codes = _wait(procs)
    assert codes == [0, 0], writer_harness.errors(procs[0]) + writer_harness.errors(procs[1])
    chief, other = load_dump(tmp_path, 0), load_dump(tmp_path, 1)
    assert chief[1]["replicas"] == 2
    for a, b in zip(chief[0], other[0]):  # Both workers hold the same model.
        np.testing.assert_array_equal(a, b)
    _assert_same_training(chief, single)
    # Only the chief writes the model directory.
    assert os.path.exists(tmp_path / "run" / "model" / "model.weights.h5")
    assert not os.path.exists(tmp_path / "run" / "checkpoints" / ".tmp" / "worker-1")


@pytest.mark.slow
def test_mirrored_over_two_cpu_devices_matches_one_device(replica_data, single, tmp_path,
                                                          forker):
    # Without XLA here (the two workers above compile their step with it).
    settings = distributed_settings(replica_data, tmp_path, "mirrored", logical_cpus=2,
                                    jit_compile="off")
    (proc,) = procs = [_start(settings, forker)]
    assert _wait(procs) == [0], writer_harness.errors(proc)
    result = load_dump(tmp_path)
    assert result[1]["replicas"] == 2
    _assert_same_training(result, single)


def test_resolve_strategy(monkeypatch):
    monkeypatch.delenv("TF_CONFIG", raising=False)
    monkeypatch.delenv("TPU_NAME", raising=False)
    auto = resolve_strategy("auto")
    assert auto is tf.distribute.get_strategy() and worker_info(auto) == (0, 1, True)
    assert isinstance(resolve_strategy("cpu"), tf.distribute.OneDeviceStrategy)
    with pytest.raises(ValueError, match="TF_CONFIG"):
        resolve_strategy("multiworker")
    with pytest.raises(ValueError, match="Expected strategy"):
        resolve_strategy("gpus")
