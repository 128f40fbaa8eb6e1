"""TF_CONFIG built from a scheduler's variables: Vertex AI's CLUSTER_SPEC, Kubernetes'."""

import json
import logging
import os
import socket
import threading
import time

import pytest
import tensorflow as tf

from keras_bert.training import distribute
from keras_bert.training.distribute import (
    cluster_tf_config,
    resolve_strategy,
    wait_for_workers,
    worker_info,
)
from tests.conftest import run_tool
from tests.training.finetune_fixtures import write_sentiment_splits
from tests.training.test_distribute import _free_port


def _vertex(task_type, index, pools):
    return {"CLUSTER_SPEC": json.dumps({
        "cluster": pools, "environment": "cloud", "job": {"workerPoolSpecs": []},
        "task": {"type": task_type, "index": index, "trial": ""}})}


VERTEX_POOLS = {"workerpool0": ["cmle-training-workerpool0-ab12-0:2222"],
                "workerpool1": ["cmle-training-workerpool1-ab12-0:2222",
                                "cmle-training-workerpool1-ab12-1:2222"]}
VERTEX_CLUSTER = {"chief": ["cmle-training-workerpool0-ab12-0:2222"],
                  "worker": ["cmle-training-workerpool1-ab12-0:2222",
                             "cmle-training-workerpool1-ab12-1:2222"]}


@pytest.mark.parametrize("task_type,index,expected_task", [
    ("workerpool0", 0, {"type": "chief", "index": 0}),
    ("workerpool1", 0, {"type": "worker", "index": 0}),
    ("workerpool1", 1, {"type": "worker", "index": 1}),
])
def test_vertex_cluster_spec(task_type, index, expected_task):
    built = cluster_tf_config(_vertex(task_type, index, VERTEX_POOLS))
    assert built == {"cluster": VERTEX_CLUSTER, "task": expected_task}


def test_vertex_one_replica_is_a_chief_alone():
    pools = {"workerpool0": VERTEX_POOLS["workerpool0"]}
    assert cluster_tf_config(_vertex("workerpool0", 0, pools)) == {
        "cluster": {"chief": VERTEX_POOLS["workerpool0"]}, "task": {"type": "chief", "index": 0}}


@pytest.mark.parametrize("environ,match", [
    ({"CLUSTER_SPEC": "{not json"}, "CLUSTER_SPEC is not Vertex AI's JSON"),
    ({"CLUSTER_SPEC": json.dumps({"cluster": VERTEX_POOLS})}, "KeyError: 'task'"),
    (_vertex("workerpool0", 0, {"workerpool1": VERTEX_POOLS["workerpool1"]}),
     "workerpool0 .* must hold one host"),
    (_vertex("workerpool1", 0, {**VERTEX_POOLS, "workerpool2": ["ps-0:2222"]}),
     r"Received: task type 'workerpool1', other pools \['workerpool2'\]"),
    (_vertex("workerpool3", 0, {**VERTEX_POOLS, "workerpool3": ["eval-0:2222"]}),
     "evaluators"),
    (_vertex("workerpool1", 2, VERTEX_POOLS), "task index 2 is not in workerpool1 .2 replicas"),
])
def test_vertex_incomplete_cluster_spec(environ, match):
    with pytest.raises(ValueError, match=match):
        cluster_tf_config(environ)


def test_kubernetes_worker_hosts_and_completion_index():
    environ = {"KERAS_BERT_WORKER_HOSTS": "bert-0.workers:2222, bert-1.workers,bert-2.workers",
               "KERAS_BERT_WORKER_PORT": "3000", "JOB_COMPLETION_INDEX": "2"}
    assert cluster_tf_config(environ) == {
        "cluster": {"worker": ["bert-0.workers:2222", "bert-1.workers:3000",
                               "bert-2.workers:3000"]},
        "task": {"type": "worker", "index": 2}}
    # An explicit index wins over the completion index (several replicated jobs).
    explicit = cluster_tf_config({**environ, "KERAS_BERT_WORKER_INDEX": "0"})
    assert explicit["task"] == {"type": "worker", "index": 0}


