"""SQuAD reading, doc_stride windows, answer mapping through character offsets, decoding."""

import numpy as np
import pytest

from keras_bert.tasks.span_qa import reader as squad
from keras_bert.text import BertPreprocessor, BertTokenizer
from keras_bert.tasks.span_qa.metrics import squad_metrics
from keras_bert.text.windows import window_layout
from tests.training.finetune_fixtures import make_vocab, squad_json, write_json


def preprocessor_of(tokenizer, max_seq_length):
    """A model's preprocessor of windows of `max_seq_length` tokens."""
    return BertPreprocessor(tokenizer, sequence_length=None, max_seq_length=max_seq_length)


@pytest.fixture(scope="module")
def tokenizer(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("vocab") / "vocab.txt")
    make_vocab(path)
    return BertTokenizer(path)


@pytest.fixture
def squad_file(tmp_path):
    return write_json(str(tmp_path / "squad.json"), squad_json(version_2_with_negative=True))


def test_reader_keeps_every_question_and_detects_v2(squad_file):
    data = squad.read_squad(squad_file, training=True)
    assert [q.qid for q in data.questions] == ["q1", "q2", "q3", "q4", "q5", "q7", "q6"]
    assert data.version_2_with_negative
    q2 = data.questions[1]
    assert q2.answer_texts == ["The Café  Résumé", "Café  Résumé"]
    assert q2.answer_spans == [(32, 48), (36, 48)]
    assert data.questions[5].is_impossible and data.questions[5].answer_spans == []


def test_answer_offset_mismatch_is_reported_by_question_id(tmp_path):
    value = squad_json()
    qas = value["data"][0]["paragraphs"][0]["qas"]
    qas[0]["answers"][0]["answer_start"] = 3          # "Paris" is at 0
    qas[1]["answers"][0]["answer_start"] = 99         # first answer broken, second fine
    qas.append({"id": "q1", "question": "again?", "answers": [{"text": "Paris", "answer_start": 0}]})
    qas.append({"question": "no id", "answers": []})
    path = write_json(str(tmp_path / "bad.json"), value)

    training = squad.read_squad(path, training=True)
    questions = {q.qid: q for q in training.questions}
    # The first q1 has no usable answer; the later q1 takes its place. q2 has a good answer left.
    assert questions["q1"].question == "again?"
    assert questions["q2"].answer_spans == [(36, 48)]
    messages = training.report.messages
    assert messages[0] == (
        f"{path}: question q1: answer offset mismatch: answer 0 'Paris' at "
        "answer_start=3, but the context there reads 'is is'; answer not used for training")
    assert f"{path}: question q1: skipped: no usable answer" in messages
    assert any(m.startswith(f"{path}: question q2: answer offset mismatch") for m in messages)
    assert dict(training.report.skipped) == {"no usable answer": 1, "malformed row": 1}
    assert training.report.repaired["answer offset mismatch"] == 2
    assert any(m.startswith(f"{path}: data[0].paragraphs[0].qas[4]: skipped: malformed row")
               for m in messages)

    evaluation = squad.read_squad(path, training=False)
    q1 = evaluation.questions[0]
    assert q1.qid == "q1" and q1.answer_texts == ["Paris"]  # Kept: scored by text.
    assert evaluation.report.repaired["answer offset mismatch"] == 2
    assert evaluation.report.skipped["duplicate id"] == 1


def test_window_starts_cover_everything():
    for num_tokens in range(1, 40):
        for window in (3, 5, 8):
            for stride in (1, 2, 4, 8):
                layout = window_layout([num_tokens], [window], stride)
                starts = layout["window_start"].numpy().tolist()
                covered = set()
                for start in starts:
                    covered.update(range(start, min(start + window, num_tokens)))
                assert covered == set(range(num_tokens))
                assert starts[-1] + window >= num_tokens
                assert all(b - a == min(window, stride) for a, b in zip(starts, starts[1:]))


def test_every_answer_round_trips_to_its_exact_text(squad_file, tokenizer):
    data = squad.read_squad(squad_file, training=False)
    count = 0
    for question in data.questions:
        ids, starts, ends = tokenizer.tokenize_with_offsets(question.context, unit="UTF8_CHAR")
        starts, ends = starts.numpy(), ends.numpy()
        for (begin, end), text in zip(question.answer_spans, question.answer_texts):
            first, last = squad.answer_token_span(starts, ends, (begin, end))
            assert question.context[starts[first]:ends[last]] == text
            count += 1
    assert count == 7


