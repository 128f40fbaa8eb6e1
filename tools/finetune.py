"""Fine-tune a model directory: classification, token classification or SQuAD QA.

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

Without --eval, --eval-fraction F holds out a seeded share of --train
(classification and token classification).

Bad rows (wrong column count, invalid JSON, empty text, answer offsets that
do not match their text, ...) are reported as FILE:LINE (or question id),
skipped and counted. Invalid UTF-8 is replaced and counted. A label of the
data outside the model's labels stops the run with its FILE:LINE unless
--unknown-labels skip.

Output: --output is a model directory written at every epoch that improves
--metric (config.json, model.weights.h5, vocab.txt, task.json with the label
names, max_seq_length and the eval metrics). Load it with
BertClassifier / BertTokenClassifier / BertSpanLabeler.from_pretrained.

Defaults are the paper's: AdamW, lr 3e-5, batch 32, 3 epochs, warmup 10%,
linear decay, weight decay 0.01, clip norm 1.0.

Examples
--------
  python tools/finetune.py --task classification --model models/minilm \\
      --train train.csv --eval dev.csv --output models/minilm-sentiment
  python tools/finetune.py --task classification --model models/minilm \\
      --train tfds:glue/mrpc --eval tfds:glue/mrpc --output models/minilm-mrpc
  python tools/finetune.py --task token_classification --model models/minilm \\
      --train eng.train --eval eng.testa --output models/minilm-ner
  python tools/finetune.py --task span_qa --model models/minilm \\
      --train train-v1.1.json --eval dev-v1.1.json --output models/minilm-squad
"""

import argparse
import logging
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from keras_bert.tasks.classification.reader import split_examples  # noqa: E402
from keras_bert.training.distribute import STRATEGIES, resolve_strategy  # noqa: E402
from keras_bert.config import DTYPES  # noqa: E402
from keras_bert.training.finetune import FinetuneOptions  # noqa: E402
from keras_bert.training.finetune import fine_tunable_tasks, finetune, read_task_data  # noqa: E402,E501

_DEFAULTS = FinetuneOptions()


def parse_args(argv=None):
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    add = parser.add_argument
    add("--task", required=True, choices=fine_tunable_tasks())
    add("--model", required=True, help="Model directory to start from.")
    add("--output", required=True, help="Model directory to write (the best epoch).")
    add("--train", required=True, help="Training data file (or tfds:NAME[SPLIT]).")
    add("--eval", default=None, help="Evaluation data file (or tfds:NAME[SPLIT]).")
    add("--eval-fraction", type=float, default=None,
        help="Without --eval: hold out this seeded share of --train (e.g. 0.1).")
    add("--split-seed", type=int, default=0, help="Seed of --eval-fraction (default 0).")
    add("--overwrite", action="store_true", help="Replace --output if it exists.")
    add("--checkpoint-dir", default=None,
        help="Resumable checkpoints (default OUTPUT.checkpoints, removed at the end).")

    data = parser.add_argument_group("classification data")
    data.add_argument("--format", dest="file_format", choices=("csv", "tsv", "jsonl"), default=None,
                      help="File format (default: from the extension).")
    data.add_argument("--text-column", default="text")
    data.add_argument("--text-b-column", default=None, help="Second text of sentence pairs.")
    data.add_argument("--label-column", default="label")
    data.add_argument("--regression", action="store_true",
                      help="Numeric labels: one output, MSE (e.g. STS-B).")
    data.add_argument("--tfds-data-dir", default=None)

    labels = parser.add_argument_group("labels (classification, token classification)")
    labels.add_argument("--label-names", default=None,
                        help="Comma-separated labels in id order (default: the model's, else "
                        "sorted from --train).")
    labels.add_argument("--unknown-labels", choices=("error", "skip"), default="error",
                        help="A label outside --label-names: stop with its FILE:LINE (default) "
                        "or skip the row and count it.")

    train = parser.add_argument_group("training")
    train.add_argument("--learning-rate", type=float, default=_DEFAULTS.learning_rate)
    train.add_argument("--epochs", type=int, default=_DEFAULTS.epochs)
    train.add_argument("--batch-size", type=int, default=_DEFAULTS.batch_size)
    train.add_argument("--eval-batch-size", type=int, default=None)
    train.add_argument("--warmup-fraction", type=float, default=_DEFAULTS.warmup_fraction)
    train.add_argument("--weight-decay", type=float, default=_DEFAULTS.weight_decay)
    train.add_argument("--global-clipnorm", type=float, default=_DEFAULTS.global_clipnorm)
    train.add_argument("--dropout-rate", type=float, default=None,
                       help="Head dropout (default: the encoder's dropout_rate).")
    train.add_argument("--max-seq-length", type=int, default=None,
                       help="Default 128 (span_qa 384) or the model's task.json.")
    train.add_argument("--lowercase", action=argparse.BooleanOptionalAction, default=None,
                       help="Lower-case text (default: task.json's, else guessed from vocab.txt).")
    train.add_argument("--metric", default=None,
                       help="Early-stopping metric (default accuracy / pearson / f1).")
    train.add_argument("--early-stopping-patience", type=int,
                       default=_DEFAULTS.early_stopping_patience,
                       help="Epochs without improvement before stopping; 0 = never (default 1).")
    train.add_argument("--dtype", choices=DTYPES, default="float32")
    train.add_argument("--jit-compile", choices=("auto", "on", "off"), default="auto")
    train.add_argument("--strategy", choices=STRATEGIES, default="auto")
    train.add_argument("--seed", type=int, default=0)
    train.add_argument("--log-every", type=int, default=_DEFAULTS.log_every)

    controls = parser.add_argument_group("fine-tuning controls")
    controls.add_argument("--freeze-layers", type=int, default=0,
                          help="Encoder blocks kept frozen, counted from the bottom.")
    controls.add_argument("--freeze-embeddings", action="store_true",
                          help="Also keep the embedding layer frozen.")
    controls.add_argument("--layerwise-lr-decay", type=float, default=1.0,
                          help="Block k of L trains at lr * decay**(L-1-k), embeddings at "
                          "lr * decay**L (1.0: no decay).")
    controls.add_argument("--encoder-lr-multiplier", type=float, default=1.0,
                          help="The encoder's learning rate as a fraction of the head's.")

    qa = parser.add_argument_group("span_qa")
    qa.add_argument("--doc-stride", type=int, default=_DEFAULTS.doc_stride)
    qa.add_argument("--max-query-length", type=int, default=_DEFAULTS.max_query_length)
    qa.add_argument("--n-best-size", type=int, default=_DEFAULTS.n_best_size)
    qa.add_argument("--max-answer-length", type=int, default=_DEFAULTS.max_answer_length)
    qa.add_argument("--null-score-diff-threshold", type=float,
                    default=_DEFAULTS.null_score_diff_threshold)
    args = parser.parse_args(argv)
    if (args.eval is None) == (args.eval_fraction is None):
        parser.error("give exactly one of --eval and --eval-fraction")
    if args.eval_fraction is not None and args.task == "span_qa":
        parser.error("--eval-fraction splits classification and token classification data; "
                     "give span_qa an --eval file")
    return args


