"""The text path on RoBERTa's BPE and XLM-R's SentencePiece tokenizers: pairs, the model
directory, every task, raw-string exports (compared with transformers' tokenizers)."""

import json
import os

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_bert.export import export_model
from keras_bert.export.op_set import ALLOWED_TEXT_OPS, missing_in_tf_text
from keras_bert.models import BertEncoder
from keras_bert.tasks import (BertClassifier, BertMaskedLM, BertSpanLabeler,
                              BertTokenClassifier)
from keras_bert.text import BertPreprocessor, BytePairTokenizer, SentencePieceTokenizer
from tests.conftest import clean_result, tiny_config
from tests.text.hard_texts import multilingual_texts

FAMILIES = {"xlmr": SentencePieceTokenizer, "roberta": BytePairTokenizer}
FILES = {"xlmr": ["sentencepiece.model"], "roberta": ["merges.txt", "vocab.json"]}
TEXTS = ["John lives in Paris, yes.", "Ünïcödé façade ΟΔΟΣ 中文 🙂", "", "  spaced   out  "]


def _folder(request, family):
    return request.getfixturevalue(f"{family}_tokenizer_folder")


def _classifier(tokenizer):
    encoder = BertEncoder(**tiny_config(vocab_size=tokenizer.vocab_size, type_vocab_size=1,
                                        max_position_embeddings=64, num_layers=1).to_dict())
    return BertClassifier(encoder=encoder, num_classes=3, preprocessor=_preprocessor(tokenizer))


def _preprocessor(tokenizer):
    return BertPreprocessor(tokenizer, sequence_length=None, max_seq_length=64)


@pytest.fixture(params=sorted(FAMILIES))
def family(request):
    folder = _folder(request, request.param)
    # Before the tokenizer: tf.random.set_seed clears the kernels that own the
    # SentencePiece op's model (a tokenizer made before then fails to run).
    keras.utils.set_random_seed(0)
    return request.param, folder, FAMILIES[request.param].from_folder(folder)


def _reference(folder, **kwargs):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(folder, **kwargs)


def test_pairs_as_transformers_packs_them(family):
    """`<s> a </s></s> b </s>`, segment ids 0, cut longest-first on an even budget."""
    _, folder, tokenizer = family
    reference = _reference(folder)
    # Without "<s>", "<mask>" ...: special tokens written in text are each tokenizer's choice.
    a, b = ([t.replace("<", "(") for t in multilingual_texts(12, seed=seed)] for seed in (5, 6))
    for length in (16, 64):
        out = BertPreprocessor(tokenizer, sequence_length=length)((a, b))
        want = reference(a, b, truncation="longest_first", max_length=length,
                         padding="max_length", return_token_type_ids=True)
        assert out["token_ids"].numpy().tolist() == want["input_ids"], length
        assert out["padding_mask"].numpy().tolist() == want["attention_mask"]
        assert not out["segment_ids"].numpy().any() and not np.any(want["token_type_ids"])


def test_model_directory_and_keras_file_keep_the_tokenizer(family, tmp_path):
    name, _, tokenizer = family
    model = _classifier(tokenizer)
    expected = model.predict(TEXTS, verbose=0)
    path = str(tmp_path / "model")
    model.save_pretrained(path)
    assert sorted(os.listdir(path)) == sorted(
        ["config.json", "model.weights.h5", "task.json", *FILES[name]])
    assert json.loads((tmp_path / "model" / "task.json").read_text())["lowercase"] is False
    again = BertClassifier.from_pretrained(path)
    assert type(again.preprocessor.tokenizer) is FAMILIES[name]
    assert again.preprocessor.tokenizer.vocabulary == tokenizer.vocabulary
    np.testing.assert_allclose(again.predict(TEXTS, verbose=0), expected, atol=1e-6)
    keras_path = str(tmp_path / "model.keras")
    model.save(keras_path)
    loaded = keras.saving.load_model(keras_path)
    assert type(loaded.preprocessor.tokenizer) is FAMILIES[name]
    np.testing.assert_allclose(loaded.predict(TEXTS, verbose=0), expected, atol=1e-6)
    preprocessor = BertPreprocessor.from_pretrained(path)
    assert type(preprocessor.tokenizer) is FAMILIES[name] and preprocessor.max_seq_length == 64
    with pytest.raises(ValueError, match="lowercase=True.*Leave lowercase unset"):
        BertClassifier.from_pretrained(path, lowercase=True)


