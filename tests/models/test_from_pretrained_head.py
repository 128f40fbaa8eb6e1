"""from_pretrained on a fine-tuned directory keeps the trained head unless told
otherwise (issue 23, "No silent reinterpretation")."""

import json

import numpy as np
import pytest

from keras_bert.tasks import BertClassifier, BertTokenClassifier
from tests.tasks.conftest import vocab_file  # noqa: F401
from tests.test_case import assert_all_close

NAMES = ["negative", "neutral", "positive"]
TEXTS = ["the movie is good", "a bad film", "i love it"]


@pytest.fixture
def trained_dir(encoder, vocab_file, tmp_path):  # noqa: F811
    """A fine-tuned classifier directory whose head is far from any fresh one."""
    classifier = BertClassifier(encoder, num_classes=3, label_names=NAMES)
    head = classifier.output_dense
    head.set_weights([np.full(w.shape, 0.5, "float32") + np.arange(w.shape[-1], dtype="float32")
                      for w in head.get_weights()])
    path = str(tmp_path / "clf")
    classifier.save_pretrained(path, vocab_file=vocab_file)
    return path


def _head(model):
    return [np.asarray(w) for w in model.output_dense.weights]


def _assert_trained_head(model):
    for w in _head(model):
        np.testing.assert_array_equal(
            w, np.full(w.shape, 0.5, "float32") + np.arange(w.shape[-1], dtype="float32"))


def test_the_same_values_in_another_type_keep_the_trained_head(trained_dir):
    for kwargs in ({"num_classes": 3, "label_names": tuple(NAMES)},
                   {"label_names": tuple(NAMES)},
                   {"num_classes": 3},
                   {"num_classes": 3, "label_names": list(NAMES), "dropout_rate": None}):
        model = BertClassifier.from_pretrained(trained_dir, **kwargs)
        _assert_trained_head(model)
        assert model.label_names == NAMES


@pytest.mark.slow
def test_a_rename_and_arguments_that_change_no_weight_apply_to_the_trained_head(trained_dir, tmp_path):
    base = BertClassifier.from_pretrained(trained_dir)
    expected = base.predict(TEXTS, verbose=0)
    renamed = BertClassifier.from_pretrained(trained_dir, label_names=("neg", "neu", "pos"),
                                             dropout_rate=0.3, rename_labels=True)
    _assert_trained_head(renamed)
    assert renamed.label_names == ["neg", "neu", "pos"]
    assert renamed.dropout.rate == 0.3 and renamed.dropout_rate == 0.3
    assert_all_close(renamed.predict(TEXTS, verbose=0), expected)
    assert renamed.compiled
    # Saved again, task.json has the new names (not the loaded ones).
    renamed.save_pretrained(str(tmp_path / "renamed"))
    info = json.loads((tmp_path / "renamed" / "task.json").read_text())
    assert info["task_config"]["label_names"] == ["neg", "neu", "pos"]
    assert info["task_config"]["dropout_rate"] == 0.3
    _assert_trained_head(BertClassifier.from_pretrained(str(tmp_path / "renamed")))


def test_a_shape_change_needs_an_explicit_new_head(trained_dir):
    with pytest.raises(ValueError, match=r"trained BertClassifier head.*num_classes=5 \(saved: 3\)"
                                         r".*new_head=True"):
        BertClassifier.from_pretrained(trained_dir, num_classes=5)
    fresh = BertClassifier.from_pretrained(trained_dir, num_classes=5, new_head=True)
    assert fresh.num_classes == 5 and fresh.label_names is None
    assert np.abs(_head(fresh)[0]).max() < 0.2  # Initialized, not the trained 0.5+.
    # new_head=True asks for a fresh head even when the shape would allow the old one.
    again = BertClassifier.from_pretrained(trained_dir, new_head=True, num_classes=3)
    assert np.abs(_head(again)[0]).max() < 0.2
    # "auto" (what fine-tuning uses) replaces it, with a warning that says so.
    with pytest.warns(UserWarning, match="trained BertClassifier head is discarded.*num_classes=2"):
        two = BertClassifier.from_pretrained(trained_dir, num_classes=2, new_head="auto")
    assert two.num_classes == 2
    _assert_trained_head(BertClassifier.from_pretrained(trained_dir, new_head="auto"))
    with pytest.raises(ValueError, match="new_head='yes'"):
        BertClassifier.from_pretrained(trained_dir, new_head="yes")


def test_other_label_names_on_a_trained_head_need_a_new_head_or_a_rename(trained_dir):
    # Issue 46: the sentiment head was silently called billing/shipping/technical.
    other = ["billing", "shipping", "technical"]
    for names in (other, list(reversed(NAMES))):
        with pytest.raises(ValueError, match=rf"{trained_dir} holds a trained BertClassifier "
                                             r"head, and label_names=.*names its outputs "
                                             r"otherwise.*new_head=True.*rename_labels=True"):
            BertClassifier.from_pretrained(trained_dir, num_classes=3, label_names=names)
    fresh = BertClassifier.from_pretrained(trained_dir, label_names=other, new_head=True,
                                           num_classes=3)
    assert fresh.label_names == other and np.abs(_head(fresh)[0]).max() < 0.2
    with pytest.warns(UserWarning, match="head is discarded.*names its outputs otherwise"):
        auto = BertClassifier.from_pretrained(trained_dir, label_names=other, new_head="auto")
    assert auto.label_names == other and np.abs(_head(auto)[0]).max() < 0.2
    renamed = BertClassifier.from_pretrained(trained_dir, label_names=other, rename_labels=True)
    assert renamed.label_names == other
    _assert_trained_head(renamed)


def test_label_names_of_another_length_are_an_error_not_a_new_head(trained_dir):
    with pytest.raises(ValueError, match="label_names has 2 names but num_classes=3"):
        BertClassifier.from_pretrained(trained_dir, label_names=["a", "b"])


def test_another_task_still_gets_a_fresh_head(trained_dir):
    tagger = BertTokenClassifier.from_pretrained(trained_dir, num_classes=3)
    assert isinstance(tagger, BertTokenClassifier) and tagger.compiled
    assert np.abs(_head(tagger)[0]).max() < 0.2
