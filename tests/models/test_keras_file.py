""".keras files: compile configuration kept without a warning, the vocabulary
as an asset (a small config), and atomic saves (issues 23 and 24)."""

import json
import os
import stat
import subprocess
import sys
import warnings
import zipfile

import keras
import numpy as np
import pytest

from keras_bert.models import BertEncoder
from keras_bert.tasks import BertClassifier, BertTokenClassifier
from keras_bert.text import BertPreprocessor, BertTokenizer
from keras_bert.training.optimizers import AdamW
from tests.models.conftest import tiny_config
from tests.tasks.conftest import TOKENS, vocab_file  # noqa: F401
from tests.test_case import assert_all_close

TEXTS = ["the movie is good", "a bad film", "i love it", "awful , awful film"]
LABELS = np.array([1, 0, 1, 0])


@pytest.fixture
def classifier(encoder, vocab_file, tmp_path):  # noqa: F811
    path = str(tmp_path / "encoder")
    encoder.save_pretrained(path, vocab_file=vocab_file)
    return BertClassifier.from_pretrained(path, num_classes=2, max_seq_length=8)


def _load_quietly(path):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = keras.models.load_model(path)
    return model, [str(w.message) for w in caught]


@pytest.mark.slow
def test_compile_config_survives_a_keras_file_without_warning(classifier, tmp_path):
    classifier.compile(optimizer=AdamW(learning_rate=3e-4, weight_decay=0.02),
                       metrics=["accuracy"])
    classifier.fit(TEXTS, LABELS, epochs=1, verbose=0)
    expected = classifier.evaluate(TEXTS, LABELS, verbose=0, return_dict=True)
    path = str(tmp_path / "clf.keras")
    classifier.save(path)

    reloaded, messages = _load_quietly(path)
    assert messages == []  # Neither "compile() was not called" nor optimizer mismatches.
    assert reloaded.compiled
    assert type(reloaded.optimizer) is AdamW
    assert float(reloaded.optimizer.learning_rate) == pytest.approx(3e-4)
    assert reloaded.optimizer.epsilon_form == "torch"
    assert reloaded.optimizer.weight_decay == pytest.approx(0.02)
    # The optimizer's state comes back too (its step count and slots).
    assert int(reloaded.optimizer.iterations) == int(classifier.optimizer.iterations) == 1
    assert reloaded.loss.get_config()["from_logits"] is True
    got = reloaded.evaluate(TEXTS, LABELS, verbose=0, return_dict=True)
    assert got["loss"] == pytest.approx(expected["loss"], rel=1e-5)
    assert got["accuracy"] == pytest.approx(expected["accuracy"])
    # And it trains on.
    reloaded.fit(TEXTS, LABELS, epochs=1, verbose=0)
    assert int(reloaded.optimizer.iterations) == 2


def test_default_compile_and_tagger_metric_survive_a_keras_file(encoder, batch, tmp_path):
    tagger = BertTokenClassifier(encoder, num_classes=3)  # Compiled at construction.
    y = np.array([[-1, 2, 1, -1, -1, -1, -1], [-1, 0, 0, -1, 1, 2, -1]])
    expected = tagger.evaluate(batch, y, verbose=0, return_dict=True)
    path = str(tmp_path / "tagger.keras")
    tagger.save(path)
    reloaded, messages = _load_quietly(path)
    assert messages == []  # Neither "compile() was not called" nor optimizer mismatches.
    got = reloaded.evaluate(batch, y, verbose=0, return_dict=True)
    assert got == pytest.approx(expected, rel=1e-5)


