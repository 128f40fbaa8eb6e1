"""transformers' tests/models/bert/test_tokenization_bert.py and test_tokenization_bert_legacy.py,
on keras_bert's BertTokenizer and BertPreprocessor.

Same vocabularies, texts and expected tokens. transformers checks its
`BasicTokenizer` (normalization and word splitting) on its own; keras_bert has
one in-graph tokenizer, so those checks run through it with a vocabulary
that holds exactly the expected words: WordPiece then gives each word whole,
and a word split or normalized otherwise comes out as other tokens or [UNK].
Deliberate differences (docs/peers.md): the vocabulary must hold all five
special tokens; basic tokenization always runs (no `do_basic_tokenize`);
`[CLS]`/`[SEP]` come from the preprocessor's packing, not the tokenizer.
"""

import pytest
import tensorflow as tf

from keras_bert.text import BertPreprocessor, BertTokenizer, SPECIAL_TOKENS, save_vocabulary
from tests.peers.peer_case import to_lists

# test_tokenization_bert.py setUp (and the legacy file's VOCAB_TOKENS).
VOCAB = ["[UNK]", "[CLS]", "[SEP]", "[PAD]", "[MASK]", "want", "##want", "##ed", "wa", "un",
         "runn", "##ing", ",", "low", "lowest"]


@pytest.fixture(scope="module")
def vocab_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("transformers_vocab") / "vocab.txt"
    save_vocabulary(VOCAB, str(path))
    return str(path)


@pytest.fixture(scope="module")
def tokenizer(vocab_file):
    return BertTokenizer(vocab_file)


def tokens(tokenizer, text):
    return [t.decode("utf-8") for t in tokenizer.ids_to_tokens(tokenizer([text])).to_list()[0]]


def basic_tokens(text, expected, **options):
    """The words of `text` with a vocabulary of exactly the `expected` words."""
    vocab = list(SPECIAL_TOKENS) + [w for w in dict.fromkeys(expected) if w not in SPECIAL_TOKENS]
    return tokens(BertTokenizer(vocab, **options), text)


def test_full_tokenizer(tokenizer):
    """test_tokenization_bert.py and test_tokenization_bert_legacy.py test_full_tokenizer."""
    ids = tokenizer(["UNwant\u00E9d,running"]).to_list()[0]
    assert tokens(tokenizer, "UNwant\u00E9d,running") == [
        "un", "##want", "##ed", ",", "runn", "##ing"]
    assert ids == [9, 6, 7, 12, 10, 11]


@pytest.mark.slow  # Imports transformers (seconds); tests/text/test_tokenizer_options.py
def test_rust_and_python_full_tokenizers(tokenizer, vocab_file):  # compares 2,000 texts.
    """test_tokenization_bert.py test_rust_and_python_full_tokenizers: the same tokens and
    ids, without and with special tokens, as transformers' tokenizers (both, when
    installed) on the same vocab.txt."""
    transformers = pytest.importorskip("transformers")
    sequence = "UNwant\u00E9d,running"
    packed = BertPreprocessor(tokenizer, sequence_length=None)([sequence])["token_ids"]
    ours = tokenizer([sequence]).to_list()[0]
    for reference in (transformers.BertTokenizer(vocab_file),
                      transformers.models.bert.tokenization_bert_legacy.BertTokenizerLegacy(
                          vocab_file)):
        assert reference.tokenize(sequence) == tokens(tokenizer, sequence)
        assert reference.encode(sequence, add_special_tokens=False) == ours
        assert reference.encode(sequence) == packed.numpy().tolist()[0]


def test_get_input_output_texts(tokenizer):
    """test_tokenization_bert.py get_input_output_texts: "UNwant\u00E9d,running" decodes
    to "unwanted, running" (transformers' clean-up of spaces)."""
    ids = tokenizer(["UNwant\u00E9d,running"])
    assert tokenizer.detokenize(ids, clean_up_tokenization_spaces=True).numpy().tolist() == [
        b"unwanted, running"]
    assert tokenizer.detokenize(ids).numpy().tolist() == [b"unwanted , running"]


def test_chinese():
    """test_tokenization_bert.py test_chinese."""
    expected = ["ah", "\u535A", "\u63A8", "zz"]
    assert basic_tokens("ah\u535A\u63A8zz", expected) == expected


