"""Tiny model directories and hand-made task data for the fine-tuning tests."""

import csv
import json
import os
import string

import keras

from keras_bert.models import BertEncoder
from keras_bert.text.vocab import SPECIAL_TOKENS, save_vocabulary
from tests.conftest import tiny_config

WORDS = """
the a an of in on and is was what who where when which how did does to from by with for
good great fine love lovely happy nice bad awful hate sad terrible boring movie film plot
paris france capital city river seine john smith lives works at acme corp berlin germany
cafe resume new york eiffel tower built year denver broncos won super bowl
""".split()


def make_vocab(path, extra_words=()):
    """specials + whole words + single characters and ## characters (no [UNK] for ASCII)."""
    characters = list(string.ascii_lowercase + string.digits + string.punctuation)
    tokens = list(SPECIAL_TOKENS) + sorted(set(WORDS) | set(extra_words)) + characters
    tokens += ["##" + c for c in string.ascii_lowercase + string.digits]
    save_vocabulary(tokens, path)
    return tokens


def make_model_dir(path, max_position_embeddings=128, num_layers=1, **overrides):
    """A 1-layer, 16-wide encoder with the tiny vocabulary, saved as a model directory."""
    os.makedirs(path, exist_ok=True)
    vocab_file = os.path.join(os.path.dirname(path.rstrip("/")), "tiny_vocab.txt")
    tokens = make_vocab(vocab_file)
    config = tiny_config(vocab_size=len(tokens), num_layers=num_layers,
                         max_position_embeddings=max_position_embeddings, **overrides)
    keras.utils.set_random_seed(0)  # The same tiny model in every run.
    encoder = BertEncoder(**config.to_dict())
    encoder.save_pretrained(path, vocab_file=vocab_file)
    return path


def sentiment_rows(n, seed=0):
    """(text, label) rows a bag of words separates: good/great... vs bad/awful..."""
    import random

    rng = random.Random(seed)
    positive = ["good", "great", "love", "lovely", "happy", "nice"]
    negative = ["bad", "awful", "hate", "sad", "terrible", "boring"]
    filler = ["the", "movie", "film", "plot", "was", "a", "is", "city"]
    rows = []
    for i in range(n):
        label = "pos" if i % 2 == 0 else "neg"
        words = rng.sample(filler, 3) + [rng.choice(positive if label == "pos" else negative)]
        rng.shuffle(words)
        rows.append((" ".join(words), label))
    return rows


def write_rows(path, rows):
    """Writes (text, label) rows as a CSV file with the header text,label; returns str(path)."""
    with open(path, "w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(["text", "label"])
        writer.writerows(rows)
    return str(path)


def write_sentiment_splits(root, num_train, num_dev, model_dir=None):
    """root/train.csv and root/dev.csv of `sentiment_rows` (seeds 0 and 1).

    Args:
        root: the folder.
        num_train, num_dev: int, rows of each.
        model_dir: a model directory to link as root/tiny (read only there:
            the session's tiny_model_dir), or None.

    Returns:
        dict {"train": path, "dev": path}.
    """
    if model_dir is not None:
        os.symlink(model_dir, os.path.join(root, "tiny"))
    return {name: write_rows(os.path.join(root, f"{name}.csv"), sentiment_rows(n, seed))
            for name, n, seed in (("train", num_train, 0), ("dev", num_dev, 1))}


CONLL_TEXT = """-DOCSTART- -X- -X- O

John NNP B-PER
Smith NNP I-PER
lives VBZ O
in IN O
Paris NNP B-LOC
. . O

Acme NNP B-ORG
Corp NNP I-ORG
works VBZ O
in IN O
Berlin NNP B-LOC
, , O
Germany NNP B-LOC

"""


def squad_json(version_2_with_negative=False):
    """A small SQuAD file: accents, punctuation, inner whitespace, long context."""
    long_context = " ".join(["the river seine flows in paris ."] * 12) + " the eiffel tower was built in 1889 ."
    paragraphs = [
        {
            "context": "Paris is the capital of France. The Café  Résumé is on the Seine!",
            "qas": [
                {"id": "q1", "question": "What is the capital of France?",
                 "answers": [{"text": "Paris", "answer_start": 0}]},
                {"id": "q2", "question": "What is on the Seine?",
                 "answers": [{"text": "The Café  Résumé", "answer_start": 32},
                             {"text": "Café  Résumé", "answer_start": 36}]},
                {"id": "q3", "question": "Which river?",
                 "answers": [{"text": "Seine!", "answer_start": 59}]},
            ],
        },
        {
            "context": "The Denver Broncos won Super Bowl 50, in (New York?) city.",
            "qas": [
                {"id": "q4", "question": "Who won?",
                 "answers": [{"text": "Denver Broncos", "answer_start": 4}]},
                {"id": "q5", "question": "Where?",
                 "answers": [{"text": "(New York?)", "answer_start": 41}]},
            ],
        },
        {
            "context": long_context,
            "qas": [
                {"id": "q6", "question": "When was the eiffel tower built?",
                 "answers": [{"text": "1889", "answer_start": long_context.index("1889")}]},
            ],
        },
    ]
    if version_2_with_negative:
        paragraphs[1]["qas"].append(
            {"id": "q7", "question": "Who lost?", "answers": [], "is_impossible": True})
    return {"version": "v2.0" if version_2_with_negative else "1.1",
            "data": [{"title": "t", "paragraphs": paragraphs}]}


def write_json(path, value):
    with open(path, "w", encoding="utf-8") as f:
        json.dump(value, f, ensure_ascii=False)
    return path
