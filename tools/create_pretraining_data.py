"""Corpus files -> sharded TFRecords of BERT pretraining instances (+ metadata.json).

Input: UTF-8 text, one sentence per line, a blank line between documents
(make it with tools/prepare_corpus.py). Output: OUTPUT/pretraining-*.tfrecord,
vocab.txt and metadata.json, which tools/pretrain.py reads (no flags to retype).
Progress goes to stderr; the summary (JSON) and a throughput line to stdout.

On several machines (or processes), each writes one shard of the same set
into one folder with --shard I/N (0-based), or --shard auto to read I and N
from the cluster's variables (TF_CONFIG, Vertex AI's CLUSTER_SPEC, or
KERAS_BERT_WORKER_INDEX / JOB_COMPLETION_INDEX with KERAS_BERT_NUM_WORKERS);
the records are the same as one run with --num-shards N. A shard already
written is skipped; the last shard to finish writes metadata.json.

Example:
    python tools/create_pretraining_data.py corpus/*.txt --output data/ \\
        --vocab-file vocab.txt --max-seq-length 128 --max-predictions-per-seq 20 \\
        --dupe-factor 10 --masking static --num-shards 8 --num-workers 4
    # or, on machine k of 8 (any order, any time):
    python tools/create_pretraining_data.py corpus/*.txt --output gs://b/data/ \
        --vocab-file vocab.txt --max-seq-length 128 --shard k/8
"""

import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import _cli  # noqa: E402

# keras_bert.data.pretraining_data.MASKING_MODES; tests/test_tools.py checks it.
MASKING_MODES = ("static", "dynamic")


def build_parser():
    # The defaults are PretrainingDataConfig's (tests/test_tools.py checks them).
    parser = _cli.parser(__doc__)
    parser.add_argument("inputs", nargs="+", help="Corpus files (one sentence a line, "
                        "blank line between documents).")
    parser.add_argument("--output", required=True, help="Data directory to write.")
    parser.add_argument("--vocab-file", required=True, help="WordPiece vocab.txt.")
    parser.add_argument("--lowercase", action=argparse.BooleanOptionalAction, default=True,
                        help="Uncased vocabulary; --no-lowercase for cased.")
    parser.add_argument("--max-seq-length", type=int, default=128,
                        help="Tokens per instance, [CLS] and [SEP]s included.")
    parser.add_argument("--max-predictions-per-seq", type=int, default=20,
                        help="Masked positions per instance at most.")
    parser.add_argument("--masked-lm-prob", type=float, default=0.15,
                        help="Share of the tokens masked.")
    parser.add_argument("--masking", choices=MASKING_MODES, default="static",
                        help="static: masks written in the records; dynamic: clean ids, "
                        "training masks anew every step.")
    parser.add_argument("--whole-word-masking", action="store_true",
                        help="Mask all WordPieces of a word together.")
    parser.add_argument("--dupe-factor", type=int, default=10,
                        help="Times each document is cut into instances.")
    parser.add_argument("--short-seq-prob", type=float, default=0.1,
                        help="Share of instances made shorter than --max-seq-length.")
    parser.add_argument("--document-pool-size", type=int, default=1000,
                        help="Documents in memory at once; NotNext segments are drawn "
                        "from this pool.")
    parser.add_argument("--seed", type=int, default=12345, help="Random seed.")
    parser.add_argument("--num-shards", type=int, default=None,
                        help="Output files (default: --num-workers).")
    parser.add_argument("--num-workers", type=int, default=1,
                        help="Parallel processes on this machine (one shard at a time each).")
    parser.add_argument("--shard", default=None, metavar="I/N",
                        help="Write only shard I of N (0-based) of the set, for one of N "
                        "processes or machines writing into --output; 'auto': I and N from "
                        "the cluster's environment (docs/cluster.md).")
    _cli.add_verbose(parser)
    return parser


