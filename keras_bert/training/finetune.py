"""Fine-tuning a model directory on a task: the paper's recipe, best model kept.

`finetune(task, model_dir, output_dir, train_data, eval_data, options)` packs
the reader output with the run's one preprocessor (length-bucketed batches),
builds the task model from `model_dir` under `--strategy`, trains it with
`create_optimizer` in a resumable `Trainer`, scores the eval set after every
epoch and rewrites `output_dir` (`save_pretrained`) when the early-stopping
metric improves. Checkpoints go to `output_dir + ".checkpoints"`, are removed
when the run ends, and a rerun after a crash, SIGTERM or Ctrl-C resumes there.

Defaults follow Devlin et al. (2018), appendix A.3: batch 32, learning rate
5e-5, 3 epochs, warmup 10%, dropout 0.1.
"""

import dataclasses
import functools
import hashlib
import json
import logging
import math
import os
import time

import keras
import numpy as np
import tensorflow as tf

from keras_bert import sources, storage
from keras_bert.config import DTYPES, BertConfig, check_count
from keras_bert.data import batching
from keras_bert.data import labels as labels_lib
from keras_bert.files import Kind, check_not_input, prepare_output_dir, remove_own
from keras_bert.models.model_dir import (
    CONFIG_FILE,
    MODEL_DIR_KIND,
    TASK_FILE,
    VOCAB_FILE,
    build_preprocessor,
    read_task_info,
)
from keras_bert.models.registry import get_task, task_names
from keras_bert.progress import default_log_handler
from keras_bert.text.tokenizer_files import vocabulary_file
from keras_bert.training import callbacks as callbacks_lib
from keras_bert.training import class_weights as class_weights_lib
from keras_bert.training.distribute import resolve_strategy, strategy_name, worker_info
from keras_bert.training.optimizers import check_optimizer_settings, create_optimizer
from keras_bert.training.finetune_fields import FinetuneFields
from keras_bert.training.finetuning_controls import (
    freeze_encoder_layers,
    layerwise_lr_multipliers,
)
from keras_bert.training.pretrain import resolve_jit_compile
from keras_bert.training.trainer import (
    Trainer,
    TrainingInterrupted,
    read_json_state,
    write_json_atomic,
)
from keras_bert.training.trainer import own_checkpoint_files as _trainer_files

logger = logging.getLogger("keras_bert.training")

STATE_FILE = "finetune_state.json"


def predict_batches(model, dataset):
    """Runs `model` (inference mode) over (features, ...) batches; yields numpy outputs."""
    spec = dataset.element_spec
    features_spec = spec[0] if isinstance(spec, tuple) else spec
    predict = inference_function(model, features_spec)
    for element in dataset:
        features = element[0] if isinstance(element, tuple) else element
        yield keras.tree.map_structure(lambda t: np.asarray(t), predict(features))


def _infer(model, features):
    return model(features, training=False)


def inference_function(model, features_spec):
    """`model(x, training=False)` as a tf.function, kept on the model and traced
    at most once for inputs like `features_spec` (a structure of `tf.TensorSpec`,
    relaxed to None in every dimension)."""
    signature = tf.nest.map_structure(
        lambda s: tf.TensorSpec([None] * s.shape.rank, s.dtype), features_spec)
    key = repr(signature)
    functions = model.__dict__.get("_keras_bert_inference_functions")
    if functions is None:
        functions = {}
        # object.__setattr__: Keras must not track the dict as model state.
        object.__setattr__(model, "_keras_bert_inference_functions", functions)
    if key not in functions:
        # A partial, not a lambda: tf.function counts retraces per code object,
        # so one lambda shared by many models would warn of "retracing".
        functions[key] = tf.function(functools.partial(_infer, model),
                                     input_signature=[signature], autograph=False)
    return functions[key]


