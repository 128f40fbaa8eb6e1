"""Pretrain BERT (masked LM + next sentence) on data from tools/create_pretraining_data.py.

The data directory's metadata.json gives max_seq_length, max_predictions_per_seq,
the masking mode and the vocabulary (vocab_size is taken from it). The model is
a new one (--preset NAME or --config config.json, with BertConfig fields as
overrides such as --num-layers 4) or an existing model directory (--model).

Feedback: a progress bar with ETA on a terminal, a line every --log-every steps
in a log file; TensorBoard logs in OUTPUT/logs (train/ and, with --eval, eval/).

Rerunning the same command resumes from the latest checkpoint in --output
(model, optimizer, step, data position). SIGTERM or Ctrl-C (SIGINT) saves a
checkpoint first and exits with status 143 (130 for Ctrl-C).

Multi-worker: run the same command on every machine with TF_CONFIG set, e.g.
    TF_CONFIG='{"cluster": {"worker": ["10.0.0.1:2222", "10.0.0.2:2222"]},
                "task": {"type": "worker", "index": 0}}'   (index 1 on the second)
--output must be a shared path (e.g. gs://...) that all workers see.

Example:
    python tools/pretrain.py --train data/ --output runs/mini --preset mini \\
        --num-train-steps 100000 --batch-size 256 --learning-rate 1e-4 --warmup-steps 10000
"""

import argparse
import dataclasses
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import _cli  # noqa: E402
from keras_bert.training.distribute import CLUSTER_TIMEOUT  # noqa: E402


def _flag(name):
    return "--" + name.replace("_", "-")


def build_parser():
    from keras_bert import config
    parser = _cli.parser(__doc__)
    parser.add_argument("--train", required=True,
                        help="Data directory from tools/create_pretraining_data.py.")
    parser.add_argument("--eval",
                        help="Data directory evaluated at the end (masked-LM and next-sentence "
                        "loss and accuracy).")
    parser.add_argument("--output", required=True,
                        help="Run directory: checkpoints/, logs/, pretraining_run.json and the "
                        "final model/.")

    model = parser.add_argument_group("model (one of --preset, --config, --model)")
    source = model.add_mutually_exclusive_group(required=True)
    source.add_argument("--preset", choices=sorted(config.PRESETS), help="A BertConfig preset.")
    source.add_argument("--config", help="A BertConfig JSON file.")
    source.add_argument("--model", help="A model directory to continue from.")
    for field in dataclasses.fields(config.BertConfig):
        if field.name == "vocab_size":
            continue  # From the data.
        # embedding_size defaults to None (= hidden_size); use_pooler is a switch.
        kind = ({"action": argparse.BooleanOptionalAction} if isinstance(field.default, bool)
                else {"type": int if field.default is None else type(field.default)})
        model.add_argument(_flag(field.name), **kind, default=None,
                           help=f"Override BertConfig.{field.name} (preset's or config's "
                           f"otherwise).")

    # The defaults are PretrainingConfig's (tests/test_tools.py checks them).
    train = parser.add_argument_group("training")
    train.add_argument("--num-train-steps", type=int, default=100000,
                       help="Optimizer updates in the run.")
    train.add_argument("--batch-size", type=int, default=256,
                       help="Global batch over all replicas, per micro-batch.")
    train.add_argument("--learning-rate", type=float, default=1e-4, help="Peak learning rate.")
    train.add_argument("--warmup-steps", type=int, default=10000,
                       help="Linear warmup updates (then linear decay to 0).")
    train.add_argument("--optimizer", choices=("adamw", "lamb"), default="adamw",
                       help="Optimizer.")
    train.add_argument("--weight-decay", type=float, default=0.01,
                       help="Decoupled weight decay (not on LayerNorm weights and biases).")
    train.add_argument("--global-clipnorm", type=float, default=1.0,
                       help="Global gradient-norm clipping; 0 for none.")
    train.add_argument("--gradient-accumulation-steps", type=int, default=1,
                       help="Micro-batches per optimizer update.")
    train.add_argument("--dtype", choices=config.DTYPES, default="float32",
                       help="Keras dtype policy (mixed_float16 adds dynamic loss scaling).")
    _cli.add_jit_compile(
        train, help_text="XLA-compile the training step. auto: off on TPU (TPUStrategy compiles "
        "anyway); off on a CPU whose TensorFlow has no XLA for it (the tensorflow-tpu build); "
        "off for mixed precision on a CPU-only machine with AMX (oneDNN's bfloat16 kernels "
        "beat XLA's CPU code there); on everywhere else (float32, GPU, CPU without AMX).")
    train.add_argument("--steps-per-execution", type=int, default=1,
                       help="Updates per compiled call (fewer host round trips).")
    train.add_argument("--checkpoint-every", type=int, default=1000,
                       help="Updates between checkpoints.")
    train.add_argument("--max-checkpoints", type=int, default=3, help="Checkpoints kept.")
    train.add_argument("--log-every", type=int, default=100,
                       help="Updates between log lines and metric resets.")
    train.add_argument("--shuffle-buffer-size", type=int, default=10000,
                       help="Records in the shuffle buffer.")
    train.add_argument("--seed", type=int, default=0,
                       help="Seed of weight init, data order and dynamic masks.")
    train.add_argument("--strategy", choices=_cli.STRATEGIES, default="auto",
                       help="auto: TPU if named/attached, multiworker if TF_CONFIG names "
                       ">1 worker, mirrored if >1 GPU, else one device.")
    train.add_argument("--tpu", help="TPU name or grpc:// address (strategy tpu/auto).")
    train.add_argument("--cluster-timeout", type=float, default=CLUSTER_TIMEOUT,
                       metavar="SECONDS",
                       help="Multi-worker: how long to wait for the other workers to start.")

    out = parser.add_argument_group("output")
    out.add_argument("--tensorboard", action=argparse.BooleanOptionalAction, default=True,
                     help="TensorBoard logs in OUTPUT/logs.")
    _cli.add_progress(out)
    _cli.add_verbose(out)
    return parser


