"""Run an export on texts locally (no server), as TF Serving or a LiteRT app would.

A SavedModel loads with TensorFlow and the tensorflow-text ops only, a LiteRT
export (--format tflite: its folder or its .tflite file) with the LiteRT
interpreter and tensorflow-text's kernels (docs/litert.md). Prints one line
per text, in the same format for both: the text, then the label and its
probability (classifiers), each predicted label with its probability
(multi-label: "label:p ...", "-" for none; names from the export's
keras_bert_export.json), the score (regression), the answer and its offsets
(QA), token/label@start:end (token classifiers) or the output values (embed,
encode); a model saved with windows (long documents) adds windows=N, the
windows read of the text. Text embedders write JSON Lines {"text": ...,
"embedding": [...]} instead; --output FILE.npy writes one float32 array [N, D]
in input order. --output FILE writes the lines to FILE instead of stdout.
--model may also be a model folder (what tools/finetune.py or save_pretrained
wrote, or any checkpoint from_pretrained takes): it runs the functions its
export would hold, in this process, with the same output.
Progress of large inputs goes to stderr.

Examples
--------
  python tools/predict.py --model exports/sentiment "what a great day" "meh"
  python tools/predict.py --model exports/sentiment/2 --input tweets.txt
  python tools/predict.py --model exports/nli "A man sleeps." --text-b "Nobody sleeps."
  python tools/predict.py --model exports/squad "Who wrote it?" --context "It was written by Ann."
  python tools/predict.py --model exports/sentiment "hello" --signature embed
  python tools/predict.py --model exports/tweet-tags "@ann is this it? http://t.co/x"
  python tools/predict.py --model exports/sentiment-lite "what a great day"
  python tools/predict.py --model exports/sentiment-lite/1/model.tflite "meh"
  python tools/predict.py --model exports/embedder --input docs.txt --output docs.npy
  python tools/predict.py --model models/sentiment --input tweets.txt --output labels.tsv
"""

import contextlib
import inspect
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import _cli  # noqa: E402

# The second input's name in a signature -> the flag that gives it.
SECOND_FLAGS = {"text_b": "--text-b", "context": "--context"}


def build_parser():
    parser = _cli.parser(__doc__)
    parser.add_argument("--model", required=True,
                        help="An export: exports/NAME (its latest version), "
                        "exports/NAME/VERSION, or a LiteRT export's .tflite file; or a model "
                        "folder (a keras_bert model directory, or any source from_pretrained "
                        "takes), run as its export would be.")
    parser.add_argument("texts", nargs="*", help="Texts (the questions, for QA).")
    parser.add_argument("--input",
                        help="File with one example per line: a text, or TAB-separated text "
                        "and text_b (pairs), or question and context (QA).")
    parser.add_argument("--text-b", nargs="+", default=None,
                        help="Second texts of sentence pairs, one per text.")
    parser.add_argument("--context", nargs="+", default=None,
                        help="QA: the context of each question, one per question.")
    parser.add_argument("--signature", default="serving_default", help="Signature to run.")
    parser.add_argument("--output", default=None,
                        help="Write the output lines to this file instead of stdout; text "
                        "embedders: FILE.npy (a float32 array [N, D]) or JSON Lines.")
    parser.add_argument("--batch-size", type=int, default=64,
                        help="Texts per call; more run in batches of similar length.")
    _cli.add_verbose(parser)
    return parser


def parse_args(argv=None):
    return build_parser().parse_args(argv)


def read_examples(args, pairs):
    """Lists of first and second texts (second None unless `pairs`).

    With `pairs`, a line of --input is split at its first TAB; without, the
    whole line is one text. Every line is a row, a blank one too (an empty
    text): output row i answers input line i. The file is read once (a pipe
    works) by the readers' one reader: not UTF-8 text is refused, a line with
    a few invalid bytes repaired and reported.
    """
    from keras_bert.data.report import DataReport
    from keras_bert.data.text_data import read_lines

    given = args.text_b if args.text_b is not None else args.context
    first, second = list(args.texts), list(given) if given else None
    if args.input:
        report = DataReport(args.input)
        lines = [line.rstrip("\r\n") for _, line in read_lines(args.input, report, "input file")]
        if not pairs:
            return first + lines, second
        rows = [line.split("\t", 1) for line in lines]
        first += [row[0] for row in rows]
        second = (second or []) + [row[1] if len(row) == 2 else "" for row in rows]
    return first, second


