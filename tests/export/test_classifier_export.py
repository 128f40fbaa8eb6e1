"""A fine-tuned classifier, exported and served from a process without keras."""

import json
import os

import numpy as np
import pytest
import tensorflow as tf

from keras_bert.export import build_serving_module, export_model, next_version, resolve_export_dir
from keras_bert.export.export import INFO_FILE, save_serving_module
from keras_bert.export.predict import format_outputs, load_export, run_signature
from tests.conftest import clean_result
from tests.export.conftest import (
    LABELS,
    MAX_SEQ_LENGTH,
    preprocessor,
)

TEXTS = [
    "a good movie", "The film was NOT very good!", "cat", "what, where? who did it.",
    "a " + "great film " * 40,  # Longer than MAX_SEQ_LENGTH: truncated.
]
BAD = {
    "empty": "", "spaces": " \t\n ", "invalid_utf8": b"\xff\xfe a \xc3 good", "valid": "a good",
    "huge": "good movie " * 10000,  # 100k characters.
}


def expected_outputs(export):
    """Probabilities and embeddings of the Keras model on BertPreprocessor inputs."""
    classifier = export["model"]
    inputs = preprocessor(export["vocab_file"])(tf.constant(TEXTS))
    logits = classifier(inputs, training=False)
    encoded = classifier.encoder(inputs, training=False)
    mask = tf.cast(inputs["padding_mask"], tf.float32)[:, :, None]
    mean = tf.reduce_sum(encoded["sequence_output"] * mask, 1) / tf.reduce_sum(mask, 1)
    cls_sep = classifier(
        {"token_ids": tf.constant([[2, 3]]), "segment_ids": tf.zeros([1, 2], tf.int32),
         "padding_mask": tf.ones([1, 2], tf.int32)}, training=False)
    return {
        "probabilities": tf.nn.softmax(logits).numpy(),
        "pooled_output": encoded["pooled_output"].numpy(),
        "mean_embedding": mean.numpy(),
        "cls_sep": tf.nn.softmax(cls_sep).numpy()[0],
        "width": int(inputs["token_ids"].shape[1]),
    }


CLEAN_CHECKS = """
loaded = tf.saved_model.load(ARGS["export_dir"])
serve = loaded.signatures["serving_default"]
out = serve(text=tf.constant(ARGS["texts"]))
result["outputs"] = {k: jsonable(v) for k, v in out.items()}
result["dtypes"] = {k: v.dtype.name for k, v in out.items()}
emb = loaded.signatures["embed"](text=tf.constant(ARGS["texts"]))
result["embed"] = {k: jsonable(v) for k, v in emb.items()}
result["preprocess_shape"] = loaded.signatures["preprocess"](
    text=tf.constant(["a", "a good movie"]))["token_ids"].shape.as_list()
result["vocab_asset"] = open(os.path.join(
    ARGS["export_dir"], "assets", "vocab.txt")).read().split("\\n")[:5]

bad = {k: (v.encode("latin-1") if k == "invalid_utf8" else v) for k, v in ARGS["bad"].items()}
out = serve(text=tf.constant(list(bad.values())))
result["bad"] = {name: {k: jsonable(v[i]) for k, v in out.items()}
                 for i, name in enumerate(bad)}
result["bad_finite"] = all(np.isfinite(v.numpy()).all() for v in out.values()
                           if v.dtype.is_floating)
empty = serve(text=tf.constant([], tf.string))
result["empty_batch"] = {k: v.shape.as_list() for k, v in empty.items()}
empty = loaded.signatures["embed"](text=tf.constant([], tf.string))
result["empty_batch_embed"] = {k: v.shape.as_list() for k, v in empty.items()}

errors = {}
for name, call in {
    "int_text": lambda: serve(text=tf.constant([1, 2])),
    "rank2_text": lambda: serve(text=tf.constant([["a", "b"]])),
    "bad_token_id": lambda: loaded.signatures["encode"](
        token_ids=tf.constant([[2, 999, 3]]), segment_ids=tf.zeros([1, 3], tf.int32),
        padding_mask=tf.ones([1, 3], tf.int32)),
    "too_long": lambda: loaded.signatures["encode"](
        token_ids=tf.fill([1, 40], 5), segment_ids=tf.zeros([1, 40], tf.int32),
        padding_mask=tf.ones([1, 40], tf.int32)),
}.items():
    try:
        call()
        errors[name] = None
    except Exception as e:  # The process survives; the error names the problem.
        errors[name] = f"{type(e).__name__}: {e}"
result["errors"] = errors
enc = loaded.signatures["encode"](
    token_ids=tf.constant([[2, 17, 3, 0]]), segment_ids=tf.zeros([1, 4], tf.int32),
    padding_mask=tf.constant([[1, 1, 1, 0]]))
result["encode_shapes"] = {k: v.shape.as_list() for k, v in enc.items()}
result["after_errors"] = jsonable(serve(text=tf.constant(["a good movie"]))["label"])
"""


