import keras
import numpy as np
import pytest

from keras_bert.models import BertEncoder, BertPretrainer
from keras_bert.tasks import (
    BertClassifier,
    BertSpanLabeler,
    BertTokenClassifier,
)
from tests.test_case import assert_all_close, run_model_saving_test


def sparse_ce():
    return keras.losses.SparseCategoricalCrossentropy(from_logits=True)


@pytest.mark.slow
def test_classifier_fits_pairs_and_saves(encoder, batch, tmp_path):
    classifier = BertClassifier(encoder, num_classes=3, label_names=["neg", "neu", "pos"])
    assert classifier(batch).shape == (2, 3)
    classifier.compile(optimizer=keras.optimizers.Adam(1e-2), loss=sparse_ce(),
                       metrics=["accuracy"])
    history = classifier.fit(batch, np.array([2, 0]), epochs=60, verbose=0).history
    assert history["loss"][-1] < 0.5 * history["loss"][0]
    assert np.argmax(classifier.predict(batch, verbose=0), -1).tolist() == [2, 0]
    reloaded = run_model_saving_test(classifier, batch, tmp_path)
    assert reloaded.label_names == ["neg", "neu", "pos"]


def test_classifier_validates_labels(encoder):
    with pytest.raises(ValueError, match="label_names has 2 names but num_classes=3"):
        BertClassifier(encoder, num_classes=3, label_names=["a", "b"])
    with pytest.raises(ValueError, match="num_classes=0"):
        BertClassifier(encoder, num_classes=0)


def test_token_classifier_shapes_and_fit(encoder, batch, tmp_path):
    tagger = BertTokenClassifier(encoder, num_classes=4)
    assert tagger(batch).shape == (2, 7, 4)
    tagger.compile(optimizer=keras.optimizers.Adam(1e-2), loss=sparse_ce())
    labels = np.array([[0, 1, 2, 3, 0, 0, 0], [0, 3, 2, 0, 1, 1, 0]])
    history = tagger.fit(batch, labels, sample_weight=batch["padding_mask"], epochs=20,
                         verbose=0).history
    assert history["loss"][-1] < 0.5 * history["loss"][0]
    run_model_saving_test(tagger, batch, tmp_path)


@pytest.mark.slow
def test_span_labeler_masks_padding_and_fits(encoder, batch, tmp_path):
    qa = BertSpanLabeler(encoder)
    out = qa(batch)
    assert out["start_logits"].shape == (2, 7) and out["end_logits"].shape == (2, 7)
    assert np.asarray(out["start_logits"])[0, 5:].max() < -1e8
    qa.compile(optimizer=keras.optimizers.Adam(1e-2),
               loss={"start_logits": sparse_ce(), "end_logits": sparse_ce()})
    y = {"start_logits": np.array([1, 4]), "end_logits": np.array([2, 5])}
    history = qa.fit(batch, y, epochs=20, verbose=0).history
    assert history["loss"][-1] < 0.5 * history["loss"][0]
    run_model_saving_test(qa, batch, tmp_path)


def test_from_pretrained_takes_encoder_weights_and_fresh_head(encoder, batch, tmp_path):
    BertPretrainer(encoder).save_pretrained(tmp_path / "pretrained")
    classifier = BertClassifier.from_pretrained(tmp_path / "pretrained", num_classes=2)
    assert_all_close(classifier.encoder(batch), encoder(batch))
    classifier.save_pretrained(tmp_path / "clf", task_info={"max_seq_length": 7})
    again = BertClassifier.from_pretrained(tmp_path / "clf")
    assert again.task_info["max_seq_length"] == 7
    assert_all_close(again(batch), classifier(batch))
    # A different head size discards the trained head: only when asked to,
    # and then a fresh head on the same encoder weights.
    with pytest.raises(ValueError, match="num_classes=5.*new_head=True"):
        BertClassifier.from_pretrained(tmp_path / "clf", num_classes=5)
    five = BertClassifier.from_pretrained(tmp_path / "clf", num_classes=5, new_head=True)
    assert five(batch).shape == (2, 5)
    assert_all_close(five.encoder(batch), encoder(batch))
    # Any model directory gives its encoder.
    assert_all_close(BertEncoder.from_pretrained(tmp_path / "clf")(batch), encoder(batch))


def test_mixed_precision_classifier_outputs_float32(batch):
    from tests.models.conftest import tiny_config

    encoder = BertEncoder(**tiny_config().to_dict(), dtype="mixed_bfloat16")
    classifier = BertClassifier(encoder, num_classes=2)
    assert classifier(batch).dtype == "float32"
    assert encoder(batch)["sequence_output"].dtype == "bfloat16"


def test_heads_without_the_pooler_do_not_train_it(encoder):
    pooler = {id(w) for w in encoder.pooler.weights}
    for model in (BertTokenClassifier(encoder, num_classes=2), BertSpanLabeler(encoder)):
        trained = {id(w) for w in model.trainable_variables}
        assert trained and not trained & pooler
        assert {id(w) for w in model.trainable_weights} == trained
    # The encoder itself is unchanged: a classifier on it trains the pooler.
    assert pooler <= {id(w) for w in BertClassifier(encoder, num_classes=2).trainable_variables}
