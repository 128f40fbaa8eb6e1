"""Task models are compiled with the fine-tuning recipe by default (issue 24, item 3)."""

import keras
import numpy as np
import pytest

from keras_bert.models import BertTask
from keras_bert.tasks import (BertClassifier, BertMaskedLM, BertSpanLabeler, BertTextEmbedder,
                              BertTokenClassifier)
from keras_bert.training.optimizers import AdamW
from tests.tasks.conftest import vocab_file  # noqa: F401

TEXTS = ["the movie is good", "a bad film", "i love it", "awful , awful film"]
LABELS = [1, 0, 1, 0]


@pytest.fixture
def encoder_dir(encoder, vocab_file, tmp_path):  # noqa: F811
    path = str(tmp_path / "encoder")
    encoder.save_pretrained(path, vocab_file=vocab_file)
    return path


def _loss_config(loss):
    return keras.losses.get(loss).get_config() if isinstance(loss, str) else loss.get_config()


def test_from_pretrained_is_compiled_with_the_finetuning_recipe(encoder_dir):
    classifier = BertClassifier.from_pretrained(encoder_dir, num_classes=2)
    assert classifier.compiled
    optimizer = classifier.optimizer
    assert type(optimizer) is AdamW  # keras_bert's: dense embedding gradients, torch epsilon.
    assert float(optimizer.learning_rate) == pytest.approx(5e-5)
    assert optimizer.weight_decay == pytest.approx(0.01)
    assert optimizer.epsilon == pytest.approx(1e-6)
    assert optimizer.global_clipnorm == pytest.approx(1.0)
    # LayerNorm and biases are not decayed, as in fine-tuning.
    assert optimizer.weight_decay_exclude
    config = classifier.loss.get_config()
    assert config["from_logits"] is True and "sparse_categorical" in config["name"]

    # fit works without compile, and reports accuracy.
    before = [np.array(w) for w in classifier.trainable_weights]
    history = classifier.fit(TEXTS, np.array(LABELS), epochs=1, verbose=0).history
    assert set(history) == {"loss", "accuracy"}
    assert np.isfinite(history["loss"][0]) and 0.0 <= history["accuracy"][0] <= 1.0
    assert any(not np.array_equal(b, np.array(w))
               for b, w in zip(before, classifier.trainable_weights))


@pytest.mark.parametrize("cls, kwargs, loss", [
    (BertClassifier, {"num_classes": 3}, "SparseCategoricalCrossentropy"),
    (BertClassifier, {"num_classes": 1}, "MeanSquaredError"),
    (BertTextEmbedder, {}, "MultipleNegativesRankingLoss"),
    (BertMaskedLM, {"next_sentence": True}, ["mlm_logits", "nsp_logits"]),
])
def test_tasks_are_compiled_at_construction_and_when_rebuilt_from_config(encoder, cls, kwargs,
                                                                         loss):
    # keras-hub's way: the constructor compiles with the task's defaults, so a model
    # rebuilt from its config (what a .keras load does first) is compiled too.
    built = cls(encoder, **kwargs)
    for model in (built, cls.from_config(built.get_config())):
        assert model.compiled and type(model.optimizer) is AdamW
        assert model.optimizer.epsilon_form == "torch"
        assert (sorted(model.loss) if hasattr(model.loss, "keys")
                else type(model.loss).__name__) == loss
    assert not cls(encoder, **kwargs, compile=False).compiled


@pytest.mark.parametrize("cls, kwargs, x", [
    (BertClassifier, {"num_classes": 2}, (TEXTS, LABELS)),
    (BertTextEmbedder, {}, ((TEXTS[:2], TEXTS[2:]),)),
])
def test_fit_without_compile_says_call_compile(encoder, vocab_file, cls, kwargs, x):  # noqa: F811
    from keras_bert.text import BertPreprocessor

    preprocessor = BertPreprocessor.from_vocab_file(vocab_file, sequence_length=8)
    model = cls(encoder, **kwargs, preprocessor=preprocessor, compile=False)
    with pytest.raises(ValueError, match=r"You must call `compile\(\)`"):
        model.fit(*x, epochs=1, verbose=0)
    assert not model.compiled


