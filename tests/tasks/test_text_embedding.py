"""BertTextEmbedder on the tiny encoder: pooling math, config, model directories,
sentence-transformers folders, similarity, search and bad input."""

import json
import os

import numpy as np
import pytest

from keras_bert.tasks import BertTextEmbedder, EmbeddingIndex
from keras_bert.tasks.text_embedding.layers import EmbeddingPooling, L2Normalize
from keras_bert.tasks.text_embedding.search import cosine_matrix, nearest
from keras_bert.tasks.text_embedding.sentence_transformers import read_sentence_transformers
from keras_bert.text import BertPreprocessor, save_vocabulary
from tests.tasks.conftest import TOKENS, task_encoder
from tests.test_case import run_layer_test, run_model_saving_test

TEXTS = ["the movie was very good", "a bad film", "i love paris", "", "who lives in paris ?",
         "the film is not great . it was awful"]


def numpy_pool(sequence, mask, pooling):
    """The reference pooling: sequence [B, S, H], mask [B, S] -> [B, H]."""
    mask = mask.astype(bool)
    if pooling == "cls":
        return sequence[:, 0]
    if pooling == "max":
        return np.stack([row[m].max(axis=0) for row, m in zip(sequence, mask)])
    return np.stack([row[m].mean(axis=0) for row, m in zip(sequence, mask)])


def unit(x):
    return x / np.linalg.norm(x, axis=-1, keepdims=True)


@pytest.fixture
def preprocessor(vocab_file):
    return BertPreprocessor.from_vocab_file(vocab_file, sequence_length=None, max_seq_length=16)


@pytest.fixture
def sequence_batch():
    rng = np.random.default_rng(0)
    # Row 1 has negative values where it is real and large ones in padding:
    # a max or mean that reads padding is wrong.
    sequence = rng.normal(size=(2, 5, 4)).astype("float32")
    sequence[1, :2] -= 5.0
    sequence[1, 2:] = 50.0
    mask = np.array([[1, 1, 1, 1, 1], [1, 1, 0, 0, 0]], "int32")
    return sequence, mask


@pytest.mark.parametrize("pooling", ["mean", "cls", "max"])
def test_pooling_reads_real_tokens_only(pooling, sequence_batch, tmp_path):
    sequence, mask = sequence_batch
    got = np.asarray(EmbeddingPooling(pooling)(sequence, mask))
    np.testing.assert_allclose(got, numpy_pool(sequence, mask, pooling), atol=1e-6)
    run_layer_test(EmbeddingPooling, {"pooling": pooling}, (sequence, mask), (2, 4), tmp_path)


def test_l2_normalize_is_torch_normalize(sequence_batch, tmp_path):
    x = np.concatenate([sequence_batch[0][:, 0], np.zeros([1, 4], "float32")])
    got = np.asarray(L2Normalize()(x))
    np.testing.assert_allclose(got[:2], unit(x[:2]), atol=1e-6)
    assert np.all(got[2] == 0)  # max(||x||, 1e-12): a zero row stays zero, not NaN.
    run_layer_test(L2Normalize, {}, (x,), (3, 4), tmp_path)


@pytest.mark.parametrize("pooling,projection_dim,normalize",
                         [("mean", None, True), ("max", 3, True), ("cls", 6, False)])
def test_embedder_is_encoder_then_pooling_projection_normalization(
        encoder, batch, pooling, projection_dim, normalize):
    model = BertTextEmbedder(encoder, pooling=pooling, projection_dim=projection_dim,
                             normalize=normalize)
    sequence = np.asarray(encoder(batch)["sequence_output"])
    expected = numpy_pool(sequence, batch["padding_mask"], pooling)
    if projection_dim:
        kernel, bias = model.projection.get_weights()
        expected = expected @ kernel + bias
    if normalize:
        expected = unit(expected)
    got = model.predict(batch, verbose=0)
    assert got.dtype == np.float32 and got.shape == (2, projection_dim or 16)
    np.testing.assert_allclose(got, expected, atol=1e-5)
    assert model.embedding_dim == (projection_dim or 16)


def test_the_unused_pooler_is_not_trained(encoder):
    model = BertTextEmbedder(encoder)
    names = {w.path for w in model.trainable_weights}
    assert not any("pooler" in name for name in names)
    assert len(model.trainable_weights) == len(encoder.trainable_weights) - 2


@pytest.mark.parametrize("kwargs,message", [
    ({"pooling": "avg"}, "pooling='avg'"),
    ({"projection_dim": 0}, "projection_dim=0"),
    ({"projection_dim": 2.5}, "projection_dim=2.5"),
    ({"normalize": "yes"}, "normalize='yes'"),
])
def test_bad_arguments_are_named(encoder, kwargs, message):
    with pytest.raises(ValueError, match=message.replace("?", r"\?")):
        BertTextEmbedder(encoder, **kwargs)


