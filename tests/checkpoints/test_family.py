"""DistilBERT and ELECTRA folders load in one call as BertEncoder variants (issue 39).

The fixtures under tests/fixtures/family/ were written by
tests/fixtures/makers/make_family_fixtures.py with transformers' own DistilBertForMaskedLM and
ElectraForPreTraining (save_pretrained), together with those models' outputs
(expected.npz). So this file needs neither torch nor transformers, and the
ground truth is the source's runtime, not keras_bert's reading of its names.
"""

import json
import logging
import os
import shutil

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_bert.checkpoints import CheckpointError, read_checkpoint
from keras_bert.config import BertConfig
from keras_bert.models import BertEncoder
from keras_bert.tasks import (
    BertClassifier,
    BertMaskedLM,
    BertMultiLabelClassifier,
    BertSpanLabeler,
    BertTextEmbedder,
    BertTokenClassifier,
)
from tests.checkpoints.conftest import offline_caches, stored_fixture

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FIXTURES = os.path.join(ROOT, "tests", "fixtures", "family")
COMMIT = "0123456789abcdef0123456789abcdef01234567"
# float32 torch vs float32 Keras with a fused QKV projection: ~3e-6 (DistilBERT)
# and ~8e-6 (ELECTRA, one more Dense) apart at most, on outputs of size ~3; on a CPU
# with AMX, oneDNN's kernels put one ELECTRA value 1.2e-5 away (2e-5 of it): RTOL.
ATOL = 1e-5
RTOL = 1e-5
KINDS = ("distilbert", "electra")


@pytest.fixture(scope="module", autouse=True)
def cache(tmp_path_factory):
    """One conversion cache for the module; the Hugging Face cache empty and offline."""
    with offline_caches(tmp_path_factory.mktemp("family")) as root:
        yield root


def _fixture(kind):
    return stored_fixture("family", kind)


def _inputs(expected, prefix=""):
    return {k: expected[prefix + k] for k in ("token_ids", "segment_ids", "padding_mask")}


def _copy(kind, path):
    shutil.copytree(os.path.join(FIXTURES, kind), path)
    return str(path)


def _edit_config(folder, **changes):
    path = os.path.join(folder, "config.json")
    with open(path) as f:
        values = json.load(f)
    values.update(changes)
    for key in [k for k, v in changes.items() if v is None]:
        del values[key]
    with open(path, "w") as f:
        json.dump(values, f)


def _assert_sequence_matches(encoder, expected, prefix=""):
    out = encoder(_inputs(expected, prefix), training=False)
    real = expected[prefix + "padding_mask"].astype(bool)
    np.testing.assert_allclose(np.asarray(out["sequence_output"])[real],
                               expected[prefix + "sequence_output"][real], atol=ATOL, rtol=RTOL)
    return out


@pytest.mark.parametrize("kind", KINDS)
def test_folder_loads_in_one_call_and_matches_transformers(kind):
    folder, expected = _fixture(kind)
    encoder = BertEncoder.from_pretrained(folder)
    out = _assert_sequence_matches(encoder, expected)
    # No pooler: pooled_output is the [CLS] vector itself, for every task head.
    assert encoder.pooler is None and not encoder.use_pooler
    np.testing.assert_array_equal(np.asarray(out["pooled_output"]),
                                  np.asarray(out["sequence_output"])[:, 0])
    names = [w.path for w in encoder.weights]
    assert not any("pooler" in n for n in names)
    if kind == "distilbert":
        assert encoder.type_vocab_size == 0 and encoder.embeddings.segment_embeddings is None
        # Segment ids are an input all the same, and change nothing.
        other = dict(_inputs(expected), segment_ids=1 - expected["segment_ids"])
        np.testing.assert_array_equal(np.asarray(encoder(other)["sequence_output"]),
                                      np.asarray(out["sequence_output"]))
    else:
        assert encoder.embedding_size == 16 and encoder.hidden_size == 32
        assert encoder.embeddings.token_embeddings.shape == (100, 16)
        assert encoder.embeddings_project.kernel.shape == (16, 32)