def main(argv=None):
    args = parse_args(argv)
    if args.text_b is not None and args.context is not None:
        print("error: give --text-b (sentence pairs) or --context (QA), not both",
              file=sys.stderr)
        return 1
    if not args.texts and not args.input:
        print("error: give texts as arguments or with --input FILE", file=sys.stderr)
        return 1
    if args.batch_size < 1:
        print(f"error: --batch-size must be >= 1, got {args.batch_size}", file=sys.stderr)
        return 1
    from keras_bert.tasks.text_embedding import output as embedding_output
    from keras_bert.text.text_files import argument_text

    # Bytes that are not UTF-8 are refused here, as a file's are, not by TensorFlow.
    for flag, name in (("texts", "text"), ("text_b", "--text-b"), ("context", "--context")):
        if getattr(args, flag) is not None:
            setattr(args, flag, [argument_text(t, f"{name} {i}")
                                 for i, t in enumerate(getattr(args, flag), 1)])

    from keras_bert import storage
    from keras_bert.export.predict import (
        FIRST_INPUTS,
        SECOND_INPUTS,
        format_outputs,
        input_names,
        load_export,
        read_export_info,
        run_function,
        run_signature,
    )
    from keras_bert.progress import Progress

    try:
        if storage.isfile(storage.join(args.model, "config.json")):
            # A model folder, not an export: the functions its export would hold.
            import tensorflow as tf

            from keras_bert.export.export import model_signatures

            signatures, label_names = model_signatures(args.model)
            if args.signature not in signatures:
                raise ValueError(f"{args.model} has no signature {args.signature!r}. It has: "
                                 f"{sorted(signatures)}.")
            function = signatures[args.signature]
            names = list(inspect.signature(function.python_function).parameters)

            def run(inputs, progress):
                return run_function(function, dict.fromkeys(names, tf.string), inputs,
                                    args.batch_size, f"Signature {args.signature!r}", progress)
        else:
            # Loading's C++ notices (LiteRT's "Created TensorFlow Lite XNNPACK
            # delegate for CPU.") are hidden unless --verbose; a failure is an
            # exception, printed below.
            with contextlib.nullcontext() if args.verbose else _cli._stderr_silenced():
                loaded = load_export(args.model)
            names = input_names(loaded, args.signature)
            label_names = read_export_info(args.model).get("label_names")

            def run(inputs, progress):
                return run_signature(loaded, inputs, args.signature, args.batch_size, progress)
    except (ValueError, FileNotFoundError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    if not set(names) <= set(FIRST_INPUTS + SECOND_INPUTS):
        print(f"error: signature {args.signature!r} takes {names}, not text", file=sys.stderr)
        return 1
    first, second = read_examples(args, pairs=len(names) == 2)
    if not first:
        print(f"error: no texts in {args.input}", file=sys.stderr)
        return 1
    inputs = {names[0]: first}
    if len(names) == 2:
        flag = SECOND_FLAGS.get(names[1], "--" + names[1].replace("_", "-"))
        wrong = "--context" if flag == "--text-b" else "--text-b"
        if getattr(args, wrong[2:].replace("-", "_")) is not None:
            print(f"error: signature {args.signature!r} takes {names}: give {flag}, "
                  f"not {wrong}", file=sys.stderr)
            return 1
        if second is None or len(second) != len(first):
            print(f"error: signature {args.signature!r} takes {names}: give one {flag} "
                  f"(or a TAB-separated second column) per text", file=sys.stderr)
            return 1
        inputs[names[1]] = second
    elif second is not None:
        print(f"error: signature {args.signature!r} takes one text per example ({names}); "
              f"drop --text-b / --context", file=sys.stderr)
        return 1
    progress = Progress(len(first), unit="text", stream=sys.stderr)
    outputs = run(inputs, progress.update)
    progress.close()
    if embedding_output.EMBEDDING in outputs:
        return write_embeddings(args, first, outputs[embedding_output.EMBEDDING])
    lines = format_outputs(inputs, outputs, label_names)
    if args.output is None:
        print("\n".join(lines))
        return 0
    from keras_bert.files import write_bytes_atomic

    if args.output.lower().endswith(".npy"):
        print(f"error: --output {args.output}: a .npy file holds a text embedder's embeddings; "
              f"name a text file for these lines", file=sys.stderr)
        return 1
    storage.check_filesystem(args.output, flag="--output")
    write_bytes_atomic(args.output, "".join(line + "\n" for line in lines).encode("utf-8"))
    print(f"wrote {len(lines)} lines to {args.output}", file=sys.stderr)
    return 0


def write_embeddings(args, texts, embeddings):
    """Writes a text embedder's embeddings (JSON Lines or --output); the exit status."""
    from keras_bert.tasks.text_embedding.output import write_embeddings

    try:
        summary = write_embeddings(texts, embeddings, args.output)
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    if summary:
        print(summary, file=sys.stderr)
    return 0


if __name__ == "__main__":
    from _cli import run  # One-line errors; --debug shows the traceback.

    sys.exit(run(main))
