"""BERT pretraining runs: data directory + model config -> model directory.

OUTPUT_DIR/
  pretraining_run.json       what this run is (model config, data, settings)
  checkpoints/               tf.train checkpoints (model, optimizer, step)
    data-worker-K/           data-iterator state of worker K
  logs/                      TensorBoard: train/ (every log_every steps), eval/
                             (the evaluation data's metrics at the final step)
  model/                     the final model directory (config.json,
                             vocab.txt, model.weights.h5, task.json)
"""

import dataclasses
import os

import keras
import tensorflow as tf

from keras_bert.config import DTYPES, check_count
from keras_bert.files import WAY_OUT, OutputError, check_not_input, check_writable
from keras_bert.data import pretraining_data
from keras_bert.models import BertEncoder, BertPretrainer
from keras_bert.text import TextSettings
from keras_bert.training import callbacks as callbacks_lib
from keras_bert.training.distribute import strategy_name, worker_info, xla_cpu_available
from keras_bert.training.input_pipeline import pretraining_dataset
from keras_bert.training.optimizers import OPTIMIZERS, check_optimizer_settings, create_optimizer
from keras_bert.training.trainer import (
    Trainer,
    TrainingInterrupted,
    read_json_state,
    write_json_atomic,
)

JIT_SETTINGS = ("auto", "on", "off")
RUN_FILE = "pretraining_run.json"
# Changing these mid-run would not be a resume but another run.
_RUN_KEYS_THAT_MUST_MATCH = ("model_config", "vocab_hash", "batch_size",
                             "gradient_accumulation_steps", "num_workers")


@dataclasses.dataclass
class PretrainingConfig:
    """Settings of a pretraining run (BERT's defaults, scaled to steps).

    Args:
        num_train_steps: int, optimizer updates in the run.
        batch_size: int, global examples per micro-batch (all replicas).
        learning_rate: float, peak learning rate.
        warmup_steps: int, linear warmup updates.
        optimizer: "adamw" or "lamb".
        weight_decay: float (not on LayerNorm weights and biases).
        global_clipnorm: float or None.
        gradient_accumulation_steps: int, micro-batches per update.
        dtype: "float32", "mixed_bfloat16" or "mixed_float16" (with dynamic
            loss scaling).
        jit_compile: "auto", "on" or "off"; see `resolve_jit_compile`.
        steps_per_execution: int, updates per compiled call.
        checkpoint_every: int, updates between checkpoints.
        max_checkpoints: int, checkpoints kept.
        log_every: int, updates between log lines (and metric resets).
        shuffle_buffer_size: int, records in the shuffle buffer.
        seed: int, weight init, data order and dynamic masks.
    """

    num_train_steps: int = 100000
    batch_size: int = 256
    learning_rate: float = 1e-4
    warmup_steps: int = 10000
    optimizer: str = "adamw"
    weight_decay: float = 0.01
    global_clipnorm: float = 1.0
    gradient_accumulation_steps: int = 1
    dtype: str = "float32"
    jit_compile: str = "auto"
    steps_per_execution: int = 1
    checkpoint_every: int = 1000
    max_checkpoints: int = 3
    log_every: int = 100
    shuffle_buffer_size: int = 10000
    seed: int = 0

    def __post_init__(self):
        for name in ("num_train_steps", "batch_size", "gradient_accumulation_steps",
                     "steps_per_execution", "checkpoint_every", "max_checkpoints",
                     "log_every"):
            check_count(name, getattr(self, name))
        if self.optimizer not in OPTIMIZERS:
            raise ValueError(
                f"Expected optimizer in {OPTIMIZERS}. Received: optimizer={self.optimizer!r}")
        if self.dtype not in DTYPES:
            raise ValueError(f"Expected dtype in {DTYPES}. Received: dtype={self.dtype!r}")
        check_optimizer_settings(self.weight_decay, self.global_clipnorm, self.learning_rate)
        if self.jit_compile not in JIT_SETTINGS:
            raise ValueError(
                f"Expected jit_compile in {JIT_SETTINGS}. "
                f"Received: jit_compile={self.jit_compile!r}")
        if self.num_train_steps % self.steps_per_execution:
            raise ValueError(
                f"num_train_steps ({self.num_train_steps}) must be a multiple of "
                f"steps_per_execution ({self.steps_per_execution}).")
        if not 0 <= self.warmup_steps < self.num_train_steps:
            raise ValueError(
                "Expected 0 <= warmup_steps < num_train_steps. Received: "
                f"warmup_steps={self.warmup_steps}, num_train_steps={self.num_train_steps}")


