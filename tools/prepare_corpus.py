"""Text -> a pretraining corpus: one sentence per line, blank line between documents.

Sources (any mix):
  --pydoc-topics      the 79 help documents of pydoc_data.topics (every Python has them)
  FILE ...            plain prose files; each file is one document, or with
                      --documents-by-blank-lines N, every run of N or more blank
                      lines ends a document. Paragraphs are split into sentences
                      with keras_bert.data.split_sentences (rule-based).

Example:
    python tools/prepare_corpus.py --pydoc-topics --output corpus/pydoc.txt
    python tools/prepare_corpus.py book1.txt book2.txt --output corpus/books.txt
"""

import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import _cli  # noqa: E402


def _documents(args):
    from keras_bert.data import prose_to_sentences, pydoc_topics_documents

    if args.pydoc_topics:
        for _, sentences in pydoc_topics_documents():
            yield sentences
    for path in args.inputs:
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read()
        if args.documents_by_blank_lines:
            separator = r"\n(?:[ \t]*\n){%d,}" % args.documents_by_blank_lines
            parts = re.split(separator, text)
        else:
            parts = [text]
        for part in parts:
            yield prose_to_sentences(part)


def build_parser():
    parser = _cli.parser(__doc__)
    parser.add_argument("inputs", nargs="*", help="Plain UTF-8 prose files.")
    parser.add_argument("--pydoc-topics", action="store_true",
                        help="Include the documents of pydoc_data.topics.")
    parser.add_argument("--documents-by-blank-lines", type=int, default=0, metavar="N",
                        help="Split input files into documents at N or more blank lines "
                        "(default 0: one document per file).")
    parser.add_argument("--holdout-every", type=int, default=0, metavar="K",
                        help="Put every K-th document into --holdout-output instead (default 0: "
                        "none).")
    parser.add_argument("--holdout-output", help="Corpus file for held-out documents.")
    parser.add_argument("--output", required=True, help="Corpus file to write.")
    _cli.add_verbose(parser)
    return parser


def main(argv=None):
    parser = build_parser()
    args = parser.parse_args(argv)
    if not args.inputs and not args.pydoc_topics:
        parser.error("give input files and/or --pydoc-topics")
    if bool(args.holdout_every) != bool(args.holdout_output):
        parser.error("--holdout-every and --holdout-output go together")

    from keras_bert.data import write_corpus
    from keras_bert.files import check_not_input

    for output in (args.output, args.holdout_output):
        if output:  # Before reading: an input is never written over.
            check_not_input(output, args.inputs, flag="--output")
    documents = [d for d in _documents(args) if d]
    held = []
    if args.holdout_every:
        held = documents[::args.holdout_every]
        documents = [d for i, d in enumerate(documents) if i % args.holdout_every]
        write_corpus(held, args.holdout_output)
    count = write_corpus(documents, args.output)
    lines = sum(len(d) for d in documents)
    print(f"wrote {count} documents ({lines} sentences) to {args.output}"
          + (f"; {len(held)} held-out documents to {args.holdout_output}" if held else ""))


if __name__ == "__main__":
    from _cli import run  # One-line errors; --debug shows the traceback.

    sys.exit(run(main))
