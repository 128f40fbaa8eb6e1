"""BytePairTokenizer against transformers' RobertaTokenizer (the Rust BPE) of the same files."""

import json
import os
import random
import shutil

import keras
import pytest
import tensorflow as tf

from keras_bert.export.op_set import disallowed_ops, missing_in_tf_text, non_core_ops
from keras_bert.text import BytePairTokenizer
from tests.text.hard_texts import hard_texts
from tests.text.test_tokenizer_options import _TokenizerModel

EDGE_CASES = [
    "", " ", "  ", "\n\n", "\t", " \n ", "a  b", "   word", "word   ", "  's", "x's", "don't",
    "I'M", "'ll've", "\t\tx", "a \n", "\r\n\r\nx", "\u3000x\u00a0y", "x\u2028 y", "\x0bz",
    "東京は日本の首都です。", "e\u0301\u0301", "👍🏽🇫🇷 ok", "3.14159 1,000,000",
    "a\x00b \x00",
    "<mask> <s>", " leading and trailing ", "ab" * 300, " ".join(["word"] * 400),
]


def _texts():
    rng = random.Random(3)
    made = [f"{rng.choice(['We', 'They'])}'re {rng.randint(0, 99999)}  x\t\t{rng.random():.2f}\n"
            for _ in range(20)]
    return EDGE_CASES + made + hard_texts(250, seed=11)


@pytest.fixture(scope="module")
def reference(roberta_tokenizer_folder):
    from transformers import RobertaTokenizerFast

    folder = os.path.join(roberta_tokenizer_folder, "files")
    os.makedirs(folder, exist_ok=True)
    for name in ("vocab.json", "merges.txt"):
        shutil.copy(os.path.join(roberta_tokenizer_folder, name), folder)
    # Special tokens written in the text are text, as special_tokens_in_strings=False.
    reference = RobertaTokenizerFast.from_pretrained(folder, split_special_tokens=True)
    assert len(reference) == 1500  # It read the files (not its 5-token default).
    return reference


@pytest.fixture(scope="module")
def tokenizer(roberta_tokenizer_folder):
    return BytePairTokenizer.from_folder(roberta_tokenizer_folder)


def _reference_ids(reference, texts):
    return [reference(t, add_special_tokens=False)["input_ids"] for t in texts]


def _reference_offsets(reference, texts, unit):
    rows = []
    for text in texts:
        spans = reference(text, add_special_tokens=False,
                          return_offsets_mapping=True)["offset_mapping"]
        if unit == "BYTE":
            spans = [(len(text[:a].encode()), len(text[:b].encode())) for a, b in spans]
        rows.append([tuple(s) for s in spans])
    return rows


def test_ids_match_transformers(tokenizer, reference):
    texts = _texts()
    assert tokenizer(texts).to_list() == _reference_ids(reference, texts)
    assert (tokenizer.cls_token_id, tokenizer.sep_token_id, tokenizer.pad_token_id,
            tokenizer.unk_token_id, tokenizer.mask_token_id, tokenizer.vocab_size) == (
        reference.cls_token_id, reference.sep_token_id, reference.pad_token_id,
        reference.unk_token_id, reference.mask_token_id, len(reference))
    assert tokenizer.vocabulary == reference.convert_ids_to_tokens(list(range(len(reference))))


@pytest.mark.parametrize("unit", ["BYTE", "UTF8_CHAR"])
def test_offsets_match_transformers(tokenizer, reference, unit):
    texts = _texts()
    ids, starts, ends = tokenizer.tokenize_with_offsets(texts, unit=unit)
    assert ids.to_list() == _reference_ids(reference, texts)
    got = [list(zip(a, b)) for a, b in zip(starts.to_list(), ends.to_list())]
    assert got == _reference_offsets(reference, texts, unit)


def test_add_prefix_space_matches_transformers(roberta_tokenizer_folder, reference):
    from transformers import RobertaTokenizerFast

    reference = RobertaTokenizerFast.from_pretrained(reference.name_or_path, add_prefix_space=True,
                                                     split_special_tokens=True)
    tokenizer = BytePairTokenizer.from_folder(roberta_tokenizer_folder, add_prefix_space=True)
    texts = _texts()
    ids, starts, ends = tokenizer.tokenize_with_offsets(texts, unit="UTF8_CHAR")
    assert ids.to_list() == _reference_ids(reference, texts)
    got = [list(zip(a, b)) for a, b in zip(starts.to_list(), ends.to_list())]
    assert got == _reference_offsets(reference, texts, "UTF8_CHAR")
    # Words one by one, as the tagger gives them: transformers' is_split_into_words.
    words = ["Hello", "world", "it's", "東京"]
    assert tokenizer(words).flat_values.numpy().tolist() == reference(
        words, is_split_into_words=True, add_special_tokens=False)["input_ids"]