class FinetuneTask:
    """Shared setup: the model directory, its preprocessor, label names.

    The one preprocessor packs the training and eval data (`prepare`) and is
    the built model's, so the saved model packs as training did. Subclasses
    set `name`, `model_class`, `metrics` (higher is better, the first is the
    default early-stopping metric) and implement `prepare`, `model_kwargs`,
    `evaluate`; the loss is the model's default.
    """

    name = None
    model_class = None
    metrics = ()
    # The task's max_seq_length when neither the run nor the model directory says.
    default_max_seq_length = 128
    padding_values = None  # Of training elements; None = 0 everywhere.
    #: `labels.infer_label_names` arguments for label names found in the training data.
    label_inference = {}
    #: True when the training loss gathers tensors across replicas (in-batch negatives
    #: of the global batch): XLA's per-replica step cannot hold that collective.
    gathers_across_replicas = False

    def __init__(self, model_dir, options, task_options=None):
        self.model_dir = model_dir
        self.options = options
        self.task_options = _check_task_options(self.name, task_options)
        config = BertConfig.from_json_file(os.path.join(model_dir, CONFIG_FILE))
        self.vocab_file = vocabulary_file(model_dir)
        if self.vocab_file is None:
            raise FileNotFoundError(
                f"{model_dir} has no {VOCAB_FILE} (nor another tokenizer's files): fine-tuning "
                f"tokenizes text with the model's vocabulary. Copy it in or re-create the "
                f"directory with tools/convert_checkpoint.py."
            )
        self.base_info = read_task_info(model_dir) or {}
        self.preprocessor = build_preprocessor(
            self.vocab_file, config.max_position_embeddings, self.base_info,
            max_seq_length=options.max_seq_length, lowercase=options.lowercase,
            default_max_seq_length=self.default_max_seq_length,
            where=os.path.join(model_dir, TASK_FILE))

    @property
    def max_seq_length(self):
        """int, the longest packed sequence of the run (its preprocessor's)."""
        return self.preprocessor.truncation_length

    @classmethod
    def read_data(cls, path, training, task_options):
        """Reads one input file (or source) `path` of the task; see `read_task_data`
        (`task_options`: None for a task without options)."""
        raise NotImplementedError

    def base_label_names(self):
        """Label names of a model directory of this same task, if any."""
        if self.base_info.get("task") == self.name:
            return self.base_info.get("task_config", {}).get("label_names")
        return None

    def resolve_label_names(self, given, train, labels=None, declared=None, minimum=1, why=""):
        """The run's label names (`labels.resolve_label_names`): the task option's
        (`given`) > the data source's (`declared`) > the model directory's >
        inferred from `labels` (default `train.labels`)."""
        return labels_lib.resolve_label_names(
            given, self.base_label_names(), train.labels if labels is None else labels,
            declared=declared, source=getattr(train.report, "source", "the training data"),
            minimum=minimum, why=why, **self.label_inference)

    @classmethod
    def default_optimizer(cls):
        """`BertTask.compile`'s default: `create_optimizer` with `FinetuneOptions`'
        defaults at a constant rate (a schedule needs the run's step count)."""
        options = FinetuneOptions()
        return create_optimizer(
            options.learning_rate, None, weight_decay=options.weight_decay,
            global_clipnorm=options.global_clipnorm)

    def build_model(self, dtype=None):
        """The task model of `model_dir`, carrying the run's preprocessor.

        A fine-tuned directory of the task keeps its head unless the new
        labels change its shape (`new_head="auto"`)."""
        return self.model_class.from_pretrained(
            self.model_dir, dtype=dtype, new_head="auto", preprocessor=self.preprocessor,
            **self.model_kwargs())

    def class_weight_labels(self):
        """(label names, int array of training label ids) for class weights (after
        `prepare`), or None for a task without classes (regression, span QA)."""
        return None

    def set_class_weights(self):
        """Resolves `options.class_weights` (after `prepare`) into `self.class_weights`,
        float32 [num_classes] or None, which `training_batches` applies."""
        self.class_weights = None
        spec = self.options.class_weights
        if spec is None:
            return None
        labels = self.class_weight_labels()
        if labels is None:
            raise self.class_weights_error()
        label_names, label_ids = labels
        self.class_weights = class_weights_lib.resolve_class_weights(spec, label_names, label_ids)
        logger.info("class weights (%s): %s", "auto: N / (C * n_c), mean 1 over the training "
                    "labels" if spec == class_weights_lib.AUTO else "given",
                    class_weights_lib.describe(self.class_weights, label_names))
        return self.class_weights

    def class_weights_error(self):
        """The ValueError for `options.class_weights` on a task (or setting) without classes."""
        kind = "regression" if getattr(self, "regression", False) else self.name
        return ValueError(
            f"--class-weights (class_weights={self.options.class_weights!r}) is for "
            f"single-label classification and token classification; {kind} has no classes "
            f"to weigh. Drop the flag.")

    def training_batches(self, batch_size, seed, input_pipeline_id=0, num_input_pipelines=1):
        dataset, padding_values = self.train_dataset, self.padding_values
        if getattr(self, "class_weights", None) is not None:
            # (features, label) -> (features, label, weight); padding gets weight 0.
            dataset = class_weights_lib.add_sample_weights(dataset, self.class_weights)
            if padding_values is not None:
                padding_values = tuple(padding_values) + (0.0,)
        return batching.training_batches(
            dataset, batch_size, self.max_seq_length, seed=seed,
            input_pipeline_id=input_pipeline_id, num_input_pipelines=num_input_pipelines,
            padding_values=padding_values,
        )

    def task_info(self):
        """Facts for task.json besides the model's own task_config and the text
        settings (save_pretrained writes those from the model's preprocessor)."""
        return {}

    def write_predictions(self, output_dir):
        """Writes evaluation predictions beside the model, when the task has any."""


