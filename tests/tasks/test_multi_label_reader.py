"""Multi-label readers: names with a separator, 0/1 columns, JSON lists; bad rows at FILE:LINE."""

import json
import logging

import numpy as np
import pytest

from keras_bert.data import labels as labels_lib
from keras_bert.data.text_data import split_examples
from keras_bert.tasks.multi_label_classification import reader
from keras_bert.tasks.multi_label_classification.options import MultiLabelOptions
from keras_bert.training.finetune import read_task_data

TASK = "multi_label_classification"


def write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return str(path)


def test_names_with_a_separator_in_csv_and_tsv(tmp_path, caplog):
    path = write(tmp_path, "train.csv", (
        "text,topics\n"
        "the match and the vote,sports|politics\n"
        '"chips, phones",tech\n'          # A quoted text with a comma.
        "nothing here,\n"                  # No label: kept, an empty set.
        "a|b|c, | tech\n"                  # Line 5: an empty name between separators.
        ",sports\n"                        # Line 6: empty text.
        "too,many,columns\n"               # Line 7.
        '"goal, again","sports | sports"\n'  # Names are stripped, repeats dropped.
    ))
    with caplog.at_level(logging.WARNING, logger="keras_bert.data"):
        examples = reader.read_multi_label_file(path, label_column="topics")
    assert examples.texts == ["the match and the vote", "chips, phones", "nothing here",
                              "goal, again"]
    assert examples.labels == [["sports", "politics"], ["tech"], [], ["sports"]]
    assert examples.where == [f"{path}:{n}" for n in (2, 3, 4, 8)]
    assert examples.report.skipped == {"bad label": 1, "empty text": 1, "malformed row": 1}
    assert f"{path}:5: skipped: bad label: '| tech' has an empty name between '|'" in caplog.text
    assert f"{path}:7: skipped: malformed row: 3 columns, the header has 2" in caplog.text

    tsv = write(tmp_path, "train.tsv", "label\ttext\nsports,tech\tnew bikes\n")
    examples = reader.read_multi_label_file(tsv, label_separator=",")
    assert examples.labels == [["sports", "tech"]]
    assert labels_lib.infer_label_names([["b", "a"], [], ["b"]]) == ["a", "b"]
    assert labels_lib.infer_label_names([["10", "2"], ["0"]]) == ["0", "2", "10"]


def test_zero_one_columns_and_json_lists(tmp_path, caplog):
    path = write(tmp_path, "flags.csv", (
        "text,toxic,spam\n"
        "buy now,0,1\n"
        "you fool,1, 1 \n"
        "hello,0,0\n"
        "maybe,0,yes\n"                     # Line 5: not 0/1.
    ))
    options = MultiLabelOptions(label_columns=["toxic", "spam"])
    with caplog.at_level(logging.WARNING, logger="keras_bert.data"):
        examples = read_task_data(TASK, path, True, options)
    assert examples.labels == [["spam"], ["toxic", "spam"], []]
    assert f"{path}:5: skipped: bad label: column 'spam' holds 'yes', not 0 or 1" in caplog.text
    kept, matrix = reader.encode_label_sets(examples, ["toxic", "spam"])
    assert matrix.tolist() == [[0, 1], [1, 1], [0, 0]] and matrix.dtype == np.float32

    lines = [{"text": "a cat", "label": ["animal"]}, {"text": "a film", "label": []},
             {"text": "cat film", "label": ["animal", "movie"]},
             {"text": "odd", "label": 3}]               # Line 4: not names.
    jsonl = write(tmp_path, "names.jsonl", "".join(json.dumps(x) + "\n" for x in lines))
    examples = reader.read_multi_label_file(jsonl)
    assert examples.labels == [["animal"], [], ["animal", "movie"]]
    assert examples.report.skipped == {"bad label": 1}

    vectors = [{"text": "a cat", "label": [1, 0]}, {"text": "cat film", "label": [1, 1]},
               {"text": "short", "label": [1]},          # Line 3: wrong length.
               {"text": "none", "label": [0, 0]}]
    jsonl = write(tmp_path, "vectors.jsonl", "".join(json.dumps(x) + "\n" for x in vectors))
    with caplog.at_level(logging.WARNING, logger="keras_bert.data"):
        examples = reader.read_multi_label_file(jsonl, label_names=["animal", "movie"])
    assert examples.labels == [["animal"], ["animal", "movie"], []]
    assert f"{jsonl}:3: skipped: bad label: 1 values of 0/1, expected 2" in caplog.text
    # Without label names, 0/1 lists name their labels "0".."K-1".
    assert reader.read_multi_label_file(jsonl).labels == [["0"], ["0", "1"], []]


def test_unknown_labels_stop_at_file_and_line_or_are_skipped(tmp_path):
    path = write(tmp_path, "dev.csv", "text,label\na cat,animal\nthe plot,movie|plot\n")
    examples = reader.read_multi_label_file(path)
    with pytest.raises(ValueError, match=rf"{path}:3: unknown label 'plot' in this row; the "
                       r"model's labels are \['animal', 'movie'\].*--label-names.*"
                       r"--unknown-labels skip"):
        reader.encode_label_sets(examples, ["animal", "movie"])
    kept, matrix = reader.encode_label_sets(examples, ["animal", "movie"], "skip")
    assert kept.texts == ["a cat"] and matrix.tolist() == [[1, 0]]
    assert "skipped 1 (unknown label: 1)" in examples.report.summary()

    with pytest.raises(ValueError, match=rf"{path}:1: the header \['text', 'label'\] has no "
                       r"column 'topics'.*--label-column \(or --label-columns\)"):
        reader.read_multi_label_file(path, label_column="topics")
    train, held_out = split_examples(reader.read_multi_label_file(path), 0.5, seed=0)
    assert sorted(train.texts + held_out.texts) == ["a cat", "the plot"]
    assert dict(zip(train.texts + held_out.texts, train.labels + held_out.labels)) == {
        "a cat": ["animal"], "the plot": ["movie", "plot"]}
