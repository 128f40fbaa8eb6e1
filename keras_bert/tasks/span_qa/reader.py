"""SQuAD v1.1 / v2.0 extractive question answering: read, window, decode answers.

Reading (`read_squad`): every question is checked; problems are reported as
"FILE: question ID: ..." and counted in the `DataReport`:

- an `is_impossible` that is not a JSON boolean ("false", 0): an error
  (a string would read as true and switch the set to SQuAD 2.0);
- a question without id or text, or with an empty context: skipped
  ("malformed row"); a repeated id: skipped ("duplicate id");
- an answer whose `answer_start` does not point at its `text` in the context
  ("answer offset mismatch", counted with the repairs): for training the
  answer is unusable, and a question left without a usable answer is
  skipped ("no usable answer"); for evaluation only the answer texts matter
  (EM / F1 compare text), so the question is kept.

Features (`squad_features`) and decoding (`squad_predictions`) follow
google-research/bert's run_squad.py through `windows.py`'s functions, the
ones the serving graph runs. Each context token keeps its character span in
the original context: answers are labeled by the tokens overlapping their
characters, and a predicted span reads back as `context[start_char:end_char]`,
the original characters.
"""

import dataclasses
import json

import numpy as np
import tensorflow as tf
from keras.utils import pad_sequences

from keras_bert.data.report import DataReport
from keras_bert.tasks.span_qa import windows as windows_lib
from keras_bert.text import text_files


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
    raw = text_files.read_text_file(path, "SQuAD file")
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
        impossible = qa.get("is_impossible", False)
        if not isinstance(impossible, bool):
            raise ValueError(
                f"{where}: is_impossible is {impossible!r} ({type(impossible).__name__}); "
                f"expected JSON true or false. Fix the file (e.g. \"is_impossible\": false)."
            )
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
    """(spans whose offsets match their text, all answer texts); reports the rest."""
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
        use = "answer not used for training" if training else "kept for scoring by text"
        report.repair(where, "answer offset mismatch", f"{detail}; {use}")
    return spans, texts


def squad_data(questions, contexts, answers):
    """Questions held in memory -> `SquadData` for training, checked as `read_squad` checks a file.

    `BertSpanLabeler.fit((questions, contexts), answers)` reads its answers
    through this; an answer whose offsets do not match its text is an
    error here (a file's is skipped and counted).

    Args:
        questions, contexts: lists of str.
        answers: list (one per question) of lists of {"text", "answer_start"};
            an empty list marks a question without answer (SQuAD v2.0).

    Returns:
        `SquadData`; raises ValueError naming the first answer whose
        offsets do not point at its text.
    """
    report = DataReport("answers", max_logged=0)
    result = SquadData([], False, report)
    for i, (question, context, rows) in enumerate(zip(questions, contexts, answers)):
        where = f"answers[{i}]"
        spans, texts = _check_answers(rows, context, where, True, report)
        impossible = not rows
        if not impossible and not spans:
            raise ValueError(
                f"{report.messages[-1]}. Fix answer_start (a character offset into "
                f"contexts[{i}]) or the answer text.")
        result.version_2_with_negative |= impossible
        result.questions.append(SquadQuestion(
            str(i), question, context, spans, texts, impossible, where))
        report.kept()
    return result


@dataclasses.dataclass
class SquadFeatures:
    """Windows of the questions, one entry per window.

    Attributes:
        token_ids: list of lists of int, `[CLS] question [SEP] window [SEP]`.
        segment_ids: list of int32 arrays [seq], 0 for `[CLS] question
            [SEP]`, 1 for `window [SEP]`.
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
    segment_ids: list
    question_length: list
    question_index: np.ndarray
    start_positions: np.ndarray
    end_positions: np.ndarray
    char_starts: list
    char_ends: list
    max_context: list

    def __len__(self):
        return len(self.token_ids)


def _tokenize(tokenizer, texts, with_offsets, batch_size=512):
    """int32 RaggedTensors [len(texts), (tokens)]: ids (and char starts, ends)."""
    parts = []
    for i in range(0, len(texts), batch_size):
        batch = tf.constant(texts[i:i + batch_size], tf.string)
        if with_offsets:
            parts.append(tokenizer.tokenize_with_offsets(batch, unit="UTF8_CHAR"))
        else:
            parts.append((tokenizer(batch),))
    if not parts:
        empty = tf.RaggedTensor.from_row_splits(tf.zeros([0], tf.int32), tf.zeros([1], tf.int64))
        return (empty,) * (3 if with_offsets else 1)
    return tuple(tf.concat(list(column), axis=0).with_row_splits_dtype(tf.int64)
                 for column in zip(*parts))


def answer_token_span(char_starts, char_ends, answer_span):
    """(first, last) context token overlapping the answer's characters, or None."""
    overlap = np.flatnonzero((char_starts < answer_span[1]) & (char_ends > answer_span[0]))
    return (int(overlap[0]), int(overlap[-1])) if len(overlap) else None