@pytest.mark.parametrize("kind", KINDS)
def test_texts_tokenize_as_the_source_tokenizer_and_give_its_outputs(kind):
    folder, expected = _fixture(kind)
    encoder = BertEncoder.from_pretrained(folder)
    assert encoder.preprocessor.tokenizer.lowercase is True  # tokenizer_config.json
    texts = [str(t) for t in expected["text"]]
    texts_b = [str(b) for b in expected["text_b"]]
    # Single texts and the pair separately (a pair batch gives every row a text_b).
    for rows in ([0, 1], [2]):
        columns = (tf.constant([texts[i] for i in rows]),)
        if texts_b[rows[0]]:
            columns += (tf.constant([texts_b[i] for i in rows]),)
        packed = {k: np.asarray(v) for k, v in encoder.preprocessor(columns).items()}
        for j, row in enumerate(rows):
            ours = packed["padding_mask"][j].astype(bool)
            theirs = expected["text_padding_mask"][row].astype(bool)
            np.testing.assert_array_equal(packed["token_ids"][j][ours],
                                          expected["text_token_ids"][row][theirs])
    _assert_sequence_matches(encoder, expected, prefix="text_")


def test_distilbert_masked_lm_head_matches_transformers():
    folder, expected = _fixture("distilbert")
    model = BertMaskedLM.from_pretrained(folder)
    batch, seq = expected["token_ids"].shape
    positions = np.tile(np.arange(seq, dtype=np.int32), (batch, 1))
    logits = np.asarray(model({**_inputs(expected), "masked_positions": positions},
                              training=False))
    real = expected["padding_mask"].astype(bool)
    scale = np.abs(expected["mlm_logits"]).max()
    np.testing.assert_allclose(logits[real], expected["mlm_logits"][real],
                               atol=ATOL * max(1.0, scale), rtol=RTOL)


@pytest.mark.parametrize("kind", KINDS)
def test_hub_id_in_the_hugging_face_cache_loads_like_a_folder(kind, cache):
    folder, expected = _fixture(kind)
    repo = cache / "hf_cache" / f"models--tiny-org--tiny-{kind}"
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text(COMMIT)
    shutil.copytree(folder, repo / "snapshots" / COMMIT)
    encoder = BertEncoder.from_pretrained(f"tiny-org/tiny-{kind}")
    _assert_sequence_matches(encoder, expected)


@pytest.mark.parametrize("kind", KINDS)
def test_saved_model_dir_and_keras_file_round_trip(kind, tmp_path):
    folder, expected = _fixture(kind)
    encoder = BertEncoder.from_pretrained(folder)
    want = np.asarray(encoder(_inputs(expected))["sequence_output"])
    encoder.save_pretrained(str(tmp_path / "dir"))
    with open(tmp_path / "dir" / "config.json") as f:
        saved = BertConfig.from_dict(json.load(f))
    assert saved == encoder.get_bert_config()
    again = BertEncoder.from_pretrained(str(tmp_path / "dir"))
    np.testing.assert_array_equal(np.asarray(again(_inputs(expected))["sequence_output"]), want)
    path = str(tmp_path / "encoder.keras")
    encoder.save(path)
    reloaded = keras.saving.load_model(path)
    assert reloaded.get_bert_config() == encoder.get_bert_config()
    np.testing.assert_array_equal(np.asarray(reloaded(_inputs(expected))["sequence_output"]),
                                  want)


def test_bert_configs_without_the_new_fields_read_as_before():
    # A config.json written before embedding_size/use_pooler existed.
    old = {k: v for k, v in BertConfig().to_dict().items()
           if k not in ("embedding_size", "use_pooler", "pooler_act")}
    config = BertConfig.from_dict(old)
    assert config.embedding_size is None and config.use_pooler is True
    assert config.pooler_act == "tanh"
    # ... and a BERT config is written as before, without them.
    assert json.loads(config.to_json()) == old
    electra = BertConfig(**{**old, "embedding_size": 16, "use_pooler": False})
    assert json.loads(electra.to_json()) == {**old, "embedding_size": 16, "use_pooler": False}
    assert BertConfig.from_json(electra.to_json()) == electra
    encoder = BertEncoder(**BertConfig.from_preset("tiny", vocab_size=50).to_dict())
    assert encoder.embeddings_project is None and encoder.pooler is not None
    assert encoder.embeddings.segment_embeddings.shape == (2, 128)


# === Task heads on the variants ===

TEXTS = ["the quick brown fox", "a great movie, i love it", "john lives in paris",
         "what a bad film", "mary works in london", "the dog was lazy"]


def _fit_two_steps(model, x, y=None):
    history = model.fit(x, y, batch_size=3, epochs=1, steps_per_epoch=2, verbose=0)
    losses = history.history["loss"]
    assert len(losses) == 1 and np.isfinite(losses[0])


