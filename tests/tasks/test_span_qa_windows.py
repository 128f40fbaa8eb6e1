"""SQuAD windows and span selection against google-research/bert run_squad.py,
and the fine-tuning reader and the serving graph agreeing window for window."""

import random

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_bert.models import BertEncoder
from keras_bert.tasks import BertSpanLabeler
from keras_bert.tasks.span_qa import reader as squad
from keras_bert.tasks.span_qa import windows
from keras_bert.tasks.span_qa.serving import SpanQAServingModule
from keras_bert.text import BertPacker, BertPreprocessor, BertTokenizer
from keras_bert.text.windows import window_layout
from tests.conftest import tiny_config
from tests.training.finetune_fixtures import make_vocab, squad_json, write_json

CLS, SEP = 2, 3


# --- run_squad.py, transcribed (one example at a time, Python floats) --------


def reference_doc_spans(num_tokens, max_tokens_for_doc, doc_stride):
    spans, start_offset = [], 0
    while start_offset < num_tokens:
        length = min(num_tokens - start_offset, max_tokens_for_doc)
        spans.append((start_offset, length))
        if start_offset + length == num_tokens:
            break
        start_offset += min(length, doc_stride)
    return spans


def reference_is_max_context(doc_spans, cur_span_index, position):
    best_score, best_span_index = None, None
    for span_index, (start, length) in enumerate(doc_spans):
        end = start + length - 1
        if position < start or position > end:
            continue
        score = min(position - start, end - position) + 0.01 * length
        if best_score is None or score > best_score:
            best_score, best_span_index = score, span_index
    return cur_span_index == best_span_index


def reference_best_indexes(logits, n_best_size):
    ranked = sorted(enumerate(logits), key=lambda x: x[1], reverse=True)
    return [index for index, _ in ranked[:n_best_size]]


def reference_decode(windows_of_question, n_best_size, max_answer_length):
    """run_squad.py write_predictions for one question.

    Args:
        windows_of_question: list of (feature index, start_logits, end_logits,
            is_context bool list, is_max_context bool list).

    Returns:
        (best (feature, start, end) or None, its score, null score).
    """
    prelim, score_null = [], 1e6
    for f, start_logits, end_logits, is_context, is_max in windows_of_question:
        score_null = min(score_null, float(start_logits[0]) + float(end_logits[0]))
        for s in reference_best_indexes(start_logits, n_best_size):
            for e in reference_best_indexes(end_logits, n_best_size):
                if not (is_context[s] and is_context[e] and is_max[s]):
                    continue
                if e < s or e - s + 1 > max_answer_length:
                    continue
                prelim.append((float(start_logits[s]) + float(end_logits[e]), f, s, e))
    prelim = sorted(prelim, key=lambda x: x[0], reverse=True)  # Stable.
    if not prelim:
        return None, None, score_null
    return prelim[0][1:], prelim[0][0], score_null


# --- Windows -----------------------------------------------------------------


def test_windows_and_max_context_follow_run_squad():
    rng = random.Random(0)
    questions, contexts, settings = [], [], []
    max_seq_length, doc_stride = 24, 5
    for i in range(60):
        questions.append([100 + j for j in range(rng.randint(0, 8))])
        contexts.append([1000 * i + j for j in range(rng.randint(1, 70))])
    packer = BertPacker(CLS, SEP, sequence_length=None, max_seq_length=max_seq_length)
    out = windows.squad_windows(tf.ragged.constant(questions, tf.int32),
                                tf.ragged.constant(contexts, tf.int32), packer,
                                max_seq_length, doc_stride)
    out = {k: v.numpy() for k, v in out.items()}
    flat_context = [t for c in contexts for t in c]
    f = 0
    ties = 0
    for i, (question, context) in enumerate(zip(questions, contexts)):
        spans = reference_doc_spans(len(context), max_seq_length - len(question) - 3, doc_stride)
        settings.append(len(spans))
        for span_index, (start, length) in enumerate(spans):
            assert out["example"][f] == i
            assert (out["window_start"][f], out["window_length"][f]) == (start, length)
            tokens = [CLS] + question + [SEP] + context[start:start + length] + [SEP]
            n = out["padding_mask"][f].sum()
            assert out["token_ids"][f, :n].tolist() == tokens
            assert out["segment_ids"][f, :n].tolist() == [0] * (len(question) + 2) + [1] * (
                length + 1)
            offset = len(question) + 2
            assert out["context_offset"][f] == offset
            token = out["context_token"][f]
            assert [flat_context[t] for t in token[offset:offset + length]] == context[
                start:start + length]
            assert (np.delete(token, np.s_[offset:offset + length]) == -1).all()
            expected = [reference_is_max_context(spans, span_index, start + j)
                        for j in range(length)]
            assert out["max_context"][f, offset:offset + length].tolist() == expected
            assert out["max_context"][f].sum() == sum(expected)
            # Tokens whose score ties in two windows (the first one wins).
            for j in range(length):
                scores = [min(start + j - s, s + n_ - 1 - start - j) + 0.01 * n_
                          for s, n_ in spans if s <= start + j < s + n_]
                ties += scores.count(max(scores)) > 1
            f += 1
    assert f == len(out["example"])
    assert max(settings) > 5 and ties > 0  # Long contexts, and ties, were tested.


