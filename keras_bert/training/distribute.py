"""Choosing a tf.distribute strategy, and facts about this worker.

TF_CONFIG is set by a scheduler (TFJob, Ray Train, Vertex AI's prebuilt
containers) or the user, else built by `cluster_tf_config`. docs/cluster.md
shows each setup.
"""

import contextlib
import functools
import importlib.metadata
import json
import logging
import os
import socket
import time

import tensorflow as tf

STRATEGIES = ("auto", "cpu", "mirrored", "multiworker", "tpu")

logger = logging.getLogger(__name__)

# The variables `cluster_tf_config` reads on Kubernetes (docs/cluster.md).
WORKER_HOSTS_ENV = "KERAS_BERT_WORKER_HOSTS"  # "host0:port,host1:port,...", index order.
NUM_WORKERS_ENV = "KERAS_BERT_NUM_WORKERS"  # Or N, with the pods' headless Service:
WORKER_SERVICE_ENV = "KERAS_BERT_WORKER_SERVICE"  # hosts PREFIX-i.SERVICE (PREFIX from HOSTNAME).
WORKER_PORT_ENV = "KERAS_BERT_WORKER_PORT"  # Port of hosts given without one.
WORKER_INDEX_ENV = "KERAS_BERT_WORKER_INDEX"  # This worker's index (else JOB_COMPLETION_INDEX).
DEFAULT_WORKER_PORT = 2222
# Seconds a worker waits for the others to start (`wait_for_workers`): pods
# pulling an image or queued for a machine take minutes, a missing one forever.
CLUSTER_TIMEOUT = 600
_KUBERNETES_DOC = "See docs/cluster.md (Kubernetes)."
_VERTEX_DOC = "See docs/cluster.md (Vertex AI)."


def _positive_int(environ, name, doc, minimum=1):
    raw = environ[name]
    try:
        value = int(raw)
    except ValueError:
        value = None
    if value is None or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}. Received: {name}={raw!r}. {doc}")
    return value


def _kubernetes_tf_config(environ):
    """TF_CONFIG of worker INDEX among the KERAS_BERT_WORKER_HOSTS (or the
    KERAS_BERT_NUM_WORKERS hosts PREFIX-i.SERVICE of an Indexed Job / JobSet)."""
    port = (_positive_int(environ, WORKER_PORT_ENV, _KUBERNETES_DOC)
            if environ.get(WORKER_PORT_ENV) else DEFAULT_WORKER_PORT)
    index_name = WORKER_INDEX_ENV if environ.get(WORKER_INDEX_ENV) else "JOB_COMPLETION_INDEX"
    if not environ.get(index_name):
        raise ValueError(
            f"{WORKER_HOSTS_ENV} or {NUM_WORKERS_ENV} is set, but not this worker's index: "
            f"run as a Kubernetes Indexed Job (it sets JOB_COMPLETION_INDEX) or set "
            f"{WORKER_INDEX_ENV}. {_KUBERNETES_DOC}")
    index = _positive_int(environ, index_name, _KUBERNETES_DOC, minimum=0)
    if environ.get(WORKER_HOSTS_ENV):
        hosts = [h.strip() for h in environ[WORKER_HOSTS_ENV].split(",")]
        if not all(hosts):
            raise ValueError(
                f"{WORKER_HOSTS_ENV} has an empty entry. Received: "
                f"{WORKER_HOSTS_ENV}={environ[WORKER_HOSTS_ENV]!r}; expected "
                f"'host0:port,host1:port,...'. {_KUBERNETES_DOC}")
        hosts = [h if ":" in h else f"{h}:{port}" for h in hosts]
        if environ.get(NUM_WORKERS_ENV) and _positive_int(
                environ, NUM_WORKERS_ENV, _KUBERNETES_DOC) != len(hosts):
            raise ValueError(
                f"{NUM_WORKERS_ENV}={environ[NUM_WORKERS_ENV]} but {WORKER_HOSTS_ENV} names "
                f"{len(hosts)} hosts ({environ[WORKER_HOSTS_ENV]!r}). Set one of them.")
    else:
        count = _positive_int(environ, NUM_WORKERS_ENV, _KUBERNETES_DOC)
        service = environ.get(WORKER_SERVICE_ENV)
        if not service:
            raise ValueError(
                f"{NUM_WORKERS_ENV} is set, but not {WORKER_SERVICE_ENV}, the headless Service "
                f"that names the pods (the pod template's subdomain), nor {WORKER_HOSTS_ENV}. "
                f"{_KUBERNETES_DOC}")
        # An Indexed Job's pod is named JOB-INDEX, a JobSet's
        # JOBSET-REPLICATEDJOB-JOBINDEX-INDEX: the same prefix on every pod.
        hostname = environ.get("HOSTNAME") or socket.gethostname()
        suffix = f"-{index}"
        if not hostname.endswith(suffix) or len(hostname) == len(suffix):
            raise ValueError(
                f"The host name {hostname!r} does not end with -{index} ({index_name}), as an "
                f"Indexed Job's or a JobSet's pods do, so the other workers' names are unknown. "
                f"Set {WORKER_HOSTS_ENV} instead. {_KUBERNETES_DOC}")
        prefix = hostname[:-len(suffix)]
        hosts = [f"{prefix}-{i}.{service}:{port}" for i in range(count)]
    if len(set(hosts)) != len(hosts):
        raise ValueError(f"{WORKER_HOSTS_ENV} names a host twice: {hosts}. {_KUBERNETES_DOC}")
    if index >= len(hosts):
        raise ValueError(
            f"{index_name}={index} is not below the number of workers ({len(hosts)}: "
            f"{hosts}). Give every worker's host, in index order. {_KUBERNETES_DOC}")
    return {"cluster": {"worker": hosts}, "task": {"type": "worker", "index": index}}