def test_keras_file_round_trip(encoder, batch, tmp_path):
    model = BertTextEmbedder(encoder, pooling="max", projection_dim=5, normalize=False)
    reloaded = run_model_saving_test(model, batch, tmp_path)
    assert reloaded.task_config() == {"pooling": "max", "projection_dim": 5, "normalize": False}


@pytest.mark.slow  # Tens of seconds of the default tier's time (round 10).
def test_model_directory_keeps_the_head_and_settings(encoder, preprocessor, vocab_file,
                                                     tmp_path):
    model = BertTextEmbedder(encoder, pooling="max", projection_dim=5, preprocessor=preprocessor)
    expected = model.predict(TEXTS)
    model.save_pretrained(str(tmp_path / "dir"), vocab_file=vocab_file)
    task = json.loads((tmp_path / "dir" / "task.json").read_text())
    assert task["task"] == "text_embedding"
    assert task["task_config"] == {"pooling": "max", "projection_dim": 5, "normalize": True}

    loaded = BertTextEmbedder.from_pretrained(str(tmp_path / "dir"))
    assert (loaded.pooling, loaded.projection_dim, loaded.normalize) == ("max", 5, True)
    np.testing.assert_allclose(loaded.predict(TEXTS), expected, atol=1e-6)
    # A setting that changes no weight applies to the trained head.
    mean = BertTextEmbedder.from_pretrained(str(tmp_path / "dir"), pooling="mean")
    assert mean.pooling == "mean"
    np.testing.assert_array_equal(mean.projection.get_weights()[0],
                                  loaded.projection.get_weights()[0])
    assert not np.allclose(mean.predict(TEXTS), expected, atol=1e-3)


# === sentence-transformers folders ===

def write_folder(path, modules, pooling=None, settings=None):
    os.makedirs(path, exist_ok=True)
    with open(os.path.join(path, "modules.json"), "w") as f:
        json.dump([{"idx": i, "name": str(i), "path": p,
                    "type": f"sentence_transformers.models.{t}"}
                   for i, (t, p) in enumerate(modules)], f)
    if pooling is not None:
        os.makedirs(os.path.join(path, "1_Pooling"), exist_ok=True)
        with open(os.path.join(path, "1_Pooling", "config.json"), "w") as f:
            json.dump({"word_embedding_dimension": 16, **pooling}, f)
    if settings is not None:
        with open(os.path.join(path, "sentence_bert_config.json"), "w") as f:
            json.dump(settings, f)
    return str(path)


MEAN = {"pooling_mode_cls_token": False, "pooling_mode_mean_tokens": True,
        "pooling_mode_max_tokens": False, "pooling_mode_mean_sqrt_len_tokens": False}
PIPELINE = [("Transformer", ""), ("Pooling", "1_Pooling"), ("Normalize", "2_Normalize")]


def test_folder_settings_are_read(tmp_path):
    # 2_Normalize is listed but absent, as in the real all-MiniLM-L6-v2.
    folder = write_folder(tmp_path / "a", PIPELINE, MEAN, {"max_seq_length": 128})
    assert read_sentence_transformers(folder) == {
        "pooling": "mean", "normalize": True, "max_seq_length": 128}
    cls = {**MEAN, "pooling_mode_mean_tokens": False, "pooling_mode_cls_token": True}
    folder = write_folder(tmp_path / "b", PIPELINE[:2], cls)
    assert read_sentence_transformers(folder) == {
        "pooling": "cls", "normalize": False, "max_seq_length": None}


@pytest.mark.parametrize("modules,pooling,message", [
    (PIPELINE, {**MEAN, "pooling_mode_max_tokens": True}, "exactly one of"),
    (PIPELINE, {**MEAN, "pooling_mode_mean_tokens": False,
                "pooling_mode_mean_sqrt_len_tokens": True}, "pooling_mode_mean_sqrt_len_tokens"),
    (PIPELINE[:2] + [("Dense", "2_Dense")], MEAN, "Dense"),
    (PIPELINE, None, "is missing"),
    ([("Pooling", "1_Pooling")], MEAN, "first module must be the Transformer"),
    (PIPELINE[:1], None, "no Pooling module"),
])
def test_folder_modules_keras_bert_cannot_reproduce_are_refused(tmp_path, modules, pooling,
                                                                message):
    folder = write_folder(tmp_path / "st", modules, pooling)
    with pytest.raises(ValueError, match=message):
        read_sentence_transformers(folder)


# === Similarity and search ===

