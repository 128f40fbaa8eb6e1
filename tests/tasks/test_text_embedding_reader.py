"""Pair files of tools/finetune.py --task text_embedding: rows kept and skipped at FILE:LINE,
the column errors, scores, hard negatives, and how duplicate texts are handled by the ranking
loss (with hard negatives) and the held-out metrics."""

import json
import logging

import numpy as np
import pytest
import tensorflow as tf

from keras_bert.tasks.text_embedding import reader
from keras_bert.tasks.text_embedding.losses import MultipleNegativesRankingLoss
from keras_bert.tasks.text_embedding.metrics import pair_metrics, retrieval_metrics
from keras_bert.tasks.text_embedding.options import TextEmbeddingOptions
from keras_bert.training.finetune import read_task_data


def write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return str(path)


def unit(x):
    return x / np.linalg.norm(x, axis=-1, keepdims=True)


def test_pairs_with_negatives_keep_good_rows_and_report_bad_ones(tmp_path, caplog):
    path = write(tmp_path, "pairs.csv", (
        "anchor,positive,negative\n"
        "who lives in paris,john lives in paris,the film was bad\n"
        ",an empty anchor,x\n"                 # Line 3: empty text.
        "a good movie,  ,x\n"                  # Line 4: a blank positive.
        "a bad film,the movie was awful,\n"    # Line 5: an empty hard negative.
        "too,many,columns,here\n"              # Line 6: malformed.
        '"i love paris, really",paris i love,i hate paris\n'
    ))
    with caplog.at_level(logging.WARNING, logger="keras_bert.data"):
        pairs = reader.read_pair_file(path, negative_columns=["negative"])
    assert pairs.anchors == ["who lives in paris", "i love paris, really"]
    assert pairs.positives == ["john lives in paris", "paris i love"]
    assert pairs.negatives == [["the film was bad"], ["i hate paris"]]
    assert pairs.scores is None
    assert pairs.where == [f"{path}:2", f"{path}:7"]
    # No row lost silently: every skip is counted by reason, and logged at its line.
    assert pairs.report.summary() == (
        f"{path}: kept 2 of 6 rows; skipped 4 (empty text: 3, malformed row: 1)")
    logged = caplog.text
    for line, what in ((3, "'anchor'"), (4, "'positive'"), (5, "'negative'"), (6, "columns")):
        assert f"{path}:{line}: skipped" in logged and what in logged


def test_one_column_only_is_an_error_that_says_pairs(tmp_path):
    for name, text in (("texts.csv", "text\nhello there\n"),
                       ("texts.jsonl", '{"text": "hello there"}\n')):
        path = write(tmp_path, name, text)
        with pytest.raises(ValueError, match=r"one column \('text'\).*pairs.*--anchor-column"):
            reader.read_pair_file(path)


def test_a_missing_column_names_it_the_columns_there_and_the_flags(tmp_path):
    path = write(tmp_path, "pairs.tsv", "query\tpositive\tnote\nq\tp\tn\n")
    with pytest.raises(ValueError, match=rf"{path}:1: no column 'anchor'; the data has "
                                         r"\['query', 'positive', 'note'\].*--anchor-column"):
        reader.read_pair_file(path)
    # The fix the message names works.
    pairs = read_task_data("text_embedding", path, True, TextEmbeddingOptions(
        anchor_column="query"))
    assert (pairs.anchors, pairs.positives) == (["q"], ["p"])
    path = write(tmp_path, "scored.jsonl", '{"anchor": "a", "positive": "b"}\n')
    with pytest.raises(ValueError, match=r"no column 'score'"):
        reader.read_pair_file(path, score_column="score")


def test_scored_pairs_are_scaled_and_bad_scores_skipped(tmp_path):
    rows = [{"text_a": "a cat", "text_b": "a kitten", "score": 4.5},
            {"text_a": "a dog", "text_b": "stocks fell", "score": "0.5"},
            {"text_a": "x", "text_b": "y", "score": "high"},      # Line 3: not a number.
            {"text_a": "x", "text_b": "y", "score": float("nan")},  # Line 4.
            {"text_a": "x", "text_b": "y"},                       # Line 5: no score.
            {"text_a": "x"}]                                      # Line 6: no text_b.
    path = write(tmp_path, "sts.jsonl", "".join(json.dumps(r) + "\n" for r in rows))
    options = dict(anchor_column="text_a", positive_column="text_b", score_column="score")
    pairs = reader.read_pair_file(path, score_scale=5, **options)
    assert pairs.scores == pytest.approx([0.9, 0.1])
    assert pairs.where == [f"{path}:1", f"{path}:2"]
    assert pairs.report.skipped == {"bad score": 3, "malformed row": 1}
    # Unscaled 0-5 scores are not cosines: the error names the line and the flag.
    with pytest.raises(ValueError, match=rf"{path}:1: score 4.5 .* outside \[-1, 1\].*"
                                         r"--score-scale"):
        reader.read_pair_file(path, **options)