def _special_texts():
    swap = {"[MASK]": " <mask>", "[CLS]": "<s>", "[SEP]": "</s>", "[PAD]": "<pad>",
            "[UNK]": "<unk>"}
    texts = []
    for text in hard_texts(150, seed=5):
        for old, new in swap.items():
            text = text.replace(old, new)
        texts.append(text)
    return ["hello <mask> world", "a<mask>b", "  <mask>  x", "<s></s><pad><unk><mask>",
            "\u3000<mask>", "\x00<mask>\x00", "<mas k> <s"] + texts


@pytest.mark.parametrize("lstrip,add_prefix_space", [(False, False), (True, False), (True, True)])
def test_special_tokens_in_strings_match_transformers(roberta_tokenizer_folder, tmp_path, lstrip,
                                                      add_prefix_space):
    from transformers import RobertaTokenizerFast

    # tokenizer.json alone; `<mask>` takes the whitespace before it, as in roberta-base's.
    config = json.load(open(os.path.join(roberta_tokenizer_folder, "tokenizer.json")))
    for token in config["added_tokens"]:
        token["lstrip"] = lstrip and token["content"] == "<mask>"
    (tmp_path / "tokenizer.json").write_text(json.dumps(config))
    reference = RobertaTokenizerFast.from_pretrained(str(tmp_path),
                                                     add_prefix_space=add_prefix_space)
    tokenizer = BytePairTokenizer.from_folder(str(tmp_path), add_prefix_space=add_prefix_space,
                                              special_tokens_in_strings=True)
    assert tokenizer.lstrip_tokens == (["<mask>"] if lstrip else [])
    texts = _special_texts()
    ids, starts, ends = tokenizer.tokenize_with_offsets(texts, unit="UTF8_CHAR")
    assert ids.to_list() == _reference_ids(reference, texts) == tokenizer(texts).to_list()
    got = [list(zip(a, b)) for a, b in zip(starts.to_list(), ends.to_list())]
    assert got == _reference_offsets(reference, texts, "UTF8_CHAR")


def test_lstrip_is_read_from_tokenizer_config_too(roberta_tokenizer_folder, tmp_path):
    from transformers import RobertaTokenizerFast

    # vocab.json + merges.txt, and transformers 4's tokenizer_config.json flags.
    for name in ("vocab.json", "merges.txt"):
        shutil.copy(os.path.join(roberta_tokenizer_folder, name), tmp_path)
    (tmp_path / "tokenizer_config.json").write_text(json.dumps({"added_tokens_decoder": {
        "4": {"content": "<mask>", "lstrip": True, "rstrip": False, "single_word": False,
              "normalized": False, "special": True}}}))
    reference = RobertaTokenizerFast.from_pretrained(str(tmp_path))
    tokenizer = BytePairTokenizer.from_folder(str(tmp_path), special_tokens_in_strings=True)
    texts = ["a <mask> b", "x\t <mask>"]
    assert tokenizer.lstrip_tokens == ["<mask>"]
    assert tokenizer(texts).to_list() == _reference_ids(reference, texts)


def test_untrimmed_offsets_match_transformers(reference):
    from transformers import RobertaTokenizerFast

    reference = RobertaTokenizerFast.from_pretrained(reference.name_or_path, trim_offsets=False,
                                                     split_special_tokens=True)
    tokenizer = BytePairTokenizer.from_folder(reference.name_or_path, trim_offsets=False)
    texts = _texts()
    _, starts, ends = tokenizer.tokenize_with_offsets(texts, unit="UTF8_CHAR")
    got = [list(zip(a, b)) for a, b in zip(starts.to_list(), ends.to_list())]
    assert got == _reference_offsets(reference, texts, "UTF8_CHAR")


