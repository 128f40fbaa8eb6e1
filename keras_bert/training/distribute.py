"""Choosing a tf.distribute strategy, and facts about this worker."""

import json
import os

import tensorflow as tf

STRATEGIES = ("auto", "cpu", "mirrored", "multiworker", "tpu")


def _cluster_workers():
    """Number of workers (chief included) that TF_CONFIG names; 0 if unset."""
    raw = os.environ.get("TF_CONFIG")
    if not raw:
        return 0
    try:
        cluster = json.loads(raw).get("cluster", {})
    except json.JSONDecodeError as e:
        raise ValueError(f"TF_CONFIG is not valid JSON: {e}. Received: {raw!r}") from e
    return len(cluster.get("worker", [])) + len(cluster.get("chief", []))


def _tpu_strategy(tpu=None):
    resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu=tpu or "")
    if tpu not in (None, "", "local"):
        tf.config.experimental_connect_to_cluster(resolver)
    tf.tpu.experimental.initialize_tpu_system(resolver)
    return tf.distribute.TPUStrategy(resolver)


def _tpu_reachable(tpu):
    """True if a TPU is named (--tpu, TPU_NAME) or attached to this host.

    The resolver is not asked blindly: off Google Cloud it would wait for
    the metadata server.
    """
    if tpu or os.environ.get("TPU_NAME"):
        return True
    return any(os.path.exists(p) for p in ("/dev/accel0", "/dev/vfio/0"))


def _local_devices():
    gpus = tf.config.list_logical_devices("GPU")
    if gpus:
        return [d.name for d in gpus]
    return [d.name for d in tf.config.list_logical_devices("CPU")]


def resolve_strategy(name="auto", tpu=None):
    """Returns the `tf.distribute.Strategy` for `name`.

    Call it first thing in a program: MultiWorkerMirroredStrategy and
    TPUStrategy must be created before other TensorFlow ops run.

    - "auto": a TPU if one is named (`tpu`, $TPU_NAME) or attached; else
      MultiWorkerMirroredStrategy when $TF_CONFIG names more than one
      worker; else MirroredStrategy over all GPUs when there are several;
      else the default strategy (one device).
    - "cpu": OneDeviceStrategy on /cpu:0, even with GPUs present.
    - "mirrored": MirroredStrategy over all local GPUs, or over all logical
      CPU devices when there is no GPU (several only if configured with
      `tf.config.set_logical_device_configuration`, as tests do).
    - "multiworker": MultiWorkerMirroredStrategy; the cluster comes from
      $TF_CONFIG (one process per machine, same command on each).
    - "tpu": TPUStrategy through `TPUClusterResolver(tpu)`. Untested here
      (no TPU); it is the standard Cloud TPU setup.

    Args:
        name: one of `STRATEGIES`.
        tpu: str, TPU name or grpc:// address for "tpu"/"auto" (None:
            $TPU_NAME or a TPU VM's local TPU).
    """
    if name not in STRATEGIES:
        raise ValueError(f"Expected strategy to be one of {STRATEGIES}. Received: {name!r}")
    if name == "auto":
        if _tpu_reachable(tpu):
            return _tpu_strategy(tpu)
        if _cluster_workers() > 1:
            return tf.distribute.MultiWorkerMirroredStrategy()
        if len(tf.config.list_logical_devices("GPU")) > 1:
            return tf.distribute.MirroredStrategy()
        return tf.distribute.get_strategy()
    if name == "cpu":
        return tf.distribute.OneDeviceStrategy("/cpu:0")
    if name == "mirrored":
        return tf.distribute.MirroredStrategy(_local_devices())
    if name == "multiworker":
        if _cluster_workers() == 0:
            raise ValueError(
                "strategy='multiworker' needs TF_CONFIG naming the cluster, e.g. "
                '{"cluster": {"worker": ["host1:12345", "host2:12345"]}, '
                '"task": {"type": "worker", "index": 0}} on the first machine.'
            )
        return tf.distribute.MultiWorkerMirroredStrategy()
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
