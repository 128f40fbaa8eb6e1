"""data/labels.py: one label encoding for a text's class and a word's tags."""

import numpy as np
import pytest

from keras_bert.data import labels as labels_lib
from keras_bert.data.report import DataReport
from keras_bert.data.text_data import split_examples
from keras_bert.tasks.classification import reader as classification
from keras_bert.tasks.token_classification import reader as conll


def sentences(tags):
    report = DataReport("f", max_logged=0)
    report.num_kept = len(tags)
    return conll.ConllSentences([["w"] * len(t) for t in tags], tags,
                                [f"f:{3 * i + 1}" for i in range(len(tags))], report)


def test_one_label_per_row_matches_by_key():
    examples = classification.ClassificationExamples(
        ["a", "b", "c"], None, ["1.0", "pos", "2"], ["f:2", "f:3", "f:4"], DataReport("f"))
    kept, ids = labels_lib.encode_labels(examples, ["2", "1", "pos"],
                                         key=classification.label_key)
    assert ids.dtype == np.int32 and ids.tolist() == [1, 2, 0]
    assert kept.where == ["f:2", "f:3", "f:4"]


def test_tag_sequences_give_one_array_per_sentence_and_skip_whole_sentences():
    data = sentences([["B-PER", "O"], ["B-LOC"], ["O", "O", "B-PER"]])
    kept, ids = labels_lib.encode_labels(data, ["O", "B-PER"], "skip", labels=data.tags,
                                         noun="tag")
    assert [i.tolist() for i in ids] == [[1, 0], [0, 0, 1]]
    assert all(i.dtype == np.int32 for i in ids)
    assert kept.where == ["f:1", "f:7"]
    assert data.report.skipped["unknown label"] == 1 and data.report.num_kept == 2
    assert data.report.messages == [
        "f:4: skipped: unknown label: tag 'B-LOC' not in ['O', 'B-PER']"]


def test_unknown_tag_is_an_error_naming_the_line_and_the_way_out():
    data = sentences([["O"], ["O", "I-ORG"]])
    with pytest.raises(ValueError, match=r"^f:4: unknown tag 'I-ORG' in this sentence; the "
                       r"model's tags are \['O'\]\..*--label-names.*--unknown-labels skip"):
        labels_lib.encode_labels(data, ["O"], labels=data.tags, noun="tag")
    with pytest.raises(ValueError, match="Expected unknown_labels 'error' or 'skip'"):
        labels_lib.encode_labels(data, ["O"], "drop", labels=data.tags)


def test_task_readers_share_it():
    # The CoNLL reader's encode_tags is the generic encoding: same ids, same skip report.
    data = sentences([["B-PER", "O"], ["X-1"]])
    kept, ids = conll.encode_tags(data, ["O", "B-PER"], unknown_labels="skip")
    assert isinstance(ids, list) and [i.tolist() for i in ids] == [[1, 0]]
    assert data.report.messages == ["f:4: skipped: unknown label: tag 'X-1' not in ['O', 'B-PER']"]


def test_split_examples_is_format_neutral():
    # The seeded split of data/ takes a CoNLL reading as it takes classification rows.
    data = sentences([["O"]] * 10)
    train, held_out = split_examples(data, 0.2, seed=3)
    assert len(train) == 8 and len(held_out) == 2
    assert sorted(train.where + held_out.where) == sorted(data.where)
    assert split_examples(data, 0.2, seed=3)[1].where == held_out.where
    assert classification.split_examples is split_examples