def _task_data(task):
    """(from_pretrained arguments, x, y) of a 2-step raw-string fit of `task`."""
    if task is BertClassifier:
        return dict(num_classes=3), TEXTS, np.array([0, 1, 2, 0, 1, 2])
    if task is BertMultiLabelClassifier:
        return (dict(num_classes=2, label_names=["a", "b"]), TEXTS,
                [["a"], ["b"], ["a", "b"]] * 2)
    if task is BertTokenClassifier:
        words = [t.split() for t in TEXTS]
        return (dict(num_classes=2, label_names=["O", "X"]), words,
                [["X"] + ["O"] * (len(w) - 1) for w in words])
    if task is BertSpanLabeler:
        answers = [{"text": ["paris"], "answer_start": [14]}] * 6
        return {}, (["where does john live ?"] * 6, ["john lives in paris"] * 6), answers
    if task is BertMaskedLM:
        return {}, TEXTS, None
    return {}, (TEXTS, TEXTS[::-1]), None  # BertTextEmbedder: pairs.


def _build_and_fit(kind, task):
    folder, expected = _fixture(kind)
    options, x, y = _task_data(task)
    model = task.from_pretrained(folder, **options)
    # The encoder is the converted one: its outputs are the source's.
    _assert_sequence_matches(model.encoder, expected)
    _fit_two_steps(model, x, y)
    return model


@pytest.mark.parametrize("kind", KINDS)
def test_every_task_head_builds_on_the_variant_and_the_classifier_reads_the_cls_vector(kind):
    folder, expected = _fixture(kind)
    encoder = BertEncoder.from_pretrained(folder)
    inputs = _inputs(expected)
    cls = np.asarray(encoder(inputs)["sequence_output"])[:, 0]
    classifier = BertClassifier(encoder, num_classes=3, dropout_rate=0.0, compile=False)
    dense = classifier.output_dense
    # No pooler: logits = W h_[CLS] + b. (Its fine-tuning: test_classifier_fine_tunes_...)
    np.testing.assert_allclose(np.asarray(classifier(inputs)),
                               cls @ np.asarray(dense.kernel) + np.asarray(dense.bias),
                               atol=1e-5)
    assert BertMultiLabelClassifier(encoder, num_classes=2, compile=False)(inputs).shape == (3, 2)
    assert BertTokenClassifier(encoder, num_classes=2, compile=False)(inputs).shape == (3, 12, 2)
    spans = BertSpanLabeler(encoder, compile=False)(inputs)
    assert spans["start_logits"].shape == (3, 12)
    assert BertTextEmbedder(encoder, compile=False)(inputs).shape == (3, 32)
    positions = np.zeros((3, 2), np.int32)
    masked = BertMaskedLM(encoder, compile=False)({**inputs, "masked_positions": positions})
    assert masked.shape == (3, 2, 100)


# Every other task from raw strings on ELECTRA (the variant with most to get wrong: the
# embedding projection, which the masked LM's tied output must map back through, and a
# segment table), and on DistilBERT the two whose path differs there: span QA packs pairs
# (segment id 1) for an encoder without a segment table, and the masked LM reads
# DistilBERT's own MLM head. The multi-label, tagger and embedder heads read [CLS] or every
# position alike on both variants: on DistilBERT they build in
# test_every_task_head_builds_on_the_variant_..., and its encoder fine-tunes in
# test_classifier_fine_tunes_and_its_raw_string_export_gives_the_keras_outputs.
FINE_TUNED = [("electra", task) for task in (BertMultiLabelClassifier, BertTokenClassifier,
                                             BertSpanLabeler, BertTextEmbedder, BertMaskedLM)]
FINE_TUNED += [("distilbert", BertSpanLabeler), ("distilbert", BertMaskedLM)]


@pytest.mark.slow  # 7 fine-tunings.
@pytest.mark.parametrize("kind, task", FINE_TUNED)
def test_every_task_builds_and_fine_tunes(kind, task):
    _build_and_fit(kind, task)