def clean_args(request):
    """ARGS of CLEAN_CHECKS, run in the session's clean process (tests/conftest.py)."""
    classifier_export = request.getfixturevalue("classifier_export")
    return dict(
        export_dir=classifier_export["export_dir"], texts=TEXTS,
        export_dirs=[classifier_export["export_dir"]],
        bad={k: (v.decode("latin-1") if isinstance(v, bytes) else v) for k, v in BAD.items()},
    )


@pytest.fixture(scope="module")
def clean(clean_process):
    return clean_result(clean_process, "classifier")


def test_loads_without_keras_and_matches_the_keras_model(classifier_export, clean):
    assert clean["python_modules"] == []
    expected = expected_outputs(classifier_export)
    outputs = clean["outputs"]
    assert clean["dtypes"] == {"probabilities": "float32", "label_id": "int32",
                               "label": "string"}
    np.testing.assert_allclose(outputs["probabilities"], expected["probabilities"],
                               atol=1e-5, rtol=0)
    # The fit moved the model: the texts do not all get the same answer.
    assert np.ptp(np.asarray(outputs["probabilities"])[:, 2]) > 0.05
    label_ids = np.argmax(expected["probabilities"], -1)
    assert outputs["label_id"] == label_ids.tolist()
    assert outputs["label"] == [LABELS[i] for i in label_ids]
    np.testing.assert_allclose(clean["embed"]["pooled_output"], expected["pooled_output"],
                               atol=1e-5, rtol=0)
    np.testing.assert_allclose(clean["embed"]["mean_embedding"], expected["mean_embedding"],
                               atol=1e-5, rtol=0)
    assert clean["vocab_asset"] == ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]


def test_the_only_op_beyond_core_tensorflow_is_fast_wordpiece(clean):
    # Stock TF Serving links tensorflow-text's ops_lib, which has this op.
    assert list(clean["non_core_ops"].values()) == [["FastWordpieceTokenizeWithOffsets"]]


def test_batch_is_padded_to_its_longest_text(clean):
    # "a good movie" -> [CLS] a good movie [SEP]: 5 positions, not MAX_SEQ_LENGTH.
    assert clean["preprocess_shape"] == [2, 5]


def test_bad_inputs_get_defined_results(classifier_export, clean):
    bad = clean["bad"]
    assert clean["bad_finite"]
    expected = expected_outputs(classifier_export)["cls_sep"]
    # Empty and whitespace-only texts classify as [CLS] [SEP].
    for name in ("empty", "spaces"):
        np.testing.assert_allclose(bad[name]["probabilities"], expected, atol=1e-5, rtol=0)
    # Invalid bytes are dropped, as the reference tokenizer drops U+FFFD.
    np.testing.assert_allclose(bad["invalid_utf8"]["probabilities"],
                               bad["valid"]["probabilities"], atol=1e-6, rtol=0)
    for row in bad.values():
        assert abs(sum(row["probabilities"]) - 1) < 1e-5
        assert row["label"] in LABELS
    assert clean["empty_batch"] == {"probabilities": [0, 3], "label_id": [0], "label": [0]}
    assert clean["empty_batch_embed"] == {"pooled_output": [0, 16], "mean_embedding": [0, 16]}