def test_window_layout_limits_windows_and_handles_empty_contexts():
    layout = window_layout(tf.constant([0, 3, 100]), tf.constant([4, 4, 4]), 2,
                           max_windows=5)
    assert layout["example"].numpy().tolist() == [0, 1, 2, 2, 2, 2, 2]
    assert layout["window_start"].numpy().tolist() == [0, 0, 0, 2, 4, 6, 8]
    assert layout["window_length"].numpy().tolist() == [0, 3, 4, 4, 4, 4, 4]


# --- Span selection ----------------------------------------------------------


@pytest.mark.parametrize("n_best_size, max_answer_length", [(20, 30), (3, 4), (1, 2)])
def test_span_selection_follows_run_squad(n_best_size, max_answer_length):
    rng = np.random.default_rng(n_best_size)
    num_examples, seq = 40, 16
    example = np.sort(rng.integers(0, num_examples, 120)).astype("int32")
    example[:num_examples] = np.arange(num_examples)  # Every example has a window.
    example.sort()
    num_features = len(example)
    # Small integers: many equal logits, so tie-breaking is tested too.
    start = rng.integers(-3, 4, (num_features, seq)).astype("float32")
    end = rng.integers(-3, 4, (num_features, seq)).astype("float32")
    lengths = rng.integers(4, seq + 1, num_features)
    padding = np.arange(seq)[None] < lengths[:, None]
    offset = rng.integers(2, 4, num_features)
    context = (np.arange(seq)[None] >= offset[:, None]) & (np.arange(seq)[None] < lengths[:, None] - 1)
    max_context = context & (rng.random((num_features, seq)) < 0.7)

    score, span_start, span_end = windows.best_spans(
        start, end, padding, max_context, context, max_answer_length, n_best_size)
    best = windows.select_answers(score, windows.null_scores(start, end), example,
                                  num_examples)
    best = {k: v.numpy() for k, v in best.items()}
    for q in range(num_examples):
        features = [(f, start[f, :lengths[f]], end[f, :lengths[f]], context[f], max_context[f])
                    for f in np.flatnonzero(example == q)]
        want, want_score, want_null = reference_decode(features, n_best_size, max_answer_length)
        assert best["null_score"][q] == want_null
        if want is None:
            assert not best["answerable"][q]
            continue
        assert best["answerable"][q]
        f = best["window"][q]
        assert (f, span_start.numpy()[f], span_end.numpy()[f]) == want
        assert best["score"][q] == want_score


def test_no_answer_rule_of_squad_2():
    score = tf.constant([4.0, 6.0, windows.NO_SPAN], tf.float64)
    null = tf.constant([8.0, 7.5, 1.0], tf.float64)
    example = tf.constant([0, 0, 1])
    for threshold, answerable in ((0.0, [False, False]), (1.5, [True, False])):
        best = windows.select_answers(score, null, example, 2, True, threshold)
        assert best["answerable"].numpy().tolist() == answerable
        assert best["window"].numpy().tolist()[0] == 1
        assert best["null_score"].numpy().tolist() == [7.5, 1.0]
    assert windows.select_answers(score, null, example, 2)["answerable"].numpy().tolist() == [
        True, False]


# --- Fine-tuning features == serving windows ---------------------------------


@pytest.fixture(scope="module")
def qa(tmp_path_factory):
    root = tmp_path_factory.mktemp("qa")
    vocab_file = str(root / "vocab.txt")
    tokens = make_vocab(vocab_file)
    keras.utils.set_random_seed(0)
    encoder = BertEncoder(**tiny_config(vocab_size=len(tokens), num_layers=1,
                                        max_position_embeddings=64).to_dict())
    data = squad.read_squad(write_json(str(root / "squad.json"),
                                       squad_json(version_2_with_negative=True)), training=False)
    return BertSpanLabeler(encoder), BertTokenizer(vocab_file), data


@pytest.mark.parametrize("max_seq_length, doc_stride, max_query_length",
                         [(32, 8, 8), (24, 5, 12), (64, 16, 4)])
def test_reader_features_are_the_serving_windows(qa, max_seq_length, doc_stride,
                                                 max_query_length):
    model, tokenizer, data = qa
    preprocessor = BertPreprocessor(tokenizer, sequence_length=None,
                                    max_seq_length=max_seq_length)
    features = squad.squad_features(data, preprocessor, doc_stride, max_query_length)
    module = SpanQAServingModule(model, preprocessor, max_query_length=max_query_length,
                                 doc_stride=doc_stride, max_windows=1000)
    questions = tf.constant([q.question for q in data.questions])
    contexts = tf.constant([q.context for q in data.questions])
    served = {k: v.numpy() for k, v in module.preprocess(questions, contexts).items()}
    assert served["example"].tolist() == features.question_index.tolist()
    assert len(features) > len(data.questions)  # Some contexts need several windows.
    for f in range(len(features)):
        n = served["padding_mask"][f].sum()
        assert served["token_ids"][f, :n].tolist() == features.token_ids[f]
        assert served["segment_ids"][f, :n].tolist() == features.segment_ids[f].tolist()

    # The same logits give the same answers: the serving graph's and the reader's decoding.
    answers = module.answer(questions, contexts)
    logits = model({k: served[k] for k in ("token_ids", "segment_ids", "padding_mask")})
    lengths = [len(ids) for ids in features.token_ids]
    predictions, _ = squad.squad_predictions(
        data, features, [x[:n] for x, n in zip(np.asarray(logits["start_logits"]), lengths)],
        [x[:n] for x, n in zip(np.asarray(logits["end_logits"]), lengths)], max_answer_length=30,
        version_2_with_negative=False)
    assert [a.decode("utf-8") for a in answers["answer"].numpy().tolist()] == [
        predictions[q.qid] for q in data.questions]
