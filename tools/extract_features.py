"""Writes BERT features for each line of a text file (.npy or .tfrecord).

  python tools/extract_features.py --model models/minilm --input texts.txt \\
      --output features.npy --layers concat_last_four --pooling mean

Line i of the input is row i of the output. --pooling none writes token
features (one [tokens, channels] matrix per line) and needs a .tfrecord.
Progress goes to stderr: a bar on a terminal, plain lines in a pipe or log.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import _cli  # noqa: E402


def _layers(value):
    try:
        return int(value)
    except ValueError:
        return value


def build_parser():
    parser = _cli.parser(__doc__)
    parser.add_argument("--model", required=True, help="Model directory.")
    parser.add_argument("--input", required=True, help="Text file, one text per line.")
    parser.add_argument("--output", required=True, help="OUT.npy or OUT.tfrecord.")
    parser.add_argument(
        "--layers", type=_layers, default="last",
        help="An int layer index (negative from the top), last, sum_last_four, "
        "concat_last_four or weighted_sum.",
    )
    parser.add_argument("--pooling", default="mean", choices=["cls", "mean", "max", "none"],
                        help="How a line's token features become one row (none: keep tokens).")
    parser.add_argument("--batch-size", type=int, default=32, help="Lines per batch.")
    parser.add_argument("--max-seq-length", type=int, default=None,
                        help="Longest packed sequence; longer lines are truncated (default: "
                        "the model's saved max_seq_length, else 128).")
    parser.add_argument("--sort-window", type=int, default=16,
                        help="Batches read together and grouped by length (1: file order).")
    _cli.add_verbose(parser)
    return parser


def main(argv=None):
    args = build_parser().parse_args(argv)
    from keras_bert.export.features import extract_features

    count = extract_features(
        args.model, args.input, args.output, layers=args.layers,
        pooling=None if args.pooling == "none" else args.pooling,
        batch_size=args.batch_size, max_seq_length=args.max_seq_length,
        sort_window=args.sort_window,
    )
    print(f"wrote features for {count} lines to {args.output}")


if __name__ == "__main__":
    from _cli import run  # One-line errors; --debug shows the traceback.

    sys.exit(run(main))