def main(argv=None):
    args = parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s", stream=sys.stdout)
    checkpoint_dir = args.checkpoint_dir or args.output.rstrip("/") + ".checkpoints"
    if os.path.exists(args.output) and not args.overwrite and not os.path.exists(checkpoint_dir):
        sys.exit(f"{args.output} exists; pass --overwrite to replace it.")
    options = FinetuneOptions(
        learning_rate=args.learning_rate, epochs=args.epochs, batch_size=args.batch_size,
        eval_batch_size=args.eval_batch_size, warmup_fraction=args.warmup_fraction,
        weight_decay=args.weight_decay, global_clipnorm=args.global_clipnorm,
        dropout_rate=args.dropout_rate, max_seq_length=args.max_seq_length,
        lowercase=args.lowercase,
        label_names=args.label_names.split(",") if args.label_names else None,
        unknown_labels=args.unknown_labels, regression=args.regression, metric=args.metric,
        early_stopping_patience=args.early_stopping_patience, dtype=args.dtype,
        jit_compile=args.jit_compile, strategy=args.strategy, seed=args.seed,
        log_every=args.log_every, doc_stride=args.doc_stride,
        max_query_length=args.max_query_length, n_best_size=args.n_best_size,
        max_answer_length=args.max_answer_length,
        null_score_diff_threshold=args.null_score_diff_threshold,
        freeze_layers=args.freeze_layers, freeze_embeddings=args.freeze_embeddings,
        layerwise_lr_decay=args.layerwise_lr_decay,
        encoder_lr_multiplier=args.encoder_lr_multiplier,
    )
    columns = dict(text_column=args.text_column, text_b_column=args.text_b_column,
                   label_column=args.label_column, file_format=args.file_format,
                   tfds_data_dir=args.tfds_data_dir)
    try:
        # Before any other TensorFlow op (multi-worker and TPU strategies need that).
        strategy = resolve_strategy(args.strategy)
        train = read_task_data(args.task, args.train, True, options, **columns)
        if args.eval is not None:
            held_out = read_task_data(args.task, args.eval, False, options, **columns)
        else:
            train, held_out = split_examples(train, args.eval_fraction, args.split_seed)
            print(f"split {args.train}: {len(train)} train / {len(held_out)} eval "
                  f"(eval_fraction {args.eval_fraction}, seed {args.split_seed})")
        result = finetune(args.task, args.model, args.output, train, held_out, options,
                          checkpoint_dir=checkpoint_dir, strategy=strategy)
    except (ValueError, FileNotFoundError) as e:
        sys.exit(f"error: {e}")
    best = " ".join(f"{k} {v:.4f}" for k, v in result.best_metrics.items() if isinstance(v, float))
    print(f"best epoch {result.best_epoch} ({result.metric}): {best}")
    print(f"wrote {result.output_dir} ({result.steps} steps, {result.seconds:.0f} s)")


if __name__ == "__main__":
    from keras_bert.cli import run  # One-line errors; --debug shows the traceback.

    sys.exit(run(main))