@dataclasses.dataclass
class FinetuneOptions(FinetuneFields):
    """The generic hyperparameters and switches of `finetune`; CLI flags use the same names.

    Each field's default and meaning is in `FinetuneFields` (the flags' help);
    this class adds the checks of their values. A task's own settings are its
    `TaskSpec.options` dataclass (`finetune(task_options=...)`).
    """

    def __post_init__(self):
        if self.class_weights is not None and not isinstance(self.class_weights, dict) and (
                not isinstance(self.class_weights, (str, os.PathLike)) or (
                    self.class_weights != class_weights_lib.AUTO
                    and not storage.exists(self.class_weights))):
            raise ValueError(
                f"Expected class_weights 'auto', a JSON file {{label: weight}} or a dict. "
                f"Received: class_weights={self.class_weights!r} (no such file).")
        for name in ("epochs", "batch_size", "log_every"):
            check_count(name, getattr(self, name))
        if not 0 <= self.warmup_fraction < 1:
            raise ValueError(f"Expected warmup_fraction in [0, 1). Received: {self.warmup_fraction!r}")
        check_optimizer_settings(self.weight_decay, self.global_clipnorm, self.learning_rate)
        if self.dtype not in DTYPES:
            raise ValueError(f"Expected dtype in {DTYPES}. Received: dtype={self.dtype!r}")
        # It multiplies the learning rate: inf would make every weight NaN.
        if not (isinstance(self.encoder_lr_multiplier, (int, float))
                and math.isfinite(self.encoder_lr_multiplier) and self.encoder_lr_multiplier > 0):
            raise ValueError(f"Expected encoder_lr_multiplier to be a finite float > 0. "
                             f"Received: encoder_lr_multiplier={self.encoder_lr_multiplier!r}")
        if isinstance(self.lora_rank, bool) or not isinstance(self.lora_rank, int) or (
                self.lora_rank < 0):
            raise ValueError(f"Expected lora_rank to be an int >= 0 (0: no LoRA). "
                             f"Received: lora_rank={self.lora_rank!r}")
        if self.lora_rank and (self.freeze_layers or self.freeze_embeddings):
            raise ValueError(
                f"lora_rank={self.lora_rank} freezes the whole encoder but its adapters; "
                f"drop freeze_layers / freeze_embeddings (--freeze-layers, --freeze-embeddings).")
        if self.early_stopping_patience < 0:
            raise ValueError(
                f"Expected early_stopping_patience >= 0. Received: {self.early_stopping_patience!r}")


def _refuse_task_fields(init):
    """Wraps FinetuneOptions' __init__: a task's field gets an error naming its class
    (the dataclass's own TypeError would not say where it lives)."""
    def __init__(self, *args, **kwargs):
        generic = {field.name for field in dataclasses.fields(FinetuneOptions)}
        for name in kwargs:
            if name in generic:
                continue
            owners = [spec for spec in map(get_task, task_names())
                      if spec.options is not None
                      and name in {f.name for f in dataclasses.fields(spec.options)}]
            if owners:
                where = " or ".join(
                    f"{spec.options.__name__}({name}=...) (keras_bert.tasks.{spec.name}.options)"
                    for spec in owners)
                raise TypeError(
                    f"FinetuneOptions has no {name!r}: it is a task option. Pass "
                    f"task_options={where} to finetune() and read_task_data()."
                )
        init(self, *args, **kwargs)

    return __init__


FinetuneOptions.__init__ = _refuse_task_fields(FinetuneOptions.__init__)