def test_invalid_utf8_is_replaced_and_offsets_point_into_the_bytes(tokenizer, reference):
    # Each invalid sequence is one U+FFFD, as Python's errors="replace"; `bounds` are
    # each text's character starts in the bytes, and its length.
    raw = [b"a\xffb c", b"a\xe2\x82 x", b"ok\xf0\x9f", b"\xc0\xaf  y"]
    bounds = [[0, 1, 2, 3, 4, 5], [0, 1, 3, 4, 5], [0, 1, 2, 4], [0, 1, 2, 3, 4, 5]]
    decoded = [r.decode("utf-8", errors="replace") for r in raw]
    ids, starts, ends = tokenizer.tokenize_with_offsets(raw, unit="UTF8_CHAR")
    assert ids.to_list() == _reference_ids(reference, decoded)
    want = _reference_offsets(reference, decoded, "UTF8_CHAR")
    assert [list(zip(a, b)) for a, b in zip(starts.to_list(), ends.to_list())] == want
    _, starts, ends = tokenizer.tokenize_with_offsets(raw, unit="BYTE")
    assert [list(zip(a, b)) for a, b in zip(starts.to_list(), ends.to_list())] == [
        [(b[x], b[y]) for x, y in row] for b, row in zip(bounds, want)]


def test_scalar_python_and_dataset_inputs(tokenizer, reference):
    texts = ["Hello world", "it's  2024!"]
    want = _reference_ids(reference, texts)
    assert tokenizer(texts[1]).numpy().tolist() == want[1]
    assert tokenizer(tf.constant(texts)).to_list() == want
    ds = tf.data.Dataset.from_tensor_slices(texts).map(tokenizer)
    assert [x.numpy().tolist() for x in ds] == want
    ids, starts, ends = tokenizer.tokenize_with_offsets(texts[0])
    assert ids.numpy().tolist() == want[0] and starts.shape.rank == 1
    # Batches with no word at all.
    assert tokenizer(["", ""]).to_list() == [[], []]
    assert tokenizer(tf.constant([], tf.string)).to_list() == []
    assert [x.to_list() for x in tokenizer.tokenize_with_offsets([""])] == [[[]]] * 3


def test_tokenizer_json_alone_equals_vocab_and_merges(tokenizer, roberta_tokenizer_folder,
                                                      tmp_path):
    config = json.load(open(os.path.join(roberta_tokenizer_folder, "tokenizer.json")))
    texts = _texts()
    want = tokenizer(texts).to_list()
    for merges in ("pairs", "strings"):
        if merges == "strings":  # The older layout: "a b".
            model = config["model"]
            model["merges"] = [" ".join(m) if isinstance(m, list) else m for m in model["merges"]]
        folder = tmp_path / merges
        folder.mkdir()
        (folder / "tokenizer.json").write_text(json.dumps(config))
        alone = BytePairTokenizer.from_folder(str(folder))
        assert alone.vocabulary == tokenizer.vocabulary and alone.merges == tokenizer.merges
        assert alone(texts).to_list() == want


def test_special_token_ids_are_read_from_the_files(roberta_tokenizer_folder, tmp_path):
    from transformers import RobertaTokenizerFast

    # The same tokens under shuffled ids: the specials are not 0-4 any more.
    vocab = json.load(open(os.path.join(roberta_tokenizer_folder, "vocab.json")))
    order = list(vocab)
    random.Random(0).shuffle(order)
    (tmp_path / "vocab.json").write_text(json.dumps({t: i for i, t in enumerate(order)}))
    shutil.copy(os.path.join(roberta_tokenizer_folder, "merges.txt"), tmp_path)
    reference = RobertaTokenizerFast.from_pretrained(str(tmp_path), split_special_tokens=True)
    tokenizer = BytePairTokenizer.from_folder(str(tmp_path))
    assert tokenizer.mask_token_id == order.index("<mask>") == reference.mask_token_id
    assert tokenizer.cls_token_id == reference.cls_token_id != 0
    texts = _texts()[:80]
    assert tokenizer(texts).to_list() == _reference_ids(reference, texts)


def test_vocabulary_files_round_trip(tokenizer, tmp_path):
    tokenizer.save_vocabulary_files(str(tmp_path))
    assert sorted(os.listdir(tmp_path)) == ["merges.txt", "vocab.json"]
    clone = BytePairTokenizer.from_folder(str(tmp_path))
    assert clone.vocabulary == tokenizer.vocabulary and clone.merges == tokenizer.merges
    texts = _texts()
    assert clone(texts).to_list() == tokenizer(texts).to_list()


