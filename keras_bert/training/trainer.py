"""A resumable training loop for Keras models under any tf.distribute strategy.

Why not `model.fit`: Keras 3 `fit` under MultiWorkerMirroredStrategy fails
on TF 2.21 (keras-team/keras#20585), and `fit` owns its data iterator, so a
checkpoint cannot hold the data position. This loop reuses the model's
`compute_loss`, metrics and Keras callbacks, and owns:

- the step, run in `strategy.run`; with `jit_compile`, XLA compiles the whole
  step on one replica, the forward/backward part with several (the
  optimizer's cross-replica `merge_call` cannot be inside XLA);
- the data: one `tf.data` iterator per worker, saved in the checkpoint, so a
  resumed run continues at the next unseen batch;
- checkpoints of model (with its dropout RNG state), optimizer and step
  every `checkpoint_every` steps, restored automatically on restart;
- numbers: a non-finite loss or weight stops the run (`NonFiniteError`)
  before anything of that step is saved or shown to callbacks;
- stopping: SIGTERM or Ctrl-C saves the current step and raises
  `TrainingInterrupted`; with several workers, each step sums their stop
  votes, so all stop at one step; a vanished peer becomes `WorkerLostError`.

A checkpoint unit is committed by the manager's "checkpoint" file, which
TensorFlow replaces atomically, written after every worker's data-iterator
checkpoint and ckpt-N; only then are older units pruned. Parts of an
uncommitted unit are removed at the next start. Each step is named
(`keras_bert.steps`) so that tests can kill the writer between them.

TPUStrategy's infeed needs a distributed iterator, which `tf.train.Checkpoint`
cannot track: there (untested) the data stream restarts on resume.
"""

import contextlib
import functools
import json
import math
import os
import re
import signal
import threading

import keras
import tensorflow as tf

from keras_bert import steps, storage
from keras_bert.files import remove_own, write_bytes_atomic
from keras_bert.training.distribute import worker_info

CHECKPOINT_NAME = "ckpt"
# A tf.train.CheckpointManager's files: "checkpoint" (and its atomic write's
# checkpoint.tmpHEX), ckpt-N.* and a sharded write's ckpt-N_temp folder.
_CHECKPOINT_FILE = re.compile(
    rf"^(checkpoint(\.tmp[0-9a-f]{{32}})?|{CHECKPOINT_NAME}-\d+(\.(index|data-\d+-of-\d+)|_temp))$")
_STEP = re.compile(rf"^{CHECKPOINT_NAME}-(\d+)(\.index|\.data-\d+-of-\d+|_temp)$")
DATA_DIR_PATTERN = re.compile(r"^data-worker-\d+$")

def own_checkpoint_files(directory):
    """The names in `directory` that the Trainer's checkpoint managers wrote
    (what may be deleted there; anything else is not the Trainer's)."""
    if not storage.isdir(directory):
        return []
    return [name for name in storage.listdir(directory)
            if _CHECKPOINT_FILE.match(name) or DATA_DIR_PATTERN.match(name)]


def _committed_steps(directory):
    """The steps of the checkpoints the "checkpoint" file of `directory` names."""
    state = tf.train.get_checkpoint_state(directory)
    if state is None:
        return []
    paths = list(state.all_model_checkpoint_paths) or [state.model_checkpoint_path]
    return sorted(int(p.rsplit("-", 1)[1]) for p in paths if p)


def _remove_uncommitted(directory, keep, newest):
    """Removes ckpt-N parts in `directory` of steps not in `keep` (the committed
    ones), but those above `newest` (a unit being written; None: none kept)."""
    if not tf.io.gfile.isdir(directory):
        return
    for name in tf.io.gfile.listdir(directory):
        name = name.rstrip("/")
        match = _STEP.match(name)  # ckpt-N's parts.
        step = int(match.group(1)) if match else None
        if step is None or step in keep or (newest is not None and step > newest):
            continue
        path = os.path.join(directory, name)
        if tf.io.gfile.isdir(path):
            tf.io.gfile.rmtree(path)
        else:
            tf.io.gfile.remove(path)


