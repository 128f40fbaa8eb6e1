"""Long documents: the classifier and the tagger reading texts in windows.

Python references, one window at a time: split the ids as run_squad.py cuts
contexts, run the Keras model on each `[CLS] window [SEP]`, then combine the
window logits (classifier: mean or max) or take each token's logits from its
max-context window (tagger). `predict` (the export's code) must match them.
"""

import os

import numpy as np
import pytest
import tensorflow as tf

from keras_bert.models import registry
from keras_bert.tasks import BertClassifier, BertTokenClassifier
from keras_bert.text.windows import check_windows, windows_of
from tests.conftest import tool_module
from tests.tasks.test_span_qa_windows import reference_doc_spans, reference_is_max_context

# Long, short and empty texts over the export vocabulary (tests/conftest.py EXPORT_VOCAB).
TEXTS = [
    "the fox jumped over the dog and the cat was very good " * 3
    + "a bad movie , an awful film , not good at all .",
    "",
    "a great film",
    "what ? " * 60,  # More tokens than max_windows windows read.
]


def reference_spans(num_tokens, window, stride, max_windows):
    """run_squad.py's doc spans, the first `max_windows`; an empty text has one empty window."""
    return reference_doc_spans(num_tokens, window, stride)[:max_windows] or [(0, 0)]


def window_logits(model, ids, spans):
    """The Keras model on `[CLS] window [SEP]` of each span (one padded batch)."""
    tokenizer = model.preprocessor.tokenizer
    rows = [[tokenizer.cls_token_id, *ids[start:start + length], tokenizer.sep_token_id]
            for start, length in spans]
    width = max(len(row) for row in rows)
    inputs = {"token_ids": np.array([row + [0] * (width - len(row)) for row in rows], "int32"),
              "segment_ids": np.zeros([len(rows), width], "int32"),
              "padding_mask": np.array([[1] * len(row) + [0] * (width - len(row))
                                        for row in rows], "int32")}
    return list(np.asarray(model(inputs, training=False)))


def token_ids(model, text):
    return model.preprocessor.tokenizer(tf.constant([text])).to_list()[0]


@pytest.fixture(scope="module")
def classifier(classifier_export):
    # The session's fine-tuned tiny classifier (max_seq_length 24): 22 tokens a window.
    return BertClassifier.from_pretrained(
        classifier_export["model_dir"], windows={"stride": 7, "max_windows": 4})


def classifier_reference(classifier, texts, window, stride, max_windows):
    """The logits of each text's windows, one list per text."""
    result = []
    for text in texts:
        ids = token_ids(classifier, text)
        result.append(window_logits(classifier, ids,
                                    reference_spans(len(ids), window, stride, max_windows)))
    return result


@pytest.fixture(scope="module")
def reference(classifier):
    return classifier_reference(classifier, TEXTS, 22, 7, 4)


def test_classifier_combines_window_logits_like_the_reference(classifier, reference):
    # The mean here; the export test checks "max" against the same reference.
    out = classifier.predict(TEXTS)
    expected = np.stack([np.mean(logits, axis=0) for logits in reference])
    np.testing.assert_allclose(out["logits"], expected, atol=2e-5)
    assert out["num_windows"].tolist() == [len(logits) for logits in reference] == [4, 1, 1, 4]
    # The long texts were read past the first window (all that truncation reads).
    assert np.abs(out["logits"][0] - reference[0][0]).max() > 1e-3


def test_windows_off_is_todays_classifier(classifier, reference):
    classifier.set_windows(None)
    try:
        assert classifier.windows is None and "windows" not in classifier.task_config()
        # An array of logits, as ever: the first max_seq_length tokens (the first window).
        out = classifier.predict(TEXTS, verbose=0)
        assert isinstance(out, np.ndarray) and out.shape == (4, 3)
        np.testing.assert_allclose(out, [logits[0] for logits in reference], atol=2e-5)
    finally:
        classifier.set_windows({"stride": 7, "max_windows": 4})