@pytest.mark.parametrize("kwargs, message", [
    (dict(anchor_column="text", positive_column="text"), "two roles"),
    (dict(negative_columns=["n"], score_column="s"), "give one of them"),
    (dict(negative_columns="n"), "negative_columns"),
    (dict(score_scale=0), "score_scale=0"),
    (dict(positive_column=""), "positive_column=''"),
])
def test_bad_options_are_named(kwargs, message):
    with pytest.raises(ValueError, match=message):
        TextEmbeddingOptions(**kwargs)


def test_duplicate_texts_get_equal_keys():
    """The keys are what the ranking loss compares: equal texts, equal keys (the pipeline's
    batches carry them, tests/tasks/test_text_embedding_tool.py)."""
    keys = reader.text_keys(tf.constant([
        ["who lives in paris", "john lives in paris", "a good movie"],
        ["i love paris", "john lives in paris", "the movie was awful"],
        ["a bad film", "the movie was awful", "i hate paris"]])).numpy()  # (3, 3)
    assert keys.dtype == np.float32
    assert keys[0, 1] == keys[1, 1]  # The shared positive.
    assert keys[1, 2] == keys[2, 1]  # Pair 1's negative is pair 2's positive.
    assert len(np.unique(keys)) == 7
    assert keys.max() < 2 ** 24 and np.all(keys == np.round(keys))  # Exact in float32.


def numpy_ranking_loss(anchor, candidates, scale, excluded):
    """Mean over rows of -log softmax(scale * cos)[i, i] over all candidates, some excluded."""
    logits = scale * unit(anchor) @ unit(candidates).T
    for row, column in excluded:
        logits[row, column] = -np.inf
    logits -= logits.max(1, keepdims=True)
    log_softmax = logits - np.log(np.exp(logits).sum(1, keepdims=True))
    return float(-np.mean(np.diagonal(log_softmax)))


def test_hard_negatives_join_every_rows_candidates_and_duplicates_are_left_out():
    rng = np.random.default_rng(0)
    anchor, positive, negative = rng.normal(size=(3, 4, 8)).astype("float32")
    # Pair 1's negative is pair 3's positive text (key 12); pairs 0 and 2 share an anchor.
    keys = np.array([[0, 10, 20], [1, 11, 12], [0, 12, 22], [3, 13, 23]], "float32")
    y_pred = np.concatenate([anchor, positive, negative], axis=1)
    got = float(MultipleNegativesRankingLoss(scale=20.0)(keys, y_pred))
    # Candidates: positives 0-3, then negatives 0-3 (columns 4-7). Left out: for row 2
    # the negative of pair 1 (column 5, its own positive's text); rows 0 and 2 each other's
    # positive (same anchor).
    excluded = [(2, 5), (0, 2), (2, 0)]
    candidates = np.concatenate([positive, negative])
    assert got == pytest.approx(numpy_ranking_loss(anchor, candidates, 20.0, excluded),
                                rel=1e-5)
    # Without negatives the loss is the pairs' one (the earlier behaviour).
    pairs_only = float(MultipleNegativesRankingLoss(scale=20.0)(
        keys[:, :2], y_pred[:, :16]))
    assert pairs_only == pytest.approx(numpy_ranking_loss(
        anchor, positive, 20.0, [(0, 2), (2, 0)]), rel=1e-5)


def test_shared_positives_rank_one_copy_so_ties_do_not_cost_recall():
    distinct, targets = reader.retrieval_targets(["p", "q", "p", "r"])
    assert distinct == ["p", "q", "r"] and targets.tolist() == [0, 1, 0, 2]
    anchors = np.eye(3, dtype="float32")[[0, 1, 0, 2]]
    got = retrieval_metrics(anchors, np.eye(3, dtype="float32"), targets=targets)
    assert got == {"recall@1": 1.0, "recall@10": 1.0, "mrr": 1.0}
    # Ranking the duplicate copies as separate candidates ties them: no credit (rank 2).
    tied = retrieval_metrics(anchors, np.eye(3, dtype="float32")[[0, 1, 0, 2]])
    assert tied["recall@1"] == 0.5
    scored = pair_metrics(np.eye(3), unit(np.eye(3) + [[0.1], [0.5], [0.9]]),
                          np.array([0.9, 0.5, 0.1]))
    assert scored == {"spearman": pytest.approx(1.0)}
