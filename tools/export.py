"""Export a model directory as a TF Serving SavedModel that takes raw strings.

Writes exports/NAME/VERSION/ (saved_model.pb, variables/, assets/vocab.txt,
keras_bert_export.json). VERSION defaults to 1 + the largest version already
under exports/NAME, so a running TF Serving picks the new one up. The
version directory appears only when it is complete. TF Serving's warmup
requests go to assets.extra/ (--no-warmup leaves them out);
tools/serving_config.py writes models.config and batching_parameters.txt.

Signatures (see exports/README.md): serving_default (the task's: classify,
tag or answer; embed for an encoder), embed, encode, preprocess; a tagger's
also entities.

Examples
--------
  python tools/export.py --model models/sentiment --output exports/sentiment
  python tools/export.py --model models/sentiment --output exports/sentiment/3 --overwrite
  python tools/export.py --model models/minilm --output exports/minilm --max-seq-length 128
  python tools/export.py --model models/sentiment --output exports/sentiment --jit-compile on
  python tools/export.py --model models/sentiment --output exports/sentiment --dtype mixed_bfloat16
  # A classifier's sub-batching is measured here at export time (keras_bert_export.json
  # "tuning"); time it on your own texts, or set it:
  python tools/export.py --model models/sentiment --output exports/sentiment --tune-texts sample.txt
  python tools/export.py --model models/sentiment --output exports/sentiment --sub-batches 4
  # Any checkpoint from_pretrained takes, converted once into the cache:
  python tools/export.py --model my_keras_hub_classifier_preset --output exports/sentiment
  python tools/export.py --model google-bert/bert-base-uncased --output exports/bert_base
  python tools/export.py --model models/sentiment --output exports/sentiment-lite --format tflite
  python tools/export.py --model models/sentiment --output exports/sentiment-int8 \
      --quantize int8 --calibration-data sample.txt
"""

import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import _cli  # noqa: E402


def build_parser():
    parser = _cli.parser(__doc__)
    parser.add_argument("--model", required=True,
                        help="Model directory (config.json, ...), or any checkpoint "
                             "from_pretrained takes: a Hugging Face folder or Hub id, a Google "
                             "folder, a keras-hub preset (converted once into the cache).")
    parser.add_argument(
        "--output", required=True,
        help="exports/NAME (next version) or exports/NAME/VERSION.",
    )
    parser.add_argument("--overwrite", action="store_true",
                        help="Replace an existing VERSION directory (an export keras_bert wrote).")
    parser.add_argument("--vocab-file", default=None,
                        help="WordPiece vocab.txt (default: the model directory's).")
    parser.add_argument(
        "--max-seq-length", type=int, default=None,
        help="Longest packed sequence; longer texts are truncated (default: task.json "
        "max_seq_length, else min(512, max_position_embeddings)).",
    )
    parser.add_argument(
        "--pad-to-max-seq-length", action="store_true",
        help="Pad every batch to exactly --max-seq-length (the classic export; slower). "
        "Without it a batch is padded to its own longest text.",
    )
    parser.add_argument("--pad-to-multiple-of", type=int, default=1,
                        help="Round the batch-longest length up to a multiple of this.")
    _cli.add_jit_compile(
        parser, help_text="XLA-compile the model part (encoder and head; tokenization stays "
        "outside). auto: off, as TF Serving runs an XLA export on CPU only with "
        "--xla_cpu_compilation_enabled; on is faster where that is set (exports/README.md, "
        "BENCHMARKS.md).")
    parser.add_argument(
        "--dtype", choices=("float32", "mixed_bfloat16"), default="float32",
        help="Keras dtype policy of the exported model: mixed_bfloat16 multiplies in bfloat16 "
        "(float32 variables and outputs); faster only on CPUs with AMX or AVX512-BF16 and at "
        "large batches (BENCHMARKS.md serving-accuracy).")
    parser.add_argument(
        "--quantize", choices=("int8",), default=None,
        help="int8: the encoder's Dense layers on TensorFlow's oneDNN int8 matmul (x86; core "
        "TensorFlow ops, TF Serving loads it; faster at requests of many texts). With --format "
        "tflite: LiteRT's dynamic-range int8 (int8 weights; faster at one text). Held-out "
        "accuracy and speed in BENCHMARKS.md (int8).")
    parser.add_argument(
        "--calibration-data", default=None, metavar="FILE",
        help="--quantize int8: a few hundred texts like those you serve (one a line, or a "
        "CSV/TSV with a 'text' column) that fix each layer's activation range. Without it the "
        "ranges are taken from each request (a little slower).")
    parser.add_argument(
        "--format", choices=("saved_model", "tflite"), default="saved_model",
        help="saved_model (TF Serving, the default) or tflite: a LiteRT model.tflite of a "
        "classifier or encoder, text in, tokenizer inside, run with tensorflow-text's TFLite "
        "kernels registered (exports/README.md, LiteRT).")
    parser.add_argument("--lowercase", action=argparse.BooleanOptionalAction, default=None,
                        help="Uncased vocabulary; --no-lowercase: cased (default: task.json's, "
                        "else guessed from vocab.txt).")
    parser.add_argument("--pairs", action="store_true", default=None,
                        help="Classifier: serving_default takes (text, text_b).")
    parser.add_argument("--sub-batches", type=int, default=None,
                        help="Classifier: sort a request of at least 8x this many texts by "
                        "token length in the graph and run it as this many sub-batches, each "
                        "padded to its own longest text (rows come back in request order). "
                        "Default: measured on this machine at export time (see --no-tune).")
    parser.add_argument("--no-tune", dest="tune", action="store_false",
                        help="Classifier: skip the export-time tuning; one batch per request "
                        "(--sub-batches K sets K without tuning). By default the export times "
                        "1, 2, 4 and 8 sub-batches on requests of 1, 16, 32 and 64 texts here "
                        "and keeps the fastest per request size, recorded in "
                        "keras_bert_export.json (exports/README.md, How the default is chosen).")
    parser.add_argument("--tune-texts", default=None,
                        help="Tuning: a file of texts like those you serve, one a line "
                        "(default: texts made from the vocabulary, lengths spread like tweets).")
    parser.add_argument("--tune-seconds", type=float, default=None,
                        help="Tuning: time budget of the timed rounds (default 20; at least 3 "
                        "rounds run).")
    parser.add_argument("--doc-stride", type=int, default=None,
                        help="Span QA window stride (default: task.json's).")
    parser.add_argument("--max-windows", type=int, default=None,
                        help="Span QA: windows read per context (default 16).")
    parser.add_argument("--aggregation-strategy", default=None,
                        help="Tagger: how the entities signature groups pieces into entities: "
                        "none, simple, first (default) or max (transformers' strategies).")
    parser.add_argument("--no-warmup", dest="warmup", action="store_false",
                        help="Leave out TF Serving's warmup requests "
                        "(assets.extra/tf_serving_warmup_requests).")
    _cli.add_verbose(parser)
    return parser


