"""Learns a BERT WordPiece vocab.txt from text files.

Special tokens [PAD] [UNK] [CLS] [SEP] [MASK] come first; words are
normalized as keras_bert.text.BertTokenizer does.

Example:
    python tools/build_vocab.py corpus/*.txt --output vocab.txt \\
        --vocab-size 30522 --lowercase
"""

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import _cli  # noqa: E402


def build_parser():
    parser = _cli.parser(__doc__)
    parser.add_argument("inputs", nargs="+", help="UTF-8 text files.")
    parser.add_argument("--output", required=True, help="vocab.txt to write.")
    parser.add_argument("--vocab-size", type=int, default=30522, help="Tokens in all.")
    parser.add_argument(
        "--lowercase", action=argparse.BooleanOptionalAction, default=True,
        help="Uncased vocabulary: lower-case and strip accents; --no-lowercase keeps case "
        "and accents.")
    parser.add_argument("--max-unique-chars", type=int, default=1000,
                        help="Alphabet size; words with rarer characters are left out.")
    _cli.add_verbose(parser)
    return parser


def main(argv=None):
    args = build_parser().parse_args(argv)
    from keras_bert.progress import Progress, byte_unit
    from keras_bert.files import check_not_input
    from keras_bert.text import vocab

    check_not_input(args.output, args.inputs, flag="--output")  # Before counting words.
    started = time.time()
    progress = unit = None

    def report(done, total):
        nonlocal progress, unit
        if progress is None:
            unit = byte_unit(total)
            progress = Progress(total / unit[1], unit=unit[0])
        progress.update(done / unit[1])

    tokens = vocab.build_vocabulary_from_files(
        args.inputs, args.vocab_size, lowercase=args.lowercase,
        max_unique_chars=args.max_unique_chars, progress=report)
    vocab.save_vocabulary(tokens, args.output)
    pieces = sum(t.startswith("##") for t in tokens)
    print(
        f"wrote {len(tokens)} tokens ({pieces} '##' pieces, "
        f"lowercase={args.lowercase}) to {args.output} "
        f"in {time.time() - started:.1f}s"
    )


if __name__ == "__main__":
    from _cli import run  # One-line errors; --debug shows the traceback.

    sys.exit(run(main))
