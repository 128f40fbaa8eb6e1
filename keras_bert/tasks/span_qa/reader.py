"""SQuAD v1.1 / v2.0 extractive question answering: read, window, decode answers.

Reading (`read_squad`): every question is checked; problems are reported as
"FILE: question ID: ..." and counted in the `DataReport`:

- a question without id or text, or with an empty context: skipped
  ("malformed row"); a repeated id: skipped ("duplicate id");
- an answer whose `answer_start` does not point at its `text` in the context
  ("answer offset mismatch", counted with the repairs): for training the
  answer is unusable, and a question left without a usable answer is
  skipped ("no usable answer"); for evaluation only the answer texts matter
  (EM / F1 compare text), so the question is kept.

Features (`squad_features`), as google-research/bert's run_squad.py: each
question becomes `[CLS] question [SEP] window [SEP]` for windows of the
context that start every `doc_stride` tokens until the last one reaches the
end, so every context token is in at least one window. Tokenization runs
once, in the graph, with `BertTokenizer.tokenize_with_offsets`; each
context token keeps its character span in the original context, which is
how answers are labeled (tokens overlapping the answer's characters) and how
predicted spans are mapped back to text: `context[start_char:end_char]`, the
original characters, accents, case and inner whitespace included. Window
assembly is Python over token lists, once per dataset, not per step.

Decoding (`squad_predictions`): per window, the `n_best_size` best start and
end positions are paired; a pair counts when both are context tokens of the
window, start <= end, the span has at most `max_answer_length` tokens and
its start token has its maximum context in this window. The best pair over
the question's windows wins. SQuAD v2.0: the null score is the smallest
start_logits[CLS] + end_logits[CLS] over the windows; the prediction is ""
(no answer) when null score - best span score > `null_score_diff_threshold`.
"""

import dataclasses
import json

import numpy as np
import tensorflow as tf

from keras_bert.data.report import DataReport


@dataclasses.dataclass
class SquadQuestion:
    """One question.

    Attributes:
        qid: str, the question id.
        question: str.
        context: str, the paragraph.
        answer_spans: list of (start_char, end_char) of the answers whose
            offsets match their text (end exclusive).
        answer_texts: list of str, every gold answer text (for scoring).
        is_impossible: bool, SQuAD v2.0 unanswerable question.
        where: str, "FILE: question ID" for messages.
    """

    qid: str
    question: str
    context: str
    answer_spans: list
    answer_texts: list
    is_impossible: bool
    where: str


@dataclasses.dataclass
class SquadData:
    """The questions of a SQuAD file; `version_2_with_negative` when any is unanswerable."""

    questions: list
    version_2_with_negative: bool
    report: DataReport

    def __len__(self):
        return len(self.questions)

    def answers(self):
        """{question id: list of gold answer texts} for `squad_metrics`."""
        return {q.qid: list(q.answer_texts) for q in self.questions}


def read_squad(path, training, max_logged=20):
    """Reads a SQuAD v1.1 or v2.0 JSON file.

    Args:
        path: str, the file ({"version": ..., "data": [articles]}).
        training: bool. True: each question needs an answer whose offsets
            match (or is_impossible); False: answers are kept as texts.
        max_logged: int, problems logged one by one (all are counted).

    Returns:
        `SquadData`.

    Example:
    >>> data = read_squad("dev-v1.1.json", training=False)
    >>> data.questions[0].answer_texts
    ['Denver Broncos', 'Denver Broncos', 'Denver Broncos']
    """
    report = DataReport(path, max_logged=max_logged)
    with open(path, "rb") as f:
        raw = f.read()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        text = raw.decode("utf-8", errors="replace")
        report.repair(path, "invalid UTF-8", f"{e.reason} at byte {e.start}, replaced by U+FFFD")
    try:
        root = json.loads(text)
    except json.JSONDecodeError as e:
        raise ValueError(f"{path}:{e.lineno}: not valid JSON ({e.msg}); expected a SQuAD file.") from e
    if not isinstance(root, dict) or not isinstance(root.get("data"), list):
        raise ValueError(f"{path}: expected a SQuAD file, a JSON object with a 'data' list of articles.")
    questions, seen = [], set()
    version_2_with_negative = str(root.get("version", "")).startswith("v2")
    for where, qa, context in _question_entries(root, path):
        qid = qa.get("id")
        if not qid or not isinstance(qa.get("question"), str) or not qa["question"].strip():
            report.skip(where, "malformed row", "no id or no question text")
            continue
        if not isinstance(context, str) or not context.strip():
            report.skip(where, "malformed row", "empty context")
            continue
        if qid in seen:
            report.skip(where, "duplicate id")
            continue
        impossible = bool(qa.get("is_impossible", False))
        version_2_with_negative = version_2_with_negative or impossible
        spans, texts = _check_answers(qa.get("answers") or [], context, where, training, report)
        if training and not impossible and not spans:
            report.skip(where, "no usable answer")
            continue
        seen.add(qid)
        questions.append(SquadQuestion(qid, qa["question"], context, spans, texts, impossible, where))
        report.kept()
    return SquadData(questions, version_2_with_negative, report)