def _big_vocab_classifier():
    # 3,000 tokens: inline, they made a config of tens of KB (328 KB for 30,522).
    tokens = TOKENS[:5] + [f"word{i}" for i in range(2995)]
    encoder = BertEncoder(**tiny_config(vocab_size=len(tokens)).to_dict())
    preprocessor = BertPreprocessor(BertTokenizer(tokens), sequence_length=None,
                                    max_seq_length=8)
    classifier = BertClassifier(encoder, num_classes=2, preprocessor=preprocessor)
    classifier.compile(optimizer="adam",
                       loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    return classifier, tokens


def test_vocabulary_is_an_asset_and_the_config_stays_small(tmp_path):
    classifier, tokens = _big_vocab_classifier()
    expected = classifier.predict(["word7 word2999 word12"], verbose=0)
    path = str(tmp_path / "clf.keras")
    classifier.save(path)

    with zipfile.ZipFile(path) as archive:
        config = archive.read("config.json")
        vocab_names = [n for n in archive.namelist() if n.endswith("/vocab.txt")]
        assert len(vocab_names) == 1 and vocab_names[0].startswith("assets/")
        assert archive.read(vocab_names[0]).decode().splitlines() == tokens
    assert len(config) < 8_000, len(config)
    assert b"word2999" not in config
    tokenizer_config = json.loads(config)["config"]["preprocessor"]["config"]["tokenizer"]
    assert tokenizer_config["config"]["lowercase"] is True

    reloaded, _ = _load_quietly(path)
    assert reloaded.preprocessor.tokenizer.vocabulary == tokens
    assert_all_close(reloaded.predict(["word7 word2999 word12"], verbose=0), expected)


def test_a_vocabulary_that_a_text_file_cannot_hold_round_trips(tmp_path):
    tokens = TOKENS[:5] + [" spaced ", "line\nbreak", "ok"]
    tokenizer = BertTokenizer(tokens)
    tokenizer.save_assets(str(tmp_path))
    assert not (tmp_path / "vocab.txt").exists()
    clone = BertTokenizer(None)
    clone.load_assets(str(tmp_path))
    assert clone.vocabulary == tokens and clone.token_to_id("ok") == 7


def test_loading_without_keras_bert_fails_short_and_names_it(tmp_path):
    classifier, _ = _big_vocab_classifier()
    path = str(tmp_path / "clf.keras")
    classifier.save(path)
    script = (
        "import sys, keras\n"
        "try:\n"
        "    keras.models.load_model(sys.argv[1])\n"
        "except Exception as e:\n"
        "    print(len(str(e))); print(str(e)[:400])\n"
    )
    env = dict(os.environ, PYTHONPATH="", TF_CPP_MIN_LOG_LEVEL="3")
    result = subprocess.run([sys.executable, "-c", script, path], capture_output=True,
                            text=True, env=env, cwd=str(tmp_path), timeout=300)
    lines = result.stdout.splitlines()
    assert lines, result.stderr[-2000:]
    assert int(lines[0]) < 6_000  # Not a dump of the vocabulary.
    assert "imported" in lines[1] and "keras_bert" in lines[1]


def _listing(folder):
    return sorted(os.listdir(folder))


def test_a_failed_keras_save_leaves_the_previous_file_loadable(classifier, tmp_path,
                                                              monkeypatch):
    path = str(tmp_path / "clf.keras")
    classifier.save(path)
    expected = classifier.predict(TEXTS, verbose=0)
    before = open(path, "rb").read()

    def disk_full(self, store):
        # Keras has written part of the file (its metadata and config) by now.
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(keras.layers.Dense, "save_own_variables", disk_full)
    with pytest.raises(OSError, match="No space left"):
        classifier.save(path)
    monkeypatch.undo()

    assert open(path, "rb").read() == before
    assert _listing(tmp_path) == ["clf.keras", "encoder", "vocab.txt"]  # No staging left.
    reloaded, _ = _load_quietly(path)
    assert_all_close(reloaded.predict(TEXTS, verbose=0), expected)


def test_keras_save_replaces_the_file_with_normal_permissions(classifier, tmp_path):
    path = tmp_path / "clf.keras"
    path.write_bytes(b"an older model")
    umask = os.umask(0o022)
    try:
        classifier.save(str(path))
    finally:
        os.umask(umask)
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o644
    assert zipfile.is_zipfile(path)
    assert _listing(tmp_path) == ["clf.keras", "encoder", "vocab.txt"]
    # A missing folder is made.
    classifier.save(str(tmp_path / "new" / "clf.keras"))
    assert _listing(tmp_path / "new") == ["clf.keras"]
    # Other formats go to Keras unchanged.
    with pytest.raises(ValueError, match="Invalid filepath extension"):
        classifier.save(str(tmp_path / "clf.h5x"))


def test_a_leading_byte_order_mark_in_a_token_round_trips(tmp_path):
    tokens = ["\ufeffodd"] + TOKENS
    BertTokenizer(tokens).save_assets(str(tmp_path))
    clone = BertTokenizer(None)
    clone.load_assets(str(tmp_path))
    assert clone.vocabulary == tokens