@pytest.fixture(scope="module")
def embedder(tmp_path_factory):
    """One embedder for the tests below, which only embed: its predict is traced once."""
    vocab_file = str(tmp_path_factory.mktemp("embedder") / "vocab.txt")
    save_vocabulary(TOKENS, vocab_file)
    preprocessor = BertPreprocessor.from_vocab_file(vocab_file, sequence_length=None,
                                                    max_seq_length=16)
    return BertTextEmbedder(task_encoder(), preprocessor=preprocessor)


@pytest.mark.slow  # Tens of seconds of the default tier's time (round 10).
def test_similarity_is_the_cosine_of_the_embeddings(embedder):
    vectors = embedder.predict(TEXTS)
    assert vectors.shape == (len(TEXTS), 16)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-6)
    matrix = embedder.similarity(TEXTS[:2], TEXTS)
    np.testing.assert_allclose(matrix, vectors[:2] @ vectors.T, atol=1e-6)
    np.testing.assert_allclose(embedder.similarity(vectors[:2], TEXTS), matrix, atol=1e-6)
    pairwise = embedder.similarity(TEXTS, TEXTS[::-1], pairwise=True)
    np.testing.assert_allclose(pairwise, np.sum(vectors * vectors[::-1], axis=1), atol=1e-6)
    np.testing.assert_allclose(embedder.similarity(vectors, vectors[::-1], pairwise=True),
                               pairwise, atol=1e-6)


def test_predict_in_batches_equals_one_batch(embedder):
    np.testing.assert_allclose(embedder.predict(TEXTS, batch_size=2), embedder.predict(TEXTS),
                               atol=1e-6)


def test_nearest_is_a_brute_force_sort():
    rng = np.random.default_rng(1)
    corpus, queries = rng.normal(size=(50, 8)), rng.normal(size=(7, 8))
    scores, indices = nearest(queries, corpus, k=5)
    full = unit(queries) @ unit(corpus).T
    np.testing.assert_array_equal(indices, np.argsort(-full, axis=1)[:, :5])
    np.testing.assert_allclose(scores, np.sort(full, axis=1)[:, ::-1][:, :5], atol=1e-6)
    np.testing.assert_allclose(cosine_matrix(queries, corpus), full, atol=1e-6)
    # More than the corpus: all of it. Equal scores: by index.
    scores, indices = nearest(queries[:1], np.ones([3, 8]), k=10)
    assert indices.tolist() == [[0, 1, 2]]


def test_search_an_index_embedded_once(embedder, tmp_path):
    index = embedder.index(TEXTS)
    assert isinstance(index, EmbeddingIndex) and len(index) == len(TEXTS)
    # Each text finds itself first.
    scores, indices = index.search(TEXTS, top_k=2)
    assert indices[:, 0].tolist() == list(range(len(TEXTS)))
    np.testing.assert_allclose(scores[:, 0], 1.0, atol=1e-5)
    np.testing.assert_array_equal(embedder.search(TEXTS, TEXTS, top_k=2)[1], indices)
    index.save(str(tmp_path / "corpus.npy"))
    saved = np.load(str(tmp_path / "corpus.npy"))
    assert saved.dtype == np.float32
    np.testing.assert_array_equal(saved, embedder.predict(TEXTS))


@pytest.mark.parametrize("call,message", [
    (lambda m: m.predict("one text"), "not a single string"),
    (lambda m: m.predict([("a", "b")]), "one batch of texts"),
    (lambda m: m.search(["x"], [], top_k=1), "corpus is empty"),
    (lambda m: m.search(["x"], TEXTS, top_k=0), "top_k=0"),
    (lambda m: m.similarity(np.ones([2, 5]), TEXTS), "5 wide"),
    (lambda m: m.similarity(TEXTS[:2], TEXTS[:3], pairwise=True), "one b per a"),
    (lambda m: EmbeddingIndex(m, np.ones([2, 16]), ["one"]), "one document per embedding"),
])
def test_bad_input_is_named(embedder, call, message):
    with pytest.raises(ValueError, match=message):
        call(embedder)


def test_empty_batches_and_empty_texts(embedder):
    empty = embedder.predict([])
    assert empty.shape == (0, 16) and empty.dtype == np.float32
    assert embedder.index(TEXTS).search([], top_k=3)[1].shape == (0, 3)
    # An empty text is [CLS] [SEP], as sentence-transformers embeds it.
    ids = {"token_ids": np.array([[2, 3]], "int32"), "segment_ids": np.zeros([1, 2], "int32"),
           "padding_mask": np.ones([1, 2], "int32")}
    np.testing.assert_allclose(embedder.predict([""]), embedder.predict(ids, verbose=0),
                               atol=1e-6)


def test_without_a_preprocessor_strings_are_refused(encoder):
    with pytest.raises(ValueError, match="has no preprocessor"):
        BertTextEmbedder(encoder).predict(["a text"])