def _question_entries(root, path):
    """Yields (where, qa dict, context) for every question of a SQuAD tree."""
    for a, article in enumerate(root["data"]):
        paragraphs = article.get("paragraphs", []) if isinstance(article, dict) else []
        for p, paragraph in enumerate(paragraphs):
            if not isinstance(paragraph, dict):
                continue
            for k, qa in enumerate(paragraph.get("qas", [])):
                qa = qa if isinstance(qa, dict) else {}
                where = (f"{path}: question {qa['id']}" if qa.get("id")
                         else f"{path}: data[{a}].paragraphs[{p}].qas[{k}]")
                yield where, qa, paragraph.get("context")


def _check_answers(answers, context, where, training, report):
    """(spans whose offsets match their text, all answer texts); reports the rest.

    A bad answer is a problem of the answer, not of the question: it is
    counted under "repaired" (the question stays unless no answer is left
    for training).
    """
    spans, texts = [], []
    for i, answer in enumerate(answers):
        answer = answer if isinstance(answer, dict) else {}
        text, start = answer.get("text"), answer.get("answer_start")
        if not isinstance(text, str):
            report.repair(where, "answer without text", f"answer {i} dropped")
            continue
        texts.append(text)
        found = context[start:start + len(text)] if isinstance(start, int) and start >= 0 else None
        if text.strip() and found == text:
            spans.append((start, start + len(text)))
            continue
        detail = f"answer {i} {text!r} at answer_start={start!r}, but the context there reads {found!r}"
        if training:
            report.repair(where, "answer offset mismatch", detail + "; answer not used for training")
        else:
            report.repair(where, "answer offset mismatch", detail + "; kept for scoring by text")
    return spans, texts


@dataclasses.dataclass
class SquadFeatures:
    """Windows of the questions, one entry per window.

    Attributes:
        token_ids: list of lists of int, `[CLS] question [SEP] window [SEP]`.
        question_length: list of int, tokens of `[CLS] question [SEP]`.
        question_index: int32 array, the window's question in `SquadData`.
        start_positions, end_positions: int32 arrays, answer token positions
            (0 = [CLS] when the answer is not in the window or there is none).
        char_starts, char_ends: lists of int32 arrays [seq]: the character
            span of each context token in its context, -1 elsewhere.
        max_context: list of bool arrays [seq]: the token has its maximum
            context (most tokens on its shorter side) in this window.
    """

    token_ids: list
    question_length: list
    question_index: np.ndarray
    start_positions: np.ndarray
    end_positions: np.ndarray
    char_starts: list
    char_ends: list
    max_context: list

    def __len__(self):
        return len(self.token_ids)


def window_starts(num_tokens, window_length, doc_stride):
    """Start of each window: every `doc_stride` tokens until one reaches the end.

    Example:
    >>> window_starts(10, 4, 3)
    [0, 3, 6]
    """
    starts, start = [], 0
    while True:
        starts.append(start)
        if start + window_length >= num_tokens:
            return starts
        start += min(window_length, doc_stride)


