"""Token classifier and span QA exports: offsets that slice the original text."""

import os
import unicodedata

import numpy as np
import pytest
import tensorflow as tf

from keras_bert.export import build_serving_module
from keras_bert.export.predict import load_export, run_signature
from keras_bert.text import BertTokenizer
from tests.conftest import clean_result
from tests.export.conftest import (
    CONTEXTS,
    QA_MAX_SEQ_LENGTH,
    QUESTIONS,
    TAG_TEXTS,
    TAGS,
    preprocessor,
)

pytestmark = pytest.mark.filterwarnings("ignore:Gradients do not exist")


def surface(text):
    """What an uncased WordPiece token of `text` looks like: lower-cased, no accents."""
    text = unicodedata.normalize("NFD", text.lower())
    return "".join(c for c in text if unicodedata.category(c) != "Mn")


CLEAN_CHECKS = """
tagger = tf.saved_model.load(ARGS["tagger"])
out = tagger.signatures["serving_default"](text=tf.constant(ARGS["texts"]))
result["tag"] = {k: jsonable(v) for k, v in out.items()}
empty = tagger.signatures["serving_default"](text=tf.constant([], tf.string))
result["tag_empty"] = {k: v.shape.as_list() for k, v in empty.items()}
qa = tf.saved_model.load(ARGS["qa"])
out = qa.signatures["serving_default"](question=tf.constant(ARGS["questions"]),
                                       context=tf.constant(ARGS["contexts"]))
result["qa"] = {k: jsonable(v) for k, v in out.items()}
session = session_signature(ARGS["qa"], "serving_default", question=ARGS["questions"],
                            context=ARGS["contexts"])
result["qa_session"] = {k: jsonable(v) for k, v in session.items()}
session = session_signature(ARGS["tagger"], "serving_default", text=ARGS["texts"])
result["tag_session"] = {k: jsonable(v) for k, v in session.items()}
windows = qa.signatures["preprocess"](question=tf.constant(ARGS["questions"]),
                                      context=tf.constant(ARGS["contexts"]))
result["windows"] = jsonable(windows["example"])
result["window_shape"] = windows["token_ids"].shape.as_list()
empty = qa.signatures["serving_default"](question=tf.constant([], tf.string),
                                         context=tf.constant([], tf.string))
result["qa_empty"] = {k: v.shape.as_list() for k, v in empty.items()}
"""


def clean_args(request):
    """ARGS of CLEAN_CHECKS, run in the session's clean process (tests/conftest.py)."""
    exports = request.getfixturevalue("task_exports")
    return dict(tagger=exports["tagger_export"], qa=exports["qa_export"],
                texts=TAG_TEXTS, questions=QUESTIONS, contexts=CONTEXTS,
                export_dirs=[exports["tagger_export"], exports["qa_export"]])


@pytest.fixture(scope="module")
def exports(task_exports):
    return task_exports


@pytest.fixture(scope="module")
def clean(clean_process):
    return clean_result(clean_process, "tasks")


def test_run_signature_in_length_sorted_batches_matches_one_call(exports):
    loaded = load_export(exports["tagger_export"])
    inputs = {"text": TAG_TEXTS + TAG_TEXTS[::-1] + ["one more text"]}
    whole = run_signature(loaded, inputs, batch_size=None)
    batched = run_signature(loaded, inputs, batch_size=3)
    assert sorted(batched) == sorted(whole)
    np.testing.assert_array_equal(batched["mask"], whole["mask"])
    real = whole["mask"].astype(bool)
    for name, value in whole.items():
        assert batched[name].shape == value.shape, name
        if value.dtype == object or value.dtype.kind in "iub":
            np.testing.assert_array_equal(batched[name][real], value[real], err_msg=name)
        else:
            np.testing.assert_allclose(batched[name][real], value[real], atol=1e-5,
                                       err_msg=name)
    # Padding added when merging batches is empty strings / zeros.
    assert set(batched["tokens"][~real].tolist()) <= {b""}