def test_bad_calls_raise_clear_errors_and_the_process_survives(clean):
    errors = clean["errors"]
    assert "string" in errors["int_text"]
    assert errors["rank2_text"] is not None
    assert "vocab_size=40" in errors["bad_token_id"]
    assert "max_position_embeddings=32" in errors["too_long"]
    assert clean["encode_shapes"] == {"sequence_output": [1, 4, 16], "pooled_output": [1, 16]}
    assert clean["after_errors"] == [clean["outputs"]["label"][0]]


def test_serving_runs_the_model_on_batch_longest_positions(classifier_export):
    module = build_serving_module(classifier_export["model"],
                                  vocab_file=classifier_export["vocab_file"])
    seen = tf.Variable([0, 0])
    run_model = module.run_model

    def spy(inputs):  # Records the [batch, seq] shape the model part runs on.
        seen.assign(tf.shape(inputs["token_ids"]))
        return run_model(inputs)

    module.run_model = spy
    module.classify(tf.constant(["a", "a good movie"]))
    assert seen.numpy().tolist() == [2, 5]
    module.classify(tf.constant(["a", "good " * 100]))
    assert seen.numpy().tolist() == [2, MAX_SEQ_LENGTH]


def test_fixed_length_and_multiple_of_padding(classifier_export):
    fixed = build_serving_module(classifier_export["model"], sequence_length=16)
    assert fixed.preprocess(tf.constant(["a"]))["token_ids"].shape == (1, 16)
    rounded = build_serving_module(classifier_export["model"], pad_to_multiple_of=8)
    assert rounded.preprocess(tf.constant(["a good"]))["token_ids"].shape == (1, 8)
    long = rounded.preprocess(tf.constant(["good " * 100]))["token_ids"]
    assert long.shape == (1, MAX_SEQ_LENGTH)  # Rounded up, but never past max_seq_length.


@pytest.mark.slow
def test_sub_batches_match_the_default_export_in_input_order(classifier_export, tmp_path):
    # Mixed lengths in an order that sorting changes: 24 texts, so that
    # sub_batches=3 splits (>= 8 a sub-batch) and rows must be put back.
    words = ["a good movie", "cat", "the film was not very good at all", "what ?",
             "a " + "great film " * 40, "the dog jumped over the fox", "b", "awful"]
    texts = tf.constant([words[(7 * i) % 8] + " x" * (i % 5) for i in range(24)])
    default = build_serving_module(classifier_export["model"])
    sorted_module = build_serving_module(classifier_export["model"], sub_batches=3)
    expected = default.classify(texts)
    out = sorted_module.classify(texts)
    np.testing.assert_allclose(out["probabilities"], expected["probabilities"], atol=1e-5)
    assert out["label"].numpy().tolist() == expected["label"].numpy().tolist()
    # Below 8 texts a sub-batch the request runs whole; an empty one works.
    np.testing.assert_allclose(sorted_module.classify(texts[:5])["probabilities"],
                               expected["probabilities"][:5], atol=1e-5)
    assert sorted_module.classify(tf.constant([], tf.string))["label"].shape == (0,)
    path = export_model(classifier_export["model_dir"], str(tmp_path / "sorted"), sub_batches=3)
    with open(os.path.join(path, INFO_FILE), encoding="utf-8") as f:
        assert json.load(f)["sub_batches"] == 3
    reloaded = tf.saved_model.load(path).signatures["serving_default"]
    np.testing.assert_allclose(reloaded(text=texts)["probabilities"],
                               expected["probabilities"], atol=1e-5)
    with pytest.raises(ValueError, match="sub_batches=0"):
        build_serving_module(classifier_export["model"], sub_batches=0)


