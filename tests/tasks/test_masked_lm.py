"""BertMaskedLM on raw text: fit without labels, mask rate 0, fill-mask predict = export (issue 35)."""

import warnings

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_bert.export import export_model
from keras_bert.export.predict import load_export, run_signature
from keras_bert.models import BertPretrainer
from keras_bert.models.registry import get_task
from keras_bert.tasks import BertMaskedLM, BertMaskedLMPreprocessor
from keras_bert.text import BertPreprocessor
from tests.tasks.conftest import TOKENS, encoder, vocab_file  # noqa: F401

CORPUS = ["the movie is good", "i love paris", "john lives in paris", "the film was awful"] * 6
ID = {token: i for i, token in enumerate(TOKENS)}


@pytest.fixture
def model(encoder, vocab_file):  # noqa: F811
    preprocessor = BertMaskedLMPreprocessor.from_vocab_file(
        vocab_file, sequence_length=None, max_seq_length=16, seed=0)
    return BertMaskedLM(encoder, preprocessor=preprocessor)


def fast(model):
    model.compile(optimizer=keras.optimizers.Adam(1e-2))  # The default loss and metrics.
    return model


def masked_batch(model, texts):
    x, y, weights = model.preprocess_samples(tf.constant(texts))
    return {k: v.numpy() for k, v in x.items()}, y.numpy(), weights.numpy()


def test_registered_and_compiled_at_construction(model):
    assert get_task("masked_lm").model is BertMaskedLM
    history = model.fit(CORPUS[:4], epochs=1, verbose=0)  # No compile() call.
    assert model.compiled and np.isfinite(history.history["loss"][0])


def test_default_loss_is_the_cross_entropy_averaged_over_real_predictions(model):
    model.compile()
    x, y, weights = masked_batch(model, ["the movie is good a film", "i love paris"])
    assert weights.sum(axis=1).tolist() == [1.0, 1.0]  # round(0.15 * n), at least 1
    logits = np.asarray(model(x))  # (B, P, V)
    log_p = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    per_slot = -np.take_along_axis(log_p, y[..., None], -1)[..., 0]  # (B, P)
    expected = (per_slot * weights).sum() / weights.sum()
    accuracy = ((logits.argmax(-1) == y) * weights).sum() / weights.sum()
    loss, got_accuracy = model.evaluate(x, y, sample_weight=weights, verbose=0)
    np.testing.assert_allclose(loss, expected, rtol=1e-5)
    np.testing.assert_allclose(got_accuracy, accuracy, rtol=1e-6)


def test_masks_are_new_on_every_epoch(model):
    dataset = model._text_dataset(CORPUS[:1] * 8, batch_size=8)
    epochs = [next(iter(dataset))[0]["masked_positions"].numpy() for _ in range(2)]
    rows = np.concatenate(epochs)[:, 0]
    assert len(set(rows.tolist())) > 1  # Not one fixed mask for every pass.


@pytest.mark.slow
def test_mask_settings_set_after_construction_change_what_fit_masks(model):
    """Mask rate 0 trains nothing with a zero loss; the settings set after construction
    change what fit masks (one model: a rate-0 fit leaves it as built)."""
    fast(model)
    rate = model.preprocessor.mask_selection_rate
    model.preprocessor.mask_selection_rate = 0.0
    _, _, weights = masked_batch(model, CORPUS[:4])
    assert weights.shape == (4, 20) and weights.sum() == 0, f"rate 0: {weights}"
    before = [w.copy() for w in model.get_weights()]
    history = model.fit(CORPUS, batch_size=8, epochs=1, verbose=0).history
    assert history["loss"] == [0.0] and np.isfinite(history["masked_lm_accuracy"][0]), history
    # Adam without weight decay: no gradient, no change.
    assert all(np.array_equal(a, b) for a, b in zip(before, model.get_weights())), \
        "a fit at mask rate 0 changed the weights"
    model.preprocessor.mask_selection_rate = rate

    text = ["the movie is good a film i love paris"]  # 9 tokens
    assert masked_batch(model, text)[2].sum() == 1  # round(0.15 * 9)
    model.preprocessor.mask_selection_rate = 1.0
    assert masked_batch(model, text)[2].sum() == 9
    model.preprocessor.mask_selection_length = 4
    x, y, weights = masked_batch(model, text)
    assert weights.shape == (1, 4) and weights.sum() == 4
    packed = model.preprocessor(tf.constant(text))["token_ids"].numpy()
    assert y[0].tolist() == packed[0, x["masked_positions"][0]].tolist()  # The original ids.
    model.preprocessor.mask_selection_rate = 0.0
    assert model.fit(text * 4, epochs=1, verbose=0).history["loss"] == [0.0]
    model.preprocessor.mask_selection_rate = 0.5
    assert model.fit(text * 4, epochs=1, verbose=0).history["loss"][0] > 0.1