def _finetune_jit_compile(options, strategy):
    """Like `resolve_jit_compile`, but "auto" is off on a CPU-only machine: XLA
    compiles each length bucket, and on CPU the compiled step is slower."""
    if options.jit_compile == "auto" and not tf.config.list_logical_devices("GPU"):
        return False
    return resolve_jit_compile(options.jit_compile, options.dtype, strategy)


@dataclasses.dataclass
class FinetuneResult:
    """What `finetune` did: the best epoch's metrics and every epoch's."""

    output_dir: str
    metric: str
    best_epoch: int
    best_metrics: dict
    history: list
    train_examples: int
    steps: int
    seconds: float


def read_task_data(task, path, training, task_options=None, **fields):
    """Reads one input of `task`; the readers report bad rows as FILE:LINE.

    Args:
        task: "classification", "token_classification" or "span_qa".
        path: str, a file (classification: .csv/.tsv/.jsonl; token
            classification: CoNLL; span_qa: SQuAD JSON), or for
            classification "tfds:NAME:SPLIT" / "tfds:NAME" (split "train"
            for training, else "validation" or "test").
        training: bool.
        task_options: the task's options (`get_task(task).options`, e.g.
            `ClassificationOptions(text_column="sentence")`), or None for
            its defaults with `fields`; it is read, never changed. Give the
            same object to `finetune`. A `FinetuneOptions` counts as None.
        **fields: fields of the task's options, when `task_options` is None
            (`text_column="sentence"`).

    Returns:
        `ClassificationExamples`, `ConllSentences` or `SquadData`: texts and
        labels (words and tags, questions, contexts and answers), not ids.
        For TFDS, the dataset's ClassLabel names are the examples'
        `label_names` (`finetune` takes them after `--label-names`).
    """
    task_class = finetune_task_class(task)
    if isinstance(task_options, FinetuneOptions):
        task_options = None
    if task_options is None:
        task_options = get_task(task).make_options(**fields)
    elif fields:
        raise ValueError(f"Give read_task_data either task_options or its fields, not both. "
                         f"Received: task_options and {sorted(fields)}.")
    return task_class.read_data(path, training, _check_task_options(task, task_options))


def _check_task_options(task, task_options):
    """`task_options`, or the task's defaults for None; a TypeError for another task's."""
    spec = get_task(task)
    if task_options is None:
        return spec.make_options()
    if spec.options is None or not isinstance(task_options, spec.options):
        expected = spec.options.__name__ if spec.options else "None"
        raise TypeError(
            f"task_options for {task!r} must be {expected}. Received: "
            f"{type(task_options).__name__}."
        )
    return task_options


def finetune_task_class(task):
    """The `FinetuneTask` subclass registered for `task`."""
    spec = get_task(task)
    if spec.finetune is None:
        raise ValueError(
            f"Task {task!r} is not fine-tuned. Fine-tunable tasks: {fine_tunable_tasks()}."
        )
    return spec.finetune


def fine_tunable_tasks():
    """Names of the registered tasks that `finetune` runs."""
    return [name for name in task_names() if get_task(name).finetune is not None]


def _is_checkpoint_dir(path):
    # STATE_FILE is written first; without it, a folder of only the Trainer's
    # and finetune's files (a killed write's leftovers) is one too.
    names = storage.listdir(path)
    return STATE_FILE in names or set(names) <= set(own_checkpoint_files(path))


#: A fine-tuning checkpoint folder (see `_is_checkpoint_dir`); a non-empty
#: folder of anything else is refused.
CHECKPOINT_DIR_KIND = Kind("fine-tuning checkpoint folder", check=_is_checkpoint_dir)


def check_outputs(model_dir, output_dir, checkpoint_dir, inputs=()):
    """Raises unless `finetune` may write `output_dir` (new, empty or a model
    directory) and `checkpoint_dir` (new, empty or one `finetune` wrote), both
    apart from `model_dir` and the other `inputs`. Nothing is written."""
    inputs = [model_dir, *inputs]
    prepare_output_dir(output_dir, MODEL_DIR_KIND, inputs=inputs)
    prepare_output_dir(checkpoint_dir, CHECKPOINT_DIR_KIND,
                       inputs=[*inputs, output_dir])
    check_not_input(output_dir, [checkpoint_dir], flag="The output")


def own_checkpoint_files(checkpoint_dir):
    """The names in `checkpoint_dir` that `finetune` and its Trainer wrote:
    checkpoints, STATE_FILE and the temporary files of its atomic writes."""
    if not storage.isdir(checkpoint_dir):
        return []
    stem = os.path.splitext(STATE_FILE)[0]
    return _trainer_files(checkpoint_dir) + [
        name for name in storage.listdir(checkpoint_dir)
        if name == STATE_FILE or (name.startswith(f".tmp-{stem}-") and name.endswith(".json"))]