HELLO = " \tHeLLo!how  \n Are yoU?  "
HALLO = " \tHäLLo!how  \n Are yoU?  "


@pytest.mark.parametrize("options, text, expected", [
    # test_basic_tokenizer_lower
    ({}, HELLO, ["hello", "!", "how", "are", "you", "?"]),
    ({}, "H\u00E9llo", ["hello"]),
    # test_basic_tokenizer_lower_strip_accents_false
    ({"strip_accents": False}, HALLO, ["hällo", "!", "how", "are", "you", "?"]),
    ({"strip_accents": False}, "H\u00E9llo", ["h\u00E9llo"]),
    # test_basic_tokenizer_lower_strip_accents_true
    ({"strip_accents": True}, HALLO, ["hallo", "!", "how", "are", "you", "?"]),
    ({"strip_accents": True}, "H\u00E9llo", ["hello"]),
    # test_basic_tokenizer_lower_strip_accents_default
    ({}, HALLO, ["hallo", "!", "how", "are", "you", "?"]),
    # test_basic_tokenizer_no_lower
    ({"lowercase": False}, HELLO, ["HeLLo", "!", "how", "Are", "yoU", "?"]),
    # test_basic_tokenizer_no_lower_strip_accents_false
    ({"lowercase": False, "strip_accents": False}, HALLO,
     ["HäLLo", "!", "how", "Are", "yoU", "?"]),
    # test_basic_tokenizer_no_lower_strip_accents_true
    ({"lowercase": False, "strip_accents": True}, HALLO,
     ["HaLLo", "!", "how", "Are", "yoU", "?"]),
    # test_basic_tokenizer_respects_never_split_tokens
    ({"lowercase": False, "never_split": ["[UNK]"]}, HELLO + " [UNK]",
     ["HeLLo", "!", "how", "Are", "yoU", "?", "[UNK]"]),
    # test_basic_tokenizer_splits_on_punctuation
    ({}, "a\n'll !!to?'d of, can't.",
     ["a", "'", "ll", "!", "!", "to", "?", "'", "d", "of", ",", "can", "'", "t", "."]),
    # test_basic_tokenizer_remove_control_chars_false
    ({"remove_control_chars": False}, "\u200E\u200F", ["\u200E\u200F"]),
])
def test_basic_tokenizer(options, text, expected):
    """test_tokenization_bert.py test_basic_tokenizer_* (casing, accents, never_split,
    punctuation, control characters kept)."""
    assert basic_tokens(text, expected, **options) == expected


def test_basic_tokenizer_remove_control_chars_true():
    """test_tokenization_bert.py test_basic_tokenizer_remove_control_chars_true (the
    default): left-to-right and right-to-left marks are deleted."""
    vocab = list(SPECIAL_TOKENS) + ["\u200E\u200F", "\u200E"]
    assert BertTokenizer(vocab, remove_control_chars=True)(["\u200E\u200F"]).to_list() == [[]]
    assert BertTokenizer(vocab)(["\u200E\u200F"]).to_list() == [[]]


def test_wordpiece_tokenizer():
    """test_tokenization_bert.py test_wordpiece_tokenizer ([PAD] and [MASK] added: a
    keras_bert vocabulary holds all five special tokens)."""
    vocab = ["[UNK]", "[CLS]", "[SEP]", "want", "##want", "##ed", "wa", "un", "runn", "##ing",
             "[PAD]", "[MASK]"]
    tokenizer = BertTokenizer(vocab)
    assert tokenizer([""]).to_list() == [[]]
    assert tokens(tokenizer, "unwanted running") == ["un", "##want", "##ed", "runn", "##ing"]
    assert tokens(tokenizer, "unwantedX running") == ["[UNK]", "runn", "##ing"]


def test_is_whitespace_control_and_punctuation():
    """test_tokenization_bert.py test_is_whitespace, test_is_control, test_is_punctuation,
    through what each class does to "a<c>b": whitespace separates, a control
    character is deleted, punctuation is a word of its own; "A" is none of them."""
    vocab = list(SPECIAL_TOKENS) + ["a", "b", "ab", "aab", "-", "$", "`", "."]
    tokenizer = BertTokenizer(vocab)
    for space in (" ", "\t", "\r", "\n", "\u00A0"):
        assert tokens(tokenizer, f"a{space}b") == ["a", "b"], repr(space)
    assert tokens(tokenizer, "a\u0005b") == ["ab"]
    for punctuation in "-$`.":
        assert tokens(tokenizer, f"a{punctuation}b") == ["a", punctuation, "b"]
    assert tokens(tokenizer, "aAb") == ["aab"]  # Neither space, control nor punctuation.