def main(argv=None):
    args = build_parser().parse_args(argv)

    # The strategy first: MultiWorkerMirroredStrategy and TPUStrategy must be
    # created before any other TensorFlow op runs.
    from keras_bert.training.distribute import resolve_strategy, strategy_name

    strategy = resolve_strategy(args.strategy, args.tpu, args.cluster_timeout)

    from keras_bert.config import BertConfig
    from keras_bert.data import read_metadata
    from keras_bert.training import PretrainingConfig, TrainingInterrupted, run_pretraining

    metadata = read_metadata(args.train)
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
        raise SystemExit(f"--model takes the model's own config; drop "
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
    print(f"strategy {strategy_name(strategy)}, {strategy.num_replicas_in_sync} replica(s); "
          f"data {args.train}: {metadata['num_instances']} instances, "
          f"max_seq_length {metadata['max_seq_length']}, masking {metadata['masking']}",
          flush=True)
    try:
        result = run_pretraining(
            args.train, args.output, config, bert_config=bert_config,
            init_from=args.model, strategy=strategy, verbose=int(args.progress == "auto"),
            eval_data_dir=args.eval, tensorboard=args.tensorboard)
    except TrainingInterrupted as e:
        print(e, flush=True)
        sys.exit(128 + e.signum)
    line = " ".join(f"{k} {v:.4f}" for k, v in result["logs"].items())
    print(f"finished at step {result['step']}: {line}")
    if "eval" in result:
        print("eval: " + " ".join(f"{k} {v:.4f}" for k, v in result["eval"].items()))
    if "model_dir" in result:
        print(f"wrote {result['model_dir']}")


if __name__ == "__main__":
    from _cli import run  # One-line errors; --debug shows the traceback.

    sys.exit(run(main))