def test_token_labels_and_offsets(exports, clean):
    assert clean["python_modules"] == []
    assert list(clean["non_core_ops"].values()) == [["FastWordpieceTokenizeWithOffsets"]] * 2
    tag = clean["tag"]
    tokenizer = BertTokenizer(exports["vocab_file"])
    # No max_seq_length in task.json: the export reads max_position_embeddings (32).
    inputs = preprocessor(exports["vocab_file"], 32)(tf.constant(TAG_TEXTS))
    probabilities = tf.nn.softmax(exports["tagger"](inputs), -1).numpy()
    width = max(sum(row) for row in tag["mask"])
    assert width == 30  # The long text, truncated to 32 positions less [CLS] and [SEP].
    for i, text in enumerate(TAG_TEXTS):
        n = sum(tag["mask"][i])
        ids = tokenizer(tf.constant([text]))[0].numpy()[:30]
        assert n == len(ids)
        tokens = tag["tokens"][i][:n]
        assert tokens == [tokenizer.id_to_token(t) for t in ids]
        for j, token in enumerate(tokens):
            start, end = tag["start"][i][j], tag["end"][i][j]
            assert surface(text[start:end]) == token.removeprefix("##")
            assert tag["word_start"][i][j] == int(not token.startswith("##"))
        # Token j is at position j + 1 of the model's input.
        expected = probabilities[i, 1 : n + 1]
        assert tag["label_id"][i][:n] == expected.argmax(-1).tolist()
        assert tag["label"][i][:n] == [TAGS[k] for k in expected.argmax(-1)]
        np.testing.assert_allclose(tag["probability"][i][:n], expected.max(-1), atol=1e-5)
        assert tag["label_id"][i][n:] == [-1] * (width - n)
        assert tag["start"][i][n:] == [-1] * (width - n)
        assert tag["label"][i][n:] == [""] * (width - n)
    assert tag["tokens"][1][:4] == ["cafe", "naive", "cat", "##s"]
    # TF Serving's way of loading (a TF1 Session) gives the same outputs.
    assert clean["tag_session"]["label"] == tag["label"]
    np.testing.assert_allclose(clean["tag_session"]["probability"], tag["probability"],
                               atol=1e-6)
    assert clean["tag_empty"]["label"] == [0, 0]


def reference_answer(exports, question, context, max_seq_length=QA_MAX_SEQ_LENGTH, max_query_length=6,
                     doc_stride=4, max_answer_length=5, max_windows=16):
    """google-research/bert run_squad.py, one feature at a time, every (start, end) pair."""
    tokenizer = BertTokenizer(exports["vocab_file"])
    query = tokenizer(tf.constant([question]))[0].numpy().tolist()[:max_query_length]
    ids, starts, ends = (x[0].numpy().tolist() for x in tokenizer.tokenize_with_offsets(
        tf.constant([context]), unit="UTF8_CHAR"))
    max_tokens = max_seq_length - len(query) - 3
    spans, offset = [], 0
    while offset < len(ids):
        length = min(len(ids) - offset, max_tokens)
        spans.append((offset, length))
        if offset + length == len(ids):
            break
        offset += min(length, doc_stride)
    spans = spans[:max_windows]

    def is_max_context(span_index, position):
        best, best_index = None, None
        for index, (start, length) in enumerate(spans):
            if not start <= position < start + length:
                continue
            score = min(position - start, start + length - 1 - position) + 0.01 * length
            if best is None or score > best:
                best, best_index = score, index
        return best_index == span_index

    candidates = []
    for index, (start, length) in enumerate(spans):
        token_ids = [2] + query + [3] + ids[start:start + length] + [3]
        inputs = {"token_ids": tf.constant([token_ids]),
                  "segment_ids": tf.constant([[0] * (len(query) + 2) + [1] * (length + 1)]),
                  "padding_mask": tf.ones([1, len(token_ids)], tf.int32)}
        logits = exports["qa"](inputs)
        start_logits, end_logits = (logits[k][0].numpy() for k in ("start_logits", "end_logits"))
        first = len(query) + 2
        for s in range(first, first + length):
            if not is_max_context(index, start + s - first):
                continue
            for e in range(s, min(s + max_answer_length, first + length)):
                candidates.append((start_logits[s] + end_logits[e], start + s - first,
                                   start + e - first))
    score, first_token, last_token = max(candidates)
    return starts[first_token], ends[last_token], score