def test_compile_without_arguments_gives_each_tasks_defaults(encoder, batch):
    classifier = BertClassifier(encoder, num_classes=3)
    classifier.compile()
    assert type(classifier.optimizer) is AdamW
    assert classifier.loss.get_config()["from_logits"] is True

    regression = BertClassifier(encoder, num_classes=1)
    regression.compile()
    assert isinstance(regression.loss, keras.losses.MeanSquaredError)
    y = np.array([0.5, -1.0], "float32")
    loss, mae = regression.evaluate(batch, y, verbose=0)
    out = np.asarray(regression(batch, training=False))[:, 0]
    assert loss == pytest.approx(float(np.mean((out - y) ** 2)), rel=1e-4)
    assert mae == pytest.approx(float(np.mean(np.abs(out - y))), rel=1e-4)

    qa = BertSpanLabeler(encoder)
    qa.compile()
    y = {"start_logits": np.array([1, 4]), "end_logits": np.array([2, 5])}
    result = qa.evaluate(batch, y, verbose=0, return_dict=True)
    out = qa(batch, training=False)

    def ce(logits, labels):
        logits = np.asarray(logits, "float64")
        logits = logits - logits.max(-1, keepdims=True)
        logp = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
        return float(-logp[np.arange(len(labels)), labels].mean())

    # run_squad.py's loss: the mean of the start and end cross-entropies.
    expected = 0.5 * ce(out["start_logits"], y["start_logits"]) + 0.5 * ce(
        out["end_logits"], y["end_logits"])
    assert result["loss"] == pytest.approx(expected, rel=1e-4)

    # A user's own optimizer keeps the task's loss.
    classifier.compile(optimizer=keras.optimizers.SGD(0.1))
    assert isinstance(classifier.optimizer, keras.optimizers.SGD)
    assert classifier.loss.get_config()["from_logits"] is True


def test_fit_traces_its_step_once_and_a_refused_fit_builds_nothing(
        encoder, vocab_file, monkeypatch):  # noqa: F811
    # Keras creates the optimizer's variables in the step's first trace, and a
    # tf.function that creates variables is traced a second time; fit builds them first.
    from keras_bert.text import BertPreprocessor

    preprocessor = BertPreprocessor.from_vocab_file(vocab_file, sequence_length=16)
    classifier = BertClassifier(encoder, num_classes=2, preprocessor=preprocessor)
    with pytest.raises(ValueError, match="labels"):
        classifier.fit(TEXTS, epochs=1, verbose=0)
    assert not classifier.optimizer.built  # a refused fit leaves the model as it was
    traces = []
    step = BertClassifier.train_step
    monkeypatch.setattr(BertClassifier, "train_step",
                        lambda self, data: traces.append(1) or step(self, data))
    classifier.fit(TEXTS, LABELS, batch_size=2, epochs=2, verbose=0)
    assert classifier.optimizer.built and len(traces) == 1
    # Ids of any integer type are one dtype: the next fits reuse the step.
    for labels in (np.array(LABELS, "int64"), np.array(LABELS, "uint8"), [True, False] * 2):
        classifier.fit(TEXTS, labels, batch_size=2, epochs=1, verbose=0)
    assert len(traces) == 1


def test_tagger_default_loss_and_accuracy_skip_unlabeled_pieces(encoder, batch):
    tagger = BertTokenClassifier(encoder, num_classes=4)  # Compiled at construction.
    # -1: no label ([CLS], [SEP], continuation pieces, padding), as the CoNLL reader writes.
    y = np.array([[-1, 2, 1, -1, -1, -1, -1], [-1, 3, 0, -1, 1, 2, -1]])
    result = tagger.evaluate(batch, y, verbose=0, return_dict=True)
    logits = np.asarray(tagger(batch, training=False), "float64")
    logp = logits - logits.max(-1, keepdims=True)
    logp = logp - np.log(np.exp(logp).sum(-1, keepdims=True))
    rows, cols = np.nonzero(y >= 0)
    assert result["loss"] == pytest.approx(float(-logp[rows, cols, y[rows, cols]].mean()),
                                           rel=1e-4)
    hits = logits[rows, cols].argmax(-1) == y[rows, cols]
    assert result["accuracy"] == pytest.approx(float(hits.mean()), abs=1e-6)

    # sample_weight 0 drops a labeled piece from the accuracy too.
    weight = (y >= 0).astype("float32")
    weight[1, 4:] = 0.0
    result = tagger.evaluate(batch, y, sample_weight=weight, verbose=0, return_dict=True)
    rows, cols = np.nonzero(weight > 0)
    hits = logits[rows, cols].argmax(-1) == y[rows, cols]
    assert result["accuracy"] == pytest.approx(float(hits.mean()), abs=1e-6)


