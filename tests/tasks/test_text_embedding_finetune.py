"""Contrastive fine-tuning of BertTextEmbedder: the losses against numpy, fit on pairs and
scored pairs, the evaluation metrics, and bad pair input."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_bert.tasks import BertTextEmbedder
from keras_bert.tasks.text_embedding.losses import (CosineSimilarityLoss,
                                                    MultipleNegativesRankingLoss)
from keras_bert.tasks.text_embedding.metrics import retrieval_metrics, spearman
from keras_bert.text import BertPreprocessor, save_vocabulary
from tests.tasks.conftest import TOKENS, task_encoder

# Slow tier: contrastive fits of several epochs.
pytestmark = pytest.mark.slow

ANCHORS = ["the movie was good", "i love paris", "who lives in paris ?", "a bad film",
           "john is very great", "it was not a good movie"]
POSITIVES = ["it was a great film", "paris i love", "john lives in paris .",
             "the movie was awful", "john was not bad", "the film is bad"]
SCORES = np.array([0.9, -0.5, 0.6, -0.9, 0.2, 0.4], "float32")


def unit(x):
    return x / np.linalg.norm(x, axis=-1, keepdims=True)


def numpy_ranking_loss(anchor, positive, scale, excluded=()):
    """Mean over rows of -log softmax(scale * cos)[i, i], with (row, column) pairs excluded."""
    logits = scale * unit(anchor) @ unit(positive).T
    for row, column in excluded:
        logits[row, column] = -np.inf
    log_softmax = logits - np.log(np.sum(np.exp(logits - logits.max(1, keepdims=True)),
                                         axis=1, keepdims=True)) - logits.max(1, keepdims=True)
    return float(-np.mean(np.diagonal(log_softmax)))


def _embedder(encoder, vocab_file):
    preprocessor = BertPreprocessor.from_vocab_file(vocab_file, sequence_length=None,
                                                    max_seq_length=16)
    return BertTextEmbedder(encoder, preprocessor=preprocessor)


@pytest.fixture
def embedder(encoder, vocab_file):
    return _embedder(encoder, vocab_file)


def test_ranking_loss_is_cross_entropy_over_in_batch_negatives():
    rng = np.random.default_rng(0)
    anchor, positive = rng.normal(size=(2, 5, 8)).astype("float32")
    keys = np.stack([np.arange(5), 10 + np.arange(5)], 1).astype("float32")
    both = np.concatenate([anchor, positive], axis=1)
    for scale in (20.0, 1.0):
        got = float(MultipleNegativesRankingLoss(scale=scale)(keys, both))
        assert got == pytest.approx(numpy_ranking_loss(anchor, positive, scale), rel=1e-5)


def test_duplicate_texts_are_not_negatives_of_each_other():
    rng = np.random.default_rng(1)
    anchor, positive = rng.normal(size=(2, 4, 8)).astype("float32")
    # Pairs 0 and 2 share their positive text, pairs 1 and 3 their anchor text.
    keys = np.array([[0, 7], [1, 8], [2, 7], [1, 9]], "float32")
    got = float(MultipleNegativesRankingLoss()(keys, np.concatenate([anchor, positive], 1)))
    expected = numpy_ranking_loss(anchor, positive, 20.0,
                                  excluded=[(0, 2), (2, 0), (1, 3), (3, 1)])
    assert got == pytest.approx(expected, rel=1e-5)
    assert got != pytest.approx(numpy_ranking_loss(anchor, positive, 20.0), rel=1e-3)


def test_cosine_similarity_loss_is_the_squared_error_of_the_cosine():
    rng = np.random.default_rng(2)
    anchor, positive = rng.normal(size=(2, 6, 8)).astype("float32")
    got = float(CosineSimilarityLoss()(SCORES, np.concatenate([anchor, positive], 1)))
    cosine = np.sum(unit(anchor) * unit(positive), axis=1)
    assert got == pytest.approx(float(np.mean((cosine - SCORES) ** 2)), rel=1e-5)


def test_bad_scale_is_named():
    with pytest.raises(ValueError, match="scale=0"):
        MultipleNegativesRankingLoss(scale=0)


def test_retrieval_metrics_count_ranks():
    anchors = np.eye(4, dtype="float32")
    # Unit positives; cos(anchor i, positive j) = positives[j, i]. Anchor 0
    # finds its own first; anchor 1 after positive 2 (0.6 > 0.5); anchor 2
    # ties with positive 3 (0.8 each: a tie ranks it second); anchor 3 first.
    positives = np.array([[1, 0, 0, 0], [0.866, 0.5, 0, 0], [0, 0.6, 0.8, 0], [0, 0, 0.8, 0.6]],
                         "float32")
    got = retrieval_metrics(anchors, positives, ks=(1, 2))
    assert got == pytest.approx({"recall@1": 0.5, "recall@2": 1.0, "mrr": 0.75})


def test_spearman_uses_average_ranks():
    assert spearman([1, 2, 3, 4], [10, 20, 30, 40]) == pytest.approx(1.0)
    assert spearman([1, 2, 3, 4], [4, 3, 2, 1]) == pytest.approx(-1.0)
    # Ties: ranks [1.5, 1.5, 3, 4] against [1, 2, 3, 4]: Pearson of the ranks.
    a, b = np.array([1.5, 1.5, 3, 4]), np.arange(1, 5.0)
    expected = np.corrcoef(a, b)[0, 1]
    assert spearman([5, 5, 6, 7], [1, 2, 3, 4]) == pytest.approx(expected)
    assert spearman([1, 1, 1], [1, 2, 3]) == 0.0


def test_fit_on_pairs_ranks_each_positive_first(embedder):
    embedder.compile(optimizer=keras.optimizers.Adam(1e-2), loss=MultipleNegativesRankingLoss())
    before = embedder.evaluate_pairs(ANCHORS, POSITIVES)
    loss_before = embedder.evaluate((ANCHORS, POSITIVES), verbose=0)
    history = embedder.fit((ANCHORS, POSITIVES), epochs=15, batch_size=6, verbose=0)
    after = embedder.evaluate_pairs(ANCHORS, POSITIVES)
    assert before["recall@1"] < 1.0 and after["recall@1"] == 1.0
    assert after["mrr"] > before["mrr"]
    assert embedder.evaluate((ANCHORS, POSITIVES), verbose=0) < loss_before / 2
    assert history.history["loss"][-1] < history.history["loss"][0]


def test_fit_on_a_pair_dataset_equals_fit_on_lists(encoder, vocab_file):
    weights = encoder.get_weights()
    results = []
    for make in (lambda: (ANCHORS, POSITIVES),
                 lambda: tf.data.Dataset.from_tensor_slices((ANCHORS, POSITIVES)).batch(6).map(
                     lambda a, p: ((a, p),))):
        encoder.set_weights(weights)
        model = BertTextEmbedder(encoder, preprocessor=BertPreprocessor.from_vocab_file(
            vocab_file, sequence_length=None, max_seq_length=16))
        model.compile(optimizer=keras.optimizers.SGD(0.1))
        history = model.fit(make(), batch_size=6, shuffle=False, verbose=0)
        results.append(history.history["loss"][0])
    assert results[0] == pytest.approx(results[1], rel=1e-5)


def test_fit_on_scored_pairs_regresses_the_cosine(embedder):
    embedder.compile(optimizer=keras.optimizers.Adam(1e-2))
    before = embedder.evaluate_pairs(ANCHORS, POSITIVES, SCORES)["spearman"]
    embedder.fit((ANCHORS, POSITIVES), SCORES, epochs=20, batch_size=6, verbose=0)
    after = embedder.evaluate_pairs(ANCHORS, POSITIVES, SCORES)["spearman"]
    assert after > before and after > 0.9
    cosine = embedder.similarity(ANCHORS, POSITIVES, pairwise=True)
    assert np.mean((cosine - SCORES) ** 2) < 0.05


def test_validation_pairs_are_scored_each_epoch(embedder):
    history = embedder.fit((ANCHORS, POSITIVES), validation_data=(ANCHORS[:3], POSITIVES[:3]),
                           epochs=2, verbose=0)
    assert len(history.history["val_loss"]) == 2


@pytest.fixture(scope="module")
def refusing_embedder(tmp_path_factory):
    """`embedder`, built once for the bad-pair cases: each is refused before fit builds or
    changes anything."""
    path = tmp_path_factory.mktemp("bad_pairs") / "vocab.txt"
    save_vocabulary(TOKENS, path)
    return _embedder(task_encoder(), str(path))


@pytest.mark.parametrize("x,y,message", [
    (ANCHORS, None, "one column of texts"),
    ((ANCHORS[:2], ["", "a film"]), None, "pair 0 has an empty positive"),
    (([], []), None, "at least one pair"),
    ((ANCHORS, POSITIVES), SCORES * 5, r"in \[-1, 1\]; y\[0\] = 4.5"),
    ((ANCHORS, POSITIVES), SCORES[:2], "one score per pair"),
    (tf.data.Dataset.from_tensor_slices(ANCHORS).batch(2), None, "one column of texts"),
])
def test_bad_pairs_are_named(refusing_embedder, x, y, message):
    with pytest.raises(ValueError, match=message):
        refusing_embedder.fit(x, y, verbose=0)


def test_cosine_loss_without_scores_is_refused(embedder):
    embedder.compile(optimizer="adam", loss=CosineSimilarityLoss())
    with pytest.raises(ValueError, match="needs a score per pair"):
        embedder.fit((ANCHORS, POSITIVES), verbose=0)


def test_a_loss_that_is_not_a_pair_loss_is_refused(embedder):
    embedder.compile(optimizer="adam", loss="mse")
    with pytest.raises(ValueError, match="loss='mse'"):
        embedder.fit((ANCHORS, POSITIVES), verbose=0)


def test_compile_config_keeps_the_scale(embedder, tmp_path):
    embedder.compile(optimizer="adam", loss=MultipleNegativesRankingLoss(scale=33.0))
    path = str(tmp_path / "m.keras")
    embedder.save(path)
    reloaded = keras.models.load_model(path)
    assert isinstance(reloaded.loss, MultipleNegativesRankingLoss) and reloaded.loss.scale == 33.0