def test_mixed_bfloat16_export_is_close_and_records_its_dtype(classifier_export, tmp_path):
    texts = tf.constant(TEXTS)
    expected = build_serving_module(classifier_export["model"]).classify(texts)
    path = export_model(classifier_export["model_dir"], str(tmp_path / "bf16"),
                        dtype="mixed_bfloat16", warmup=False)
    with open(os.path.join(path, INFO_FILE), encoding="utf-8") as f:
        assert json.load(f)["dtype"] == "mixed_bfloat16"
    out = tf.saved_model.load(path).signatures["serving_default"](text=texts)
    assert out["probabilities"].dtype == tf.float32  # bf16 inside, float32 out.
    difference = np.abs(out["probabilities"].numpy() - expected["probabilities"].numpy())
    # bfloat16 keeps ~3 significant digits: close to float32, but not equal.
    assert 0 < difference.max() < 0.05
    # Only casts are new, so a TF Serving that runs the float32 export runs this
    # one (the float32 export's ops are checked in test_op_set.py).
    from keras_bert.export.op_set import graph_ops

    new_ops = set(graph_ops(path)) - set(graph_ops(classifier_export["export_dir"]))
    assert new_ops <= {"Cast"}, new_ops
    # A Keras model keeps its own policy: asking for another one is an error.
    with pytest.raises(ValueError, match="model directory"):
        export_model(classifier_export["model"], str(tmp_path / "x"), dtype="mixed_bfloat16")
    with pytest.raises(ValueError, match="dtype='float16'"):
        export_model(classifier_export["model_dir"], str(tmp_path / "y"), dtype="float16")


def test_pairs_and_regression(classifier_export):
    pairs = build_serving_module(classifier_export["model"], pairs=True)
    packed = pairs.preprocess(tf.constant(["a good", "b"]), tf.constant(["movie", ""]))
    assert packed["token_ids"].numpy().tolist() == [[2, 6, 17, 3, 21, 3], [2, 7, 3, 3, 0, 0]]
    assert packed["segment_ids"].numpy().tolist() == [[0, 0, 0, 0, 1, 1], [0, 0, 0, 1, 0, 0]]
    assert sorted(pairs.classify.function_spec.arg_names) == ["text", "text_b"]

    from keras_bert.tasks import BertClassifier

    regressor = BertClassifier(classifier_export["model"].encoder, num_classes=1)
    module = build_serving_module(regressor, vocab_file=classifier_export["vocab_file"],
                                  task_info={"max_seq_length": MAX_SEQ_LENGTH})
    out = module.classify(tf.constant(["a good movie", ""]))
    inputs = preprocessor(classifier_export["vocab_file"])(tf.constant(["a good movie", ""]))
    np.testing.assert_allclose(out["score"], regressor(inputs)[:, 0], atol=1e-5)
    assert sorted(out) == ["score"]


def test_versions_and_atomic_export(classifier_export, tmp_path):
    base = str(tmp_path / "exports" / "sentiment")
    assert resolve_export_dir(base) == os.path.join(base, "1")
    for version in ("1", "2", "10", "tmp", "7x"):
        os.makedirs(os.path.join(base, version))
    assert next_version(base) == 11
    assert resolve_export_dir(base) == os.path.join(base, "11")
    assert resolve_export_dir(base + "/3") == base + "/3"
    assert resolve_export_dir(base, version=4) == os.path.join(base, "4")
    with pytest.raises(ValueError, match="version"):
        resolve_export_dir(base + "/3", version=4)
    module = build_serving_module(classifier_export["model"])
    with pytest.raises(FileExistsError, match="overwrite"):
        save_serving_module(module, os.path.join(base, "2"))
    export_dir = classifier_export["export_dir"]
    assert os.path.basename(export_dir) == "1"
    # Only the version directory: no half-written temporary one is left beside it.
    assert os.listdir(os.path.dirname(export_dir)) == ["1"]
    with open(os.path.join(export_dir, INFO_FILE)) as f:
        info = json.load(f)
    assert info["max_seq_length"] == MAX_SEQ_LENGTH
    assert info["signatures"]["serving_default"]["inputs"] == {
        "text": {"dtype": "string", "shape": [None]}}