def remove_checkpoints(checkpoint_dir):
    """Removes what `finetune` wrote in `checkpoint_dir`, and the folder if
    nothing else is left: files of the user's there stay."""
    if not storage.isdir(checkpoint_dir):
        return
    workers = storage.join(checkpoint_dir, ".tmp")  # Non-chief workers' copies (Trainer).
    if storage.isdir(workers):
        remove_own(workers, [name for name in storage.listdir(workers)
                             if name.startswith("worker-") and name[7:].isdigit()])
    remove_own(checkpoint_dir, own_checkpoint_files(checkpoint_dir))


def _fingerprint(task, model_dir, options, num_examples, task_options=None):
    values = dataclasses.asdict(options)
    if task_options is not None:
        values.update(dataclasses.asdict(task_options))
    values.update(task=task, model_dir=os.path.abspath(model_dir), num_examples=num_examples)
    return hashlib.sha256(json.dumps(values, sort_keys=True, default=str).encode()).hexdigest()


# Files up to this size are hashed whole; larger ones by a sample of blocks.
_FULL_HASH_BYTES = 256 * 1024 * 1024
_SAMPLE_BLOCKS, _BLOCK_BYTES = 64, 1024 * 1024


def file_fingerprint(path):
    """{"path", "size", "sha256"} of a data file. Files over `_FULL_HASH_BYTES`
    hash their size and `_SAMPLE_BLOCKS` blocks spread evenly over the file
    (a same-size edit between them goes unseen)."""
    size = storage.size(path)
    fingerprint = {"path": os.path.abspath(path), "size": size}
    if size <= _FULL_HASH_BYTES:
        return {**fingerprint, "sha256": storage.file_sha256(path)}
    digest = hashlib.sha256(str(size).encode())
    step = (size - _BLOCK_BYTES) / (_SAMPLE_BLOCKS - 1)
    with storage.open_file(path, "rb") as f:
        for k in range(_SAMPLE_BLOCKS):
            f.seek(int(k * step))
            digest.update(f.read(_BLOCK_BYTES))
    return {**fingerprint, "sha256": digest.hexdigest()}


def data_fingerprints(*datasets):
    """`file_fingerprint` of the file behind each reader output (`.report.source`),
    once per file; TFDS sources and examples built in Python are left out."""
    result = []
    for data in datasets:
        source = getattr(getattr(data, "report", None), "source", None)
        # Locally a regular file only: a pipe was read once, by its reader, and has no content
        # to check on a resume (reopened, a named pipe would wait for a writer for ever).
        if isinstance(source, str) and (storage.isfile(source) if storage.is_remote(source)
                                        else os.path.isfile(source)):
            fingerprint = file_fingerprint(source)
            if fingerprint not in result:
                result.append(fingerprint)
    return result


def _changed_data_error(checkpoint_dir, saved, current):
    """The ValueError for a resume whose data files differ from the run's, or None."""
    def content(f):
        return f["size"], f["sha256"]

    now = {f["path"]: f for f in current}
    problem = None
    for old in saved:
        new = now.get(old["path"])
        if new == old or (new is None and content(old) in map(content, current)):
            continue  # Unchanged, or the same file moved.
        if new is None:
            problem = f"{old['path']} is no longer an input"
        elif new["size"] != old["size"]:
            problem = f"{old['path']} changed size ({old['size']} -> {new['size']} bytes)"
        else:
            problem = f"{old['path']} changed content (same size)"
        break
    else:
        added = [f for f in current if content(f) not in map(content, saved)]
        if saved and added:
            problem = f"{added[0]['path']} was not an input of that run"
    if problem is None:
        return None
    return ValueError(
        f"{checkpoint_dir} holds checkpoints of a run on other data: {problem}. Use a new "
        f"--checkpoint-dir (checkpoint_dir=) to train on this data from the start, or restore "
        f"the file to resume."
    )


def _log_resume(checkpoint_dir, runner, total_steps):
    latest = tf.train.latest_checkpoint(checkpoint_dir)
    if latest is None:
        return
    step = int(latest.rsplit("-", 1)[1])
    state = runner.state
    best = (state["best_metrics"] or {}).get(runner.metric)
    best = "" if best is None else f"; best {runner.metric} {best:.4f} at epoch {state['best_epoch']}"
    logger.info("resumed from step %d/%d (%s): %d epoch(s) scored%s", step, total_steps,
                checkpoint_dir, len(state["history"]), best)