def test_bad_mask_settings_and_labels_are_refused(model):
    with pytest.raises(ValueError, match=r"mask_selection_rate in \[0, 1\].*=1.5"):
        model.preprocessor.mask_selection_rate = 1.5
    with pytest.raises(ValueError, match=r"mask_selection_length=0"):
        model.preprocessor.mask_selection_length = 0
    with pytest.raises(ValueError, match=r"mask_token_rate=0.9, random_token_rate=0.2"):
        model.preprocessor.random_token_rate = 0.2
        model.preprocessor.mask_token_rate = 0.9
    with pytest.raises(ValueError, match="makes its labels by masking"):
        model.fit(CORPUS, [0] * len(CORPUS), verbose=0)


def test_mask_written_in_text_is_the_mask_token(model):
    ids = model.preprocessor.tokenize(tf.constant(["the [MASK] is good", "[MASK]", "a[MASK]."]))
    assert ids.to_list() == [[ID["the"], ID["[MASK]"], ID["is"], ID["good"]], [ID["[MASK]"]],
                             [ID["a"], ID["[MASK]"], ID["."]]]
    # The tokenizer alone splits the literal (into "[", "mask", "]" pieces).
    assert ID["[MASK]"] not in model.preprocessor.tokenizer(tf.constant(["[MASK]"]))[0].numpy()


@pytest.mark.slow  # One model fitted once: its predict, export and .keras file follow.
def test_fit_on_texts_lowers_the_mlm_loss_and_predict_fills_masks_as_its_export_and_file(
        model, tmp_path):
    # Fit on texts without labels lowers the MLM loss.
    fast(model)
    model.preprocessor.mask_selection_rate = 0.3
    initial = model.evaluate(CORPUS, verbose=0)[0]
    # A dataset of texts trains the same way as in-memory texts.
    dataset = tf.data.Dataset.from_tensor_slices(CORPUS).batch(8)
    losses = model.fit(dataset, epochs=2, verbose=0).history["loss"]
    # 24 steps in 2 epochs, not 8 epochs of 3: each epoch starts a new tf.data iterator,
    # which instantiates the tokenizer graph again.
    losses += model.fit(CORPUS * 4, batch_size=8, epochs=2, verbose=0).history["loss"]
    assert losses[-1] < 0.7 * initial, ("fit on texts", initial, losses)
    assert model.evaluate(dataset, verbose=0)[0] < 0.7 * initial, "evaluate after the fit"

    # predict fills each [MASK] with the model's top tokens.
    texts = ["the [MASK] is [MASK]", "i love [MASK]", "no mask here"]
    got = model.predict(texts)
    assert got["positions"].tolist() == [[2, 4], [3, 0], [0, 0]]
    # By hand: the model's logits at the [MASK] positions of the packed ids.
    token_ids = np.array([[ID[t] for t in ["[CLS]", "the", "[MASK]", "is", "[MASK]", "[SEP]"]]])
    inputs = {"token_ids": token_ids, "segment_ids": np.zeros_like(token_ids),
              "padding_mask": np.ones_like(token_ids), "masked_positions": np.array([[2, 4]])}
    logits = np.asarray(model(inputs))[0]  # (2, V)
    probabilities = np.exp(logits) / np.exp(logits).sum(-1, keepdims=True)
    top = np.argsort(-probabilities, axis=-1)[:, :5]
    assert got["ids"].shape == (3, 2, 5)
    assert got["ids"][0].tolist() == top.tolist()
    np.testing.assert_allclose(got["scores"][0], np.take_along_axis(probabilities, top, -1),
                               rtol=1e-5)
    assert [t.decode() for t in got["tokens"][0, 0]] == [TOKENS[i] for i in top[0]]
    # Slots without a [MASK] are padding.
    assert got["ids"][1, 1].tolist() == [0] * 5 and got["tokens"][2].tolist() == [[b""] * 5] * 2
    # model(texts) gives the logits at the same positions.
    np.testing.assert_allclose(np.asarray(model(["the [MASK] is [MASK]"]))[0], logits, atol=1e-5)
    # The export's fill_mask answers as predict (the same model: one build, one fit).
    texts = ["the [MASK] is good", "[MASK] lives in [MASK]", ""]
    expected = model.predict(texts)
    assert model.predict([])["ids"].shape[0] == 0  # No texts: no rows (not an error).
    export = export_model(model, str(tmp_path / "exports" / "mlm"))
    out = run_signature(load_export(export), {"text": texts})
    assert sorted(out) == ["ids", "positions", "scores", "tokens"]
    for key in ("ids", "positions", "tokens"):
        assert out[key].tolist() == expected[key].tolist(), key
    np.testing.assert_allclose(out["scores"], expected["scores"], atol=1e-6)
    # The .keras file keeps the preprocessor and its mask settings (the fitted model above).
    model.preprocessor.mask_selection_rate = 0.4
    path = str(tmp_path / "mlm.keras")
    model.save(path)
    again = keras.saving.load_model(path)
    assert isinstance(again, BertMaskedLM)
    assert isinstance(again.preprocessor, BertMaskedLMPreprocessor)
    assert again.preprocessor.mask_selection_rate == 0.4
    texts = ["the [MASK] is good"]
    np.testing.assert_allclose(again.predict(texts)["scores"], model.predict(texts)["scores"],
                               rtol=1e-6, err_msg="the .keras file's predict")
    assert again.fit(CORPUS[:8], epochs=1, verbose=0).history["loss"][0] > 0