def _windows(packer, doc_stride, question_ids, context_ids, starts, ends):
    """`windows.squad_windows`, with the character span of each position's token.

    Run eagerly: one call windows a batch of questions, and tracing a
    tf.function would cost more than a dataset's few calls.
    """
    out = windows_lib.squad_windows(
        question_ids, context_ids, packer, packer.truncation_length, doc_stride,
        pair_separator=packer.pair_separator)
    token = out["context_token"]
    for name, offsets in (("char_starts", starts), ("char_ends", ends)):
        table = tf.concat([offsets.flat_values, [-1]], 0)  # -1: not a context token.
        out[name] = tf.gather(table, tf.where(token >= 0, token, tf.size(offsets.flat_values)))
    return {k: v.numpy() for k, v in out.items()}


def squad_features(data, preprocessor, doc_stride=128, max_query_length=64, training=False):
    """Cuts every question's context into windows and labels answer positions.

    Each window is `[CLS] question [SEP] window [SEP]`; windows start every
    `doc_stride` tokens until one reaches the end (`windows.squad_windows`).

    Args:
        data: `SquadData`.
        preprocessor: the model's `keras_bert.text.BertPreprocessor`; a
            window is its `truncation_length` tokens, specials included.
        doc_stride: int, tokens between the starts of two windows.
        max_query_length: int, question tokens kept (the rest are cut).
        training: bool, label answer positions (first usable answer).

    Returns:
        `SquadFeatures`.
    """
    tokenizer, packer = preprocessor.tokenizer, preprocessor.packer
    windows_lib.check_query_length(packer.truncation_length, max_query_length,
                                   packer.pair_separator)
    contexts = sorted({q.context for q in data.questions})
    context_row = {context: row for row, context in enumerate(contexts)}
    context_ids, context_starts, context_ends = _tokenize(tokenizer, contexts, with_offsets=True)
    (question_ids,) = _tokenize(tokenizer, [q.question for q in data.questions], with_offsets=False)
    question_ids = question_ids[:, :max_query_length]
    flat_starts, flat_ends = context_starts.flat_values.numpy(), context_ends.flat_values.numpy()
    splits = context_starts.row_splits.numpy()

    # Answer tokens, numbered within the context; questions without any are skipped.
    keep, answers = [], []
    for index, question in enumerate(data.questions):
        answer = (-1, -1)
        if training and not question.is_impossible:
            row = context_row[question.context]
            span = slice(splits[row], splits[row + 1])
            answer = answer_token_span(flat_starts[span], flat_ends[span], question.answer_spans[0])
            if answer is None:
                data.report.skip(question.where, "answer has no tokens",
                                 f"{question.answer_texts[0]!r} is only whitespace or deleted characters")
                data.report.num_kept -= 1
                continue
        keep.append(index)
        answers.append(answer)

    out = SquadFeatures([], [], [], [], [], [], [], [], [])
    batch_size = 1024  # Questions windowed per call.
    for begin in range(0, len(keep), batch_size):
        indices = keep[begin:begin + batch_size]
        rows = [context_row[data.questions[i].context] for i in indices]
        w = _windows(packer, doc_stride, tf.gather(question_ids, indices),
                     tf.gather(context_ids, rows), tf.gather(context_starts, rows),
                     tf.gather(context_ends, rows))
        lengths = w["padding_mask"].sum(axis=1)
        example, offset = w["example"], w["context_offset"]
        # The answer's positions in the windows that hold all of it.
        first, last = np.asarray(answers[begin:begin + batch_size], "int32")[example].T
        inside = ((first >= w["window_start"])
                  & (last < w["window_start"] + w["window_length"]))
        out.start_positions.append(np.where(inside, first - w["window_start"] + offset, 0))
        out.end_positions.append(np.where(inside, last - w["window_start"] + offset, 0))
        out.question_index.append(np.asarray(indices, "int32")[example])
        for f, n in enumerate(lengths):
            out.token_ids.append(w["token_ids"][f, :n].tolist())
            out.segment_ids.append(w["segment_ids"][f, :n])
            out.question_length.append(int(offset[f]))
            out.char_starts.append(w["char_starts"][f, :n])
            out.char_ends.append(w["char_ends"][f, :n])
            out.max_context.append(w["max_context"][f, :n])
    for name in ("question_index", "start_positions", "end_positions"):
        parts = getattr(out, name)
        setattr(out, name, np.concatenate(parts).astype("int32") if parts else np.zeros(0, "int32"))
    return out