def tagger_reference(tagger, texts, window, stride, max_windows):
    """Per text: (windows, label ids, probabilities) of the tokens the windows read, each
    token's logits taken from its max-context window (run_squad.py's rule)."""
    result = []
    for text in texts:
        ids = token_ids(tagger, text)
        spans = reference_spans(len(ids), window, stride, max_windows)
        logits = window_logits(tagger, ids, spans)
        read = spans[-1][0] + spans[-1][1]  # Tokens after the last window are not listed.
        chosen = []
        for token in range(read):
            best = next(i for i in range(len(spans))
                        if spans[i][0] <= token < spans[i][0] + spans[i][1]
                        and reference_is_max_context(spans, i, token))
            chosen.append(logits[best][token - spans[best][0] + 1])
        probabilities = tf.nn.softmax(np.reshape(chosen, [read, len(logits[0][0])])).numpy()
        result.append((len(spans), probabilities.argmax(-1), probabilities.max(-1)))
    return result


def check_tagger(out, reference, texts):
    """Asserts that tag outputs `out` match `tagger_reference`'s."""
    for row, (text, (windows, label_id, probability)) in enumerate(zip(texts, reference)):
        read = len(label_id)
        assert out["mask"][row].sum() == read and out["num_windows"][row] == windows
        np.testing.assert_array_equal(out["label_id"][row, :read], label_id)
        np.testing.assert_allclose(out["probability"][row, :read], probability, atol=2e-6)
        # Offsets slice the original text, as without windows.
        tokens = [t.decode().removeprefix("##") for t in out["tokens"][row, :read]]
        assert [text[s:e] for s, e, t in zip(out["start"][row], out["end"][row], tokens)
                if t != "[UNK]"] == [t for t in tokens if t != "[UNK]"]


def test_tagger_takes_each_token_from_its_max_context_window(task_exports):
    tagger = BertTokenClassifier.from_pretrained(
        tagger_dir(task_exports), max_seq_length=10, windows={"stride": 3, "max_windows": 5})
    out = tagger.predict(TEXTS)
    check_tagger(out, tagger_reference(tagger, TEXTS, 8, 3, 5), TEXTS)
    # 5 windows of 8 tokens, 3 apart, read 20 tokens of the long texts (truncation: 8).
    assert out["mask"].sum(1).tolist() == [20, 0, 3, 20]
    assert len(token_ids(tagger, TEXTS[0])) > 20


def tagger_dir(task_exports):
    return os.path.join(os.path.dirname(task_exports["vocab_file"]), "tagger")


def test_bad_windows_name_the_value():
    assert check_windows({"stride": 4}) == {"stride": 4, "max_windows": 8, "combine": "mean"}
    with pytest.raises(ValueError, match=r"windows\['stride'\] to be an int >= 1.*'stride': 0"):
        check_windows({"stride": 0})
    with pytest.raises(ValueError, match=r"combine.*'median'"):
        check_windows({"stride": 4, "combine": "median"})
    with pytest.raises(ValueError, match=r"keys \['max_windows', 'stride'\].*combine"):
        check_windows({"stride": 4, "combine": "max"}, combine=False)


def test_finetune_flags_switch_windows_on():
    tool = tool_module("finetune")
    common = ["--model", "m", "--train", "t.csv", "--eval", "e.csv", "--output", "o"]
    args = tool.parse_args(common + ["--task", "classification", "--window-stride", "64",
                                     "--max-windows", "3", "--window-combine", "max"])
    options = registry.get_task("classification").make_options(**tool.task_option_values(args))
    assert windows_of(options) == {"stride": 64, "max_windows": 3, "combine": "max"}
    args = tool.parse_args(common + ["--task", "token_classification", "--window-stride", "32"])
    options = registry.get_task("token_classification").make_options(
        **tool.task_option_values(args))
    assert windows_of(options) == {"stride": 32, "max_windows": 8}
    args = tool.parse_args(common + ["--task", "classification"])
    assert windows_of(registry.get_task("classification").make_options(
        **tool.task_option_values(args))) is None
