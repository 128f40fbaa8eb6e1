"""RoBERTa, XLM-RoBERTa and BertModel + SentencePiece folders load as BertEncoder variants (issue 48).

The folders are made in the session by transformers itself (random weights,
save_pretrained), and every value is compared with transformers' own forward pass.
"""

import json
import os

import numpy as np
import pytest

from keras_bert.checkpoints import CheckpointError, convert_checkpoint, read_checkpoint
from keras_bert.config import BertConfig
from keras_bert.models import BertEncoder
from keras_bert.tasks import BertClassifier, BertMaskedLM, BertSpanLabeler, BertTokenClassifier
from tests.checkpoints.conftest import (
    family_batch,
    make_family_folder,
    offline_caches,
    transformers_outputs,
)

pytest.importorskip("torch")

# float32 torch vs float32 Keras (fused QKV): a few 1e-6 apart on outputs of size ~3.
ATOL = 1e-4
FOLDERS = {"roberta": "tiny_roberta_folder", "xlm-roberta": "tiny_xlmr_folder",
           "bert": "tiny_bert_sp_folder"}


@pytest.fixture(scope="module", autouse=True)
def cache(tmp_path_factory):
    """One conversion cache for the module; the Hugging Face cache empty and offline."""
    with offline_caches(tmp_path_factory.mktemp("roberta")) as root:
        yield root


def _assert_close(ours, theirs, mask=None):
    ours, theirs = np.asarray(ours), np.asarray(theirs)
    if mask is not None:
        ours, theirs = ours[mask.astype(bool)], theirs[mask.astype(bool)]
    scale = max(1.0, float(np.abs(theirs).max()))
    np.testing.assert_allclose(ours, theirs, atol=ATOL * scale, rtol=0)


@pytest.mark.parametrize("model_type", list(FOLDERS))
def test_encoder_matches_transformers_on_a_padded_batch(model_type, request):
    folder = request.getfixturevalue(FOLDERS[model_type])
    encoder = BertEncoder.from_pretrained(folder)
    inputs = family_batch(30)  # The last row fills every usable position.
    out = encoder(inputs, training=False)
    want = transformers_outputs(folder, inputs, model_type=model_type)
    _assert_close(out["sequence_output"], want["last_hidden_state"], inputs["padding_mask"])
    _assert_close(out["pooled_output"], want["pooler_output"])
    roberta = model_type != "bert"
    # RoBERTa's positions start at pad_token_id + 1: rows 0 and 1 of the table are dropped.
    assert (encoder.max_position_embeddings, encoder.type_vocab_size,
            encoder.layer_norm_epsilon) == ((30, 1, 1e-5) if roberta else (30, 2, 1e-12))
    if roberta:
        # One segment type: segment ids (row 1 is a pair) change nothing.
        zeros = dict(inputs, segment_ids=np.zeros_like(inputs["segment_ids"]))
        np.testing.assert_array_equal(np.asarray(encoder(zeros)["sequence_output"]),
                                      np.asarray(out["sequence_output"]))


def test_roberta_masked_lm_logits_match_transformers(tiny_roberta_folder):
    model = BertMaskedLM.from_pretrained(tiny_roberta_folder)
    inputs = family_batch(12)
    positions = np.tile(np.arange(12, dtype=np.int32), (3, 1))
    logits = model({**inputs, "masked_positions": positions}, training=False)
    want = transformers_outputs(tiny_roberta_folder, inputs, head="ForMaskedLM")["logits"]
    _assert_close(logits, want, inputs["padding_mask"])


@pytest.mark.parametrize("head, task_class, key", [
    ("ForSequenceClassification", BertClassifier, "logits"),
    ("ForTokenClassification", BertTokenClassifier, "logits"),
    ("ForQuestionAnswering", BertSpanLabeler, "start_logits"),
])
def test_fine_tuned_roberta_heads_load_with_their_outputs(head, task_class, key, tmp_path):
    folder = make_family_folder(str(tmp_path / "hf"), "roberta", head=head, seed=3)
    # The converter's own check passes too (transformers' RobertaModel runs no
    # classifier.dense: numpy checks the pooler read from it).
    report = convert_checkpoint(folder, str(tmp_path / "model"), check=True)
    assert "head_logits" in report.max_abs_diff
    model = task_class.from_pretrained(str(tmp_path / "model"))
    inputs = family_batch(12)
    got = model(inputs, training=False)
    want = transformers_outputs(folder, inputs, head=head)
    if key == "start_logits":
        for name in ("start_logits", "end_logits"):
            _assert_close(got[name], want[name], inputs["padding_mask"])
        return
    mask = inputs["padding_mask"] if head == "ForTokenClassification" else None
    _assert_close(got, want[key], mask)
    if head == "ForSequenceClassification":
        # classifier.dense (+ tanh) is the pooler, classifier.out_proj the output layer.
        assert model.label_names == ["neg", "neu", "pos"]
        assert model.encoder.pooler.activation == "tanh"


def test_distilroberta_shaped_folder_converts_with_the_numeric_check(tmp_path):
    folder = make_family_folder(str(tmp_path / "hf"), "roberta", num_hidden_layers=6, seed=5)
    report = convert_checkpoint(folder, str(tmp_path / "model"), check=True)
    assert report.config.num_layers == 6 and " L=6 " in report.summary()
    assert "segments=1" in report.summary()
    assert report.reference.startswith("transformers")
    assert set(report.max_abs_diff) >= {"sequence_output", "mlm_logits"}
    encoder = BertEncoder.from_pretrained(str(tmp_path / "model"))
    inputs = family_batch(12)
    want = transformers_outputs(folder, inputs)["last_hidden_state"]
    _assert_close(encoder(inputs)["sequence_output"], want, inputs["padding_mask"])


def test_model_dir_config_round_trips(tiny_xlmr_folder, tmp_path):
    encoder = BertEncoder.from_pretrained(tiny_xlmr_folder)
    encoder.save_pretrained(str(tmp_path / "dir"))
    with open(tmp_path / "dir" / "config.json") as f:
        saved = json.load(f)
    assert BertConfig.from_dict(saved) == encoder.get_bert_config()
    assert (saved["max_position_embeddings"], saved["type_vocab_size"]) == (30, 1)
    again = BertEncoder.from_pretrained(str(tmp_path / "dir"))
    inputs = family_batch(12)
    np.testing.assert_array_equal(np.asarray(again(inputs)["sequence_output"]),
                                  np.asarray(encoder(inputs)["sequence_output"]))


def test_position_table_that_is_too_short_is_refused_by_name(tmp_path):
    folder = make_family_folder(str(tmp_path / "hf"), "roberta", head="Model")
    path = os.path.join(folder, "config.json")
    with open(path) as f:
        values = json.load(f)
    with open(path, "w") as f:
        json.dump({**values, "max_position_embeddings": 2}, f)
    with pytest.raises(CheckpointError, match=r"max_position_embeddings=2; a roberta model "
                                              r"counts positions from pad_token_id \+ 1 = 2"):
        read_checkpoint(folder)
    # A config that says fewer positions than the table holds: the table is named, sliced.
    with open(path, "w") as f:
        json.dump({**values, "max_position_embeddings": 20}, f)
    with pytest.raises(CheckpointError, match=r"embeddings\.position_embeddings\.weight\[2:\]: "
                                              r"expected shape \(18, 32\), found \(30, 32\)"):
        read_checkpoint(folder)
