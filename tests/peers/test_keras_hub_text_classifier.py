"""keras-hub's bert_text_classifier_test.py and bert_text_classifier_preprocessor_test.py,
on keras_bert's BertClassifier and BertPreprocessor.

keras-hub's BertTextClassifierPreprocessor is keras_bert's BertPreprocessor
(one preprocessor for every single-text task), BertTextClassifier(backbone,
num_classes, preprocessor) is BertClassifier(encoder, num_classes,
preprocessor). A preprocessor makes features only: labels and sample weights
go to `fit` (keras-hub's preprocessor passes them through); its second
positional argument is the second text of a pair.
"""

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_bert import BertClassifier, BertEncoder
from keras_bert.text import BertPreprocessor, BertTokenizer
from tests.peers.peer_case import (
    run_litert_export_test, run_preprocessor_test, run_task_test, to_lists)
from tests.test_case import run_model_saving_test

PREPROCESSOR_VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]",
                      "THE", "QUICK", "BROWN", "FOX", "the", "quick", "brown", "fox"]
VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "quick", "brown", "fox", "."]
TRAIN_DATA = (["the quick brown fox.", "the slow brown fox."], [1, 0])


# === bert_text_classifier_preprocessor_test.py ===

def preprocessor_kwargs():
    # keras-hub's tokenizer is cased unless told (tests/peers/test_keras_hub_tokenizer.py).
    return {"tokenizer": BertTokenizer(PREPROCESSOR_VOCAB, lowercase=False), "sequence_length": 8}


def test_preprocessor_basics():
    """bert_text_classifier_preprocessor_test.py test_preprocessor_basics
    (run_preprocessor_test: the packed features, then sequence_length = 17)."""
    run_preprocessor_test(BertPreprocessor, preprocessor_kwargs(), ["THE QUICK BROWN FOX."], {
        "token_ids": [[2, 5, 6, 7, 8, 1, 3, 0]],
        "segment_ids": [[0, 0, 0, 0, 0, 0, 0, 0]],
        "padding_mask": [[1, 1, 1, 1, 1, 1, 1, 0]],
    })


def test_labels_go_to_fit_not_the_preprocessor():
    """Deliberate difference with test_preprocessor_basics' pass-through of labels and
    sample weights: the preprocessor's second argument is a pair's second text, so
    labels there are refused with the way out."""
    preprocessor = BertPreprocessor(**preprocessor_kwargs())
    with pytest.raises(ValueError, match=r"second text of a pair.*fit\(x, y"):
        preprocessor(["THE QUICK BROWN FOX."], [1])


def test_errors_for_2d_list_input():
    """bert_text_classifier_preprocessor_test.py test_errors_for_2d_list_input."""
    preprocessor = BertPreprocessor(**preprocessor_kwargs())
    with pytest.raises(ValueError, match="list of lists"):
        preprocessor([["one", "two"], ["three", "four"]])


# === bert_text_classifier_test.py ===

def init_kwargs():
    preprocessor = BertPreprocessor(BertTokenizer(VOCAB), sequence_length=5)
    encoder = BertEncoder(vocab_size=preprocessor.tokenizer.vocab_size, num_layers=2,
                          num_heads=2, hidden_size=2, intermediate_size=4,
                          max_position_embeddings=preprocessor.sequence_length)
    return {"encoder": encoder, "num_classes": 2, "preprocessor": preprocessor}


@pytest.fixture(scope="module")
def classifier():
    """The module's classifier: test_classifier_basics fits it, the saving and LiteRT tests
    compare with its own predict (one build, its predict traced once)."""
    keras.utils.set_random_seed(0)
    return BertClassifier(**init_kwargs())


@pytest.mark.slow
def test_classifier_basics(classifier):
    """bert_text_classifier_test.py test_classifier_basics (run_task_test)."""
    run_task_test(BertClassifier, init_kwargs(), TRAIN_DATA, expected_output_shape=(2, 2),
                  task=classifier)


@pytest.mark.slow
def test_saved_model(classifier, tmp_path):
    """bert_text_classifier_test.py test_saved_model (run_model_saving_test on the
    preprocessed input; the reloaded model reads raw text too)."""
    inputs = {k: v.numpy() for k, v in classifier.preprocessor(TRAIN_DATA[0]).items()}
    reloaded = run_model_saving_test(classifier, inputs, tmp_path)
    np.testing.assert_allclose(reloaded.predict(TRAIN_DATA[0], verbose=0),
                               classifier.predict(TRAIN_DATA[0], verbose=0), atol=1e-6)


@pytest.mark.slow
def test_litert_export(classifier):
    """bert_text_classifier_test.py test_litert_export (run_litert_export_test): the
    LiteRT model takes the raw text and gives predict's probabilities."""
    lite, expected = run_litert_export_test(classifier, TRAIN_DATA[0])
    assert to_lists(lite["label_id"]) == np.argmax(expected, -1).tolist()
    np.testing.assert_allclose(lite["probabilities"], tf.nn.softmax(expected), atol=1e-4)
