"""Pretrain BERT (masked LM + next sentence) on data from tools/create_pretraining_data.py.

The data directory's metadata.json gives max_seq_length, max_predictions_per_seq,
the masking mode and the vocabulary (vocab_size is taken from it). The model is
a new one (--preset NAME or --config config.json, with BertConfig fields as
overrides such as --num-layers 4) or an existing model directory (--init-from).

Rerunning the same command resumes from the latest checkpoint in --output-dir
(model, optimizer, step, data position). SIGTERM saves a checkpoint first.

Multi-worker: run the same command on every machine with TF_CONFIG set, e.g.
    TF_CONFIG='{"cluster": {"worker": ["10.0.0.1:2222", "10.0.0.2:2222"]},
                "task": {"type": "worker", "index": 0}}'   (index 1 on the second)
--output-dir must be a shared path (e.g. gs://...) that all workers see.

Example:
    python tools/pretrain.py --data-dir data/ --output-dir runs/mini --preset mini \\
        --num-train-steps 100000 --batch-size 256 --learning-rate 1e-4 --warmup-steps 10000
"""

import argparse
import dataclasses
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _flag(name):
    return "--" + name.replace("_", "-")


def _bool(text):
    if text.lower() in ("1", "true", "yes", "on"):
        return True
    if text.lower() in ("0", "false", "no", "off"):
        return False
    raise argparse.ArgumentTypeError(f"expected true or false, got {text!r}")


def build_parser():
    from keras_bert.config import PRESETS, BertConfig
    from keras_bert.training.distribute import STRATEGIES
    from keras_bert.config import DTYPES
    from keras_bert.training.pretrain import JIT_SETTINGS, PretrainingConfig
    from keras_bert.training.optimizers import OPTIMIZERS

    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        epilog=__doc__.split("\n\n", 1)[1], formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data-dir", required=True,
                        help="from tools/create_pretraining_data.py")
    parser.add_argument("--output-dir", required=True,
                        help="checkpoints, logs, pretraining_run.json and the final model/")
    parser.add_argument("--eval-data-dir", help="data directory evaluated at the end")

    model = parser.add_argument_group("model (one of --preset, --config, --init-from)")
    source = model.add_mutually_exclusive_group(required=True)
    source.add_argument("--preset", choices=sorted(PRESETS), help="a BertConfig preset")
    source.add_argument("--config", help="a BertConfig JSON file")
    source.add_argument("--init-from", help="a model directory to continue from")
    for field in dataclasses.fields(BertConfig):
        if field.name == "vocab_size":
            continue  # From the data.
        model.add_argument(_flag(field.name), type=type(field.default), default=None,
                           help=f"override BertConfig.{field.name}")

    defaults = PretrainingConfig()
    train = parser.add_argument_group("training")
    train.add_argument("--num-train-steps", type=int, default=defaults.num_train_steps)
    train.add_argument("--batch-size", type=int, default=defaults.batch_size,
                       help="global batch over all replicas, per micro-batch")
    train.add_argument("--learning-rate", type=float, default=defaults.learning_rate)
    train.add_argument("--warmup-steps", type=int, default=defaults.warmup_steps)
    train.add_argument("--optimizer", choices=OPTIMIZERS, default=defaults.optimizer)
    train.add_argument("--weight-decay", type=float, default=defaults.weight_decay)
    train.add_argument("--global-clipnorm", type=float, default=defaults.global_clipnorm,
                       help="0 for no clipping")
    train.add_argument("--gradient-accumulation-steps", type=int,
                       default=defaults.gradient_accumulation_steps)
    train.add_argument("--dtype", choices=DTYPES, default=defaults.dtype)
    train.add_argument("--jit-compile", choices=JIT_SETTINGS, default=defaults.jit_compile,
                       help="auto: on for float32, on for mixed precision on GPU, off for "
                       "mixed precision on CPU and on TPU")
    train.add_argument("--steps-per-execution", type=int,
                       default=defaults.steps_per_execution)
    train.add_argument("--checkpoint-every", type=int, default=defaults.checkpoint_every)
    train.add_argument("--max-checkpoints", type=int, default=defaults.max_checkpoints)
    train.add_argument("--log-every", type=int, default=defaults.log_every)
    train.add_argument("--shuffle-buffer-size", type=int,
                       default=defaults.shuffle_buffer_size)
    train.add_argument("--seed", type=int, default=defaults.seed)
    train.add_argument("--strategy", choices=STRATEGIES, default="auto",
                       help="auto: TPU if named/attached, multiworker if TF_CONFIG names "
                       ">1 worker, mirrored if >1 GPU, else one device")
    train.add_argument("--tpu", help="TPU name or grpc:// address (strategy tpu/auto)")
    train.add_argument("--verbose", choices=("auto", "0", "1"), default="auto",
                       help="1: Keras progress bar; auto: only on a terminal")
    train.add_argument("--tensorboard", type=_bool, default=True,
                       help="write TensorBoard logs to OUTPUT_DIR/logs (default true)")
    return parser