def cpu_has_amx(cpuinfo="/proc/cpuinfo"):
    """Whether this CPU has AMX bfloat16 tiles (Linux: the `amx_bf16` flag)."""
    try:
        with open(cpuinfo, encoding="utf-8", errors="replace") as f:
            return any(
                line.startswith("flags") and "amx_bf16" in line.split() for line in f
            )
    except OSError:
        return False


def resolve_jit_compile(setting, dtype, strategy, amx=None):
    """Whether to XLA-compile the training step: "on"/"off" are obeyed ("on" is
    refused on a CPU without XLA). "auto" is off on TPU (TPUStrategy compiles
    anyway), on a CPU without XLA, and for a mixed `dtype` on a CPU-only
    machine with AMX (`amx`, None: read from the CPU flags), where oneDNN's
    kernels beat XLA's; on everywhere else.
    """
    if isinstance(strategy, tf.distribute.TPUStrategy):
        return setting == "on"
    on_cpu = not tf.config.list_logical_devices("GPU")
    if on_cpu and setting != "off" and not xla_cpu_available():
        if setting == "on":
            raise ValueError(
                "jit_compile is 'on', but this TensorFlow has no XLA for the CPU (the "
                "tensorflow-tpu build has none). Use 'auto' or 'off' (--jit-compile off) off "
                "the TPU, or run under TPUStrategy (--strategy tpu).")
        return False
    if setting != "auto":
        return setting == "on"
    if dtype != "float32" and on_cpu:
        return not (cpu_has_amx() if amx is None else amx)
    return True


def build_pretrainer(metadata, data_dir, bert_config=None, init_from=None, dtype=None):
    """A `BertPretrainer` that fits the data `metadata` (call inside `strategy.scope()`):
    new from `bert_config`, or from the model directory `init_from` (heads new
    unless it is a pretrainer); its vocabulary must be the data's.
    """
    if (bert_config is None) == (init_from is None):
        raise ValueError("Give exactly one of bert_config (a new model) or init_from "
                         "(a model directory).")
    if init_from is not None:
        model = BertPretrainer.from_pretrained(init_from, dtype=dtype)
        if model.vocab_file is not None:
            expected = metadata["vocab_hash"]
            found = pretraining_data.vocab_hash(model.vocab_file)
            if found != expected:
                raise ValueError(
                    f"The model's vocabulary {model.vocab_file} ({found}) is not the one "
                    f"the pretraining data in {data_dir} was made with ({expected}). "
                    "Recreate the data with tools/create_pretraining_data.py --vocab-file "
                    f"{model.vocab_file}, or start from a model with that vocabulary.")
        config = model.encoder.get_bert_config()
    else:
        config = bert_config
        model = BertPretrainer(BertEncoder(**config.to_dict(), dtype=dtype))
    if config.vocab_size != metadata["vocab_size"]:
        raise ValueError(
            f"The model's vocab_size is {config.vocab_size}, but the pretraining data in "
            f"{data_dir} uses a vocabulary of {metadata['vocab_size']} tokens. Set "
            f"vocab_size={metadata['vocab_size']} (tools/pretrain.py reads it from the "
            "data when you give --preset).")
    if metadata["max_seq_length"] > config.max_position_embeddings:
        raise ValueError(
            f"The data's max_seq_length ({metadata['max_seq_length']}) exceeds the model's "
            f"max_position_embeddings ({config.max_position_embeddings}).")
    return model


def check_run_dir(output_dir, inputs=()):
    """Raises OutputError unless `output_dir` is missing, empty or an earlier
    run's (its pretraining_run.json), apart from the `inputs`."""
    check_not_input(output_dir, inputs, flag="The output")
    check_writable(os.path.join(output_dir, RUN_FILE))
    if not tf.io.gfile.exists(output_dir):
        return
    if not tf.io.gfile.isdir(output_dir):
        raise OutputError(f"The output {output_dir} is a file, not a folder for a pretraining "
                          f"run: {WAY_OUT}.")
    names = tf.io.gfile.listdir(output_dir)
    if names and RUN_FILE not in names:
        raise OutputError(
            f"{output_dir} is not empty and is not a pretraining run (no {RUN_FILE}; it holds "
            f"{', '.join(sorted(n.rstrip('/') for n in names)[:5])}): {WAY_OUT}.")


