"""Ray Train entry point: keras_bert's fine-tuning and pretraining in a `TensorflowTrainer`.

`train_loop_per_worker(config)` runs in each Ray worker, where Ray sets
TF_CONFIG (so `resolve_strategy("auto")` builds MultiWorkerMirroredStrategy).

`config` names the job and the library's own arguments (the same names as
the flags of tools/finetune.py and tools/pretrain.py, with underscores):

    {"job": "finetune", "task": "classification", "model": "models/minilm",
     "train": "train.csv", "eval": "dev.csv",   # or "eval_fraction": 0.1
     "output": "/shared/models/minilm-sentiment",
     "options": {"epochs": 3, "batch_size": 32},          # FinetuneOptions fields
     "task_options": {"label_column": "sentiment"}}       # the task's options

    {"job": "pretrain", "train": "data/", "output": "/shared/runs/mini",
     "preset": "mini",            # or "bert_config": {BertConfig fields}, or "model": a directory
     "config": {"num_train_steps": 10000, "batch_size": 256},  # PretrainingConfig fields
     "report_every": 1000}        # steps between reports (default: checkpoint_every)

What Ray receives, and how a run resumes: docs/cluster.md. `output` must be on
storage every worker sees. Ray is imported here only.
"""

import logging
import os
import tempfile

logger = logging.getLogger("keras_bert.training")

JOBS = ("finetune", "pretrain")


def _ray_train():
    try:
        import ray.train
    except ImportError as e:
        raise ImportError(
            "keras_bert.training.ray_train needs Ray Train: pip install \"bert-keras3[ray]\" "
            "(or 'ray[train]')."
        ) from e
    return ray.train


def _report(metrics, checkpoint_dir=None, name=None):
    """`ray.train.report` on every worker; a checkpoint from the one that passes a folder."""
    train = _ray_train()
    checkpoint = None if checkpoint_dir is None else train.Checkpoint.from_directory(checkpoint_dir)
    train.report(metrics, checkpoint=checkpoint, checkpoint_dir_name=name,
                 delete_local_checkpoint_after_upload=False)


def _numbers(values):
    return {k: float(v) for k, v in values.items() if isinstance(v, (int, float))}


def train_loop_per_worker(config):
    """Runs the fine-tuning or pretraining job `config` describes (see the module docstring).

    Pass it as `TensorflowTrainer(train_loop_per_worker, train_loop_config=config, ...)`.

    Returns:
        `FinetuneResult` (fine-tuning) or `run_pretraining`'s dict (pretraining).
    """
    job = config.get("job")
    if job not in JOBS:
        raise ValueError(f"config['job'] is {job!r}; give one of {list(JOBS)}.")
    _ray_train()  # Before TensorFlow's work: a missing Ray fails at once.
    from keras_bert.training.distribute import resolve_strategy
    # Before any other TensorFlow op (MultiWorkerMirroredStrategy needs that).
    strategy = resolve_strategy(config.get("strategy", "auto"))
    run = finetune_job if job == "finetune" else pretrain_job
    return run(config, strategy)


def finetune_job(config, strategy):
    """`finetune` with `config`'s arguments, reporting each epoch to Ray."""
    from keras_bert.data.text_data import split_examples
    from keras_bert.models.registry import get_task
    from keras_bert.training.distribute import worker_info
    from keras_bert.training.finetune import FinetuneOptions, finetune, read_task_data

    task, output = config["task"], config["output"].rstrip("/")
    options = FinetuneOptions(**config.get("options", {}))
    task_options = get_task(task).make_options(**config.get("task_options", {}))
    train = read_task_data(task, config["train"], True, task_options)
    if config.get("eval") is not None:
        held_out = read_task_data(task, config["eval"], False, task_options)
    elif config.get("eval_fraction") is not None:
        train, held_out = split_examples(train, config["eval_fraction"],
                                         config.get("split_seed", 0))
    else:
        raise ValueError("Give config['eval'] (a file) or config['eval_fraction'].")
    is_chief = worker_info(strategy)[2]

    def report(record, improved):
        _report({**_numbers(record), "improved": improved},
                output if is_chief and improved else None, f"epoch-{record['epoch']}")

    return finetune(task, config["model"], output, train, held_out, options,
                    checkpoint_dir=config.get("checkpoint_dir") or output + ".checkpoints",
                    strategy=strategy, log_dir=config.get("log_dir"), progress="lines",
                    task_options=task_options, on_epoch_end=report)


def pretrain_job(config, strategy):
    """`run_pretraining` with `config`'s arguments, reporting every `report_every` steps."""
    import keras

    from keras_bert.config import BertConfig
    from keras_bert.data import read_metadata
    from keras_bert.training.distribute import worker_info
    from keras_bert.training.pretrain import (
        PretrainingConfig,
        run_pretraining,
        save_pretrained_model,
    )

    data_dir = config["train"]
    metadata = read_metadata(data_dir)
    run_config = PretrainingConfig(**config.get("config", {}))
    bert_config = None
    if config.get("preset"):
        bert_config = BertConfig.from_preset(
            config["preset"], **{"vocab_size": metadata["vocab_size"],
                                 **config.get("bert_config", {})})
    elif config.get("bert_config"):  # As tools/pretrain.py --config: the fields as given.
        bert_config = BertConfig.from_dict(config["bert_config"])
    every = int(config.get("report_every") or run_config.checkpoint_every)
    is_chief = worker_info(strategy)[2]

    def report(model, step, logs):
        metrics = {**_numbers(logs), "step": step}
        if not is_chief:
            return _report(metrics)
        with tempfile.TemporaryDirectory() as snapshot:
            model_dir = os.path.join(snapshot, "model")
            save_pretrained_model(model, model_dir, data_dir, metadata, step)
            _report(metrics, model_dir, f"step-{step}")

    class Report(keras.callbacks.Callback):
        def on_train_batch_end(self, batch, logs=None):
            step = batch + 1  # Global, 1-based.
            if step % every == 0 and step < run_config.num_train_steps:
                report(self.model, step, logs or {})

    result = run_pretraining(
        data_dir, config["output"], run_config, bert_config=bert_config,
        init_from=config.get("model"), strategy=strategy, callbacks=[Report()], verbose=0,
        eval_data_dir=config.get("eval"), tensorboard=config.get("tensorboard", False))
    final = {**result["logs"], **{f"eval_{k}": v for k, v in result.get("eval", {}).items()}}
    metrics = {**_numbers(final), "step": result["step"]}
    _report(metrics, result.get("model_dir"), f"step-{result['step']}")
    return result


__all__ = ["JOBS", "train_loop_per_worker", "finetune_job", "pretrain_job"]
