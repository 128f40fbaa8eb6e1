"""The multi-label tweet labels of `tools/benchmark.py finetune-multilabel`, from the raw text."""

import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tools"))

from benchmarks.finetune import TWEET_LABELS, tweet_label_set  # noqa: E402


def test_tweet_labels_read_mentions_links_and_questions_from_the_raw_text():
    assert tweet_label_set("@united why? http://t.co/x?y", "negative") == [
        "negative", "has_mention", "has_link", "is_question"]
    # A "?" inside a link is not a question; an e-mail address is not a mention.
    assert tweet_label_set("see https://t.co/a?b=1 or www.x.com", "neutral") == [
        "neutral", "has_link"]
    assert tweet_label_set("mail a@b.com, RT:@JetBlue", "positive") == [
        "positive", "has_mention"]
    assert tweet_label_set("Is it ?", "neutral") == ["neutral", "is_question"]
    assert set(TWEET_LABELS) == {"negative", "neutral", "positive", "has_mention", "has_link",
                                 "is_question"}