@pytest.mark.parametrize("hostname,prefix", [
    ("finetune-1", "finetune"),  # An Indexed Job's pod: JOB-INDEX.
    ("bert-workers-0-1", "bert-workers-0"),  # A JobSet's: JOBSET-REPLICATEDJOB-JOBINDEX-INDEX.
])
def test_kubernetes_naming_rule(hostname, prefix):
    environ = {"KERAS_BERT_NUM_WORKERS": "3", "KERAS_BERT_WORKER_SERVICE": "svc",
               "JOB_COMPLETION_INDEX": "1", "HOSTNAME": hostname}
    assert cluster_tf_config(environ) == {
        "cluster": {"worker": [f"{prefix}-{i}.svc:2222" for i in range(3)]},
        "task": {"type": "worker", "index": 1}}


@pytest.mark.parametrize("environ,match", [
    ({"KERAS_BERT_WORKER_HOSTS": "a:1,b:1"}, "not this worker's index.*JOB_COMPLETION_INDEX"),
    ({"KERAS_BERT_WORKER_HOSTS": "a:1,b:1", "JOB_COMPLETION_INDEX": "2"},
     "JOB_COMPLETION_INDEX=2 is not below the number of workers .2"),
    ({"KERAS_BERT_WORKER_HOSTS": "a:1,b:1", "JOB_COMPLETION_INDEX": "one"},
     "JOB_COMPLETION_INDEX must be an integer >= 0. Received: JOB_COMPLETION_INDEX='one'"),
    ({"KERAS_BERT_WORKER_HOSTS": "a:1,,b:1", "JOB_COMPLETION_INDEX": "0"}, "an empty entry"),
    ({"KERAS_BERT_WORKER_HOSTS": "a:1,a:1", "JOB_COMPLETION_INDEX": "0"}, "a host twice"),
    ({"KERAS_BERT_WORKER_HOSTS": "a:1,b:1", "KERAS_BERT_NUM_WORKERS": "3",
      "JOB_COMPLETION_INDEX": "0"}, "KERAS_BERT_NUM_WORKERS=3 but .* names 2 hosts"),
    ({"KERAS_BERT_NUM_WORKERS": "2", "JOB_COMPLETION_INDEX": "0"},
     "not KERAS_BERT_WORKER_SERVICE"),
    ({"KERAS_BERT_NUM_WORKERS": "0", "JOB_COMPLETION_INDEX": "0"},
     "KERAS_BERT_NUM_WORKERS must be an integer >= 1"),
    ({"KERAS_BERT_NUM_WORKERS": "2", "KERAS_BERT_WORKER_SERVICE": "svc",
      "JOB_COMPLETION_INDEX": "1", "HOSTNAME": "laptop"},
     "'laptop' does not end with -1 .*Set KERAS_BERT_WORKER_HOSTS"),
])
def test_kubernetes_incomplete_environment(environ, match):
    with pytest.raises(ValueError, match=match):
        cluster_tf_config(environ)


def test_nothing_to_build():
    # TF_CONFIG wins over everything; an Indexed Job alone may run independent jobs.
    assert cluster_tf_config({"TF_CONFIG": "{}", **_vertex("workerpool0", 0, VERTEX_POOLS)}) is None
    assert cluster_tf_config({"JOB_COMPLETION_INDEX": "3", "HOSTNAME": "sweep-3"}) is None
    assert cluster_tf_config({}) is None


def test_resolve_strategy_sets_the_built_tf_config(monkeypatch):
    monkeypatch.setenv("TF_CONFIG", "")  # Recorded, so the TF_CONFIG set below is undone.
    monkeypatch.delenv("TF_CONFIG")
    monkeypatch.delenv("TPU_NAME", raising=False)
    monkeypatch.setenv("KERAS_BERT_WORKER_HOSTS", "localhost:2222")
    monkeypatch.setenv("JOB_COMPLETION_INDEX", "0")
    strategy = resolve_strategy("auto")
    # One worker: this process trains alone, but TF_CONFIG now names it.
    assert strategy is tf.distribute.get_strategy() and worker_info(strategy) == (0, 1, True)
    assert json.loads(os.environ["TF_CONFIG"]) == {
        "cluster": {"worker": ["localhost:2222"]}, "task": {"type": "worker", "index": 0}}
    assert distribute._cluster_workers() == 1
    monkeypatch.delenv("TF_CONFIG")
    monkeypatch.setenv("JOB_COMPLETION_INDEX", "5")
    with pytest.raises(ValueError, match="JOB_COMPLETION_INDEX=5"):
        resolve_strategy("multiworker")