def test_keras_file_round_trip(tokenizer, tmp_path):
    tokenizer = BytePairTokenizer(
        {t: i for i, t in enumerate(tokenizer.vocabulary)}, tokenizer.merges,
        add_prefix_space=True, clean_up_tokenization_spaces=True)
    config = tokenizer.get_config()
    assert config["vocabulary"] is None and config["add_prefix_space"] is True
    batch = tf.constant(_texts()[:60])
    model = _TokenizerModel(tokenizer)
    model(batch)
    model.save(str(tmp_path / "tokenizer.keras"))
    layer = keras.models.load_model(str(tmp_path / "tokenizer.keras")).tokenizer
    assert isinstance(layer, BytePairTokenizer) and layer.add_prefix_space
    assert layer.clean_up_tokenization_spaces
    assert layer(batch).to_list() == tokenizer(batch).to_list()


def test_saved_model_needs_only_tf_servings_ops(tokenizer, tmp_path):
    module = tf.Module()
    module.tokenizer = tokenizer
    module.serve = tf.function(lambda x: {"ids": tokenizer(x).to_tensor(-1)},
                               input_signature=[tf.TensorSpec([None], tf.string)])
    tf.saved_model.save(module, str(tmp_path), signatures={"serving_default": module.serve})
    loaded = tf.saved_model.load(str(tmp_path))
    texts = _texts()[:60]
    got = loaded.signatures["serving_default"](tf.constant(texts))["ids"].numpy().tolist()
    assert [[i for i in row if i >= 0] for row in got] == tokenizer(texts).to_list()
    # What TF Serving must link: core TensorFlow and one tensorflow-text op of its 2.12 build.
    assert non_core_ops([str(tmp_path)]) == {str(tmp_path): ["RegexSplitWithOffsets"]}
    assert missing_in_tf_text([str(tmp_path)]) == {} and not disallowed_ops([str(tmp_path)])


def test_decode_matches_transformers(tokenizer, reference):
    texts = _texts()[:120]
    for text in texts:
        ids = reference(text)["input_ids"]  # With <s> and </s>.
        for skip in (False, True):
            assert tokenizer.decode(ids, skip_special_tokens=skip) == reference.decode(
                ids, skip_special_tokens=skip), (text, skip)
    ids = tokenizer(texts)
    assert [t.decode("utf-8") for t in tokenizer.detokenize(ids).numpy()] == [
        reference.decode(row) for row in ids.to_list()]
    assert tokenizer.batch_decode(ids) == [reference.decode(row) for row in ids.to_list()]


def test_special_tokens_mask_matches_transformers(tokenizer, reference):
    # `<s> a </s></s> b </s>`: transformers marks packed ids only.
    a, b = tokenizer(["one text", " another"]).to_list()
    packed = reference("one text", " another")["input_ids"]
    want = reference.get_special_tokens_mask(packed, already_has_special_tokens=True)
    assert tokenizer.get_special_tokens_mask(a, b) == want
    assert want.count(1) == 4 and len(want) == len(a) + len(b) + 4
    assert tokenizer.get_special_tokens_mask(packed, already_has_special_tokens=True) == want
    assert tokenizer.pair_separator == 2 and tokenizer.lowercase is False


def test_folder_errors_name_what_is_missing(tmp_path):
    (tmp_path / "vocab.txt").write_text("[PAD]\n")
    with pytest.raises(FileNotFoundError, match=r"vocab\.json and merges\.txt.*vocab\.txt"):
        BytePairTokenizer.from_folder(str(tmp_path))
    (tmp_path / "tokenizer.json").write_text(json.dumps({"model": {"type": "Unigram"}}))
    with pytest.raises(ValueError, match="Unigram model, not byte-level BPE"):
        BytePairTokenizer.from_folder(str(tmp_path))


def test_merge_outside_the_vocabulary_is_an_error(tokenizer):
    vocab = {t: i for i, t in enumerate(tokenizer.vocabulary)}
    with pytest.raises(ValueError, match=r"Merge 1 \('zz' 'q'\) needs 'zz'"):
        BytePairTokenizer(vocab, [tokenizer.merges[0], ("zz", "q")])