def test_clean_text(tokenizer):
    """test_tokenization_bert.py test_clean_text: a soft hyphen alone gives no token."""
    assert [tokens(tokenizer, t) for t in ["Test", "\xad", "test"]] == [["[UNK]"], [], ["[UNK]"]]


def test_sequence_builders_and_token_type_ids(tokenizer):
    """test_tokenization_bert.py test_sequence_builders (with this vocabulary: the
    pretrained one is a download), test_tokenization_bert_legacy.py
    test_build_inputs_with_special_tokens and test_create_token_type_ids_from_sequences:
    the preprocessor packs [CLS] A [SEP] (B [SEP]), segment 0 then 1."""
    preprocessor = BertPreprocessor(tokenizer, sequence_length=None)
    text, text_2 = tokenizer(["want"]).to_list()[0], tokenizer(["lowest"]).to_list()[0]
    cls, sep = tokenizer.cls_token_id, tokenizer.sep_token_id
    assert preprocessor(["want"])["token_ids"].numpy().tolist() == [[cls] + text + [sep]]
    pair = preprocessor((["want"], ["lowest"]))
    assert pair["token_ids"].numpy().tolist() == [[cls] + text + [sep] + text_2 + [sep]]
    assert pair["segment_ids"].numpy().tolist() == [
        [0] * (len(text) + 2) + [1] * (len(text_2) + 1)]


def test_get_special_tokens_mask(tokenizer):
    """test_tokenization_bert_legacy.py test_get_special_tokens_mask."""
    ids = BertPreprocessor(tokenizer, sequence_length=None)(["want"])["token_ids"]
    mask = tokenizer.get_special_tokens_mask(ids.numpy().tolist()[0],
                                             already_has_special_tokens=True)
    assert (mask[0], mask[-1], sum(mask)) == (1, 1, 2)


def test_offsets_with_special_characters():
    """test_tokenization_bert.py test_offsets_with_special_characters, cased and uncased
    (a vocabulary holding the expected tokens: the pretrained one is a download).
    "[MASK]" written in the text is one token with special_tokens_in_strings=True
    (transformers' default); offsets are character spans of the original text."""
    sentence = "A, naïve [MASK] AllenNLP sentence."
    cased = [((0, 1), "A"), ((1, 2), ","), ((3, 5), "na"), ((5, 6), "##ï"), ((6, 8), "##ve"),
             ((9, 15), "[MASK]"), ((16, 21), "Allen"), ((21, 23), "##NL"), ((23, 24), "##P"),
             ((25, 33), "sentence"), ((33, 34), ".")]
    uncased = [((0, 1), "a"), ((1, 2), ","), ((3, 8), "naive"), ((9, 15), "[MASK]"),
               ((16, 21), "allen"), ((21, 23), "##nl"), ((23, 24), "##p"),
               ((25, 33), "sentence"), ((33, 34), ".")]
    vocab = list(SPECIAL_TOKENS) + sorted({t for _, t in cased + uncased} - set(SPECIAL_TOKENS))
    for lowercase, expected in ((False, cased), (True, uncased)):
        tokenizer = BertTokenizer(vocab, lowercase=lowercase, special_tokens_in_strings=True)
        ids, starts, ends = tokenizer.tokenize_with_offsets([sentence], unit="UTF8_CHAR")
        got = [t.decode("utf-8") for t in tokenizer.ids_to_tokens(ids).to_list()[0]]
        assert got == [t for _, t in expected]
        assert list(zip(starts.to_list()[0], ends.to_list()[0])) == [s for s, _ in expected]
        # [CLS] and [SEP] around them, as encode_plus(add_special_tokens=True) gives.
        packed = BertPreprocessor(tokenizer, sequence_length=None)([sentence])["token_ids"]
        assert packed.numpy().tolist()[0] == [tokenizer.cls_token_id] + ids.to_list()[0] + [
            tokenizer.sep_token_id]