@pytest.mark.slow  # Fine-tunes, exports a SavedModel and reloads it (~20 s).
@pytest.mark.parametrize("kind", KINDS)
def test_classifier_fine_tunes_and_its_raw_string_export_gives_the_keras_outputs(kind,
                                                                                 tmp_path):
    from keras_bert.export import export_model

    # The classifier's case of test_every_task_builds_and_fine_tunes: two optimizer
    # steps on raw strings move the converted encoder's weights.
    classifier = _build_and_fit(kind, BertClassifier)
    folder, expected = _fixture(kind)
    before = BertEncoder.from_pretrained(folder).embeddings.token_embeddings
    assert not np.allclose(np.asarray(classifier.encoder.embeddings.token_embeddings),
                           np.asarray(before))
    model_dir = str(tmp_path / "model")
    classifier.save_pretrained(model_dir)
    export_dir = export_model(model_dir, str(tmp_path / "exports" / kind), warmup=False)
    loaded = tf.saved_model.load(export_dir)
    got = loaded.signatures["serving_default"](text=tf.constant(TEXTS))["probabilities"].numpy()
    logits = classifier.predict(TEXTS, verbose=0)
    logits = logits["logits"] if isinstance(logits, dict) else logits
    want = tf.nn.softmax(np.asarray(logits, np.float32)).numpy()
    np.testing.assert_allclose(got, want, atol=1e-5)
    # The integer signature takes the packer's segment ids (unused by DistilBERT).
    encoded = loaded.signatures["encode"](**{k: tf.constant(v)
                                             for k, v in _inputs(expected).items()})
    keras_out = classifier.encoder(_inputs(expected))
    real = expected["padding_mask"].astype(bool)
    np.testing.assert_allclose(encoded["sequence_output"].numpy()[real],
                               np.asarray(keras_out["sequence_output"])[real], atol=ATOL,
                               rtol=RTOL)


# === Heads keras_bert maps, and the ones it leaves ===

def test_distilbert_token_classifier_head_is_mapped(tmp_path):
    folder = _copy("distilbert", tmp_path / "tagger")
    _, expected = _fixture("distilbert")
    from safetensors.numpy import load_file, save_file

    tensors = load_file(os.path.join(folder, "model.safetensors"))
    tensors = {k: v for k, v in tensors.items() if k.startswith("distilbert.")}
    rng = np.random.default_rng(3)
    weight = rng.normal(0, 0.5, (2, 32)).astype(np.float32)
    bias = rng.normal(0, 0.5, (2,)).astype(np.float32)
    save_file({**tensors, "classifier.weight": weight, "classifier.bias": bias},
              os.path.join(folder, "model.safetensors"))
    _edit_config(folder, architectures=["DistilBertForTokenClassification"],
                 id2label={"0": "O", "1": "B-PER"})
    tagger = BertTokenClassifier.from_pretrained(folder)
    assert tagger.label_names == ["O", "B-PER"]
    logits = np.asarray(tagger(_inputs(expected), training=False))
    real = expected["padding_mask"].astype(bool)
    np.testing.assert_allclose(logits[real], (expected["sequence_output"] @ weight.T + bias)[real],
                               atol=1e-4)


@pytest.mark.parametrize("kind, pooler_act, dropout", [("distilbert_classifier", "relu", 0.2),
                                                       ("electra_classifier", "gelu", 0.1)])
def test_sequence_classifier_keeps_its_dense_on_cls_and_its_head(kind, pooler_act, dropout):
    # DistilBERT's pre_classifier + ReLU and ELECTRA's classifier.dense + GELU are
    # the pooler; classifier / classifier.out_proj is BertClassifier's head.
    folder, expected = _fixture(kind)
    classifier = BertClassifier.from_pretrained(folder)
    assert classifier.encoder.use_pooler and classifier.encoder.pooler_act == pooler_act
    assert classifier.label_names == ["negative", "neutral", "positive"]
    assert classifier.dropout.rate == pytest.approx(dropout)
    _assert_sequence_matches(classifier.encoder, expected)
    for prefix in ("", "text_"):
        logits = np.asarray(classifier(_inputs(expected, prefix), training=False))
        np.testing.assert_allclose(logits, expected[prefix + "logits"], atol=ATOL, rtol=RTOL)
    # Raw strings: the source tokenizer's ids, so its logits.
    got = classifier.predict([str(t) for t in expected["text"][:2]], verbose=0)
    got = got["logits"] if isinstance(got, dict) else got
    np.testing.assert_allclose(np.asarray(got), expected["text_logits"][:2], atol=ATOL, rtol=RTOL)


def test_electra_discriminator_head_is_left_with_one_line(caplog, tmp_path, monkeypatch):
    monkeypatch.setenv("KERAS_BERT_CACHE", str(tmp_path))  # Converted (and logged) anew.
    folder, expected = _fixture("electra")
    source = read_checkpoint(folder)
    lines = [w for w in source.warnings if "discriminator_predictions" in w]
    assert len(lines) == 1 and "is left" in lines[0]
    assert "discriminator_predictions.dense_prediction.weight" in lines[0]
    assert sorted(source.unused) == sorted(
        f"discriminator_predictions.{n}" for n in
        ("dense.weight", "dense.bias", "dense_prediction.weight", "dense_prediction.bias"))
    with caplog.at_level(logging.WARNING):
        classifier = BertClassifier.from_pretrained(folder, num_classes=2)
    assert any("discriminator_predictions" in r.getMessage() and "is left" in r.getMessage()
               for r in caplog.records)
    _assert_sequence_matches(classifier.encoder, expected)