def _vertex_tf_config(raw):
    """TF_CONFIG of Vertex AI's CLUSTER_SPEC: workerpool0 (the primary
    replica) is the chief, workerpool1's replicas are the workers."""
    try:
        spec = json.loads(raw)
        cluster, task = spec["cluster"], spec["task"]
        task_type, index = task["type"], int(task.get("index", 0))
    except (ValueError, KeyError, TypeError) as e:
        raise ValueError(
            f"CLUSTER_SPEC is not Vertex AI's JSON {{\"cluster\": {{\"workerpool0\": [...], ...}}, "
            f"\"task\": {{\"type\": ..., \"index\": ...}}}} ({type(e).__name__}: {e}). "
            f"Received: {raw!r}. {_VERTEX_DOC}") from None
    chief = cluster.get("workerpool0") or []
    if len(chief) != 1:
        raise ValueError(
            f"CLUSTER_SPEC's workerpool0 (the primary replica) must hold one host. Received: "
            f"{chief!r}. Set replicaCount 1 on the first worker pool. {_VERTEX_DOC}")
    others = {pool: cluster[pool] for pool in ("workerpool2", "workerpool3") if cluster.get(pool)}
    if others or task_type not in ("workerpool0", "workerpool1"):
        raise ValueError(
            f"keras_bert trains with MultiWorkerMirroredStrategy, where every replica is a "
            f"worker: parameter servers, a Reduction Server (workerpool2) and evaluators "
            f"(workerpool3) have no part. Received: task type {task_type!r}, other pools "
            f"{sorted(others)}. Put the workers in workerpool1 only. {_VERTEX_DOC}")
    tf_config = {"cluster": {"chief": list(chief)}}
    if cluster.get("workerpool1"):
        tf_config["cluster"]["worker"] = list(cluster["workerpool1"])
    count = len(tf_config["cluster"].get("worker", [])) if task_type == "workerpool1" else 1
    if not 0 <= index < count:
        raise ValueError(f"CLUSTER_SPEC's task index {index} is not in {task_type} "
                         f"({count} replicas). Received: {raw!r}. {_VERTEX_DOC}")
    tf_config["task"] = ({"type": "chief", "index": 0} if task_type == "workerpool0"
                         else {"type": "worker", "index": index})
    return tf_config


def cluster_tf_config(environ=None):
    """The TF_CONFIG that this process's scheduler implies, when TF_CONFIG is unset.

    The first that applies wins: TF_CONFIG set (None: nothing to build);
    Vertex AI's CLUSTER_SPEC (workerpool0 the chief, workerpool1 the
    workers); the KERAS_BERT_WORKER_* variables of a Kubernetes Indexed Job
    or JobSet (JOB_COMPLETION_INDEX alone builds nothing); else None.

    Args:
        environ: mapping of environment variables (default `os.environ`).

    Returns:
        dict (TF_CONFIG's JSON value) or None.

    Raises:
        ValueError: an incomplete or contradictory environment, naming the
            variable and what to set.

    Example:
    >>> cluster_tf_config({"KERAS_BERT_WORKER_HOSTS": "w0:2222,w1:2222",
    ...                    "JOB_COMPLETION_INDEX": "1"})
    {'cluster': {'worker': ['w0:2222', 'w1:2222']}, 'task': {'type': 'worker', 'index': 1}}
    """
    environ = os.environ if environ is None else environ
    if environ.get("TF_CONFIG"):
        return None
    if environ.get("CLUSTER_SPEC"):
        return _vertex_tf_config(environ["CLUSTER_SPEC"])
    if environ.get(WORKER_HOSTS_ENV) or environ.get(NUM_WORKERS_ENV):
        return _kubernetes_tf_config(environ)
    return None


