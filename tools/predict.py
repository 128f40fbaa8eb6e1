"""Run an exported SavedModel on texts locally (no server), as TF Serving would.

Loads with TensorFlow and the tensorflow-text ops only; prints one line per
text: the text, then the label and its probability (classifiers), the score
(regression), the answer and its offsets (QA), token/label@start:end (token
classifiers) or the output values (embed, encode).

Examples
--------
  python tools/predict.py exports/sentiment "what a great day" "meh"
  python tools/predict.py exports/sentiment/2 --input tweets.txt
  python tools/predict.py exports/nli "A man sleeps." --text-b "Nobody sleeps."
  python tools/predict.py exports/squad "Who wrote it?" --text-b "It was written by Ann."
  python tools/predict.py exports/sentiment "hello" --signature embed
"""

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from keras_bert.export.predict import (  # noqa: E402
    FIRST_INPUTS,
    SECOND_INPUTS,
    format_outputs,
    input_names,
    load_export,
    run_signature,
)


def parse_args(argv=None):
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("export_dir", help="exports/NAME (latest version) or exports/NAME/VERSION")
    parser.add_argument("texts", nargs="*", help="Texts (questions for QA).")
    parser.add_argument("--input", help="File with one text per line (TAB between a pair).")
    parser.add_argument("--text-b", nargs="+", default=None,
                        help="Second texts of pairs (contexts for QA), one per text.")
    parser.add_argument("--signature", default="serving_default",
                        help="Signature to run (default serving_default).")
    parser.add_argument("--batch-size", type=int, default=64,
                        help="Texts per call; more run in batches of similar length.")
    return parser.parse_args(argv)


def read_examples(args):
    """Lists of first and second texts (second None for single-text signatures)."""
    first, second = list(args.texts), list(args.text_b) if args.text_b else None
    if args.input:
        # Every line is a row, a blank one too (an empty text): output row i
        # answers input line i. (Split on "\n" only: str.splitlines would also
        # split a text at U+2028 or a form feed.)
        with open(args.input, encoding="utf-8", errors="replace", newline="") as f:
            lines = f.read().split("\n")
        if lines[-1] == "":
            lines.pop()  # After the final newline.
        rows = [line.rstrip("\r").split("\t", 1) for line in lines]
        first += [row[0] for row in rows]
        if any(len(row) == 2 for row in rows):
            second = (second or []) + [row[1] if len(row) == 2 else "" for row in rows]
    return first, second


def main(argv=None):
    args = parse_args(argv)
    first, second = read_examples(args)
    if not first:
        print("error: give texts as arguments or with --input FILE", file=sys.stderr)
        return 1
    if args.batch_size < 1:
        print(f"error: --batch-size must be >= 1, got {args.batch_size}", file=sys.stderr)
        return 1
    try:
        loaded = load_export(args.export_dir)
        names = input_names(loaded, args.signature)
    except (ValueError, FileNotFoundError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    if not set(names) <= set(FIRST_INPUTS + SECOND_INPUTS):
        print(f"error: signature {args.signature!r} takes {names}, not text", file=sys.stderr)
        return 1
    inputs = {names[0]: first}
    if len(names) == 2:
        if second is None or len(second) != len(first):
            print(f"error: signature {args.signature!r} takes {names}: give one --text-b "
                  f"(or a TAB-separated second column) per text", file=sys.stderr)
            return 1
        inputs[names[1]] = second
    outputs = run_signature(loaded, inputs, args.signature, args.batch_size)
    for line in format_outputs(inputs, outputs):
        print(line)
    return 0


if __name__ == "__main__":
    from keras_bert.cli import run  # One-line errors; --debug shows the traceback.

    sys.exit(run(main))