def squad_dataset(features):
    """`SquadFeatures` -> a dataset of unbatched `(encoder inputs, targets)`.

    targets: {"start_logits": int32, "end_logits": int32} answer positions
    (named after the `BertSpanLabeler` outputs they train). Batch it with
    `keras_bert.data.batching`.
    """
    lengths = [len(ids) for ids in features.token_ids]

    def ragged(rows):
        flat = np.concatenate(rows).astype("int32") if rows else np.zeros(0, "int32")
        return tf.RaggedTensor.from_row_lengths(flat, lengths)

    targets = {"start_logits": features.start_positions, "end_logits": features.end_positions}
    dataset = tf.data.Dataset.from_tensor_slices(
        (ragged(features.token_ids), ragged(features.segment_ids), targets))

    def to_features(ids, segments, target):
        return {"token_ids": ids, "segment_ids": segments, "padding_mask": tf.ones_like(ids)}, target

    return dataset.map(to_features).cache()


def squad_predictions(data, features, start_logits, end_logits, n_best_size=20,
                      max_answer_length=30, null_score_diff_threshold=0.0, version_2_with_negative=None):
    """Predicted answer text of every question (`windows.best_spans`, `select_answers`).

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
    if version_2_with_negative is None:
        version_2_with_negative = data.version_2_with_negative
    lengths = [len(ids) for ids in features.token_ids]
    width = max(lengths, default=1)
    dtype = np.result_type(*(np.asarray(x).dtype for x in start_logits[:1]), np.float32)
    def padded(rows, value, dtype):
        return pad_sequences(rows, width, dtype, "post", "post", value)

    start, end = padded(start_logits, 0, dtype), padded(end_logits, 0, dtype)
    padding_mask = np.arange(width)[None, :] < np.asarray(lengths, "int32")[:, None]
    context = padded(features.char_starts, -1, "int32") >= 0
    max_context = padded(features.max_context, False, bool)
    span_score, span_start, span_end = windows_lib.best_spans(
        start, end, padding_mask, max_context, context, max_answer_length, n_best_size)
    best = windows_lib.select_answers(
        span_score, windows_lib.null_scores(start, end), features.question_index,
        len(data.questions), version_2_with_negative, null_score_diff_threshold)
    best = {k: v.numpy() for k, v in best.items()}
    span_start, span_end = span_start.numpy(), span_end.numpy()
    has_window = np.bincount(features.question_index, minlength=len(data.questions)) > 0

    predictions, null_odds = {}, {}
    for q, question in enumerate(data.questions):
        text = ""
        if best["answerable"][q]:
            f = best["window"][q]
            text = question.context[features.char_starts[f][span_start[f]]:
                                    features.char_ends[f][span_end[f]]]
        if version_2_with_negative and has_window[q]:
            score = best["score"][q]
            null_odds[question.qid] = (float(best["null_score"][q] - score)
                                       if score > windows_lib.NO_SPAN / 2 else float("inf"))
        predictions[question.qid] = text
    return predictions, null_odds