def _tf_config(environ=None):
    """TF_CONFIG's value as a dict ({} if unset)."""
    raw = (os.environ if environ is None else environ).get("TF_CONFIG")
    try:
        return json.loads(raw) if raw else {}
    except json.JSONDecodeError as e:
        raise ValueError(f"TF_CONFIG is not valid JSON: {e}. Received: {raw!r}") from e


def _cluster_workers():
    """Number of workers (chief included) that TF_CONFIG names; 0 if unset."""
    cluster = _tf_config().get("cluster", {})
    return len(cluster.get("worker", [])) + len(cluster.get("chief", []))


def wait_for_workers(tf_config, timeout=CLUSTER_TIMEOUT, log_every=30):
    """Returns once every other task of `tf_config` accepts connections on its port.

    TensorFlow waits for a missing worker for ever, silently: here each worker
    listens on its own port, logs the tasks it waits for every `log_every`
    seconds, and raises TimeoutError naming them after `timeout`.
    """
    cluster, task = tf_config.get("cluster", {}), tf_config.get("task", {})
    tasks = {f"{job} {i}": address for job in ("chief", "worker")
             for i, address in enumerate(cluster.get(job, []))}
    ours = tasks.pop(f"{task.get('type')} {int(task.get('index', 0))}", "")
    dual = socket.has_dualstack_ipv6()  # IPv4 and IPv6 peers alike.
    try:
        listener = socket.create_server(("", int(ours.rpartition(":")[2])), dualstack_ipv6=dual,
                                        family=socket.AF_INET6 if dual else socket.AF_INET)
    except (OSError, ValueError):
        listener = None  # Taken (TensorFlow then says so), or not this task's.
    started = last_log = time.monotonic()
    try:
        while tasks:
            for name, address in list(tasks.items()):
                host, _, port = address.rpartition(":")
                with contextlib.suppress(OSError):
                    socket.create_connection((host.strip("[]"), int(port)), timeout=2).close()
                    del tasks[name]
            waited = time.monotonic() - started
            if tasks and waited >= timeout:
                raise TimeoutError(
                    f"The cluster did not form in {timeout:g} s: no answer from "
                    f"{', '.join(f'{n} at {a}' for n, a in tasks.items())}. Start it (the same "
                    f"command, with its index), check that this machine reaches that address "
                    f"(host name, port, firewall), or wait longer with --cluster-timeout "
                    f"(cluster_timeout=). See docs/cluster.md.")
            if tasks and time.monotonic() - last_log >= log_every:
                last_log = time.monotonic()
                for name, address in tasks.items():
                    logger.info("waiting for %s at %s (%.0f s of %g s)", name, address, waited,
                                timeout)
            time.sleep(0.5 if tasks else 0)
    finally:
        if listener is not None:
            listener.close()


_NOT_TPU_BUILD = ("TensorFlow here is not the tensorflow-tpu build (no `tensorflow-tpu` "
                  "distribution is installed). Way out: pip install 'bert-keras3[tpu]' && pip "
                  "install --force-reinstall --no-deps tensorflow-tpu==2.20.0 (README, Tested "
                  "versions).")


def _distribution(name, path=None):
    """The installed distribution `name` (on `path`, else sys.path), or None."""
    where = {} if path is None else {"path": path}  # Python 3.11 rejects path=None.
    return next(iter(importlib.metadata.distributions(name=name, **where)), None)


def tpu_install_problem(path=None):
    """Why this TensorFlow install cannot drive a TPU, or None when it can.

    tensorflow-text requires the `tensorflow` wheel, which installs the same
    files as `tensorflow-tpu` without TPU support. `path`: list of str, where
    to look for the distributions (None: sys.path).
    """
    tpu = _distribution("tensorflow-tpu", path)
    return _NOT_TPU_BUILD if tpu is None else _overwritten(tpu)


def _overwritten(tpu):
    """The problem message if another wheel's TensorFlow library replaced
    tensorflow-tpu's (the `tpu` distribution's RECORD size differs), else None."""
    for record in tpu.files or ():
        if record.name == "libtensorflow_framework.so.2" and record.size is not None:
            installed = record.locate()
            size = os.path.getsize(installed) if os.path.exists(installed) else None
            if size != record.size:
                return (f"tensorflow-tpu {tpu.version} is installed, but {installed} is not "
                        f"its file ({size} bytes, its RECORD says {record.size}): another "
                        "TensorFlow wheel, most likely the `tensorflow` one that tensorflow-text "
                        "requires, was installed over it and TPU support is gone. Way out: pip "
                        f"install --force-reinstall --no-deps tensorflow-tpu=={tpu.version}")
    return None