def test_distilbert_multiple_choice_head_is_left_with_one_line(tmp_path):
    from safetensors.numpy import load_file, save_file

    folder = _copy("distilbert", tmp_path / "choice")
    _, expected = _fixture("distilbert")
    tensors = load_file(os.path.join(folder, "model.safetensors"))
    tensors = {k: v for k, v in tensors.items() if k.startswith("distilbert.")}
    extra = {"pre_classifier.weight": (32, 32), "pre_classifier.bias": (32,),
             "classifier.weight": (1, 32), "classifier.bias": (1,)}
    tensors.update({k: np.ones(shape, np.float32) for k, shape in extra.items()})
    save_file(tensors, os.path.join(folder, "model.safetensors"))
    _edit_config(folder, architectures=["DistilBertForMultipleChoice"])
    source = read_checkpoint(folder)
    assert source.head is None and sorted(source.unused) == sorted(extra)
    lines = [w for w in source.warnings if "is left" in w]
    assert len(lines) == 1 and "DistilBertForMultipleChoice" in lines[0]
    _assert_sequence_matches(BertEncoder.from_pretrained(folder), expected)


# === Refusals ===

def test_a_config_without_model_type_is_read_by_its_class_name(tmp_path):
    folder = _copy("distilbert", tmp_path / "old")
    _, expected = _fixture("distilbert")
    _edit_config(folder, model_type=None)  # Uploads older than the key.
    _assert_sequence_matches(BertEncoder.from_pretrained(folder), expected)


def test_sinusoidal_distilbert_is_refused(tmp_path):
    folder = _copy("distilbert", tmp_path / "sin")
    _edit_config(folder, sinusoidal_pos_embds=True)
    with pytest.raises(CheckpointError, match=r"sinusoidal_pos_embds is true.*learned position"):
        BertEncoder.from_pretrained(folder)


def test_missing_distilbert_key_is_named(tmp_path):
    folder = _copy("distilbert", tmp_path / "nokey")
    _edit_config(folder, hidden_dim=None)
    with pytest.raises(CheckpointError, match=r"missing key\(s\) \['hidden_dim'\] of a "
                                              r"DistilBERT config"):
        read_checkpoint(folder)


@pytest.mark.parametrize("model_type, message", [
    ("modernbert", r"is a ModernBERT checkpoint \(model_type='modernbert'\).*BERT "
                   r"\(model_type 'bert'\) and its variants DistilBERT"),
    ("deberta-v2", r"is a DeBERTa-v2 checkpoint \(model_type='deberta-v2'\)"),
    ("albert", r"is a ALBERT checkpoint \(model_type='albert'\)"),
    ("camembert", r"is a CamemBERT checkpoint \(model_type='camembert'\)"),
    ("funnel", r"this is model_type='funnel'.*'bert'.*'distilbert'.*'electra'.*'roberta'.*"
               r"'xlm-roberta'"),
])
def test_other_model_types_stay_refused_by_name(model_type, message, tmp_path):
    folder = _copy("electra", tmp_path / model_type)
    _edit_config(folder, model_type=model_type)
    with pytest.raises(CheckpointError, match=message):
        BertEncoder.from_pretrained(folder)


def test_bpe_files_without_robertas_special_tokens_are_refused_by_name(tmp_path):
    folder = _copy("distilbert", tmp_path / "bpe")
    os.remove(os.path.join(folder, "vocab.txt"))
    os.remove(os.path.join(folder, "tokenizer.json"))
    with open(os.path.join(folder, "vocab.json"), "w") as f:
        json.dump({"<s>": 0, "hello": 1}, f)
    with open(os.path.join(folder, "merges.txt"), "w") as f:
        f.write("#version: 0.2\nh e\n")
    with pytest.raises(CheckpointError, match=r"its BytePairTokenizer cannot be read: .*"
                                              r"no '<pad>'"):
        BertEncoder.from_pretrained(folder)


def test_distilbert_tf_h5_points_to_the_pytorch_weights(tmp_path):
    folder = _copy("distilbert", tmp_path / "tf")
    os.remove(os.path.join(folder, "model.safetensors"))
    with open(os.path.join(folder, "tf_model.h5"), "wb") as f:
        f.write(b"not read")
    with pytest.raises(CheckpointError, match=r"a distilbert tf_model\.h5.*model\.safetensors"):
        BertEncoder.from_pretrained(folder)