def _write_or_check_run(path, run, is_chief):
    if tf.io.gfile.exists(path):
        previous = read_json_state(
            path, "the settings of the pretraining run in this folder",
            "Use a new --output, or delete the file to resume the checkpoints beside it "
            "with this command's settings (they are then not checked against the run's).")
        changed = [k for k in _RUN_KEYS_THAT_MUST_MATCH if previous.get(k) != run.get(k)]
        if changed:
            raise ValueError(
                f"{path} records a run with other {changed} "
                f"(was {[previous.get(k) for k in changed]}, now "
                f"{[run.get(k) for k in changed]}). Resuming it with these settings "
                "would not continue that run: use a new --output.")
    if is_chief:
        write_json_atomic(path, run)  # A kill leaves the old file or the new one.


def save_pretrained_model(model, model_dir, data_dir, metadata, step):
    """Writes the pretrainer `model` as a model directory, with the data's
    vocabulary and text settings (fine-tuning tokenizes as pretraining did)."""
    settings = TextSettings(max_seq_length=metadata["max_seq_length"],
                            lowercase=metadata.get("lowercase"))
    model.save_pretrained(model_dir, vocab_file=os.path.join(data_dir, pretraining_data.VOCAB_FILE),
                          task_info={**settings.to_json(), "pretraining_steps": int(step)})


