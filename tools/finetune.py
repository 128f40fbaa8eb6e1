"""Fine-tune a model directory: classification, multi-label classification, token
classification, SQuAD QA or text embeddings.

Tasks and their data
--------------------
classification        CSV / TSV (header line naming the columns) or JSON Lines,
                      columns chosen with --text-column, --text-b-column (pairs:
                      paraphrase, entailment) and --label-column; --regression
                      for a numeric target (STS-B: one output, MSE loss).
                      Or a TFDS dataset: --train tfds:glue/mrpc (split train)
                      and --eval tfds:glue/mrpc (validation, else test), or
                      tfds:NAME[SPLIT]. Metrics: accuracy, macro_f1, mcc;
                      pearson, spearman for regression.
multi_label_classification
                      CSV / TSV / JSON Lines, any number of labels per text:
                      names in --label-column separated by --label-separator
                      (default "|": "sports|politics"; empty: none), 0/1
                      columns named by --label-columns, or (JSON Lines) a
                      list of names or of 0/1. Sigmoid head, binary
                      cross-entropy. Each label's decision threshold is tuned
                      for F1 on the eval set (or fixed: --threshold) and saved
                      in task.json. Metrics: macro_f1, micro_f1, exact_match,
                      f1_LABEL.
token_classification  CoNLL files: token ... tag per line (tag last), blank line
                      between sentences, -DOCSTART- skipped. Labels on each
                      word's first WordPiece. Metrics: entity precision,
                      recall, f1 (exact span match).
span_qa               SQuAD v1.1 / v2.0 JSON. Windows of --max-seq-length
                      every --doc-stride tokens; answers decoded from the
                      --n-best-size best starts and ends, at most
                      --max-answer-length tokens; v2.0: "" when the null score
                      beats the best span by --null-score-diff-threshold.
                      Metrics: exact, f1 (the official normalization).
text_embedding        CSV / TSV / JSON Lines text pairs: --anchor-column and
                      --positive-column (default anchor, positive), optional
                      hard negatives (--negative-columns a,b); in-batch
                      negatives (a batch's copies of a pair's text are not its
                      negatives). Metrics: mrr, recall@1, recall@10 (each eval
                      anchor ranks the distinct eval positives). Or scored
                      pairs: --score-column (divided by --score-scale into
                      [-1, 1]), cosine regression, metric spearman.

Without --eval, --eval-fraction F holds out a seeded share of --train
(classification, multi-label, token classification and text embedding).

Bad rows (wrong column count, invalid JSON, empty text, answer offsets that
do not match their text, ...) are reported as FILE:LINE (or question id),
skipped and counted. Invalid UTF-8 is replaced and counted. A label of the
data outside the model's labels stops the run with its FILE:LINE unless
--unknown-labels skip.

Output: --output is a model directory written at every epoch that improves
--metric (config.json, model.weights.h5, vocab.txt, task.json with the label
names, max_seq_length and the eval metrics). Load it with
BertClassifier / BertMultiLabelClassifier / BertTokenClassifier /
BertSpanLabeler / BertTextEmbedder.from_pretrained.

Defaults are the paper's: AdamW, lr 5e-5, batch 32, 3 epochs, warmup 10%,
linear decay, weight decay 0.01, clip norm 1.0.

Feedback: a progress bar with ETA on a terminal, a line every --log-every
steps in a log file, one line per evaluation; TensorBoard logs in OUTPUT.logs
(train/: loss and learning rate every --log-every steps; eval/: the eval
metrics after every epoch). SIGTERM or Ctrl-C (SIGINT) saves a checkpoint of
the current step and exits with status 143 (130 for Ctrl-C); rerunning the same
command resumes there.

Examples
--------
  python tools/finetune.py --task classification --model models/minilm \\
      --train train.csv --eval dev.csv --output models/minilm-sentiment
  python tools/finetune.py --task classification --model models/minilm \\
      --train tfds:glue/mrpc --eval tfds:glue/mrpc --output models/minilm-mrpc
  python tools/finetune.py --task multi_label_classification --model models/minilm \\
      --train topics.csv --eval-fraction 0.1 --label-column topics --output models/topics
  python tools/finetune.py --task token_classification --model models/minilm \\
      --train eng.train --eval eng.testa --output models/minilm-ner
  python tools/finetune.py --task span_qa --model models/minilm \\
      --train train-v1.1.json --eval dev-v1.1.json --output models/minilm-squad
  python tools/finetune.py --task text_embedding --model all-MiniLM-L6-v2 \\
      --train pairs.csv --eval-fraction 0.1 --output models/minilm-pairs
"""