def test_change_tokenize_chinese_chars():
    """test_tokenization_bert.py test_change_tokenize_chinese_chars: each ideograph a word,
    or (False) one word of WordPiece pieces."""
    chars = ["的", "人", "有"]
    vocab = list(SPECIAL_TOKENS) + chars + ["##" + c for c in chars]
    text = "".join(chars)
    assert tokens(BertTokenizer(vocab, tokenize_chinese_chars=True), text) == chars
    assert tokens(BertTokenizer(vocab, tokenize_chinese_chars=False), text) == [
        "的", "##人", "##有"]


# === test_tokenization_bert_legacy.py ===

def test_vocab_size_and_get_vocab(tokenizer):
    """test_tokenization_bert_legacy.py test_vocab_size_and_get_vocab."""
    assert tokenizer.vocab_size == len(VOCAB)
    assert tokenizer.token_to_id("##want") == 6


def test_missing_vocab_file_raises(tmp_path):
    """test_tokenization_bert_legacy.py test_missing_vocab_file_raises: a ValueError (and a
    FileNotFoundError, what opening the file raises) that names the path."""
    missing = str(tmp_path / "does-not-exist.txt")
    with pytest.raises(ValueError, match="does-not-exist.txt") as error:
        BertTokenizer(missing)
    assert isinstance(error.value, FileNotFoundError)


def test_do_basic_tokenize_false_is_not_an_option(tokenizer):
    """Deliberate difference with test_tokenization_bert_legacy.py
    test_do_basic_tokenize_false_goes_straight_to_wordpiece: keras_bert always runs
    BERT's basic tokenization (the in-graph tokenizer is one fixed pipeline), so a
    comma glued to a word is split off, and the option is refused by name."""
    assert tokens(tokenizer, "unwanted, running") == ["un", "##want", "##ed", ",", "runn", "##ing"]
    with pytest.raises((TypeError, ValueError), match="do_basic_tokenize"):
        BertTokenizer(VOCAB, do_basic_tokenize=False)


def test_never_split_is_honored():
    """test_tokenization_bert_legacy.py test_never_split_is_honored."""
    tokenizer = BertTokenizer(VOCAB, never_split=["[UNK]"])
    assert tokens(tokenizer, "lowest [UNK]") == ["lowest", "[UNK]"]
    # Without it, "[UNK]" is text: "[", "unk", "]", none in the vocabulary.
    assert tokens(BertTokenizer(VOCAB), "lowest [UNK]") == ["lowest", "[UNK]", "[UNK]", "[UNK]"]


def test_tokenize_chinese_chars_can_be_disabled():
    """test_tokenization_bert_legacy.py test_tokenize_chinese_chars_can_be_disabled."""
    text = "want博推want"
    assert tokens(BertTokenizer(VOCAB, tokenize_chinese_chars=True), text) == [
        "want", "[UNK]", "[UNK]", "want"]
    assert tokens(BertTokenizer(VOCAB, tokenize_chinese_chars=False), text) == ["[UNK]"]


def test_convert_tokens_to_string(tokenizer):
    """test_tokenization_bert_legacy.py test_convert_tokens_to_string."""
    ids = [tokenizer.token_to_id(t) for t in ["un", "##want", "##ed"]]
    assert tokenizer.detokenize(tf.constant(ids)).numpy() == b"unwanted"


def test_save_and_reload_vocabulary(tokenizer, tmp_path):
    """test_tokenization_bert_legacy.py test_save_and_reload_vocabulary: the vocabulary
    written as vocab.txt (a model directory's file) reads back to the same tokens."""
    save_vocabulary(tokenizer.vocabulary, str(tmp_path / "vocab.txt"))
    reloaded = BertPreprocessor.from_vocab_file(str(tmp_path / "vocab.txt")).tokenizer
    assert reloaded.vocabulary == tokenizer.vocabulary
    sequence = "UNwantéd,running"
    assert reloaded([sequence]).to_list() == tokenizer([sequence]).to_list()


@pytest.mark.parametrize("text, expected", [
    ("a  b\tc\nd", ["a", "b", "c", "d"]),  # test_splits_on_any_whitespace
    ("  padded  ", ["padded"]),  # test_strips_surrounding_whitespace
    ("   ", []),  # test_empty_text_gives_no_tokens
])
def test_whitespace_tokenize(text, expected):
    """test_tokenization_bert_legacy.py WhitespaceTokenizeTest."""
    assert basic_tokens(text, expected) == expected