def _tokenize(tokenizer, texts, with_offsets, batch_size=512):
    results = []
    for i in range(0, len(texts), batch_size):
        batch = tf.constant(texts[i:i + batch_size], tf.string)
        if with_offsets:
            ids, starts, ends = tokenizer.tokenize_with_offsets(batch, unit="UTF8_CHAR")
            results += zip(ids.to_list(), starts.to_list(), ends.to_list())
        else:
            results += tokenizer(batch).to_list()
    return results


def answer_token_span(char_starts, char_ends, answer_span):
    """(first, last) context token overlapping the answer's characters, or None."""
    overlap = np.flatnonzero((char_starts < answer_span[1]) & (char_ends > answer_span[0]))
    return (int(overlap[0]), int(overlap[-1])) if len(overlap) else None


def squad_features(data, tokenizer, max_seq_length=384, doc_stride=128, max_query_length=64,
                   training=False):
    """Cuts every question's context into windows and labels answer positions.

    Args:
        data: `SquadData`.
        tokenizer: `keras_bert.text.BertTokenizer`.
        max_seq_length: int, tokens per window, specials included.
        doc_stride: int, tokens between the starts of two windows.
        max_query_length: int, question tokens kept (the rest are cut).
        training: bool, label answer positions (first usable answer).

    Returns:
        `SquadFeatures`.
    """
    if max_seq_length < max_query_length + 4:
        raise ValueError(
            f"max_seq_length={max_seq_length} leaves no room for context after a question of "
            f"max_query_length={max_query_length} tokens and 3 special tokens."
        )
    contexts = sorted({q.context for q in data.questions})
    context_tokens = dict(zip(contexts, _tokenize(tokenizer, contexts, with_offsets=True)))
    question_tokens = _tokenize(tokenizer, [q.question for q in data.questions], with_offsets=False)
    cls_id, sep_id = tokenizer.cls_token_id, tokenizer.sep_token_id
    out = SquadFeatures([], [], [], [], [], [], [], [])
    for index, (question, query) in enumerate(zip(data.questions, question_tokens)):
        ids, starts, ends = context_tokens[question.context]
        starts, ends = np.asarray(starts, "int32"), np.asarray(ends, "int32")
        query = query[:max_query_length]
        window_length = max_seq_length - len(query) - 3
        offset = len(query) + 2  # [CLS] query [SEP]
        answer = None
        if training and not question.is_impossible:
            answer = answer_token_span(starts, ends, question.answer_spans[0])
            if answer is None:
                data.report.skip(question.where, "answer has no tokens",
                                 f"{question.answer_texts[0]!r} is only whitespace or deleted characters")
                data.report.num_kept -= 1
                continue
        window_list = window_starts(len(ids), window_length, doc_stride)
        for start in window_list:
            length = min(window_length, len(ids) - start)
            positions = np.arange(start, start + length)
            # A token's context in a window: tokens on its shorter side (+ a
            # tie-break on window length); it is scored in its best window.
            score = lambda s, n: np.minimum(positions - s, s + n - 1 - positions) + 0.01 * n  # noqa: E731
            best = score(start, length)
            for other in window_list:
                other_length = min(window_length, len(ids) - other)
                inside = (positions >= other) & (positions < other + other_length)
                best = np.where(inside, np.maximum(best, score(other, other_length)), best)
            is_max = score(start, length) >= best
            pad = np.full(offset, -1, "int32")
            out.token_ids.append([cls_id] + query + [sep_id] + ids[start:start + length] + [sep_id])
            out.question_length.append(offset)
            out.question_index.append(index)
            out.char_starts.append(np.concatenate([pad, starts[start:start + length], [-1]]))
            out.char_ends.append(np.concatenate([pad, ends[start:start + length], [-1]]))
            out.max_context.append(np.concatenate([np.zeros(offset, bool), is_max, [False]]))
            first = last = 0
            if answer is not None and answer[0] >= start and answer[1] < start + length:
                first, last = answer[0] - start + offset, answer[1] - start + offset
            out.start_positions.append(first)
            out.end_positions.append(last)
    for name in ("question_index", "start_positions", "end_positions"):
        setattr(out, name, np.asarray(getattr(out, name), dtype="int32"))
    return out


