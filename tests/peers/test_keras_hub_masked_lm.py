"""keras-hub's bert_masked_lm_test.py and bert_masked_lm_preprocessor_test.py, on keras_bert's
BertMaskedLM and BertMaskedLMPreprocessor.

keras-hub's preprocessor call masks; keras_bert's `BertMaskedLMPreprocessor`
packs when called (the one text path every task shares) and masks in
`masked_samples` (what `fit` uses), with the positions under
`masked_positions` (keras-hub: `mask_positions`; google-research/bert's
`masked_lm_positions`, the pretrainer's name).
"""

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_bert import BertEncoder, BertMaskedLM
from keras_bert.tasks import BertMaskedLMPreprocessor
from keras_bert.text import BertTokenizer
from tests.peers.peer_case import run_serialization_test, to_lists
from tests.test_case import assert_all_close, run_model_saving_test

PREPROCESSOR_VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]",
                      "THE", "QUICK", "BROWN", "FOX", "the", "quick", "brown", "fox"]
VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "quick", "brown", "fox", "."]
TEXTS = ["the quick brown fox.", "the slow brown fox."]


# === bert_masked_lm_preprocessor_test.py ===

def masking_kwargs(**changes):
    # Every available token masked, as keras-hub's test does.
    return {"tokenizer": BertTokenizer(PREPROCESSOR_VOCAB, lowercase=False),
            "mask_selection_rate": 1.0, "mask_token_rate": 1.0, "random_token_rate": 0.0,
            "mask_selection_length": 4, "sequence_length": 12, **changes}


def test_preprocessor_basics():
    """bert_masked_lm_preprocessor_test.py test_preprocessor_basics (run_preprocessor_test:
    the masked sample, then sequence_length = 17)."""
    preprocessor = BertMaskedLMPreprocessor(**masking_kwargs())
    run_serialization_test(preprocessor)
    x, y, sample_weight = preprocessor.masked_samples(["the quick brown fox"])
    assert to_lists(x) == {
        "token_ids": [[2, 4, 4, 4, 4, 3, 0, 0, 0, 0, 0, 0]],
        "segment_ids": [[0] * 12],
        "padding_mask": [[1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0]],
        "masked_positions": [[1, 2, 3, 4]],
    }
    assert to_lists(y) == [[9, 10, 11, 12]]
    assert to_lists(sample_weight) == [[1.0, 1.0, 1.0, 1.0]]
    preprocessor.sequence_length = 17
    x, _, _ = preprocessor.masked_samples(["the quick brown fox"])
    assert x["token_ids"].shape[-1] == 17


def test_no_masking_zero_rate():
    """bert_masked_lm_preprocessor_test.py test_no_masking_zero_rate."""
    preprocessor = BertMaskedLMPreprocessor(
        BertTokenizer(PREPROCESSOR_VOCAB, lowercase=False), mask_selection_rate=0.0,
        mask_selection_length=4, sequence_length=12)
    x, y, sample_weight = preprocessor.masked_samples(["the quick brown fox"])
    assert to_lists(x) == {
        "token_ids": [[2, 9, 10, 11, 12, 3, 0, 0, 0, 0, 0, 0]],
        "segment_ids": [[0] * 12],
        "padding_mask": [[1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0]],
        "masked_positions": [[0, 0, 0, 0]],
    }
    assert to_lists(y) == [[0, 0, 0, 0]]
    assert to_lists(sample_weight) == [[0.0, 0.0, 0.0, 0.0]]


# === bert_masked_lm_test.py ===

def init_kwargs():
    preprocessor = BertMaskedLMPreprocessor(
        BertTokenizer(VOCAB), mask_selection_rate=1.0, mask_token_rate=1.0,
        random_token_rate=0.0, mask_selection_length=5, sequence_length=5)
    encoder = BertEncoder(vocab_size=preprocessor.tokenizer.vocab_size, num_layers=2,
                          num_heads=2, hidden_size=2, intermediate_size=4,
                          max_position_embeddings=preprocessor.sequence_length)
    return {"encoder": encoder, "preprocessor": preprocessor}


@pytest.fixture(scope="module")
def masked_lm():
    """The module's masked LM: test_masked_lm_basics fits it, test_saved_model compares
    the reloaded file with its predict (one build, its predict traced once)."""
    keras.utils.set_random_seed(0)
    return BertMaskedLM(**init_kwargs())


@pytest.mark.slow
def test_masked_lm_basics(masked_lm):
    """bert_masked_lm_test.py test_masked_lm_basics (run_task_test): logits [2, 5, 10] of
    the masked samples; fit on raw texts with no labels, on a dataset and on
    preprocessed samples, with no compile call; compile=False asks for one.
    keras_bert's predict on raw text fills in each "[MASK]" written in it (the export's
    fill_mask); the logits of masked samples are the model's call on them."""
    model = masked_lm
    run_serialization_test(model)
    preprocessor = model.preprocessor
    x, _, _ = preprocessor.masked_samples(TEXTS)
    assert sorted(x) == sorted(model.input)
    assert tuple(model.predict(x, verbose=0).shape) == (2, 5, 10)
    model.fit(TEXTS, verbose=0)
    dataset = tf.data.Dataset.from_tensor_slices(TEXTS).batch(2)
    model.fit(dataset, verbose=0)
    model.preprocessor = None
    model.fit(dataset.map(preprocessor.masked_samples), verbose=0)
    model.preprocessor = preprocessor
    # One [MASK] written in the text: its position (3, after [CLS] the quick) and
    # vocabulary tokens, best first.
    filled = model.predict(["the quick [MASK] fox."], verbose=0)
    assert filled["positions"].tolist() == [[3]]
    assert {t.decode() for t in filled["tokens"][0, 0]} <= set(VOCAB)
    assert (np.diff(filled["scores"][0, 0]) <= 0).all()
    with pytest.raises(ValueError, match="You must call `compile"):
        BertMaskedLM(**init_kwargs(), compile=False).fit(dataset, verbose=0)


@pytest.mark.slow
def test_saved_model(masked_lm, tmp_path):
    """bert_masked_lm_test.py test_saved_model (run_model_saving_test on masked samples)."""
    model = masked_lm
    x, _, _ = model.preprocessor.masked_samples(TEXTS)
    reloaded = run_model_saving_test(model, {k: np.asarray(v) for k, v in x.items()}, tmp_path)
    assert_all_close(reloaded.predict(x, verbose=0), model.predict(x, verbose=0), atol=1e-6)
