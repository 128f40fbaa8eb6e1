"""Learns a BERT WordPiece vocab.txt from text files.

Example:
    python tools/build_vocab.py corpus/*.txt --output vocab.txt \\
        --vocab-size 30522 --lowercase
"""

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from keras_bert.text import vocab


def _progress_bar():
    start = time.time()

    def show(done, total):
        fraction = done / total if total else 1.0
        bar = "#" * int(30 * fraction)
        mb = done / 1e6
        rate = mb / max(time.time() - start, 1e-6)
        sys.stderr.write(
            f"\rcounting words [{bar:<30}] {100 * fraction:5.1f}% "
            f"{mb:,.1f} MB ({rate:,.1f} MB/s)"
        )
        if done >= total:
            sys.stderr.write("\n")
        sys.stderr.flush()

    return show


def main(argv=None):
    parser = argparse.ArgumentParser(
        description="Learn a WordPiece vocab.txt (special tokens [PAD] [UNK] "
        "[CLS] [SEP] [MASK] first) from text files, with the same "
        "normalization as keras_bert.text.BertTokenizer."
    )
    parser.add_argument("inputs", nargs="+", help="UTF-8 text files")
    parser.add_argument("--output", required=True, help="vocab.txt to write")
    parser.add_argument(
        "--vocab-size", type=int, default=30522, help="tokens (default 30522)"
    )
    parser.add_argument(
        "--lowercase",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="uncased vocabulary: lower-case and strip accents (default); "
        "--no-lowercase keeps case and accents",
    )
    parser.add_argument(
        "--max-unique-chars",
        type=int,
        default=1000,
        help="alphabet size; words with rarer characters are left out",
    )
    args = parser.parse_args(argv)
    started = time.time()
    tokens = vocab.build_vocabulary_from_files(
        args.inputs,
        args.vocab_size,
        lowercase=args.lowercase,
        max_unique_chars=args.max_unique_chars,
        progress=_progress_bar(),
    )
    vocab.save_vocabulary(tokens, args.output)
    pieces = sum(t.startswith("##") for t in tokens)
    print(
        f"wrote {len(tokens)} tokens ({pieces} '##' pieces, "
        f"lowercase={args.lowercase}) to {args.output} "
        f"in {time.time() - started:.1f}s"
    )


if __name__ == "__main__":
    from keras_bert.cli import run  # One-line errors; --debug shows the traceback.

    sys.exit(run(main))