def main(argv=None):
    args = build_parser().parse_args(argv)
    from keras_bert.data import create_pretraining_data
    from keras_bert.data.pretraining_data import PretrainingDataConfig
    from keras_bert.progress import Progress, byte_unit

    config = PretrainingDataConfig(
        max_seq_length=args.max_seq_length,
        max_predictions_per_seq=args.max_predictions_per_seq,
        masked_lm_prob=args.masked_lm_prob, masking=args.masking,
        whole_word_masking=args.whole_word_masking, dupe_factor=args.dupe_factor,
        short_seq_prob=args.short_seq_prob, document_pool_size=args.document_pool_size,
        lowercase=args.lowercase, seed=args.seed)
    progress = unit = None
    done = 0

    def report(num_bytes, total_bytes):
        nonlocal progress, done, unit
        if progress is None:
            unit = byte_unit(total_bytes)
            progress = Progress(total_bytes / unit[1], unit=unit[0])
        done += num_bytes
        progress.update(done / unit[1])

    started = time.time()
    if args.shard is not None:
        return _write_one_shard(args, argv, config, report, lambda: progress)
    metadata = create_pretraining_data(args.inputs, args.output, args.vocab_file,
                                       config, num_shards=args.num_shards,
                                       num_workers=args.num_workers, progress=report)
    if progress is not None:
        progress.close()
    labels = metadata["next_sentence_labels"]
    summary = {k: metadata[k] for k in ("num_documents", "num_instances", "num_tokens",
                                        "num_masked", "num_shards", "masking")}
    summary["is_next_share"] = round(labels["is_next"] / max(metadata["num_instances"], 1), 4)
    print(json.dumps(summary))
    print(f"wrote {args.output} in {_throughput(metadata, time.time() - started)}")


def _throughput(counts, seconds):
    return (f"{seconds:.1f}s: {counts['num_documents'] / max(seconds, 1e-9):.1f} documents/s, "
            f"{counts['num_instances'] / max(seconds, 1e-9):.1f} examples/s")


def _write_one_shard(args, argv, config, report, progress):
    from keras_bert.data import create_pretraining_shard, parse_shard
    from keras_bert.data.pretraining_data import shard_command
    from keras_bert.training.distribute import worker_shard

    if args.shard == "auto":
        index, count = worker_shard()
    else:
        index, count = parse_shard(args.shard)
    if args.num_shards is not None and args.num_shards != count:
        raise ValueError(f"--num-shards {args.num_shards} disagrees with --shard "
                         f"{args.shard} ({count} shards): give --shard alone.")
    if args.num_workers != 1:
        raise ValueError("--shard writes one shard in this process; --num-workers runs a "
                         "pool that writes the whole set. Give one of them (on one machine, "
                         "--num-shards N --num-workers P).")
    command = list(sys.argv[1:] if argv is None else argv)
    started = time.time()
    result = create_pretraining_shard(args.inputs, args.output, args.vocab_file, config,
                                      shard_index=index, num_shards=count,
                                      progress=report, command=command)
    if progress() is not None:
        progress().close()
    shard = result["shard"]
    summary = {"shard": f"{index}/{count}", "file": shard["file"], "skipped": result["skipped"],
               **{k: shard.get(k) for k in ("num_documents", "num_instances", "num_tokens",
                                            "num_masked")},
               "missing_shards": result["missing"]}
    print(json.dumps(summary))
    where = os.path.join(args.output, shard["file"])
    if result["skipped"]:
        print(f"{where} was already written: skipped")
    else:
        print(f"wrote {where} in {_throughput(shard, time.time() - started)}")
    if result["missing"]:
        missing = result["missing"]
        print(f"{count - len(missing)} of {count} shards written; still to write: "
              f"{', '.join(f'{i}/{count}' for i in missing[:10])}"
              f"{' ...' if len(missing) > 10 else ''} (e.g. "
              f"{shard_command({'command': command}, missing[0], count)})")
    else:
        print(f"all {count} shards written: {args.output} is complete "
              f"({result['metadata']['num_instances']} instances)")

if __name__ == "__main__":
    from _cli import run  # One-line errors; --debug shows the traceback.

    sys.exit(run(main))
