import keras
import numpy as np
import pytest

from keras_bert.config import BertConfig
from keras_bert.models import BertEncoder
from tests.models.conftest import seeded_encoder, tiny_config
from tests.test_case import assert_all_close, run_model_saving_test, run_saved_model_test


@pytest.fixture(scope="module")
def encoder():
    """tests/models/conftest.py's seeded tiny encoder without dropout, built once for the
    module: no test here changes its weights (they call, save and reload it)."""
    return seeded_encoder()


def test_parameter_counts_match_reference_bert():
    # BERT-base's 109,482,240. Not BERT-large's too (335,141,888): the same code counts
    # it, tests/test_config.py pins the large preset's sizes, and building its 24 layers
    # took 14 s of the default tier. In a stateless scope Keras defers each variable's
    # initializer: the full-size graph gets its weight shapes, not 440 MB of random values.
    with keras.StatelessScope():
        encoder = BertEncoder(**BertConfig.from_preset("base", vocab_size=30522).to_dict())
        assert encoder.count_params() == 109_482_240


def test_outputs_and_shapes(encoder, batch):
    out = encoder(batch)
    assert out["sequence_output"].shape == (2, 7, 16)
    assert out["pooled_output"].shape == (2, 16)
    assert len(out["encoder_outputs"]) == 2
    assert_all_close(out["encoder_outputs"][-1], out["sequence_output"])


def test_padded_tokens_do_not_change_real_positions(encoder, batch):
    out = encoder(batch)["sequence_output"]
    other = dict(batch, token_ids=batch["token_ids"].copy())
    other["token_ids"][0, 5:] = [17, 23]  # different ids at padded positions
    out2 = encoder(other)["sequence_output"]
    np.testing.assert_allclose(np.asarray(out)[0, :5], np.asarray(out2)[0, :5], atol=1e-5)
    assert np.abs(np.asarray(out)[0, 5:] - np.asarray(out2)[0, 5:]).max() > 1e-3


def test_segment_ids_change_outputs(encoder, batch):
    out = encoder(batch)["sequence_output"]
    other = dict(batch, segment_ids=np.ones_like(batch["segment_ids"]))
    out2 = encoder(other)["sequence_output"]
    assert np.abs(np.asarray(out)[0, :5] - np.asarray(out2)[0, :5]).max() > 1e-3


def test_attention_probs_on_request(batch):
    encoder = BertEncoder(**tiny_config().to_dict(), output_attention_probs=True)
    probs = encoder(batch)["attention_probs"]
    assert len(probs) == 2 and probs[0].shape == (2, 2, 7, 7)
    assert float(np.asarray(probs[0])[0, :, :, 5:].max()) == 0.0


def test_config_round_trip(encoder):
    clone = BertEncoder.from_config(encoder.get_config())
    assert clone.get_bert_config() == encoder.get_bert_config()
    assert clone.count_params() == encoder.count_params()


def test_mixed_precision_policy_survives_get_config():
    encoder = BertEncoder(**tiny_config().to_dict(), dtype="mixed_bfloat16")
    clone = BertEncoder.from_config(encoder.get_config())
    assert clone.pooler.dtype_policy.name == "mixed_bfloat16"
    assert clone.embeddings.dtype_policy.name == "mixed_bfloat16"
    # The encoder itself reports its layers' policy (keras-hub's precision checks read it).
    for model in (encoder, clone):
        assert (model.dtype_policy.name, model.compute_dtype, model.variable_dtype) == (
            "mixed_bfloat16", "bfloat16", "float32")


def test_keras_save_and_saved_model(encoder, batch, tmp_path):
    run_model_saving_test(encoder, batch, tmp_path)
    run_saved_model_test(encoder, batch, tmp_path)


def test_save_and_from_pretrained(encoder, batch, tmp_path):
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("".join(f"tok{i}\n" for i in range(30)))
    encoder.save_pretrained(tmp_path / "model", vocab_file=str(vocab))
    assert sorted(p.name for p in (tmp_path / "model").iterdir()) == [
        "config.json", "model.weights.h5", "vocab.txt"]
    loaded = BertEncoder.from_pretrained(tmp_path / "model")
    assert_all_close(loaded(batch), encoder(batch))
    assert loaded.vocab_file.endswith("vocab.txt")


def test_vocab_that_does_not_match_is_rejected(encoder, tmp_path):
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("a\nb\n")
    with pytest.raises(ValueError, match="has 2 tokens, but the model's vocab_size is 30"):
        encoder.save_pretrained(tmp_path / "model", vocab_file=str(vocab))
    assert not (tmp_path / "model").exists()


def test_missing_weights_file_is_named(encoder, tmp_path):
    encoder.save_pretrained(tmp_path / "model")
    (tmp_path / "model" / "model.weights.h5").unlink()
    with pytest.raises(FileNotFoundError, match="model.weights.h5 is missing"):
        BertEncoder.from_pretrained(tmp_path / "model")


def test_config_that_does_not_match_weights_is_rejected(encoder, tmp_path):
    encoder.save_pretrained(tmp_path / "model")
    config = BertConfig.from_json_file(tmp_path / "model" / "config.json")
    config.intermediate_size = 48
    config.to_json_file(tmp_path / "model" / "config.json")
    with pytest.raises(ValueError, match="must come from the same model"):
        BertEncoder.from_pretrained(tmp_path / "model")