@functools.lru_cache(maxsize=None)
def xla_cpu_available():
    """Whether this TensorFlow can XLA-compile for the CPU (one tiny compile, cached);
    the tensorflow-tpu build cannot. Call it after the strategy is made (it runs an op).
    """
    try:
        with tf.device("/cpu:0"):
            tf.function(lambda x: x + 1.0, jit_compile=True, autograph=False)(tf.constant(1.0))
    except (tf.errors.NotFoundError, tf.errors.InvalidArgumentError,
            tf.errors.UnimplementedError):
        return False
    return True


def _tpu_strategy(tpu=None):
    installed = _distribution("tensorflow-tpu")
    overwritten = None if installed is None else _overwritten(installed)
    if overwritten is not None:
        raise RuntimeError(overwritten)  # A mixed install: do not start a TPU on it.
    try:
        resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu=tpu or "")
        if tpu not in (None, "", "local"):
            tf.config.experimental_connect_to_cluster(resolver)
        tf.tpu.experimental.initialize_tpu_system(resolver)
    except (ValueError, tf.errors.OpError) as e:
        if installed is not None:
            raise
        raise RuntimeError(f"The TPU could not be initialized ({e}). {_NOT_TPU_BUILD}") from e
    return tf.distribute.TPUStrategy(resolver)


def _tpu_reachable(tpu):
    """True if a TPU is named (--tpu, TPU_NAME) or attached to this host (the
    resolver is not asked: off Google Cloud it waits for the metadata server)."""
    if tpu or os.environ.get("TPU_NAME"):
        return True
    return any(os.path.exists(p) for p in ("/dev/accel0", "/dev/vfio/0"))


def _multi_worker_strategy(cluster_timeout):
    wait_for_workers(_tf_config(), cluster_timeout or CLUSTER_TIMEOUT)
    return tf.distribute.MultiWorkerMirroredStrategy()


def resolve_strategy(name="auto", tpu=None, cluster_timeout=None):
    """Returns the `tf.distribute.Strategy` for `name`.

    Call it first thing in a program: MultiWorkerMirroredStrategy and
    TPUStrategy must be created before other TensorFlow ops run.

    - "auto": a TPU if one is named (`tpu`, $TPU_NAME) or attached; else
      MultiWorkerMirroredStrategy when $TF_CONFIG (or `cluster_tf_config`)
      names more than one worker; else MirroredStrategy over several GPUs;
      else the default strategy (one device).
    - "cpu": OneDeviceStrategy on /cpu:0, even with GPUs present.
    - "mirrored": MirroredStrategy over all local GPUs, or the logical CPU
      devices when there is no GPU.
    - "multiworker": MultiWorkerMirroredStrategy, the cluster as for "auto".
    - "tpu": TPUStrategy through `TPUClusterResolver(tpu)`.

    Args:
        name: one of `STRATEGIES`.
        tpu: str, TPU name or grpc:// address for "tpu"/"auto" (None:
            $TPU_NAME or a TPU VM's local TPU).
        cluster_timeout: float, seconds to wait for the other workers of a
            multi-worker cluster (`wait_for_workers`), then TimeoutError;
            None: `CLUSTER_TIMEOUT`.
    """
    if name not in STRATEGIES:
        raise ValueError(f"Expected strategy to be one of {STRATEGIES}. Received: {name!r}")
    built = cluster_tf_config() if name in ("auto", "multiworker") else None
    if built is not None:  # MultiWorkerMirroredStrategy's resolver reads TF_CONFIG.
        os.environ["TF_CONFIG"] = json.dumps(built)
        source = "CLUSTER_SPEC" if os.environ.get("CLUSTER_SPEC") else "KERAS_BERT_WORKER_*"
        logger.info("TF_CONFIG built from %s: %s", source, os.environ["TF_CONFIG"])
    if name == "auto":
        if _tpu_reachable(tpu):
            return _tpu_strategy(tpu)
        if _cluster_workers() > 1:
            return _multi_worker_strategy(cluster_timeout)
        if len(tf.config.list_logical_devices("GPU")) > 1:
            return tf.distribute.MirroredStrategy()
        return tf.distribute.get_strategy()
    if name == "cpu":
        return tf.distribute.OneDeviceStrategy("/cpu:0")
    if name == "mirrored":
        devices = tf.config.list_logical_devices("GPU") or tf.config.list_logical_devices("CPU")
        return tf.distribute.MirroredStrategy([device.name for device in devices])
    if name == "multiworker":
        if _cluster_workers() == 0:
            raise ValueError(
                "strategy='multiworker' needs TF_CONFIG naming the cluster, e.g. "
                '{"cluster": {"worker": ["host1:12345", "host2:12345"]}, '
                '"task": {"type": "worker", "index": 0}} on the first machine, or the '
                "variables of Vertex AI (CLUSTER_SPEC) or of a Kubernetes Indexed Job "
                f"({WORKER_HOSTS_ENV} and JOB_COMPLETION_INDEX); see docs/cluster.md."
            )
        return _multi_worker_strategy(cluster_timeout)
    return _tpu_strategy(tpu)


