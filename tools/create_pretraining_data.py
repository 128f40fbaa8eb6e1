"""Corpus files -> sharded TFRecords of BERT pretraining instances (+ metadata.json).

Input: UTF-8 text, one sentence per line, a blank line between documents
(make it with tools/prepare_corpus.py). Output: OUTPUT_DIR/pretraining-*.tfrecord,
vocab.txt and metadata.json, which tools/pretrain.py reads (no flags to retype).

Example:
    python tools/create_pretraining_data.py corpus/*.txt --output-dir data/ \\
        --vocab-file vocab.txt --max-seq-length 128 --max-predictions-per-seq 20 \\
        --dupe-factor 10 --masking static --num-shards 8 --num-workers 4
"""

import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def main(argv=None):
    from keras_bert.data.pretraining_data import MASKING_MODES, PretrainingDataConfig

    defaults = PretrainingDataConfig()
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("inputs", nargs="+", help="corpus files (one sentence a line, "
                        "blank line between documents)")
    parser.add_argument("--output-dir", required=True, help="directory to write")
    parser.add_argument("--vocab-file", required=True, help="WordPiece vocab.txt")
    parser.add_argument("--lowercase", action=argparse.BooleanOptionalAction,
                        default=defaults.lowercase,
                        help="uncased vocabulary (default); --no-lowercase for cased")
    parser.add_argument("--max-seq-length", type=int, default=defaults.max_seq_length)
    parser.add_argument("--max-predictions-per-seq", type=int,
                        default=defaults.max_predictions_per_seq)
    parser.add_argument("--masked-lm-prob", type=float, default=defaults.masked_lm_prob)
    parser.add_argument("--masking", choices=MASKING_MODES, default=defaults.masking,
                        help="static: masks written in the records; dynamic: clean ids, "
                        "training masks anew every step")
    parser.add_argument("--whole-word-masking", action="store_true")
    parser.add_argument("--dupe-factor", type=int, default=defaults.dupe_factor,
                        help="times each document is cut into instances")
    parser.add_argument("--short-seq-prob", type=float, default=defaults.short_seq_prob)
    parser.add_argument("--document-pool-size", type=int,
                        default=defaults.document_pool_size,
                        help="documents in memory at once; NotNext segments are drawn "
                        "from this pool")
    parser.add_argument("--seed", type=int, default=defaults.seed)
    parser.add_argument("--num-shards", type=int, default=None,
                        help="output files (default: --num-workers)")
    parser.add_argument("--num-workers", type=int, default=1,
                        help="parallel processes (one shard at a time each)")
    args = parser.parse_args(argv)

    from tqdm import tqdm

    from keras_bert.data import create_pretraining_data

    config = PretrainingDataConfig(
        max_seq_length=args.max_seq_length,
        max_predictions_per_seq=args.max_predictions_per_seq,
        masked_lm_prob=args.masked_lm_prob, masking=args.masking,
        whole_word_masking=args.whole_word_masking, dupe_factor=args.dupe_factor,
        short_seq_prob=args.short_seq_prob, document_pool_size=args.document_pool_size,
        lowercase=args.lowercase, seed=args.seed)
    bar = None

    def progress(num_bytes, total_bytes):
        nonlocal bar
        if bar is None:
            bar = tqdm(total=total_bytes, unit="B", unit_scale=True, desc="corpus")
        bar.update(num_bytes)

    started = time.time()
    metadata = create_pretraining_data(args.inputs, args.output_dir, args.vocab_file,
                                       config, num_shards=args.num_shards,
                                       num_workers=args.num_workers, progress=progress)
    if bar is not None:
        bar.close()
    labels = metadata["next_sentence_labels"]
    summary = {k: metadata[k] for k in ("num_documents", "num_instances", "num_tokens",
                                        "num_masked", "num_shards", "masking")}
    summary["is_next_share"] = round(labels["is_next"] / max(metadata["num_instances"], 1), 4)
    print(json.dumps(summary))
    print(f"wrote {args.output_dir} in {time.time() - started:.1f}s")


if __name__ == "__main__":
    from keras_bert.cli import run  # One-line errors; --debug shows the traceback.

    sys.exit(run(main))