def run_pretraining(data_dir, output_dir, config, bert_config=None, init_from=None,
                    strategy=None, callbacks=None, verbose=1, eval_data_dir=None,
                    tensorboard=True):
    """Pretrains (or resumes pretraining) a BERT model on a data directory.

    The data's settings come from its metadata.json; the latest checkpoint in
    `output_dir` is restored if there is one; the chief writes
    `output_dir/model` at the end.

    Args:
        data_dir: str, from `keras_bert.data.create_pretraining_data`.
        output_dir: str, see the module docstring.
        config: a `PretrainingConfig`.
        bert_config: `BertConfig` for a new model, or None with `init_from`.
        init_from: str, a model directory to start from.
        strategy: a `tf.distribute.Strategy` (default: the current one).
        callbacks: extra Keras callbacks (get global step indices).
        verbose: 1: a progress bar on a terminal; 0: lines only.
        eval_data_dir: str, data directory evaluated at the end, or None.
        tensorboard: bool, write TensorBoard logs to `output_dir/logs`
            (train/ and eval/; skipped with a notice without the package).

    Returns:
        dict: "logs" (last training logs), "step", "model_dir" (chief) and
        "eval" (with `eval_data_dir`).

    Example:
    >>> run_pretraining("data/", "runs/tiny", PretrainingConfig(num_train_steps=1000),
    ...                 bert_config=BertConfig.from_preset("tiny", vocab_size=30522))
    """
    # Before any long work: a refused output fails at once.
    check_run_dir(output_dir, [data_dir, eval_data_dir, init_from])
    metadata = pretraining_data.read_metadata(data_dir)
    vocab_file = os.path.join(data_dir, pretraining_data.VOCAB_FILE)
    if eval_data_dir is not None:
        eval_metadata = pretraining_data.read_metadata(eval_data_dir)
        if eval_metadata["vocab_hash"] != metadata["vocab_hash"]:
            raise ValueError(
                f"The evaluation data {eval_data_dir} was made with another vocabulary "
                f"than the training data {data_dir}. Recreate it with --vocab-file "
                f"{vocab_file}.")
    strategy = strategy or tf.distribute.get_strategy()
    task_id, num_workers, is_chief = worker_info(strategy)
    keras.utils.set_random_seed(config.seed)
    jit = resolve_jit_compile(config.jit_compile, config.dtype, strategy)
    dtype = None if config.dtype == "float32" else config.dtype

    with strategy.scope():
        model = build_pretrainer(metadata, data_dir, bert_config, init_from, dtype)
        optimizer = create_optimizer(
            config.learning_rate, config.num_train_steps, config.warmup_steps,
            optimizer=config.optimizer, weight_decay=config.weight_decay,
            global_clipnorm=config.global_clipnorm,
            gradient_accumulation_steps=config.gradient_accumulation_steps,
            loss_scale=config.dtype == "mixed_float16")
        model.compile(optimizer=optimizer, jit_compile=False)

    max_positions = model.encoder.max_position_embeddings
    if eval_data_dir is not None and eval_metadata["max_seq_length"] > max_positions:
        raise ValueError(
            f"The evaluation data's max_seq_length ({eval_metadata['max_seq_length']}) "
            f"exceeds the model's max_position_embeddings ({max_positions}).")

    tf.io.gfile.makedirs(output_dir)
    run = {
        **dataclasses.asdict(config),
        "model_config": model.encoder.get_bert_config().to_dict(),
        "data_dir": os.fspath(data_dir),
        "vocab_hash": metadata["vocab_hash"],
        "init_from": init_from and os.fspath(init_from),
        "num_workers": num_workers,
        "num_replicas": strategy.num_replicas_in_sync,
        "strategy": strategy_name(strategy),
        "jit_compile_resolved": jit,
    }
    _write_or_check_run(os.path.join(output_dir, RUN_FILE), run, is_chief)

    trainer = Trainer(
        model, strategy,
        lambda batch_size, pipeline, pipelines: pretraining_dataset(
            data_dir, batch_size, seed=config.seed,
            shuffle_buffer_size=config.shuffle_buffer_size,
            input_pipeline_id=pipeline, num_input_pipelines=pipelines, metadata=metadata),
        global_batch_size=config.batch_size,
        checkpoint_dir=os.path.join(output_dir, "checkpoints"),
        checkpoint_every=config.checkpoint_every, max_checkpoints=config.max_checkpoints,
        jit_compile=jit, steps_per_execution=config.steps_per_execution)
    all_callbacks = []
    log_dir = step_logger = None
    if is_chief:
        step_logger = callbacks_lib.StepLogger(
            config.log_every, config.batch_size * config.gradient_accumulation_steps,
            total_steps=config.num_train_steps, mode="auto" if verbose else "lines")
        all_callbacks.append(step_logger)
        if tensorboard and not callbacks_lib.tensorboard_available():
            print("TensorBoard logs off: the tensorboard package is not installed "
                  "(pip install tensorboard).")
        elif tensorboard:
            log_dir = os.path.join(output_dir, "logs")
            all_callbacks.append(callbacks_lib.TensorBoard(log_dir, update_freq=config.log_every))
    all_callbacks += list(callbacks or [])
    # StepLogger draws the progress bar: no second one from Keras.
    try:
        logs = trainer.train(config.num_train_steps, all_callbacks, verbose=0,
                             log_every=config.log_every)
    except TrainingInterrupted:
        if step_logger is not None:
            step_logger.clear()  # The caller's message gets a line of its own.
        raise
    except tf.errors.DataLossError as e:
        raise pretraining_data.corrupt_data_error(e, data_dir) from e
    result = {"logs": logs, "step": int(trainer.step.numpy()), "model": model}
    if is_chief:
        model_dir = os.path.join(output_dir, "model")
        save_pretrained_model(model, model_dir, data_dir, metadata, result["step"])
        result["model_dir"] = model_dir
    if eval_data_dir is not None:
        result["eval"] = evaluate_pretraining(model, eval_data_dir, config.batch_size,
                                              strategy=strategy)
        if log_dir is not None:
            callbacks_lib.write_scalars(os.path.join(log_dir, "eval"), result["step"],
                                        result["eval"])
    return result


def evaluate_pretraining(model, data_dir, batch_size=64, strategy=None, steps=None):
    """Masked-LM and next-sentence metrics of `model` on a data directory (one
    pass; every worker reads all of it): dict of mlm_loss, nsp_loss,
    masked_lm_accuracy, nsp_accuracy (floats)."""
    strategy = strategy or tf.distribute.get_strategy()
    dataset = pretraining_dataset(data_dir, batch_size, training=False)
    if steps is not None:
        dataset = dataset.take(steps)
    metrics = [m for m in model.metrics if m.name != "loss"]
    for metric in metrics:
        metric.reset_state()

    def step(x, y):
        y_pred = model(x, training=False)
        model.compute_loss(x=x, y=y, y_pred=y_pred, training=False)

    @tf.function(autograph=False)
    def run(batch):
        strategy.run(step, args=batch)

    try:
        for batch in strategy.experimental_distribute_dataset(dataset):
            run(batch)
    except tf.errors.DataLossError as e:
        raise pretraining_data.corrupt_data_error(e, data_dir) from e
    return {m.name: float(m.result()) for m in metrics}