def worker_info(strategy):
    """(task_id, num_workers, is_chief) of this process under `strategy`.

    Worker 0 (or the "chief" task) is the chief: it writes logs, the final
    model directory and the shared checkpoints.
    """
    resolver = getattr(strategy, "cluster_resolver", None)
    if not isinstance(strategy, tf.distribute.MultiWorkerMirroredStrategy) or (
        resolver is None or not resolver.cluster_spec().as_dict()
    ):
        return 0, 1, True
    task_type, task_id = resolver.task_type, resolver.task_id or 0
    spec = resolver.cluster_spec().as_dict()
    num_workers = len(spec.get("worker", [])) + len(spec.get("chief", []))
    if "chief" in spec:
        is_chief = task_type == "chief"
        index = 0 if is_chief else task_id + 1
    else:
        is_chief = task_type == "worker" and task_id == 0
        index = task_id
    return index, num_workers, is_chief


def strategy_name(strategy):
    """A readable name: "MultiWorkerMirroredStrategy", "default (one device)", ..."""
    if isinstance(strategy, tf.distribute.MultiWorkerMirroredStrategy):
        return "MultiWorkerMirroredStrategy"
    if type(strategy).__name__ == "_DefaultDistributionStrategy":
        return "default (one device)"
    return type(strategy).__name__


def worker_shard(environ=None):
    """(index, count) of this process among the cluster's workers, for work split
    into `count` shards without a strategy (tools/create_pretraining_data.py --shard auto).

    Read in `cluster_tf_config`'s order; ValueError names what to set (or
    `--shard I/N`) when no cluster variable is set or one is incomplete.

    Example:
    >>> worker_shard({"JOB_COMPLETION_INDEX": "2", "KERAS_BERT_NUM_WORKERS": "4"})
    (2, 4)
    """
    environ = os.environ if environ is None else environ
    if environ.get("TF_CONFIG"):
        tf_config = _tf_config(environ)
    elif environ.get("CLUSTER_SPEC"):
        tf_config = _vertex_tf_config(environ["CLUSTER_SPEC"])
    else:
        tf_config = None
    if tf_config is not None:
        cluster, task = tf_config.get("cluster", {}), tf_config.get("task", {})
        chiefs, workers = cluster.get("chief", []), cluster.get("worker", [])
        task_type, index = task.get("type"), int(task.get("index", 0))
        if task_type not in ("chief", "worker"):
            raise ValueError(f"TF_CONFIG's task type {task_type!r} is not a worker: only "
                             f"chief and worker tasks write shards. Give --shard I/N.")
        return (0 if task_type == "chief" else index + len(chiefs)), len(chiefs) + len(workers)
    index_name = WORKER_INDEX_ENV if environ.get(WORKER_INDEX_ENV) else "JOB_COMPLETION_INDEX"
    if not environ.get(index_name):
        raise ValueError(
            f"--shard auto found no cluster in the environment (TF_CONFIG, CLUSTER_SPEC, "
            f"{WORKER_INDEX_ENV} or JOB_COMPLETION_INDEX). Give --shard I/N (0-based).")
    index = _positive_int(environ, index_name, _KUBERNETES_DOC, minimum=0)
    if environ.get(NUM_WORKERS_ENV):
        count = _positive_int(environ, NUM_WORKERS_ENV, _KUBERNETES_DOC)
    elif environ.get(WORKER_HOSTS_ENV):
        count = len(environ[WORKER_HOSTS_ENV].split(","))
    else:
        raise ValueError(
            f"{index_name}={environ[index_name]} gives this worker's index but not the number "
            f"of shards: set {NUM_WORKERS_ENV} (the Job's completions), or give --shard "
            f"$({index_name})/N.")
    if index >= count:
        raise ValueError(f"{index_name}={index} is not below the number of workers "
                         f"({count}). {_KUBERNETES_DOC}")
    return index, count