def squad_dataset(features):
    """`SquadFeatures` -> a dataset of unbatched `(encoder inputs, targets)`.

    targets: {"start_logits": int32, "end_logits": int32} answer positions
    (named after the `BertSpanLabeler` outputs they train). Batch it with
    `keras_bert.data.batching`.
    """
    lengths = [len(ids) for ids in features.token_ids]
    token_ids = tf.RaggedTensor.from_row_lengths(
        np.concatenate(features.token_ids).astype("int32"), lengths
    )
    segment_ids = tf.RaggedTensor.from_row_lengths(
        np.concatenate([
            np.r_[np.zeros(q, "int32"), np.ones(n - q, "int32")]
            for q, n in zip(features.question_length, lengths)
        ]),
        lengths,
    )
    targets = {"start_logits": features.start_positions, "end_logits": features.end_positions}
    dataset = tf.data.Dataset.from_tensor_slices((token_ids, segment_ids, targets))

    def to_features(ids, segments, target):
        return {"token_ids": ids, "segment_ids": segments, "padding_mask": tf.ones_like(ids)}, target

    return dataset.map(to_features).cache()


def squad_predictions(data, features, start_logits, end_logits, n_best_size=20,
                      max_answer_length=30, null_score_diff_threshold=0.0, version_2_with_negative=None):
    """Predicted answer text of every question.

    Args:
        data: `SquadData`.
        features: `SquadFeatures` of `data`.
        start_logits, end_logits: lists (one per window) of float arrays
            [seq] (padding beyond the window is ignored).
        n_best_size: int, start and end candidates per window.
        max_answer_length: int, longest answer in tokens.
        null_score_diff_threshold: float (v2.0), answer "" when the null
            score beats the best span by more than this.
        version_2_with_negative: bool or None (None: `data.version_2_with_negative`).

    Returns:
        A tuple `(predictions, null_odds)`: {question id: text} and
        {question id: null score - best span score} (v2.0 only, else empty).
    """
    version_2_with_negative = data.version_2_with_negative if version_2_with_negative is None else version_2_with_negative
    best = {}  # question index -> (score, text)
    null = {}  # question index -> smallest null score
    for f in range(len(features)):
        q = int(features.question_index[f])
        context = data.questions[q].context
        n = len(features.token_ids[f])
        start, end = np.asarray(start_logits[f][:n], "float64"), np.asarray(end_logits[f][:n], "float64")
        null[q] = min(null.get(q, np.inf), start[0] + end[0])
        char_starts, char_ends = features.char_starts[f], features.char_ends[f]
        top_starts = np.argsort(-start, kind="stable")[:n_best_size]
        top_ends = np.argsort(-end, kind="stable")[:n_best_size]
        s, e = top_starts[:, None], top_ends[None, :]  # (k, 1), (1, k)
        valid = (
            (char_starts[s] >= 0) & (char_ends[e] >= 0) & (e >= s)
            & (e - s + 1 <= max_answer_length) & features.max_context[f][s]
        )
        if not valid.any():
            continue
        scores = np.where(valid, start[s] + end[e], -np.inf)
        i, j = np.unravel_index(np.argmax(scores), scores.shape)
        if q not in best or scores[i, j] > best[q][0]:
            text = context[char_starts[top_starts[i]]:char_ends[top_ends[j]]]
            best[q] = (scores[i, j], text)
    predictions, null_odds = {}, {}
    for q, question in enumerate(data.questions):
        score, text = best.get(q, (-np.inf, ""))
        if version_2_with_negative and q in null:
            null_odds[question.qid] = float(null[q] - score) if np.isfinite(score) else float("inf")
            if null[q] - score > null_score_diff_threshold:
                text = ""
        predictions[question.qid] = text
    return predictions, null_odds
