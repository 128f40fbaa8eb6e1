"""Export-time tuning: the sub-batching of a classifier export, measured on this machine.

`export_model(..., sub_batches="auto")` times each candidate k (length-sorted
sub-batches per request, `ClassifierServingModule`) on requests of several
sizes in interleaved rounds, and keeps per request size the k with the
smallest median: a table "requests of >= n texts run as k sub-batches"; the
measurements go to keras_bert_export.json ("tuning").
"""

import csv
import datetime
import errno
import io
import os
import platform
import re
import statistics
import time

import numpy as np

from keras_bert import storage

#: sub-batch counts tried (1 = the request as one batch).
CANDIDATES = (1, 2, 4, 8)
#: request sizes (texts) timed.
REQUEST_SIZES = (1, 16, 32, 64)
#: default wall-clock budget of the timed rounds, seconds (tools/export.py --tune-seconds).
TUNE_SECONDS = 20.0
#: rounds run whatever the budget (a median of fewer means little), and at most.
MIN_ROUNDS, MAX_ROUNDS = 3, 12
#: rounds of the batch-1 check (chosen vs one batch; one-text calls are cheap).
CHECK_ROUNDS = (6, 6)
#: one-text calls per timing at request size 1 (one call is too short to time alone).
SINGLE_CALLS = 8
#: a split is kept only when it beats one batch by more than this fraction: it adds
#: graph work, and a smaller gain is within the noise of a few rounds.
MARGIN = 0.03
#: the CPU flags that decide which kernels TensorFlow's matmuls use.
CPU_FLAGS = ("avx2", "avx512f", "avx512_vnni", "avx512_bf16", "amx_bf16", "amx_int8",
             "amx_tile")


def cpu_info(cpuinfo="/proc/cpuinfo"):
    """{"model": CPU model name, "flags": the `CPU_FLAGS` it has, "cores": usable cores}."""
    model, flags = None, set()
    try:
        with open(cpuinfo, encoding="utf-8", errors="replace") as f:
            for line in f:
                key, _, value = line.partition(":")
                if key.strip() == "model name" and model is None:
                    model = value.strip()
                elif key.strip() == "flags" and not flags:
                    flags = set(value.split())
    except OSError:
        pass
    model = model or platform.processor() or platform.machine()
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return {"model": model, "flags": [f for f in CPU_FLAGS if f in flags], "cores": cores}


def synthetic_texts(vocabulary, count=256, seed=0):
    """`count` texts of the vocabulary's whole words (list of str), lengths spread like
    tweets: normal, mean 28 and standard deviation 9, clipped to [1, 60] words. The
    spread matters more than the mean: give texts of another spread (--tune-texts).
    `seed` makes every export measure the same texts.
    """
    words = [w for w in vocabulary
             if w and not w.startswith("##") and not (w.startswith("[") and w.endswith("]"))]
    if not words:
        raise ValueError("The vocabulary has no whole words to make tuning texts from; "
                         "give texts (tools/export.py --tune-texts FILE).")
    rng = np.random.default_rng(seed)
    lengths = np.clip(np.round(rng.normal(28, 9, count)), 1, 60).astype(int)
    return [" ".join(rng.choice(words, n)) for n in lengths]


def read_tune_texts(path):
    """The non-empty lines of `path` (one text a line, UTF-8), as a list of str."""
    return read_texts(path, "tuning", "give a file with one text a line (--tune-texts "
                      "FILE), or leave it out to tune on synthetic texts")


def read_texts(path, what, way_out, table=False):
    """The non-empty texts of a UTF-8 file: one a line or, with `table`, a .csv/.tsv
    file's `text` column. Errors name the `what` file and `way_out`."""
    try:
        if storage.is_remote(path) and not storage.exists(path):  # gfile raises no OSError.
            raise FileNotFoundError(errno.ENOENT, "No such file or directory")
        data = storage.read_bytes(path).decode("utf-8", errors="replace").lstrip("\ufeff")
    except OSError as e:
        raise FileNotFoundError(
            f"Cannot read the {what} texts {path} ({e.strerror}): {way_out}.") from None
    if table and str(path).lower().endswith((".csv", ".tsv")):
        rows = csv.DictReader(io.StringIO(data, newline=""),
                              delimiter="\t" if str(path).lower().endswith(".tsv") else ",")
        if "text" not in (rows.fieldnames or ()):
            raise ValueError(f"The {what} file {path} has no 'text' column (its header: "
                             f"{rows.fieldnames}): {way_out}.")
        texts = [row["text"] for row in rows if (row["text"] or "").strip()]
    else:
        # The line ends open() knows (\n, \r\n, \r), not str.splitlines' (U+2028, \x1c...).
        texts = [line for line in re.split(r"\r\n|\r|\n", data) if line.strip()]
    if not texts:
        raise ValueError(f"The {what} file {path} holds no text: {way_out}.")
    return texts


def choose_table(times, min_sub_batch, margin=MARGIN):
    """The sub-batch table of measured medians `times` ({request size: {k: seconds}}).

    Per request size, the k with the smallest median among those valid there
    (from `min_sub_batch * k` texts on); a k > 1 only if it beats k=1 by more
    than `margin`.

    Returns:
        (table, best): `table` a list of `(min_texts, k)` pairs, ascending
        (empty: never split); `best` {request size: fastest k}.
    """
    best = {}
    for size, by_k in sorted(times.items()):
        k = min((k for k in by_k if k == 1 or size >= min_sub_batch * k),
                key=lambda k: (by_k[k], k))
        best[size] = k if by_k[k] < (1 - margin) * by_k[1] else 1
    table, current = [], 1
    for size, k in best.items():
        if k != current:
            table.append((size, k))
            current = k
    return table, best