class _EvalAndKeepBest(keras.callbacks.Callback):
    """At each epoch end: score the eval set, save the best model, stop early."""

    def __init__(self, runner):
        super().__init__()
        self.runner = runner

    def on_train_batch_end(self, batch, logs=None):
        runner = self.runner
        step = batch + 1
        if step % runner.steps_per_epoch == 0 or step == runner.total_steps:
            runner.end_epoch(math.ceil(step / runner.steps_per_epoch), logs or {})


class _Runner:
    """One fine-tuning run's state (kept in STATE_FILE for resuming); a resume
    continues only the same data files, options, model and example count."""

    def __init__(self, task, output_dir, checkpoint_dir, options, fingerprint, is_chief,
                 data_files=()):
        self.task = task
        self.output_dir = output_dir
        self.checkpoint_dir = checkpoint_dir
        self.options = options
        self.is_chief = is_chief
        self.metric = options.metric or task.metrics[0]
        if self.metric not in task.metrics:
            raise ValueError(
                f"--metric {self.metric!r} is not a {task.name} metric; choose one of "
                f"{list(task.metrics)}."
            )
        self.state = {"fingerprint": fingerprint, "data_files": list(data_files), "history": [],
                      "best_epoch": 0, "best_metrics": None, "bad_epochs": 0}
        path = os.path.join(checkpoint_dir, STATE_FILE)
        if tf.io.gfile.exists(path):
            saved = read_json_state(
                path, "the fine-tuning run's epochs, best metrics and fingerprint",
                f"Delete the folder {checkpoint_dir} to start the run over (its "
                f"checkpoints cannot be resumed without it).")
            # The data first: its message names the file and what changed.
            error = _changed_data_error(checkpoint_dir, saved.get("data_files", []), data_files)
            if error is not None:
                raise error
            if saved.get("fingerprint") != fingerprint:
                raise ValueError(
                    f"{checkpoint_dir} holds checkpoints of another fine-tuning run (other data, "
                    f"model or options). Delete it to start over, or rerun that exact command "
                    f"to resume it."
                )
            self.state = saved
        self.log_dir = None
        self.step_logger = None
        self.on_epoch_end = None  # finetune's `on_epoch_end`: called after each new epoch.

    def _write_state(self):
        # Written before the epoch's checkpoint: a kill between them resumes
        # from the epoch before, which end_epoch does not score twice.
        if not self.is_chief:
            return
        tf.io.gfile.makedirs(self.checkpoint_dir)
        write_json_atomic(os.path.join(self.checkpoint_dir, STATE_FILE), self.state)

    def end_epoch(self, epoch, logs):
        if any(h["epoch"] == epoch for h in self.state["history"]):
            # Scored before a resume; a run that had decided to stop early
            # stops here again.
            patience = self.options.early_stopping_patience
            if patience and self.state["bad_epochs"] >= patience:
                self.model.stop_training = True
            return
        start = time.time()
        metrics = self.task.evaluate(self.model, self.options.eval_batch_size or self.options.batch_size)
        value = metrics[self.metric]
        best = self.state["best_metrics"]
        improved = best is None or value > best[self.metric]
        line = " ".join(
            f"{k} {callbacks_lib.metric_text(v)}" if isinstance(v, float) else f"{k} {v}"
            for k, v in metrics.items())
        if self.step_logger is not None:
            self.step_logger.clear()
        logger.info("epoch %d eval: %s (%.1f s)%s", epoch, line, time.time() - start,
                    " [best]" if improved else "")
        if self.log_dir and self.is_chief:
            callbacks_lib.write_scalars(os.path.join(self.log_dir, "eval"),
                                        epoch * self.steps_per_epoch, metrics)
        self.state["history"].append(
            {"epoch": epoch, "train_loss": float(logs.get("loss", float("nan"))), **metrics})
        if improved:
            self.state.update(best_epoch=epoch, best_metrics=metrics, bad_epochs=0)
            if self.is_chief:
                info = {**self.task.task_info(), "eval_metrics": metrics, "epoch": epoch,
                        "early_stopping_metric": self.metric}
                self.model.save_pretrained(
                    self.output_dir, vocab_file=self.task.vocab_file, task_info=info)
                self.task.write_predictions(self.output_dir)
        else:
            self.state["bad_epochs"] += 1
            patience = self.options.early_stopping_patience
            if patience and self.state["bad_epochs"] >= patience:
                logger.info("early stopping: %s has not improved for %d epoch(s); best %.4f at "
                            "epoch %d", self.metric, self.state["bad_epochs"],
                            best[self.metric], self.state["best_epoch"])
                self.model.stop_training = True
        self._write_state()
        if self.on_epoch_end is not None:
            self.on_epoch_end(self.state["history"][-1], improved)