def test_a_converter_writes_the_tokenizer_it_read(family, tmp_path):
    """save_model_dir(tokenizer=...): the files of a tokenizer read from a Hugging Face folder
    (sentencepiece.bpe.model or tokenizer.json there) in the model directory's layout."""
    from keras_bert.models.model_dir import save_model_dir

    name, folder, tokenizer = family
    encoder = _classifier(tokenizer).encoder
    path = str(tmp_path / "encoder")
    save_model_dir(encoder, path, tokenizer=tokenizer, task_info={"max_seq_length": 64})
    assert sorted(os.listdir(path)) == sorted(
        ["config.json", "model.weights.h5", "task.json", *FILES[name]])
    again = BertPreprocessor.from_pretrained(path)
    np.testing.assert_array_equal(again(TEXTS)["token_ids"],
                                  _preprocessor(tokenizer)(TEXTS)["token_ids"])
    with pytest.raises(ValueError, match="not both"):
        save_model_dir(encoder, path, vocab_file=os.path.join(path, FILES[name][-1]),
                       tokenizer=tokenizer)
    # Or it copies the folder's vocabulary files as they are.
    source = {"xlmr": "sentencepiece.bpe.model", "roberta": "vocab.json"}[name]
    copied = str(tmp_path / "copied")
    save_model_dir(encoder, copied, vocab_file=os.path.join(folder, source),
                   task_info={"max_seq_length": 64})
    assert source in os.listdir(copied)
    np.testing.assert_array_equal(BertPreprocessor.from_pretrained(copied)(TEXTS)["token_ids"],
                                  again(TEXTS)["token_ids"])


def test_masked_lm_reads_mask_as_transformers(family):
    """`<mask>` in text is the tokenizer's mask id, spaces before it taken with it where its
    tokenizer.json says (lstrip; this tiny RoBERTa's does not)."""
    _, folder, tokenizer = family
    model = BertMaskedLM(encoder=_classifier(tokenizer).encoder,
                         preprocessor=_preprocessor(tokenizer))
    texts = ["The capital of France is <mask> and more.", "a <mask><mask> b", "<mask>"]
    features = model.preprocessor(texts)
    ids = features["token_ids"].numpy().tolist()
    assert ids == _reference(folder)(texts, padding=True)["input_ids"]
    positions = model.preprocessor.fill_mask_inputs(features)["masked_positions"]
    want = [i for i, t in enumerate(ids[1]) if t == tokenizer.mask_token_id]
    assert positions[1].numpy().tolist()[:2] == want and len(want) == 2


def test_tagger_labels_first_pieces_as_transformers(family):
    """Each word tokenized after a space (transformers' is_split_into_words), the tag on its
    first piece."""
    name, folder, tokenizer = family
    from keras_bert.tasks.token_classification.reader import first_piece_examples

    words = [["John", "lives", "in", "Paris"], ["Ünïcödé", "façade", "x"]]
    tags = [[1, 0, 0, 2], [0, 0, 2]]
    reference = _reference(folder, **({"add_prefix_space": True} if name == "roberta" else {}))
    for (features, labels, _), sentence, tag in zip(
            first_piece_examples(words, tags, _preprocessor(tokenizer)), words, tags):
        want = reference(sentence, is_split_into_words=True)
        assert features["token_ids"].numpy().tolist() == want["input_ids"]
        word_ids = want.word_ids()
        first = [w is not None and (i == 0 or word_ids[i - 1] != w)
                 for i, w in enumerate(word_ids)]
        assert labels.numpy().tolist() == [tag[w] if f else -1 for w, f in zip(word_ids, first)]


@pytest.mark.slow  # Three fits on each tokenizer: a minute of the default tier's time.
def test_tasks_fit_and_predict(family):
    """The tagger (word starts of raw text from the offsets), masked LM and span QA fit and
    predict on raw text; fast siblings above check their ids and labels."""
    _, _, tokenizer = family
    encoder = _classifier(tokenizer).encoder  # One encoder for the three heads.
    model = BertTokenClassifier(encoder=encoder, num_classes=3,
                                label_names=["O", "B-PER", "B-LOC"],
                                preprocessor=_preprocessor(tokenizer))
    model.fit([["John", "lives", "in", "Paris"]], [["B-PER", "O", "O", "B-LOC"]], epochs=1,
              verbose=0)
    out = model.predict(["John lives in Paris, yes."])
    text = "John lives in Paris, yes."
    real = out["mask"][0].astype(bool)
    starts = out["start"][0][real]
    # A word starts after a space (or at the start): "John", "lives", "in", "Paris,", "yes.".
    opened = sorted({int(s) for s, w in zip(starts, out["word_start"][0][real]) if w})
    assert [text[s] for s in opened if text[s] != " "] == ["J", "l", "i", "P", "y"]

    mlm = BertMaskedLM(encoder=encoder,
                       preprocessor=_preprocessor(tokenizer))
    mlm.fit(["some text to learn from", "more of the same text"], epochs=1, verbose=0)
    assert mlm.predict(["a <mask> b"])["tokens"].shape[:2] == (1, 1)

    model = BertSpanLabeler(encoder=encoder,
                            preprocessor=_preprocessor(tokenizer))
    questions, contexts = ["Where does John live?"], ["John lives in Paris, in France."]
    model.fit((questions, contexts), [{"text": ["Paris"], "answer_start": [14]}], epochs=1,
              verbose=0)
    out = model.predict((questions, contexts))
    start, end = int(out["start"][0]), int(out["end"][0])
    assert out["answer"][0].decode("utf-8") == contexts[0][start:end]


