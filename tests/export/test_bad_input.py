"""Exported signatures on bad input: INVALID_ARGUMENT naming the input and what it must be."""

import pytest
import tensorflow as tf

from keras_bert.export import export_model
from keras_bert.export.predict import load_export


@pytest.fixture(scope="module")
def loaded(classifier_export, three_exports, tmp_path_factory):
    """The classifier export, its pair export, and the session's (untrained) span QA export."""
    root = tmp_path_factory.mktemp("bad_input_exports")
    # From the session's loaded model (not its directory again) and without TF Serving's
    # warmup requests: the signature's input checks are what these tests call.
    pairs = export_model(classifier_export["model"], str(root / "pairs"), pairs=True,
                         warmup=False)
    return {"classifier": load_export(classifier_export["export_dir"]),
            "pairs": load_export(pairs), "qa": load_export(three_exports["qa"])}


def call(loaded, signature, **inputs):
    return loaded.signatures[signature](**{k: tf.constant(v) for k, v in inputs.items()})


@pytest.mark.parametrize("signature", ["serving_default", "embed", "preprocess"])
@pytest.mark.parametrize("text", [[["a good movie", "bad"]], "a good movie", [["a"], ["b"]]])
def test_text_that_is_not_a_batch_of_strings_names_the_input(loaded, signature, text):
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match=r"Shape of tensor text \[.*\] is not compatible with expected "
                             r"shape \[\?\]"):
        call(loaded["classifier"], signature, text=text)


@pytest.mark.parametrize("mask", [7, -3, 2])
def test_encode_refuses_a_padding_mask_other_than_0_or_1(loaded, mask):
    ids = [[2, 17, 3]]
    with pytest.raises(tf.errors.InvalidArgumentError, match="padding_mask must be 0 or 1"):
        call(loaded["classifier"], "encode", token_ids=ids, segment_ids=[[0, 0, 0]],
             padding_mask=[[1, mask, 1]])


def test_encode_refuses_width_0(loaded):
    empty = tf.zeros([2, 0], tf.int32)
    with pytest.raises(tf.errors.InvalidArgumentError, match="at least one position"):
        loaded["classifier"].signatures["encode"](
            token_ids=empty, segment_ids=empty, padding_mask=empty)


def test_encode_refuses_ids_of_rank_1(loaded):
    with pytest.raises(tf.errors.InvalidArgumentError, match="expected shape \\[\\?,\\?\\]"):
        call(loaded["classifier"], "encode", token_ids=[2, 3], segment_ids=[0, 0],
             padding_mask=[1, 1])


def test_qa_needs_one_context_per_question(loaded):
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match="inputs question and context must have the same batch size"):
        call(loaded["qa"], "serving_default", question=["who", "what"], context=["the cat"])
    with pytest.raises(tf.errors.InvalidArgumentError, match="Shape of tensor (question|context) "):
        call(loaded["qa"], "serving_default", question=[["who"]], context=[["the cat"]])


def test_pairs_need_one_text_b_per_text(loaded):
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match="inputs text and text_b must have the same batch size"):
        call(loaded["pairs"], "serving_default", text=["a", "b"], text_b=["c"])