def test_from_pretrained_reads_a_pretrainers_mlm_head(encoder, vocab_file, tmp_path):  # noqa: F811
    pretrainer = BertPretrainer(encoder)
    pretrainer.save_pretrained(str(tmp_path / "pre"), vocab_file=vocab_file)
    model = BertMaskedLM.from_pretrained(str(tmp_path / "pre"), mask_selection_rate=0.2)
    assert isinstance(model.preprocessor, BertMaskedLMPreprocessor)
    assert model.preprocessor.mask_selection_rate == 0.2
    head = {w.path: w.numpy() for w in pretrainer.mlm_head.weights}
    for weight in model.mlm_head.weights:
        np.testing.assert_array_equal(weight.numpy(), head[weight.path])
    assert model.compiled
    # Its own directory keeps the head and the mask settings (task.json).
    model.save_pretrained(str(tmp_path / "mlm"))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        again = BertMaskedLM.from_pretrained(str(tmp_path / "mlm"))
    assert again.preprocessor.mask_selection_rate == 0.2
    for a, b in zip(again.mlm_head.weights, model.mlm_head.weights):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    with_nsp = BertMaskedLM.from_pretrained(str(tmp_path / "pre"), next_sentence=True)
    for a, b in zip(with_nsp.nsp_head.weights, pretrainer.nsp_head.weights):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    with pytest.raises(ValueError, match=r"Received: \['num_classes'\]"):
        BertMaskedLM.from_pretrained(str(tmp_path / "mlm"), num_classes=3)


def test_from_pretrained_of_an_encoder_warns_that_the_head_is_new(encoder, vocab_file,  # noqa: F811
                                                                  tmp_path):
    encoder.save_pretrained(str(tmp_path / "enc"), vocab_file=vocab_file)
    with pytest.warns(UserWarning, match="MLM head is newly initialized"):
        model = BertMaskedLM.from_pretrained(str(tmp_path / "enc"))
    assert model.predict(["the [MASK]"])["ids"].shape == (1, 1, 5)
    # A plain BertPreprocessor attached later is refused for training with the way out.
    model.preprocessor = BertPreprocessor.from_vocab_file(vocab_file)
    with pytest.raises(ValueError, match="BertMaskedLMPreprocessor.from_preprocessor"):
        model.fit(CORPUS, verbose=0)


@pytest.mark.slow
def test_next_sentence_is_off_by_default_and_trains_on_pairs_when_on(encoder, vocab_file):  # noqa: F811
    assert BertMaskedLM(encoder).task_config() == {"next_sentence": False}
    preprocessor = BertMaskedLMPreprocessor.from_vocab_file(
        vocab_file, sequence_length=None, max_seq_length=16, seed=0)
    model = BertMaskedLM(encoder, next_sentence=True, preprocessor=preprocessor)
    firsts = ["the movie", "i love", "john lives", "the film", "who lives", "it is"]
    seconds = ["is good", "paris", "in paris", "was awful", "in paris ?", "very bad"]
    model.preprocessor.mask_selection_rate = 0.0  # Token ids as packed, to read the pairs.
    x, y, weights = model.preprocess_samples((tf.constant(firsts), tf.constant(seconds)))
    labels = y["nsp_logits"].numpy()
    assert 0 < labels.sum() < len(labels) and weights["nsp_logits"].numpy().tolist() == [1.0] * 6

    def second_segments(features):
        ids, keep = features["token_ids"].numpy(), features["segment_ids"].numpy() == 1
        return [row[k].tolist() for row, k in zip(ids, keep & (ids > 0))]

    got = second_segments(x)
    own = second_segments(model.preprocessor((tf.constant(firsts), tf.constant(seconds))))
    for row, label in enumerate(labels):  # 0: the row's own second text; 1: another row's.
        assert (got[row] == own[row]) == (label == 0) and got[row] in own, row
    model.preprocessor.mask_selection_rate = 0.15
    fast(model)
    # 24 steps in 2 epochs, not 6 epochs of 4: each epoch starts a new tf.data iterator,
    # which instantiates the tokenizer graph again.
    history = model.fit((firsts * 12, seconds * 12), batch_size=6, epochs=2, verbose=0).history
    assert {"mlm_logits_masked_lm_accuracy", "nsp_logits_nsp_accuracy"} <= set(history), history
    assert history["loss"][-1] < history["loss"][0]
    assert model.predict(["the [MASK] is good"])["ids"].shape == (1, 1, 5)
    with pytest.raises(ValueError, match=r"next_sentence=True\) trains on sentence pairs"):
        model.fit(firsts, verbose=0)