def test_legacy_keras_without_tf_keras_is_unset(monkeypatch):
    # Ray Train sets TF_USE_LEGACY_KERAS=1; tensorflow_text's import then needs tf_keras.
    import importlib.util

    import keras_bert

    environ = {"TF_USE_LEGACY_KERAS": "1", "OTHER": "x"}
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)
    with pytest.warns(UserWarning, match="tf_keras is not installed"):
        assert keras_bert._drop_unusable_legacy_keras(environ)
    assert environ == {"OTHER": "x"}
    assert not keras_bert._drop_unusable_legacy_keras({"TF_USE_LEGACY_KERAS": "0"})
    # With tf_keras installed the variable is the user's choice.
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: object())
    kept = {"TF_USE_LEGACY_KERAS": "True"}
    assert not keras_bert._drop_unusable_legacy_keras(kept) and kept == {"TF_USE_LEGACY_KERAS": "True"}


def _two_workers(index):
    ports = [_free_port(), _free_port()]
    return ports, {"cluster": {"worker": [f"127.0.0.1:{p}" for p in ports]},
                   "task": {"type": "worker", "index": index}}


def test_workers_wait_for_each_other_then_for_a_missing_one_with_a_bound(caplog):
    # Issue 46: a worker whose peer never started waited for ever, without a word.
    ports, config = _two_workers(0)
    servers = []

    def worker(index):  # Waits, then serves on its port (as TensorFlow's server would).
        wait_for_workers({**config, "task": {"type": "worker", "index": index}}, 30)
        servers.append(socket.create_server(("127.0.0.1", ports[index])))

    started = time.monotonic()
    threads = [threading.Thread(target=worker, args=(i,)) for i in (1, 0)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert len(servers) == 2 and time.monotonic() - started < 10  # Each saw the other.
    for server in servers:
        server.close()
    caplog.set_level(logging.INFO, logger="keras_bert")
    started = time.monotonic()
    with pytest.raises(TimeoutError, match=rf"did not form in 1.5 s: no answer from worker 1 at "
                                           rf"127.0.0.1:{ports[1]}.*--cluster-timeout"):
        wait_for_workers(config, timeout=1.5, log_every=0.5)
    assert 1.5 <= time.monotonic() - started < 5
    assert f"waiting for worker 1 at 127.0.0.1:{ports[1]}" in caplog.text


def test_the_finetune_tool_names_the_worker_that_never_started(tmp_path, monkeypatch,
                                                               tiny_model_dir):
    # In this process: the tool stops in wait_for_workers, before any strategy is made.
    root = tmp_path / "data"
    root.mkdir()
    write_sentiment_splits(root, 16, 8, model_dir=tiny_model_dir)
    ports, _ = _two_workers(0)
    monkeypatch.setenv("TF_CONFIG", "")  # Recorded, so the TF_CONFIG the tool sets is undone.
    monkeypatch.delenv("TF_CONFIG")
    monkeypatch.delenv("TPU_NAME", raising=False)
    monkeypatch.setenv("KERAS_BERT_WORKER_HOSTS", f"127.0.0.1:{ports[0]},127.0.0.1:{ports[1]}")
    monkeypatch.setenv("JOB_COMPLETION_INDEX", "0")
    status, out, err = run_tool(
        "finetune", "--task", "classification", "--model", root / "tiny", "--train",
        root / "train.csv", "--eval", root / "dev.csv", "--output", tmp_path / "out",
        "--cluster-timeout", "2")
    assert status == 1, out + err
    assert (f"The cluster did not form in 2 s: no answer from worker 1 at 127.0.0.1:{ports[1]}"
            in err), out + err
    assert not (tmp_path / "out").exists()