@default_log_handler()
def finetune(task, model_dir, output_dir, train_data, eval_data, options=None,
             checkpoint_dir=None, callbacks=None, strategy=None, log_dir=None, progress="auto",
             task_options=None, on_epoch_end=None):
    """Fine-tunes `model_dir` on a task and writes the best model to `output_dir`.

    Args:
        task: "classification", "token_classification" or "span_qa".
        model_dir: str, the starting model directory, or any other source
            `from_pretrained` takes (converted once into the cache first).
        output_dir: str, the model directory to write (the best epoch).
        train_data, eval_data: reader output for the task (`read_task_data`,
            or the `reader` module of each `keras_bert.tasks.<task>` folder).
        options: `FinetuneOptions`, the generic settings (None: the defaults).
        checkpoint_dir: str, where resumable checkpoints go (default
            `output_dir + ".checkpoints"`); what finetune wrote there is
            removed at the end. It must be new, empty or one finetune wrote.
        callbacks: extra Keras callbacks (they see global steps).
        strategy: a `tf.distribute.Strategy`, or None to resolve
            `options.strategy` here (resolve it before other TensorFlow ops,
            such as reading TFDS data, for multi-worker and TPU strategies).
        log_dir: str, TensorBoard log directory (train/ and eval/ in it), or
            None for none. Kept after the run (unlike `checkpoint_dir`).
        progress: "auto" (a progress bar on a terminal, lines elsewhere) or
            "lines"; see `StepLogger`.
        task_options: the task's own settings, its `TaskSpec.options`
            dataclass (`ClassificationOptions`, ...), or None for its
            defaults. Pass the object given to `read_task_data`.
        on_epoch_end: None, or `f(record, improved)` called on every worker
            after each newly scored epoch, once its best model is written:
            `record` is the history entry (epoch, train_loss and the eval
            metrics), `improved` whether this epoch became the best.

    Returns:
        `FinetuneResult`.

    The set-up, data report and evaluations are logged at INFO
    (`default_log_handler`).

    Raises:
        TrainingInterrupted: after SIGTERM or SIGINT (Ctrl-C), once a
            checkpoint of the current step is saved; the same call again
            resumes from it.

    Example:
    >>> train = read_task_data("classification", "train.csv", training=True)
    >>> dev = read_task_data("classification", "dev.csv", training=False)
    >>> result = finetune("classification", "models/minilm", "models/minilm-sentiment",
    ...                   train, dev, FinetuneOptions(epochs=2),
    ...                   task_options=ClassificationOptions(label_names=["neg", "pos"]))
    >>> result.best_metrics["accuracy"]
    """
    task_class = finetune_task_class(task)
    options = options or FinetuneOptions()
    task_options = _check_task_options(task, task_options)
    checkpoint_dir = checkpoint_dir or output_dir.rstrip("/") + ".checkpoints"
    check_outputs(model_dir, output_dir, checkpoint_dir)  # Before any long work.
    model_dir = sources.resolve_source(model_dir)
    start_time = time.time()
    strategy = strategy or resolve_strategy(options.strategy)
    _, _, is_chief = worker_info(strategy)
    keras.utils.set_random_seed(options.seed)
    runner_task = task_class(model_dir, options, task_options)
    if (options.class_weights is not None
            and task_class.class_weight_labels is FinetuneTask.class_weight_labels):
        raise runner_task.class_weights_error()  # Before tokenizing: the task has no classes.
    runner_task.prepare(train_data, eval_data)
    runner_task.set_class_weights()
    for report in {id(d.report): d.report for d in (train_data, eval_data)}.values():
        logger.info("%s", report.summary())
    if runner_task.num_train_examples == 0:
        raise ValueError("No training examples are left after skipping bad rows; see the log.")

    steps_per_epoch = math.ceil(runner_task.num_train_examples / options.batch_size)
    total_steps = steps_per_epoch * options.epochs
    warmup_steps = int(options.warmup_fraction * total_steps)
    jit_compile = _finetune_jit_compile(options, strategy)
    if jit_compile and runner_task.gathers_across_replicas and strategy.num_replicas_in_sync > 1:
        if options.jit_compile == "on":
            raise ValueError(
                f"--jit-compile on: {task}'s loss gathers every replica's examples (the "
                f"in-batch negatives of the global batch), a collective that an XLA-compiled "
                f"replica step cannot hold, and {strategy.num_replicas_in_sync} replicas train "
                f"here. Use --jit-compile off (or auto), or one replica.")
        logger.info("jit_compile off: %s gathers the %d replicas' in-batch negatives, which "
                    "XLA's per-replica step cannot", task, strategy.num_replicas_in_sync)
        jit_compile = False
    dtype = None if options.dtype == "float32" else options.dtype
    with strategy.scope():
        model = runner_task.build_model(dtype)
        if options.freeze_layers or options.freeze_embeddings:
            freeze_encoder_layers(model, options.freeze_layers,
                                  embeddings=options.freeze_embeddings)
        if options.lora_rank:
            model.enable_lora(options.lora_rank)
        multipliers = None
        if options.layerwise_lr_decay != 1.0 or options.encoder_lr_multiplier != 1.0:
            multipliers = layerwise_lr_multipliers(
                model, options.layerwise_lr_decay, options.encoder_lr_multiplier)
        optimizer = create_optimizer(
            options.learning_rate, total_steps, warmup_steps, weight_decay=options.weight_decay,
            global_clipnorm=options.global_clipnorm, loss_scale=options.dtype == "mixed_float16",
            lr_multipliers=multipliers)
        # The model's default loss; the task's own metrics come after each epoch.
        model.compile(optimizer=optimizer, metrics=None)
    logger.info(
        "%s: %d training examples, %d steps/epoch x %d epochs, batch %d, lr %g (warmup %d "
        "steps), max_seq_length %d, dtype %s, jit_compile %s, strategy %s", task,
        runner_task.num_train_examples, steps_per_epoch, options.epochs, options.batch_size,
        options.learning_rate, warmup_steps, runner_task.max_seq_length, options.dtype,
        jit_compile, strategy_name(strategy))

    runner = _Runner(runner_task, output_dir, checkpoint_dir, options,
                     _fingerprint(task, model_dir, options, runner_task.num_train_examples,
                                  task_options),
                     is_chief, data_files=data_fingerprints(train_data, eval_data))
    runner.model, runner.steps_per_epoch, runner.total_steps = model, steps_per_epoch, total_steps
    runner.on_epoch_end = on_epoch_end
    runner._write_state()  # The fingerprint guards every checkpoint written from here on.
    _log_resume(checkpoint_dir, runner, total_steps)

    def dataset_fn(batch_size, input_pipeline_id, num_input_pipelines):
        return runner_task.training_batches(
            batch_size, options.seed, input_pipeline_id, num_input_pipelines)

    trainer = Trainer(model, strategy, dataset_fn, options.batch_size, checkpoint_dir,
                      checkpoint_every=steps_per_epoch, max_checkpoints=1, jit_compile=jit_compile)
    feedback = []
    if is_chief:
        runner.step_logger = callbacks_lib.StepLogger(options.log_every, options.batch_size,
                                                      total_steps, mode=progress)
        feedback.append(runner.step_logger)
        if log_dir and not callbacks_lib.tensorboard_available():
            logger.info("TensorBoard logs off: the tensorboard package is not installed "
                        "(pip install tensorboard).")
        elif log_dir:
            runner.log_dir = log_dir
            feedback.append(callbacks_lib.TensorBoard(log_dir, update_freq=options.log_every))
    try:
        trainer.train(total_steps,
                      callbacks=feedback + [_EvalAndKeepBest(runner)] + list(callbacks or []),
                      verbose=0, log_every=options.log_every)
    except TrainingInterrupted:
        if runner.step_logger is not None:
            runner.step_logger.clear()  # The caller's message gets a line of its own.
        raise
    if is_chief:
        remove_checkpoints(checkpoint_dir)
    state = runner.state
    return FinetuneResult(
        output_dir=output_dir, metric=runner.metric, best_epoch=state["best_epoch"],
        best_metrics=state["best_metrics"], history=state["history"],
        train_examples=runner_task.num_train_examples, steps=int(trainer.step.numpy()),
        seconds=time.time() - start_time,
    )