@pytest.mark.parametrize("loss", [
    "sparse_categorical_crossentropy",
    "SparseCategoricalCrossentropy",
    "categorical_crossentropy",
    keras.losses.SparseCategoricalCrossentropy(),
    keras.losses.sparse_categorical_crossentropy,
    "binary_crossentropy",
])
def test_a_probability_loss_on_logits_is_refused(encoder, loss):
    classifier = BertClassifier(encoder, num_classes=3, compile=False)
    with pytest.raises(ValueError, match="reads probabilities.*outputs logits.*from_logits=True"):
        classifier.compile(optimizer="adam", loss=loss)
    assert not classifier.compiled


def test_probability_loss_in_a_dict_is_refused_and_logit_losses_pass(encoder):
    qa = BertSpanLabeler(encoder)
    with pytest.raises(ValueError, match="'sparse_categorical_crossentropy' reads probabilities"):
        qa.compile(loss={"start_logits": keras.losses.SparseCategoricalCrossentropy(
            from_logits=True), "end_logits": "sparse_categorical_crossentropy"})
    qa.compile(loss={"start_logits": keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                     "end_logits": keras.losses.SparseCategoricalCrossentropy(from_logits=True)})
    assert qa.compiled
    classifier = BertClassifier(encoder, num_classes=1)
    classifier.compile(loss="mse")  # Regression reads the output as it is.
    assert classifier.compiled


def test_a_task_without_a_recipe_says_what_to_pass(encoder):
    class Custom(BertTask):
        def __init__(self, encoder, **kwargs):
            self.encoder = encoder
            inputs = dict(encoder.input)
            super().__init__(inputs=inputs, outputs=encoder(inputs)["pooled_output"], **kwargs)

    model = Custom(encoder)
    with pytest.raises(ValueError, match=r"pass compile\(optimizer=\.\.\.\)"):
        model.compile()
    with pytest.raises(ValueError, match=r"pass compile\(loss=\.\.\.\)"):
        model.compile(optimizer="adam")
    model.compile(optimizer="adam", loss="mse")
    assert model.compiled


@pytest.mark.slow  # Tens of seconds of the default tier's time (round 10).
def test_a_loss_of_ones_own_means_keras_metrics_not_the_defaults(encoder_dir):
    classifier = BertClassifier.from_pretrained(encoder_dir, num_classes=2)
    loss, accuracy = classifier.evaluate(TEXTS, np.array(LABELS), verbose=0)
    # Keras would keep from_pretrained's metrics on a later compile without any.
    classifier.compile(optimizer="adam",
                       loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    assert classifier.evaluate(TEXTS, np.array(LABELS), verbose=0) == pytest.approx(loss)
    classifier.compile(metrics=None)
    assert classifier.evaluate(TEXTS, np.array(LABELS), verbose=0) == pytest.approx(loss)
    classifier.compile(metrics=["accuracy"])
    assert classifier.evaluate(TEXTS, np.array(LABELS), verbose=0) == pytest.approx(
        [loss, accuracy])


def test_help_says_strings_work_after_from_pretrained_and_it_is_compiled():
    import pydoc

    text = " ".join(pydoc.render_doc(BertClassifier, renderer=pydoc.plaintext).split())
    assert "Strings work after `from_pretrained`" in text
    assert "Compiled at construction" in text
