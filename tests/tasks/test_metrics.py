"""Task metrics against values worked out by hand (and checked once with sklearn/scipy/seqeval)."""

import pytest

from keras_bert.tasks.classification import metrics as classification_metrics
from keras_bert.tasks.span_qa import metrics as squad_metrics
from keras_bert.tasks.token_classification import metrics as entity_metrics
from keras_bert.training import correlation


def test_classification_metrics_known_values():
    y_true = [0, 0, 1, 1, 2, 2, 2, 0, 1, 2]
    y_pred = [0, 1, 1, 1, 2, 0, 2, 0, 2, 2]
    result = classification_metrics.classification_metrics(y_true, y_pred, 3)
    # Per-class F1: 2/3, 2/3, 3/4 -> macro 0.69444; sklearn's MCC 0.545454.
    assert result["accuracy"] == pytest.approx(0.7)
    assert result["macro_f1"] == pytest.approx((2 / 3 + 2 / 3 + 3 / 4) / 3)
    assert result["mcc"] == pytest.approx(0.5454545454545454)


def test_macro_f1_averages_only_classes_that_occur():
    # Class 2 and 3 never occur: sklearn's macro average leaves them out.
    result = classification_metrics.classification_metrics([0, 0, 1], [0, 1, 1], 4)
    assert result["macro_f1"] == pytest.approx(2 / 3)
    assert result["mcc"] == pytest.approx(0.5)


def test_mcc_is_zero_for_a_constant_prediction():
    assert classification_metrics.classification_metrics([0, 1, 1, 0], [1, 1, 1, 1], 2)["mcc"] == 0.0


def test_correlations_with_ties():
    x, y = [1, 2, 2, 3, 5, 4], [2, 1, 3, 3, 6, 5]
    result = classification_metrics.regression_metrics(x, y)
    assert result["pearson"] == pytest.approx(0.9000328725094616)
    assert result["spearman"] == pytest.approx(0.8676470588235294)  # scipy, average ranks
    assert result["mse"] == pytest.approx(5 / 6)
    assert correlation.rankdata([10, 20, 20, 5]).tolist() == [2.0, 3.5, 3.5, 1.0]


def test_entities_of_iob2_and_loose_tags():
    tags = ["B-PER", "I-PER", "O", "I-LOC", "B-LOC", "I-ORG", "B-MISC", "I-MISC", "I-MISC"]
    assert entity_metrics.get_entities(tags) == [
        ("PER", 0, 1), ("LOC", 3, 3), ("LOC", 4, 4), ("ORG", 5, 5), ("MISC", 6, 8)]


def test_entity_f1_seqeval_example():
    y_true = [["O", "O", "O", "B-MISC", "I-MISC", "I-MISC", "O"], ["B-PER", "I-PER", "O"]]
    y_pred = [["O", "O", "B-MISC", "I-MISC", "I-MISC", "I-MISC", "O"], ["B-PER", "I-PER", "O"]]
    result = entity_metrics.entity_metrics(y_true, y_pred)
    assert (result["precision"], result["recall"], result["f1"]) == (0.5, 0.5, 0.5)
    assert result["f1/PER"] == 1.0 and result["f1/MISC"] == 0.0


def test_entity_f1_needs_exact_type_and_span():
    y_true = [["B-PER", "I-PER", "O", "B-LOC", "O", "B-ORG"]]
    # PER span too short, LOC right, ORG with the wrong type, one extra entity.
    y_pred = [["B-PER", "O", "O", "B-LOC", "B-MISC", "B-LOC"]]
    result = entity_metrics.entity_metrics(y_true, y_pred)
    assert result["num_true"] == 3 and result["num_pred"] == 4 and result["num_correct"] == 1
    assert result["precision"] == pytest.approx(1 / 4)
    assert result["recall"] == pytest.approx(1 / 3)
    assert result["f1"] == pytest.approx(2 / 7)


def test_entity_metrics_rejects_ragged_predictions():
    with pytest.raises(ValueError, match="Sentence 0 has 2 true tags but 1"):
        entity_metrics.entity_metrics([["O", "O"]], [["O"]])


def test_squad_normalization_and_scores():
    assert squad_metrics.normalize_answer("The  Café, an \"Über\" place!") == "café über place"
    assert squad_metrics.squad_exact("the Eiffel Tower.", "Eiffel tower") == 1
    # Tokens: pred [denver, broncos, team] vs truth [broncos]: P 1/3, R 1 -> F1 0.5.
    assert squad_metrics.squad_f1("Denver Broncos team", "Broncos") == pytest.approx(0.5)
    assert squad_metrics.squad_f1("a", "the") == 1.0  # Both normalize to no tokens.
    assert squad_metrics.squad_f1("Paris", "London") == 0.0


def test_squad_metrics_best_gold_and_no_answer():
    predictions = {"q1": "Denver", "q2": "", "q3": "1889", "q4": "something"}
    answers = {
        "q1": ["Denver Broncos", "the Broncos"],  # EM 0, F1 max(2/3, 0) = 2/3
        "q2": [],                                 # v2 unanswerable, predicted "": 1, 1
        "q3": ["in 1889", "1889"],                # EM 1
        "q4": [],                                 # unanswerable, predicted text: 0, 0
    }
    result = squad_metrics.squad_metrics(predictions, answers)
    assert result["exact"] == pytest.approx(2 / 4)
    assert result["f1"] == pytest.approx((2 / 3 + 1 + 1 + 0) / 4)
    assert result["has_answer_f1"] == pytest.approx((2 / 3 + 1) / 2)
    assert result["no_answer_exact"] == pytest.approx(0.5)