class NonFiniteError(ValueError):
    """Training produced a NaN or infinite loss or weight; nothing of it was saved.

    Attributes:
        step: int, the step whose result was not finite.
    """

    def __init__(self, message, step):
        super().__init__(message)
        self.step = step


def write_json_atomic(path, value):
    """Writes `value` as JSON to `path` so that a kill leaves the old file or
    the new one (`files.write_bytes_atomic`)."""
    text = json.dumps(value, indent=1, sort_keys=True) + "\n"
    write_bytes_atomic(path, text.encode("utf-8"))


def read_json_state(path, what, way_out):
    """The JSON object in the run-state file `path`, or a ValueError naming the
    file, `what` it is and the `way_out`."""
    try:
        with tf.io.gfile.GFile(path) as f:
            value = json.loads(f.read())
    except (ValueError, UnicodeDecodeError) as e:
        raise ValueError(f"{path} ({what}) is damaged: {e}. {way_out}") from None
    if not isinstance(value, dict):
        raise ValueError(f"{path} ({what}) is damaged: it holds a JSON "
                         f"{type(value).__name__}, not an object. {way_out}")
    return value


# The signals that stop training after a checkpoint: a scheduler's SIGTERM and Ctrl-C.
STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)
_VOTES = "_stop_votes"  # The train function's result: the workers' summed stop votes.


class TrainingInterrupted(Exception):
    """Raised by `Trainer.train` after SIGTERM or SIGINT (Ctrl-C), once a checkpoint is saved.

    Workers that received no signal themselves raise it with `by_peer` True
    and signum SIGTERM.

    Attributes:
        step: int, the step saved.
        signum: int, the signal received; a program that ends on it should
            exit with 128 + signum (143 for SIGTERM, 130 for Ctrl-C).
        by_peer: bool, another worker received the signal.
    """

    def __init__(self, step, signum=signal.SIGTERM, by_peer=False):
        name = "SIGINT (Ctrl-C)" if signum == signal.SIGINT else signal.Signals(signum).name
        cause = "another worker's stop signal" if by_peer else name
        again = "on every worker " if by_peer else ""
        super().__init__(
            f"Training stopped by {cause} at step {step}; a checkpoint was saved. "
            f"Run the same command again {again}to resume."
        )
        self.step = step
        self.signum = int(signum)
        self.by_peer = by_peer


# What a collective raises when a peer is gone: MultiWorkerMirroredStrategy's
# health check gives UnavailableError, a restarted peer FailedPrecondition.
_PEER_ERRORS = (tf.errors.UnavailableError, tf.errors.DeadlineExceededError,
                tf.errors.FailedPreconditionError, tf.errors.CancelledError)


class WorkerLostError(RuntimeError):
    """Raised by `Trainer.train` when another worker stopped answering mid-training.

    Attributes:
        step: int, the last step this worker finished.
    """

    def __init__(self, message, step):
        super().__init__(message)
        self.step = step


_WAY_OUT = ("Lower the learning rate (--learning-rate), check the class weights and the "
            "data, or train in float32 (--dtype float32).")


@tf.function(autograph=False)
def _all_finite(values):
    # One reduction per variable, then one over them: a scalar bool.
    return tf.reduce_all(tf.stack([tf.reduce_all(tf.math.is_finite(v)) for v in values]))