def test_windows_hold_the_answer_and_map_back(squad_file, tokenizer):
    data = squad.read_squad(squad_file, training=True)
    features = squad.squad_features(data, preprocessor_of(tokenizer, 32), doc_stride=8,
                                    max_query_length=8, training=True)
    long_q = [q.qid for q in data.questions].index("q6")
    windows = np.flatnonzero(features.question_index == long_q)
    assert len(windows) > 5  # The long context needs many 32-token windows.
    # Windows together cover every context token.
    context_tokens = len(tokenizer.tokenize_with_offsets(data.questions[long_q].context)[0])
    seen = set()
    for f in windows:
        starts = features.char_starts[f]
        seen.update(starts[starts >= 0].tolist())
        assert len(features.token_ids[f]) <= 32
    assert len(seen) == context_tokens
    # Each token is the max-context token of at least one window.
    for f in range(len(features)):
        assert features.max_context[f].sum() >= 1
    # A window with the answer labels it; mapping its positions back gives the text.
    for f in range(len(features)):
        question = data.questions[features.question_index[f]]
        first, last = features.start_positions[f], features.end_positions[f]
        if question.is_impossible:
            assert first == last == 0
            continue
        if first == 0:
            continue
        text = question.context[features.char_starts[f][first]:features.char_ends[f][last]]
        assert text == question.answer_texts[0]
    answered = {features.question_index[f] for f in range(len(features))
                if features.start_positions[f] > 0}
    assert answered == {i for i, q in enumerate(data.questions) if not q.is_impossible}


def _perfect_logits(data, features):
    """Logits that point at the first gold answer (or [CLS] for no answer)."""
    starts, ends = [], []
    for f in range(len(features)):
        n = len(features.token_ids[f])
        start, end = np.zeros(n), np.zeros(n)
        question = data.questions[features.question_index[f]]
        char_starts, char_ends = features.char_starts[f], features.char_ends[f]
        if question.answer_spans:
            begin, finish = question.answer_spans[0]
            inside = np.flatnonzero((char_starts >= 0) & (char_starts < finish) & (char_ends > begin))
            if len(inside):
                start[inside[0]] += 10
                end[inside[-1]] += 10
                start[0] = end[0] = -5
        else:
            start[0] = end[0] = 10
        starts.append(start)
        ends.append(end)
    return starts, ends


def test_decoding_perfect_logits_scores_one(squad_file, tokenizer):
    data = squad.read_squad(squad_file, training=False)
    features = squad.squad_features(data, preprocessor_of(tokenizer, 32), doc_stride=8,
                                    max_query_length=8)
    starts, ends = _perfect_logits(data, features)
    predictions, null_odds = squad.squad_predictions(data, features, starts, ends)
    assert predictions["q2"] == "The Café  Résumé"
    assert predictions["q5"] == "(New York?)"
    assert predictions["q7"] == ""
    assert null_odds["q7"] > 0 > null_odds["q1"]
    result = squad_metrics(predictions, data.answers())
    assert result["exact"] == 1.0 and result["f1"] == 1.0


def test_decoding_rules(tokenizer, tmp_path):
    value = {"version": "1.1", "data": [{"paragraphs": [{
        "context": "john smith lives in paris",
        "qas": [{"id": "a", "question": "who?", "answers": [{"text": "john", "answer_start": 0}]}]}]}]}
    data = squad.read_squad(write_json(str(tmp_path / "s.json"), value), training=False)
    features = squad.squad_features(data, preprocessor_of(tokenizer, 16), doc_stride=4,
                                    max_query_length=4)
    # [CLS] who ? [SEP] john smith lives in paris [SEP]
    assert len(features) == 1 and features.token_ids[0][4] == tokenizer.token_to_id("john")
    start, end = np.zeros(10), np.zeros(10)
    start[1], end[1] = 20, 20        # in the question: not allowed
    start[4], end[8] = 5, 5          # john .. paris: 5 tokens
    start[6], end[7] = 4, 4          # lives in: 2 tokens
    predict = lambda **kw: squad.squad_predictions(data, features, [start], [end], **kw)[0]["a"]  # noqa: E731
    assert predict() == "john smith lives in paris"
    assert predict(max_answer_length=3) == "lives in paris"  # 4 + 5 beats 4 + 4.
    assert predict(max_answer_length=2) == "lives in"
    start[0] = end[0] = 5.5          # null score 11 vs best span 10
    assert predict(version_2_with_negative=True) == ""
    assert predict(version_2_with_negative=True, null_score_diff_threshold=2.0) == "john smith lives in paris"


def test_question_too_long_for_the_window_is_an_error(squad_file, tokenizer):
    data = squad.read_squad(squad_file, training=False)
    with pytest.raises(ValueError, match="max_seq_length=16 leaves no room"):
        squad.squad_features(data, preprocessor_of(tokenizer, 16), max_query_length=64)


def test_squad_dataset_targets(squad_file, tokenizer):
    data = squad.read_squad(squad_file, training=True)
    features = squad.squad_features(data, preprocessor_of(tokenizer, 64), doc_stride=16,
                                    max_query_length=16, training=True)
    x, y = next(iter(squad.squad_dataset(features).as_numpy_iterator()))
    n = len(features.token_ids[0])
    assert x["token_ids"].tolist() == features.token_ids[0]
    assert x["segment_ids"].tolist() == [0] * features.question_length[0] + [1] * (
        n - features.question_length[0])
    assert y["start_logits"] == features.start_positions[0]