import argparse
import dataclasses
import logging
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import _cli  # noqa: E402
from keras_bert.training.distribute import CLUSTER_TIMEOUT  # noqa: E402
from keras_bert.training.finetune_fields import FinetuneFields  # noqa: E402


def build_parser(tasks=None):
    """The flags: the run's own here, FinetuneOptions' and each task's from their dataclasses.

    Args:
        tasks: dict {task name: options dataclass}; None: the registered
            fine-tuning tasks (`_cli.task_options`).
    """
    tasks = _cli.task_options() if tasks is None else tasks
    parser = _cli.parser(__doc__)
    add = parser.add_argument
    add("--task", required=True, choices=sorted(tasks), help="The fine-tuning task.")
    add("--model", required=True,
        help="Model directory to start from, or any checkpoint from_pretrained takes: a "
             "Hugging Face folder or Hub id, a Google folder, a keras-hub preset (converted "
             "once into the cache).")
    add("--output", required=True, help="Model directory to write (the best epoch).")
    add("--train", required=True, help="Training data file (or tfds:NAME[SPLIT]).")
    add("--eval", default=None, help="Evaluation data file (or tfds:NAME[SPLIT]).")
    add("--eval-fraction", type=float, default=None,
        help="Without --eval: hold out this seeded share of --train (e.g. 0.1).")
    add("--split-seed", type=int, default=0, help="Seed of --eval-fraction.")
    add("--overwrite", action="store_true",
        help="Replace --output if it is a model directory keras_bert wrote.")
    add("--checkpoint-dir", default=None,
        help="Resumable checkpoints (default: OUTPUT.checkpoints, removed at the end).")
    add("--cluster-timeout", type=float, default=CLUSTER_TIMEOUT, metavar="SECONDS",
        help="Multi-worker: how long to wait for the other workers to start.")

    # A flag per FinetuneOptions field: its name, default and help are the field's.
    _cli.add_options(parser, FinetuneFields, default_group="training")
    # Each task's flags, from its options dataclass (keras_bert/tasks/<task>/options.py).
    parser.set_defaults(task_flags=_cli.add_task_options(parser, tasks))

    out = parser.add_argument_group("output")
    out.add_argument("--tensorboard", action=argparse.BooleanOptionalAction, default=True,
                     help="TensorBoard logs in OUTPUT.logs.")
    _cli.add_progress(out)
    _cli.add_verbose(out)
    return parser


def parse_args(argv=None, tasks=None):
    tasks = _cli.task_options() if tasks is None else tasks
    parser = build_parser(tasks)
    args = parser.parse_args(argv)
    if (args.eval is None) == (args.eval_fraction is None):
        parser.error("give exactly one of --eval and --eval-fraction")
    if args.eval_fraction is not None and not getattr(
            tasks[args.task], "eval_fraction_allowed", True):
        allowed = [name for name, options in sorted(tasks.items())
                   if getattr(options, "eval_fraction_allowed", True)]
        parser.error(f"--eval-fraction splits {' and '.join(allowed)} data; "
                     f"give {args.task} an --eval file")
    for name, (flag, owners) in args.task_flags.items():
        if args.task not in owners and getattr(args, name) != parser.get_default(name):
            parser.error(f"{flag} is a {' / '.join(owners)} option; --task {args.task} "
                         f"does not take it")
    return args