class Trainer:
    """Runs training steps of a compiled model, resumably.

    Args:
        model: a Keras model, created and compiled in `strategy.scope()`.
        strategy: the `tf.distribute.Strategy` the model was built under.
        dataset_fn: callable(batch_size, input_pipeline_id,
            num_input_pipelines) -> `tf.data.Dataset` of `(x, y)` or
            `(x, y, sample_weight)` batches of `batch_size`, infinite,
            deterministic (see `keras_bert.training.pretraining_dataset`).
        global_batch_size: int, examples per micro-batch over all replicas.
        checkpoint_dir: str, where checkpoints go (shared by all workers).
        checkpoint_every: int, steps between checkpoints.
        max_checkpoints: int, checkpoints kept.
        jit_compile: bool, compile the step with XLA.
        steps_per_execution: int, steps per call of the compiled function
            (fewer host round trips; callbacks see every n-th step).

    A step is one optimizer update (k micro-batches with the optimizer's
    `gradient_accumulation_steps=k`).
    """

    def __init__(self, model, strategy, dataset_fn, global_batch_size, checkpoint_dir,
                 checkpoint_every=1000, max_checkpoints=3, jit_compile=False,
                 steps_per_execution=1):
        if model.optimizer is None:
            raise ValueError("Compile the model with an optimizer before training it.")
        self.model = model
        self.strategy = strategy
        self.checkpoint_dir = checkpoint_dir
        self.checkpoint_every = checkpoint_every
        self.steps_per_execution = steps_per_execution
        self.task_id, self.num_workers, self.is_chief = worker_info(strategy)
        self.num_replicas = strategy.num_replicas_in_sync
        self.local_replicas = max(self.num_replicas // self.num_workers, 1)
        if global_batch_size % self.num_replicas:
            raise ValueError(
                f"The global batch size ({global_batch_size}) must be divisible by the "
                f"number of replicas ({self.num_replicas}). Change --batch-size."
            )
        self.global_batch_size = global_batch_size
        self.per_replica_batch = global_batch_size // self.num_replicas
        inner = getattr(model.optimizer, "inner_optimizer", model.optimizer)  # Loss scaling.
        self.accumulation = inner.gradient_accumulation_steps or 1
        self.is_tpu = isinstance(strategy, tf.distribute.TPUStrategy)

        optimizer = model.optimizer
        with strategy.scope():
            if not optimizer.built:
                optimizer.build(model.trainable_variables)
            self.loss_metric = keras.metrics.Mean(name="loss")
        self.metrics = [self.loss_metric] + [m for m in model.metrics if m.name != "loss"]
        self.step = tf.Variable(0, dtype=tf.int64, trainable=False, name="step")

        # === Data ===
        if self.is_tpu:
            # TPU infeed wants a distributed iterator, which cannot be checkpointed.
            self._iterator = iter(strategy.distribute_datasets_from_function(
                lambda context: dataset_fn(
                    context.get_per_replica_batch_size(global_batch_size),
                    context.input_pipeline_id, context.num_input_pipelines)))
        else:
            worker_batch = self.per_replica_batch * self.local_replicas
            self._iterator = iter(dataset_fn(worker_batch, self.task_id, self.num_workers))

        # === Checkpoints ===
        # `model.variables` explicitly: a Keras 3 model's checkpoint dependencies
        # miss non-trainable state such as the dropout RNG seeds.
        state = tf.train.Checkpoint(model=model, model_variables=list(model.variables),
                                    optimizer=optimizer, step=self.step)
        write_dir = checkpoint_dir if self.is_chief else os.path.join(
            checkpoint_dir, ".tmp", f"worker-{self.task_id}")
        self._state_manager = tf.train.CheckpointManager(
            state, write_dir, max_to_keep=max_checkpoints, checkpoint_name=CHECKPOINT_NAME)
        # The data iterator is written with `Checkpoint.write` (no manager of
        # its own, which would prune before the unit is committed).
        self._data_checkpoint = self._data_dir = None
        if not self.is_tpu:
            self._data_checkpoint = tf.train.Checkpoint(iterator=self._iterator)
            self._data_dir = os.path.join(checkpoint_dir, f"data-worker-{self.task_id}")
        self._state = state

        # This worker's stop vote (the signal number, 0: none), summed over the
        # workers at every step; outside the strategy's scope: this worker's own.
        self._stop_vote = tf.Variable(0.0, trainable=False, name="stop_vote")
        self._train_function = self._make_train_function(jit_compile)
        self._stop_requested = threading.Event()
        self._stop_signal = signal.SIGTERM

    # --- The step --------------------------------------------------------

    def _make_train_function(self, jit_compile):
        model, optimizer = self.model, self.model.optimizer
        num_replicas, local_replicas = self.num_replicas, self.local_replicas
        per_replica = self.per_replica_batch
        variables = model.trainable_variables

        def compute_gradients(data):
            x, y, sample_weight = keras.utils.unpack_x_y_sample_weight(data)
            with tf.GradientTape() as tape:
                y_pred = model(x, training=True)
                # Losses are divided by the number of replicas (gradients
                # are summed over them): undo that for the logged loss.
                loss = model.compute_loss(x=x, y=y, y_pred=y_pred,
                                          sample_weight=sample_weight, training=True)
                scaled = optimizer.scale_loss(loss)
            self.loss_metric.update_state(loss * num_replicas)
            model.compute_metrics(x, y, y_pred, sample_weight=sample_weight)
            return tape.gradient(scaled, variables)

        def apply(grads):
            optimizer.apply_gradients(zip(grads, variables))

        if jit_compile and num_replicas > 1:
            compute_gradients = tf.function(compute_gradients, jit_compile=True, autograph=False)

        # A worker of MultiWorkerMirroredStrategy with one device runs its replica
        # with no device scope; a collective in the step (a loss that gathers
        # across replicas, and that gather's gradient) needs one.
        placed = contextlib.nullcontext
        if self.num_workers > 1 and not self.is_tpu:
            devices = self.strategy.extended.worker_devices
            if len(devices) == 1:
                placed = functools.partial(tf.device, devices[0])

        def replica_step(data):
            with placed():
                apply(compute_gradients(data))

        if jit_compile and num_replicas == 1:
            replica_step = tf.function(replica_step, jit_compile=True, autograph=False)

        def local_slice(data):
            # A worker's batch holds its local replicas' shares, in order.
            context = tf.distribute.get_replica_context()
            index = context.replica_id_in_sync_group % local_replicas
            cut = lambda t: t[index * per_replica:(index + 1) * per_replica]  # noqa: E731
            replica_step(tf.nest.map_structure(cut, data))

        step_fn = local_slice if (local_replicas > 1 and not self.is_tpu) else replica_step
        micro_steps = self.steps_per_execution * self.accumulation
        stop_vote = self._stop_vote

        def sum_votes():
            return tf.distribute.get_replica_context().all_reduce(
                tf.distribute.ReduceOp.SUM, tf.identity(stop_vote))

        # The same all-reduce alone: a barrier (every worker has called it).
        self._barrier = tf.function(lambda: self.strategy.run(sum_votes), autograph=False)

        @tf.function
        def train_function(iterator):
            for _ in tf.range(micro_steps):
                self.strategy.run(step_fn, args=(next(iterator),))
            results = {}
            for metric in self.metrics:
                value = metric.result()
                if isinstance(value, dict):  # Keras' compiled-metrics container.
                    results.update(value)
                else:
                    results[metric.name] = value
            if self.num_workers > 1:
                votes = self.strategy.run(sum_votes)
                results[_VOTES] = self.strategy.experimental_local_results(votes)[0]
            return results

        return train_function

    # --- Checkpoints -----------------------------------------------------

    def restore(self):
        """Restores the latest committed checkpoint, if any. Returns the step reached (0: none).

        Parts of a unit never committed (a writer killed mid-save) are removed first.
        """
        latest = tf.train.latest_checkpoint(self.checkpoint_dir)
        committed = _committed_steps(self.checkpoint_dir) if latest else []
        if self.is_chief:
            _remove_uncommitted(self.checkpoint_dir, committed, None)
        if self._data_dir is not None:
            _remove_uncommitted(self._data_dir, committed, None)
        if latest is None:
            return 0
        self._state.restore(latest).assert_existing_objects_matched()
        step = int(self.step.numpy())
        if self._data_checkpoint is not None:
            data_path = self._data_path(step)
            if not tf.io.gfile.exists(data_path + ".index"):
                raise FileNotFoundError(
                    f"{latest} (step {step}) has no data-iterator checkpoint for worker "
                    f"{self.task_id} ({data_path}). Was the number of workers changed? "
                    "Resume with the same cluster, or start a new --output."
                )
            self._data_checkpoint.restore(data_path)
        return step

    def _data_path(self, step):
        return os.path.join(self._data_dir, f"{CHECKPOINT_NAME}-{step}")

    def save(self):
        """Writes a checkpoint unit of the current step (all workers must call it):
        data iterator, model/optimizer/step, the "checkpoint" file (the commit),
        then pruning. Refuses (`NonFiniteError`) weights that are not finite."""
        step = int(self.step.numpy())
        self.check_finite_weights(step)
        steps.reached("checkpoint-begin", step)
        if self._data_checkpoint is not None:
            self._data_checkpoint.write(self._data_path(step))
        steps.reached("checkpoint-data-written", step)
        self._state_manager.save(checkpoint_number=step)  # ckpt-N, the commit, pruning.
        steps.reached("checkpoint-committed", step)
        if self._data_checkpoint is not None:
            # Data checkpoints of no committed unit; a worker that reads the
            # chief's list before the chief committed keeps its newer ones.
            committed = _committed_steps(self.checkpoint_dir)
            if committed:
                _remove_uncommitted(self._data_dir, committed, max(committed))
        if not self.is_chief:
            # Every worker must save; a non-chief removes its own copy.
            directory = self._state_manager.directory
            remove_own(directory, own_checkpoint_files(directory))
        if self.num_workers > 1:
            # The unit is whole once every worker wrote its part.
            with self._peers_answer(lambda: step):
                self._barrier()

    def _first_non_finite(self):
        """The first float model weight holding NaN or inf, or None."""
        variables = [v for v in self.model.weights if keras.backend.is_float_dtype(v.dtype)]
        if bool(_all_finite([v.value for v in variables])):
            return None
        return next(v for v in variables if not bool(tf.reduce_all(tf.math.is_finite(v.value))))

    def check_finite_weights(self, step=None):
        """Raises `NonFiniteError` naming the first model weight that holds NaN or inf."""
        bad = self._first_non_finite()
        if bad is None:
            return
        step = int(self.step.numpy()) if step is None else step
        raise NonFiniteError(
            f"Training stopped at step {step}: the weight {bad.path} holds NaN or inf, so the "
            f"run diverged. Nothing of this step was saved; {self._kept()}. {_WAY_OUT}", step)

    def _kept(self):
        latest = tf.train.latest_checkpoint(self.checkpoint_dir)
        return f"the last checkpoint ({latest}) is kept" if latest else "no checkpoint exists"

    def _check_finite_loss(self, step, logs):
        loss = logs.get("loss")
        if loss is None or math.isfinite(loss):
            return
        raise NonFiniteError(
            f"Training stopped at step {step}: the loss is {loss}, so the run diverged. "
            f"Nothing of this step was saved; {self._kept()}. {_WAY_OUT}", step)

    # --- The loop --------------------------------------------------------

    @contextlib.contextmanager
    def _peers_answer(self, step_of):
        """Turns a lost peer's error (with several workers) into `WorkerLostError`;
        `step_of()` gives the last step done. Ops run asynchronously, so the
        error can surface where a step's results are read."""
        try:
            yield
        except _PEER_ERRORS as e:
            if self.num_workers == 1:
                raise
            # The message itself is a graph-execution dump; its class says enough.
            kept, step = self._kept(), step_of()
            raise WorkerLostError(
                f"Worker {self.task_id} of {self.num_workers}: another worker stopped answering "
                f"after step {step} (killed, or its machine lost; {type(e).__name__}). "
                f"{kept[0].upper()}{kept[1:]}; start every worker again with the same command "
                "to resume.", step) from None

    def _request_stop(self, signum, frame):
        if signum == signal.SIGINT and self._stop_requested.is_set():
            # A second Ctrl-C: the user does not want to wait for the step to end.
            raise KeyboardInterrupt
        self._stop_signal = signum
        self._stop_requested.set()

    def train(self, num_steps, callbacks=None, verbose=1, log_every=100):
        """Trains until step `num_steps`, resuming from the latest checkpoint.

        Metrics are running means since the last multiple of `log_every`.
        SIGTERM or SIGINT (Ctrl-C) finishes the current step, saves a
        checkpoint and raises `TrainingInterrupted` (on every worker); a
        second Ctrl-C stops at once, unsaved. A worker that stops answering
        ends the others with `WorkerLostError`.

        Args:
            num_steps: int, the final step (optimizer updates in total).
            callbacks: list of `keras.callbacks.Callback`; they see global
                step indices (0-based) as `batch`.
            verbose: 0 or 1 (a Keras progress bar).
            log_every: int, steps between metric resets.

        Returns:
            dict, the last logs (metric name -> float, plus learning_rate).
        """
        start = self.restore()
        bad = self._first_non_finite()
        if bad is not None:
            origin = (f"the checkpoint {tf.train.latest_checkpoint(self.checkpoint_dir)}"
                      if start else "the model it starts from")
            raise NonFiniteError(
                f"The weight {bad.path} holds NaN or inf before training (step {start}): "
                f"{origin} is not a usable model. Start from another model.", start)
        callbacks = keras.callbacks.CallbackList(
            callbacks, add_history=True, add_progbar=bool(verbose) and self.is_chief,
            verbose=verbose, epochs=1, steps=num_steps, model=self.model)
        handlers = {}
        if threading.current_thread() is threading.main_thread():
            handlers = {signum: signal.signal(signum, self._request_stop)
                        for signum in STOP_SIGNALS}
        logs = {}
        self._stop_requested.clear()
        self._stop_vote.assign(0.0)
        self.model.stop_training = False
        try:
            callbacks.on_train_begin()
            callbacks.on_epoch_begin(0)
            step = start
            with self._peers_answer(lambda: step):
                while step < num_steps:
                    callbacks.on_train_batch_begin(step)
                    if self._stop_requested.is_set():
                        self._stop_vote.assign(float(self._stop_signal))
                    results = self._train_function(self._iterator)
                    step += self.steps_per_execution
                    self.step.assign(step)
                    logs = {name: float(value) for name, value in results.items()}
                    votes = logs.pop(_VOTES, None)
                    logs["learning_rate"] = float(
                        keras.ops.convert_to_numpy(self.model.optimizer.learning_rate))
                    # Before callbacks see the step (fine-tuning saves its best
                    # model there) and before it is saved.
                    self._check_finite_loss(step, logs)
                    crossed = step // self.checkpoint_every != (
                        step - self.steps_per_execution) // self.checkpoint_every
                    if crossed or step >= num_steps:
                        self.check_finite_weights(step)
                    callbacks.on_train_batch_end(step - 1, logs)
                    if step // log_every != (step - self.steps_per_execution) // log_every:
                        for metric in self.metrics:
                            metric.reset_state()
                    # Several workers stop on the summed votes only: a signal that
                    # came during this step is voted in the next one.
                    signalled = self._stop_requested.is_set() if votes is None else votes > 0
                    stopping = signalled or self.model.stop_training
                    if crossed or step >= num_steps or stopping:
                        self.save()
                    if signalled:
                        own = self._stop_vote.numpy() > 0 or votes is None
                        raise TrainingInterrupted(
                            step, self._stop_signal if own else signal.SIGTERM, by_peer=not own)
                    if self.model.stop_training:  # A callback ended the run early.
                        break
            callbacks.on_epoch_end(0, logs)
            callbacks.on_train_end(logs)
        finally:
            for signum, handler in handlers.items():
                signal.signal(signum, handler)
        return logs