def main(argv=None):
    args = build_parser().parse_args(argv)

    # The strategy first: MultiWorkerMirroredStrategy and TPUStrategy must be
    # created before any other TensorFlow op runs.
    from keras_bert.training.distribute import resolve_strategy, strategy_name

    strategy = resolve_strategy(args.strategy, args.tpu)

    from keras_bert.config import BertConfig
    from keras_bert.data import read_metadata
    from keras_bert.training import PretrainingConfig, TrainingInterrupted, run_pretraining

    metadata = read_metadata(args.data_dir)
    overrides = {f.name: getattr(args, f.name) for f in dataclasses.fields(BertConfig)
                 if f.name != "vocab_size" and getattr(args, f.name) is not None}
    bert_config = None
    if args.preset:
        bert_config = BertConfig.from_preset(
            args.preset, **{"vocab_size": metadata["vocab_size"], **overrides})
    elif args.config:
        values = BertConfig.from_json_file(args.config).to_dict()
        bert_config = BertConfig.from_dict({**values, **overrides})
    elif overrides:
        raise SystemExit(f"--init-from takes the model's own config; drop "
                         f"{sorted(_flag(k) for k in overrides)}.")
    config = PretrainingConfig(
        num_train_steps=args.num_train_steps, batch_size=args.batch_size,
        learning_rate=args.learning_rate, warmup_steps=args.warmup_steps,
        optimizer=args.optimizer, weight_decay=args.weight_decay,
        global_clipnorm=args.global_clipnorm or None,
        gradient_accumulation_steps=args.gradient_accumulation_steps, dtype=args.dtype,
        jit_compile=args.jit_compile, steps_per_execution=args.steps_per_execution,
        checkpoint_every=args.checkpoint_every, max_checkpoints=args.max_checkpoints,
        log_every=args.log_every, shuffle_buffer_size=args.shuffle_buffer_size,
        seed=args.seed)
    verbose = int(sys.stdout.isatty()) if args.verbose == "auto" else int(args.verbose)
    print(f"strategy {strategy_name(strategy)}, {strategy.num_replicas_in_sync} replica(s); "
          f"data {args.data_dir}: {metadata['num_instances']} instances, "
          f"max_seq_length {metadata['max_seq_length']}, masking {metadata['masking']}",
          flush=True)
    try:
        result = run_pretraining(
            args.data_dir, args.output_dir, config, bert_config=bert_config,
            init_from=args.init_from, strategy=strategy, verbose=verbose,
            eval_data_dir=args.eval_data_dir, tensorboard=args.tensorboard)
    except TrainingInterrupted as e:
        print(e, flush=True)
        sys.exit(143)
    line = " ".join(f"{k} {v:.4f}" for k, v in result["logs"].items())
    print(f"finished at step {result['step']}: {line}")
    if "eval" in result:
        print("eval: " + " ".join(f"{k} {v:.4f}" for k, v in result["eval"].items()))
    if "model_dir" in result:
        print(f"wrote {result['model_dir']}")


if __name__ == "__main__":
    from keras_bert.cli import run  # One-line errors; --debug shows the traceback.

    sys.exit(run(main))