def task_option_values(args):
    """The parsed flags of `args.task`'s options, as keyword arguments."""
    return {name: getattr(args, name) for name, (_, owners) in args.task_flags.items()
            if args.task in owners}


def finetune_option_values(args):
    """The parsed flags of FinetuneOptions' fields, as keyword arguments."""
    return {field.name: getattr(args, field.name) for field in dataclasses.fields(FinetuneFields)}


def main(argv=None):
    args = parse_args(argv)
    from keras_bert.models.registry import get_task
    from keras_bert.data.text_data import split_examples
    from keras_bert.training.distribute import resolve_strategy
    from keras_bert.training.finetune import FinetuneOptions, finetune, read_task_data
    from keras_bert.training.trainer import TrainingInterrupted

    # keras_bert's progress lines only: the root logger would also print
    # TensorFlow's absl INFO records ("Sharding callback duration: ...").
    handler = _cli.StdoutLogHandler()  # A closed pipe (| head) ends the tool quietly.
    handler.setFormatter(logging.Formatter("%(message)s"))
    library_logger = logging.getLogger("keras_bert")
    library_logger.addHandler(handler)
    library_logger.setLevel(logging.INFO)
    library_logger.propagate = False
    output = args.output.rstrip("/")
    checkpoint_dir = args.checkpoint_dir or output + ".checkpoints"
    # Before reading data or training: a file, a folder of something else,
    # or one of the inputs as --output or --checkpoint-dir fails at once.
    from keras_bert.training.finetune import check_outputs
    data_files = [p for p in (args.train, args.eval) if p and not p.startswith("tfds:")]
    try:
        check_outputs(args.model, args.output, checkpoint_dir, inputs=data_files)
    except ValueError as e:
        sys.exit(f"error: {e}")
    # A run to resume has its state file; leftovers of a killed write alone are not one.
    # Through keras_bert.storage: an --output on gs:// is protected as a local one.
    from keras_bert import storage
    resuming = storage.exists(storage.join(checkpoint_dir, "finetune_state.json"))
    if storage.exists(args.output) and not args.overwrite and not resuming:
        sys.exit(f"{args.output} exists; pass --overwrite to replace it.")
    options = FinetuneOptions(**finetune_option_values(args))
    try:
        task_options = get_task(args.task).make_options(**task_option_values(args))
        # Before any other TensorFlow op (multi-worker and TPU strategies need that).
        strategy = resolve_strategy(args.strategy, cluster_timeout=args.cluster_timeout)
        train = read_task_data(args.task, args.train, True, task_options)
        if args.eval is not None:
            held_out = read_task_data(args.task, args.eval, False, task_options)
        else:
            train, held_out = split_examples(train, args.eval_fraction, args.split_seed)
            print(f"split {args.train}: {len(train)} train / {len(held_out)} eval "
                  f"(eval_fraction {args.eval_fraction}, seed {args.split_seed})")
        result = finetune(args.task, args.model, args.output, train, held_out, options,
                          checkpoint_dir=checkpoint_dir, strategy=strategy,
                          log_dir=output + ".logs" if args.tensorboard else None,
                          progress=args.progress, task_options=task_options)
    except TrainingInterrupted as e:
        print(e, flush=True)
        sys.exit(128 + e.signum)
    except (ValueError, FileNotFoundError) as e:
        sys.exit(f"error: {e}")
    best = " ".join(f"{k} {v:.4f}" for k, v in result.best_metrics.items() if isinstance(v, float))
    print(f"best epoch {result.best_epoch} ({result.metric}): {best}")
    print(f"wrote {result.output_dir} ({result.steps} steps, {result.seconds:.0f} s)")
    if args.tensorboard and storage.isdir(output + ".logs"):
        print(f"TensorBoard logs: {output}.logs (tensorboard --logdir {output}.logs)")


if __name__ == "__main__":
    from _cli import run  # One-line errors; --debug shows the traceback.

    sys.exit(run(main))