def test_litert_export_is_refused_by_name(family, tmp_path):
    _, _, tokenizer = family
    with pytest.raises(ValueError, match=f"{type(tokenizer).__name__} runs tensorflow-text ops "
                                         f"that have no LiteRT kernel"):
        export_model(_classifier(tokenizer), str(tmp_path / "lite"), format="tflite")


# === Raw-string SavedModels in a process without keras or keras_bert ===

CLEAN_CHECKS = """
for family, path in ARGS["paths"].items():
    signature = tf.saved_model.load(path).signatures["serving_default"]
    result[family] = signature(text=tf.constant(ARGS["texts"]))["probabilities"].numpy().tolist()
"""


def clean_args(request):
    """Exports a tiny classifier on each tokenizer, with its `predict` probabilities."""
    root = request.getfixturevalue("tmp_path_factory").mktemp("families")
    args = {"texts": TEXTS, "paths": {}, "expected": {}}
    for family, cls in FAMILIES.items():
        keras.utils.set_random_seed(1)
        model = _classifier(cls.from_folder(_folder(request, family)))
        args["paths"][family] = export_model(model, str(root / family))
        args["expected"][family] = tf.nn.softmax(
            model.predict(TEXTS, verbose=0)).numpy().tolist()
    args["export_dirs"] = list(args["paths"].values())
    return args


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_export_answers_as_predict_in_a_clean_process(family, clean_process):
    clean = clean_result(clean_process, "families")
    np.testing.assert_allclose(clean[family], clean["args"]["expected"][family], atol=1e-5)
    assert clean["python_modules"] == []
    path = clean["args"]["paths"][family]
    assert set(clean["non_core_ops"][path]) <= set(ALLOWED_TEXT_OPS)
    assert missing_in_tf_text([path]) == {}


def test_multilingual_minilm_layout_embeds_as_sentence_transformers(tiny_bert_sp_folder, tmp_path):
    # paraphrase-multilingual-MiniLM's layout: BertModel weights, XLM-R's SentencePiece,
    # sentence-transformers' mean pooling, Normalize and max_seq_length. Its recipe,
    # computed with transformers: mean of last_hidden_state over the mask, L2-normalized.
    import shutil

    import torch
    import transformers

    from keras_bert.tasks import BertTextEmbedder

    folder = str(shutil.copytree(tiny_bert_sp_folder, tmp_path / "mini"))
    modules = [("0", "", "Transformer"), ("1", "1_Pooling", "Pooling"),
               ("2", "2_Normalize", "Normalize")]
    with open(os.path.join(folder, "modules.json"), "w") as f:
        json.dump([{"idx": int(n), "name": n, "path": p,
                    "type": f"sentence_transformers.models.{t}"} for n, p, t in modules], f)
    for _, path, _ in modules[1:]:
        os.makedirs(os.path.join(folder, path))
    with open(os.path.join(folder, "1_Pooling", "config.json"), "w") as f:
        json.dump({"word_embedding_dimension": 32, "pooling_mode_mean_tokens": True}, f)
    with open(os.path.join(folder, "sentence_bert_config.json"), "w") as f:
        json.dump({"max_seq_length": 24, "do_lower_case": False}, f)
    texts = ["Hello world", "Привет, мир! Как дела?", "東京は晴れ", "", "a " * 40, "naïve 🙂"]
    tokenizer = transformers.AutoTokenizer.from_pretrained(folder)
    model = transformers.AutoModel.from_pretrained(folder).eval()
    batch = tokenizer(texts, padding=True, truncation=True, max_length=24, return_tensors="pt")
    with torch.no_grad():
        hidden = model(**batch).last_hidden_state
    mask = batch["attention_mask"].unsqueeze(-1).float()
    expected = torch.nn.functional.normalize((hidden * mask).sum(1) / mask.sum(1), dim=-1)
    found = BertTextEmbedder.from_pretrained(folder).predict(texts, verbose=0)
    np.testing.assert_allclose(np.asarray(found), expected.numpy(), atol=1e-5)