def test_predict_helpers(classifier_export):
    loaded = load_export(os.path.dirname(classifier_export["export_dir"]))  # Latest version.
    inputs = {"text": ["a good movie", ""]}
    outputs = run_signature(loaded, inputs)
    lines = format_outputs(inputs, outputs)
    label = outputs["label"][0].decode()
    assert lines[0] == f"a good movie\t{label}\t{outputs['probabilities'][0].max():.4f}"
    with pytest.raises(ValueError, match="needs inputs"):
        run_signature(loaded, {"txt": ["a"]})
    # Many texts run in length-sorted batches; rows come back in input order.
    many = {"text": [("word " * n).strip() for n in (9, 1, 30, 4, 0, 17, 2)]}
    whole = run_signature(loaded, many, batch_size=None)
    batched = run_signature(loaded, many, batch_size=2)
    np.testing.assert_array_equal(batched["label"], whole["label"])
    np.testing.assert_allclose(batched["probabilities"], whole["probabilities"], atol=1e-5)


def test_the_export_saves_block_halves_in_place_of_their_dense_weights(classifier_export):
    loaded = tf.saved_model.load(classifier_export["export_dir"])
    model = classifier_export["model"]
    blocks = [layer for layer in model._flatten_layers()
              if type(layer).__name__ == "TransformerEncoderBlock"]
    # Per block: the two head groups' (q/k/v kernel, q/k/v bias, attention output
    # rows), then the feed-forward halves' (W1 columns, b1 part, W2 rows).
    halves = [v.numpy() for v in loaded.half_variables]
    assert len(halves) == 12 * len(blocks) == 24
    for block, start in zip(blocks, range(0, len(halves), 12)):
        (_, _, o1, _, _, o2, k1, b1, w1, k2, b2, w2) = halves[start:start + 12]
        np.testing.assert_array_equal(np.concatenate([o1, o2]),
                                      block.attention_output_dense.kernel.numpy())
        np.testing.assert_array_equal(np.concatenate([k1, k2], 1),
                                      block.intermediate_dense.kernel.numpy())
        np.testing.assert_array_equal(np.concatenate([b1, b2]), block.intermediate_dense.bias.numpy())
        np.testing.assert_array_equal(np.concatenate([w1, w2]), block.output_dense.kernel.numpy())
    # Every other weight of the model is saved once; the six replaced per block are not.
    saved = [v.numpy() for v in loaded.model_variables]
    assert len(saved) == len(model.variables) - 6 * len(blocks)
    for block in blocks:
        for layer in (block.qkv_dense, block.attention_output_dense, block.intermediate_dense,
                      block.output_dense):
            assert not any(s.shape == layer.kernel.shape and np.array_equal(
                s, layer.kernel.numpy()) for s in saved), layer.kernel.path
        for layer in (block.attention_output_dense, block.output_dense):
            assert any(np.array_equal(s, layer.bias.numpy()) for s in saved), layer.bias.path
    # A module built to serve in this process keeps whole blocks (halves are copies).
    module = build_serving_module(model)
    assert module.half_variables == [] and len(module.model_variables) == len(model.variables)


def test_a_models_own_serving_module_follows_its_weights(classifier_export):
    # What `predict` of the decoding heads and the embedder's `similarity` run: it must
    # read the model's variables, so that training shows (halves would be stale copies).
    from keras_bert import BertClassifier

    model = BertClassifier.from_pretrained(classifier_export["model_dir"])
    module = model.serving_module()
    assert module.half_variables == []
    texts = tf.constant(TEXTS[:3])
    before = module.classify(texts)["probabilities"].numpy()
    block = next(layer for layer in model._flatten_layers()
                 if type(layer).__name__ == "TransformerEncoderBlock")
    kernel = block.output_dense.kernel
    saved = kernel.numpy()
    kernel.assign(saved * 5.0)
    after = module.classify(texts)["probabilities"].numpy()
    assert np.abs(after - before).max() > 1e-3