def parse_args(argv=None):
    return build_parser().parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    from keras_bert.export import export_model, tuning
    from keras_bert.export.export import INFO_FILE

    tune = args.tune and args.sub_batches is None and args.format == "saved_model"
    if args.calibration_data and not args.quantize:
        print("error: --calibration-data calibrates an int8 export; add --quantize int8 or "
              "drop it.", file=sys.stderr)
        return 1
    if not tune and (args.tune_texts or args.tune_seconds is not None):
        print("error: --tune-texts / --tune-seconds set the tuning, which --sub-batches, "
              "--no-tune and --format tflite turn off; drop one of them.", file=sys.stderr)
        return 1

    options = {
        key: value
        for key, value in {
            "vocab_file": args.vocab_file,
            "max_seq_length": args.max_seq_length,
            "pad_to_max_seq_length": args.pad_to_max_seq_length or None,
            "pad_to_multiple_of": args.pad_to_multiple_of,
            "jit_compile": args.jit_compile == "on",
            "lowercase": args.lowercase,
            "pairs": args.pairs,
            "sub_batches": "auto" if tune else args.sub_batches,
            "doc_stride": args.doc_stride,
            "max_windows": args.max_windows,
            "aggregation_strategy": args.aggregation_strategy,
        }.items()
        if value is not None
    }
    try:
        path = export_model(args.model, args.output, overwrite=args.overwrite,
                            warmup=args.warmup, dtype=args.dtype, format=args.format,
                            quantize=args.quantize, calibration_texts=args.calibration_data,
                            tune_texts=args.tune_texts,
                            tune_seconds=(tuning.TUNE_SECONDS if args.tune_seconds is None
                                          else args.tune_seconds),
                            log=print, **options)
    except (ValueError, FileNotFoundError, FileExistsError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    from keras_bert import storage  # The export may be remote (gs://...).
    info = json.loads(storage.read_bytes(storage.join(path, INFO_FILE)))
    if args.format == "tflite":
        ops = info["ops"]
        print(f"Exported {args.model} -> {path}/model.tflite ({info['module']}, max_seq_length "
              f"{info['max_seq_length']}, {info['size_bytes'] / 2**20:.1f} MiB"
              + (f", quantize {info['quantize']}" if info.get("quantize") else "") + ")\n"
              f"  ops: {len(ops['builtin'])} builtin, custom {ops['custom']}, "
              f"Flex {ops['flex'] or 'none'}")
        for name, signature in info["signatures"].items():
            print(f"  {name}({', '.join(signature['inputs'])}) -> "
                  f"{', '.join(signature['outputs'])}")
        return 0
    print(f"Exported {args.model} -> {path} ({info['module']}, max_seq_length "
          f"{info['max_seq_length']}, jit_compile {info['jit_compile']}, dtype {info['dtype']}"
          + (f", quantize {info['quantize']}" if info.get("quantize") else "") + ")")
    if info.get("int8"):
        print("  int8 activation ranges: " + (
            f"calibrated on {info['int8']['calibration_texts']} texts of {args.calibration_data}"
            if info["int8"]["ranges"] == "calibrated" else
            "per request (no --calibration-data)"))
    for name, signature in info["signatures"].items():
        inputs = ", ".join(f"{k}: {v['dtype']}{v['shape']}" for k, v in signature["inputs"].items())
        outputs = ", ".join(f"{k}: {v['dtype']}{v['shape']}"
                            for k, v in signature["outputs"].items())
        print(f"  {name}({inputs})\n      -> {outputs}")
    return 0


if __name__ == "__main__":
    from _cli import run  # One-line errors; --debug shows the traceback.

    sys.exit(run(main))