def test_span_qa_answers_like_run_squad(exports, clean):
    qa = clean["qa"]
    for i, (question, context) in enumerate(zip(QUESTIONS, CONTEXTS)):
        start, end = qa["start"][i], qa["end"][i]
        if not context:
            assert (qa["answer"][i], start, end) == ("", -1, -1)
            continue
        assert context[start:end] == qa["answer"][i]
        expected_start, expected_end, expected_score = reference_answer(exports, question, context)
        assert (start, end) == (expected_start, expected_end), (question, context)
        assert abs(qa["score"][i] - expected_score) < 1e-4
    assert qa["answer"][3] in ("Café", "!", "Café!")  # Original text, not the normalized one.
    # Windows: one for a short context, several for a long one, at most 16.
    counts = np.bincount(clean["windows"], minlength=len(CONTEXTS)).tolist()
    assert counts[0] == 1 and counts[2] == 1 and counts[3] == 1
    assert 1 < counts[1] < 16 and counts[4] == 16
    assert clean["window_shape"] == [sum(counts), QA_MAX_SEQ_LENGTH]
    assert clean["qa_session"]["answer"] == qa["answer"]
    np.testing.assert_allclose(clean["qa_session"]["score"], qa["score"], atol=1e-5)
    assert clean["qa_empty"] == {"answer": [0], "start": [0], "end": [0], "score": [0]}


def test_span_qa_no_answer_threshold(exports):
    # (The export above, version_2_with_negative=False, answers every non-empty context.)
    questions, contexts = tf.constant(QUESTIONS[:2]), tf.constant(CONTEXTS[:2])
    never = build_serving_module(exports["qa"], version_2_with_negative=True,
                                 null_score_diff_threshold=-1e9)
    unanswered = never.answer(questions, contexts)
    assert unanswered["answer"].numpy().tolist() == [b"", b""]
    assert unanswered["start"].numpy().tolist() == [-1, -1]
    # The score of "no answer" is the [CLS] span's: start_logit[0] + end_logit[0].
    inputs = preprocessor(exports["vocab_file"], QA_MAX_SEQ_LENGTH)((questions[:1], contexts[:1]))
    logits = exports["qa"](inputs)
    null = logits["start_logits"][0, 0] + logits["end_logits"][0, 0]
    np.testing.assert_allclose(unanswered["score"][0], null, atol=1e-5)


def _predict_tool():
    import importlib.util

    path = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__)))), "tools", "predict.py")
    spec = importlib.util.spec_from_file_location("predict_tool", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow
def test_predict_tool_takes_qa_contexts_with_context_not_text_b(exports, capsys, tmp_path):
    tool = _predict_tool()
    qa = os.path.dirname(exports["qa_export"])  # exports/qa: its latest version.
    assert tool.main(["--model", qa, QUESTIONS[0], "--context", CONTEXTS[0]]) == 0
    line = capsys.readouterr().out.strip()
    assert line.startswith(f"{QUESTIONS[0]} | {CONTEXTS[0]}\t")  # Then answer, offsets, score.
    assert tool.main(["--model", qa, QUESTIONS[0], "--text-b", CONTEXTS[0]]) == 1
    assert "give --context, not --text-b" in capsys.readouterr().err
    # Many questions from a file: in length-sorted batches, with progress on stderr.
    questions = tmp_path / "questions.txt"
    questions.write_text("".join(f"{q}\t{c}\n" for q, c in zip(QUESTIONS, CONTEXTS[:4] + ["x"])))
    assert tool.main(["--model", qa, "--input", str(questions), "--batch-size", "2"]) == 0
    captured = capsys.readouterr()
    assert len(captured.out.splitlines()) == len(QUESTIONS)
    assert "\x1b" not in captured.err  # Not a terminal: no bar, no colour codes.


def test_run_signature_reports_progress(exports):
    loaded = load_export(exports["tagger_export"])
    seen = []
    run_signature(loaded, {"text": TAG_TEXTS * 2}, batch_size=3, progress=seen.append)
    assert seen == [3, 6, 9, 10]