def _timer(name, function, size, requests):
    """A function of round index -> seconds per call of `function` (candidate `name`:
    k or "chosen") on requests of `size` texts; requests of 1 text are timed over
    SINGLE_CALLS calls a round."""
    function(*requests[0])  # Untimed: the first call traces, or warms the caches.
    calls = SINGLE_CALLS if size == 1 else 1

    def measure(round_index):
        start = time.perf_counter()
        for i in range(calls):
            function(*requests[(round_index * calls + i) % len(requests)])
        return (time.perf_counter() - start) / calls
    return measure


def tune_sub_batches(module, texts, candidates=CANDIDATES, request_sizes=REQUEST_SIZES,
                     seconds=TUNE_SECONDS):
    """Measures each sub-batch count per request size and sets the fastest on `module`.

    Args:
        module: the `ClassifierServingModule` of the export, its classify
            not traced yet; every candidate runs on its one graph.
        texts: list of str the requests are made of (in order, wrapping);
            with `module.pairs` each text is paired with the next one.
        candidates: ints, the sub-batch counts tried (1 is always tried).
        request_sizes: ints, texts per timed request.
        seconds: float, budget of the timed rounds (`MIN_ROUNDS` to `MAX_ROUNDS`).

    Returns:
        dict, the JSON-able record for keras_bert_export.json.
    """
    import tensorflow as tf

    if not texts:
        raise ValueError("No texts to tune on; give texts (tools/export.py --tune-texts FILE).")
    started = time.perf_counter()
    candidates = sorted(set(candidates) | {1})
    texts = [t.encode("utf-8") if isinstance(t, str) else t for t in texts]

    def requests(size, count):
        made = []
        for i in range(count):
            rows = [texts[(i * size + j) % len(texts)] for j in range(size)]
            made.append((tf.constant(rows),) + ((tf.constant(rows[1:] + rows[:1]),)
                                                if module.pairs else ()))
        return made

    def with_k(k):
        k = tf.constant(k, tf.int32)
        return lambda *request: module._keras.classify_in_sub_batches(*request, k)

    measured = {}  # (size, k) -> measure(round index)
    for size in request_sizes:
        made = requests(size, SINGLE_CALLS if size == 1 else 4)
        for k in candidates:
            if k == 1 or size >= module.MIN_SUB_BATCH * k:
                measured[size, k] = _timer(k, with_k(k), size, made)
    samples = _rounds(measured, seconds, started)
    times = {size: {k: statistics.median(samples[size, k]) for (s, k) in measured if s == size}
             for size in request_sizes}
    table, best = choose_table(times, module.MIN_SUB_BATCH)
    module.set_sub_batches(table or 1)

    # Requests of 1 never split: timed as a check that the table costs them nothing,
    # against the one-batch graph of an untuned export (this traces classify, which
    # the export then saves).
    single = requests(1, SINGLE_CALLS)
    untuned = tf.function(module.classify_one_batch, autograph=False)
    check = _rounds({(1, 1): _timer(1, untuned, 1, single),
                     (1, "chosen"): _timer("chosen", module.classify, 1, single)},
                    0, time.perf_counter(), rounds=CHECK_ROUNDS)
    record = {
        "tuned": "sub_batches",
        "candidates": candidates,
        "request_sizes": list(request_sizes),
        "median_ms": {str(size): {str(k): round(1000 * t, 3) for k, t in by_k.items()}
                      for size, by_k in times.items()},
        "fastest": {str(size): k for size, k in best.items()},
        "chosen": [list(pair) for pair in table] if table else 1,
        "batch_1_ms": {"sub_batches=1": round(1000 * statistics.median(check[1, 1]), 3),
                       "chosen": round(1000 * statistics.median(check[1, "chosen"]), 3)},
        "rounds": len(samples[request_sizes[0], 1]),
        "seconds": round(time.perf_counter() - started, 1),
        "cpu": cpu_info(),
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
    }
    return record


def _rounds(measured, seconds, started, rounds=(MIN_ROUNDS, MAX_ROUNDS)):
    """{key: [seconds per round]}: every timer once a round, order alternating, until
    `seconds` have passed since `started` (between rounds[0] and rounds[1] rounds)."""
    keys = list(measured)
    samples = {key: [] for key in keys}
    for round_index in range(rounds[1]):
        if round_index >= rounds[0] and time.perf_counter() - started > seconds:
            break
        for key in keys if round_index % 2 == 0 else keys[::-1]:
            samples[key].append(measured[key](round_index))
    return samples


def describe(record):
    """One line: what the tuning chose and why (tools/export.py prints it)."""
    if "skipped" in record:
        return f"Tuning: none ({record['skipped']})."
    chosen = record["chosen"]
    if chosen == 1:
        rule = "one batch per request (sub_batches=1: no split was faster)"
    else:
        rule = ", ".join(f">= {n} texts: {f'{k} sub-batches' if k > 1 else 'one batch'}"
                         for n, k in chosen)
        rule = f"length-sorted sub-batches for requests of {rule}"
    gains = []
    for size, k in record["fastest"].items():
        by_k = record["median_ms"][size]
        if k != 1:
            gains.append(f"{size} texts: {by_k['1'] / by_k[str(k)]:.2f}x one batch's speed")
    cpu = record["cpu"]
    return (f"Tuned on this CPU ({cpu['model']}; {', '.join(cpu['flags']) or 'no AVX2'}) in "
            f"{record['seconds']:.0f} s: {rule}" + (f" ({'; '.join(gains)})" if gains else "")
            + f"; 1 text: {record['batch_1_ms']['chosen']:.1f} ms vs "
            f"{record['batch_1_ms']['sub_batches=1']:.1f} ms untuned.")
