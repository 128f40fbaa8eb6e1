"""BertTokenizer's transformers options, id for id with transformers' slow BertTokenizer.

Each option (strip_accents, tokenize_chinese_chars, never_split,
special_tokens_in_strings, remove_control_chars) and mixes of them, on generated hard strings
(scripts, combining marks, controls, CJK, emoji, long words, special tokens
written in the text), in Python and in a reloaded SavedModel; the LiteRT
tokenizer follows strip_accents (tests/export/test_tflite_text.py runs it in
the LiteRT runtime) and refuses the other options. The strings leave out what
keras_bert does differently on purpose (transformers deletes every "C"
category, unassigned and private-use characters included, and applies NFC;
keras_bert deletes Cc and Cf, as google-research/bert does), which the
default configuration checks.
"""

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_bert.export.op_set import ALLOWED_TEXT_OPS, non_core_ops
from keras_bert.text import BertTokenizer
from keras_bert.text.vocab import SPECIAL_TOKENS
from tests.text.hard_texts import hard_texts, hard_texts_vocabulary

legacy = pytest.importorskip("transformers.models.bert.tokenization_bert_legacy")
_is_whitespace = legacy._is_whitespace

NUM_TEXTS = 2000
NEVER_SPLIT = ["hello!", "Héllo", "C++", "e-mail", "ΣΟΦΟΣ", "naïve", "##x"]

# name: (BertTokenizer options, transformers' BertTokenizer options).
CONFIGS = {
    "default": ({}, {"split_special_tokens": True}),
    "cased": ({"lowercase": False}, {"do_lower_case": False, "split_special_tokens": True}),
    "lower_keep_accents": (
        {"strip_accents": False},
        {"strip_accents": False, "split_special_tokens": True}),
    "strip_accents_only": (
        {"lowercase": False, "strip_accents": True},
        {"do_lower_case": False, "strip_accents": True, "split_special_tokens": True}),
    "no_chinese_chars": (
        {"tokenize_chinese_chars": False},
        {"tokenize_chinese_chars": False, "split_special_tokens": True}),
    "never_split": (
        {"never_split": NEVER_SPLIT},
        {"never_split": NEVER_SPLIT, "split_special_tokens": True}),
    "never_split_cased": (
        {"lowercase": False, "never_split": NEVER_SPLIT},
        {"do_lower_case": False, "never_split": NEVER_SPLIT, "split_special_tokens": True}),
    "special_tokens_in_strings": ({"special_tokens_in_strings": True}, {}),
    "keep_control_chars": (
        {"remove_control_chars": False},
        {"remove_control_chars": False, "split_special_tokens": True}),
    "mixed": (
        {"strip_accents": False, "tokenize_chinese_chars": False,
         "never_split": NEVER_SPLIT, "special_tokens_in_strings": True,
         "remove_control_chars": False},
        {"strip_accents": False, "tokenize_chinese_chars": False,
         "never_split": NEVER_SPLIT, "remove_control_chars": False}),
}
# The SavedModel test's configs (each signature is traced, saved, loaded and run): the
# defaults, the lowercase=False ones, and "mixed", which turns on every option that a
# single-option config sets (strip_accents=False, tokenize_chinese_chars=False,
# never_split, special_tokens_in_strings, remove_control_chars=False), so a SavedModel
# that lost any of them fails there; their ids in Python, one option at a time, are
# test_ids_equal_transformers_slow_tokenizer's.
SAVED_CONFIGS = ["default", "cased", "strip_accents_only", "never_split_cased", "mixed"]
# Control and format characters as tokens, reached only with remove_control_chars=False.
CONTROL_TOKENS = ["\u00ad", "##\u00ad", "\u200b", "##\u200b", "\x07", "##\x07", "\x7f"]

@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    texts = hard_texts(NUM_TEXTS)
    vocab = hard_texts_vocabulary(texts) + CONTROL_TOKENS
    path = tmp_path_factory.mktemp("vocab") / "vocab.txt"
    path.write_text("".join(t + "\n" for t in vocab), encoding="utf-8")
    return texts, vocab, str(path)


def _keeping_control_chars(basic_tokenizer):
    """transformers' BasicTokenizer clean-up less the deletion of "C" characters (the
    option `remove_control_chars=False` of transformers' own test file): U+0000 and U+FFFD
    are still deleted, whitespace still becomes " "."""
    def clean(text):
        return "".join(" " if _is_whitespace(c) else c for c in text if c not in "\x00\ufffd")

    basic_tokenizer._clean_text = clean


def _transformers_ids(path, texts, options):
    options = dict(options)
    keep_controls = not options.pop("remove_control_chars", True)
    if options.pop("split_special_tokens", False):
        # Special tokens as text, google-research/bert's rule. (`tokenize` with
        # split_special_tokens=True still keeps a whitespace-separated "[CLS]"
        # whole: it calls `_tokenize` without passing it on.)
        reference = legacy.BertTokenizerLegacy(path, **options)
        tokenize = lambda t: reference._tokenize(t, split_special_tokens=True)  # noqa: E731
    else:
        reference = legacy.BertTokenizerLegacy(path, **options)
        tokenize = reference.tokenize
    if keep_controls:
        _keeping_control_chars(reference.basic_tokenizer)
    return [reference.convert_tokens_to_ids(tokenize(t)) for t in texts]


@pytest.fixture(scope="module")
def expected(setup):
    texts, _, path = setup
    return {name: _transformers_ids(path, texts, hf) for name, (_, hf) in CONFIGS.items()}


@pytest.fixture(scope="module")
def tokenizers(setup):
    _, vocab, _ = setup
    return {name: BertTokenizer(vocab, **ours) for name, (ours, _) in CONFIGS.items()}


@pytest.mark.parametrize("name", list(CONFIGS))
def test_ids_equal_transformers_slow_tokenizer(setup, expected, tokenizers, name):
    texts = setup[0]
    got = tokenizers[name](tf.constant(texts)).to_list()
    mismatches = [(t, g, e) for t, g, e in zip(texts, got, expected[name]) if g != e]
    assert not mismatches, f"{len(mismatches)} of {len(texts)} differ, first: {mismatches[0]}"
    # Offsets give the same ids, one span per token, inside the text.
    ids, starts, ends = tokenizers[name].tokenize_with_offsets(
        tf.constant(texts[:300]), unit="UTF8_CHAR")
    assert ids.to_list() == got[:300]
    for text, s, e in zip(texts, starts.to_list(), ends.to_list()):
        assert all(0 <= a < b <= len(text) for a, b in zip(s, e)), text


def test_options_change_ids(setup, expected):
    # Each option is seen by the texts: its ids differ from the default's.
    differing = {name: sum(a != b for a, b in zip(ids, expected["default"]))
                 for name, ids in expected.items()}
    assert differing.pop("default") == 0
    assert all(count > 20 for count in differing.values()), differing


def test_special_tokens_in_the_text_are_one_id_with_their_span():
    tokenizer = BertTokenizer(list(SPECIAL_TOKENS) + ["hello", "world"],
                              special_tokens_in_strings=True)
    text = "Hello[MASK]world [SEP] [mask]"
    ids, starts, ends = tokenizer.tokenize_with_offsets(tf.constant([text]), unit="UTF8_CHAR")
    assert ids.to_list() == [[5, 4, 6, 3, 1, 1, 1]]
    assert [text[s:e] for s, e in zip(starts[0].numpy(), ends[0].numpy())] == [
        "Hello", "[MASK]", "world", "[SEP]", "[", "mask", "]"]
    assert BertTokenizer(tokenizer.vocabulary)(tf.constant([text])).to_list()[0][1:4] == [1, 1, 1]
    # Byte offsets past invalid UTF-8 and a U+0000 (both deleted), a scalar text.
    raw = b"caf\xe9\x00[CLS]hello"
    ids, starts, ends = tokenizer.tokenize_with_offsets(tf.constant(raw))
    assert ids.numpy().tolist() == [1, 2, 5]
    assert [raw[s:e] for s, e in zip(starts.numpy(), ends.numpy())] == [
        b"caf", b"[CLS]", b"hello"]


def test_never_split_word_is_its_own_id_or_unknown():
    vocab = list(SPECIAL_TOKENS) + ["hello!", "hello", "!", "x" * 120]
    tokenizer = BertTokenizer(vocab, never_split=["hello!", "Héllo", "x" * 120],
                              max_chars_per_word=100)
    # "HELLO!" and "héllo!" normalize to a never_split word, kept whole; "Héllo" is
    # one but not in the vocabulary; "hello?" is split ("?" is not in it either).
    text = "hello! HELLO! Héllo héllo! hello? " + "x" * 120
    assert tokenizer(tf.constant([text])).to_list() == [[5, 5, 1, 5, 6, 1, 8]]
    assert BertTokenizer(vocab)(tf.constant([text])).to_list() == [
        [6, 7, 6, 7, 6, 6, 7, 6, 1, 1]]


@pytest.mark.slow  # Tens of seconds of the default tier's time (round 10).
def test_saved_model_follows_every_option(setup, expected, tokenizers, tmp_path):
    texts = setup[0]
    module = tf.Module()
    signatures = {}
    for name in SAVED_CONFIGS:
        tokenizer = tokenizers[name]
        setattr(module, name, tokenizer)
        fn = tf.function(
            lambda t, tokenizer=tokenizer: {"ids": tokenizer(t).to_tensor(-1)},
            input_signature=[tf.TensorSpec([None], tf.string)])
        signatures[name] = fn.get_concrete_function()
    tf.saved_model.save(module, str(tmp_path / "tokenizers"), signatures=signatures)
    # Core ops and the one tensorflow-text op that stock TF Serving links.
    (ops,) = non_core_ops([str(tmp_path / "tokenizers")]).values()
    assert set(ops) <= set(ALLOWED_TEXT_OPS), ops
    loaded = tf.saved_model.load(str(tmp_path / "tokenizers"))
    batch = tf.constant(texts[:500])
    for name in SAVED_CONFIGS:
        got = loaded.signatures[name](batch)["ids"].numpy()
        assert [[i for i in row if i >= 0] for row in got.tolist()] == expected[name][:500], name


@keras.saving.register_keras_serializable(package="keras_bert_tests")
class _TokenizerModel(keras.Model):
    """A model around a tokenizer, to save it in a .keras file."""

    def __init__(self, tokenizer, **kwargs):
        super().__init__(**kwargs)
        self.tokenizer = tokenizer

    def call(self, texts):
        return self.tokenizer(texts)

    def build_from_config(self, config):
        pass  # No weights: the tokenizer's tables come from its vocabulary asset.

    def get_config(self):
        return {**super().get_config(),
                "tokenizer": keras.saving.serialize_keras_object(self.tokenizer)}

    @classmethod
    def from_config(cls, config):
        tokenizer = keras.saving.deserialize_keras_object(config.pop("tokenizer"))
        return cls(tokenizer, **config)


def test_options_are_saved_in_the_config_and_the_keras_file(setup, tmp_path):
    texts, vocab, _ = setup
    options = CONFIGS["mixed"][0]
    tokenizer = BertTokenizer(vocab, clean_up_tokenization_spaces=True, **options)
    config = tokenizer.get_config()
    assert {k: config[k] for k in options} == options
    assert config["clean_up_tokenization_spaces"] is True
    clone = BertTokenizer.from_config(config)
    clone.set_vocabulary(vocab)
    batch = tf.constant(texts[:200])
    assert clone(batch).to_list() == tokenizer(batch).to_list()
    model = _TokenizerModel(tokenizer)
    model(batch)
    model.save(str(tmp_path / "tokenizer.keras"))
    layer = keras.models.load_model(str(tmp_path / "tokenizer.keras")).tokenizer
    assert {k: layer.get_config()[k] for k in options} == options
    assert layer(batch).to_list() == tokenizer(batch).to_list()


def test_detokenize_cleans_up_spaces_as_transformers_decodes(setup, tokenizers):
    texts, _, path = setup
    reference = legacy.BertTokenizerLegacy(path, split_special_tokens=True)
    tokenizer = tokenizers["default"]
    ids = tokenizer(tf.constant(texts[:500]))
    cleaned = tokenizer.detokenize(ids, clean_up_tokenization_spaces=True).numpy()
    raw = tokenizer.detokenize(ids).numpy()
    want = [reference.decode(row) for row in ids.to_list()]
    assert [t.decode("utf-8") for t in cleaned] == want
    assert sum(a != b for a, b in zip(cleaned, raw)) > 50  # The clean-up did something.
    simple = BertTokenizer(list(SPECIAL_TOKENS) + ["un", "##want", "##ed", ",", "running"],
                           clean_up_tokenization_spaces=True)
    assert simple.detokenize(simple(["unwanted, running"])).numpy().tolist() == [
        b"unwanted, running"]
    assert simple.detokenize(simple(["unwanted, running"]),
                             clean_up_tokenization_spaces=False).numpy().tolist() == [
        b"unwanted , running"]


def test_get_special_tokens_mask_as_transformers(setup):
    _, vocab, path = setup
    reference = legacy.BertTokenizerLegacy(path)
    tokenizer = BertTokenizer(vocab)
    a, b = [7, 8, 9], [10, 11]
    assert tokenizer.get_special_tokens_mask(a) == reference.get_special_tokens_mask(a)
    assert tokenizer.get_special_tokens_mask(a, b) == reference.get_special_tokens_mask(a, b)
    packed = reference.build_inputs_with_special_tokens(a, b) + [0, 1, 4]
    assert tokenizer.get_special_tokens_mask(packed, already_has_special_tokens=True) == (
        reference.get_special_tokens_mask(packed, already_has_special_tokens=True))
    assert tokenizer.get_special_tokens_mask(packed, already_has_special_tokens=True) == [
        1, 0, 0, 0, 1, 0, 0, 1, 1, 1, 1]


def test_vocabulary_without_fast_path_tokens_builds():
    # Five specials and one non-ASCII word: no token that the fast path can
    # reach, which left tensorflow-text's kernel with an empty trie.
    vocab = list(SPECIAL_TOKENS) + ["héllo"]
    assert BertTokenizer(vocab, lowercase=False)(tf.constant(["héllo x", "a"])).to_list() == [
        [5, 1], [1]]
    assert BertTokenizer(vocab)(tf.constant(["héllo"])).to_list() == [[1]]  # "hello".
    assert BertTokenizer(vocab, strip_accents=False)(tf.constant(["HÉLLO"])).to_list() == [[5]]
    vocab = list(SPECIAL_TOKENS) + ["a.b", "c-d"]
    assert BertTokenizer(vocab)(tf.constant(["a.b"])).to_list() == [[1, 1, 1]]


def test_missing_vocabulary_file_is_a_value_error_and_file_not_found(tmp_path):
    missing = str(tmp_path / "no" / "vocab.txt")
    with pytest.raises(ValueError, match="Vocabulary file not found") as error:
        BertTokenizer(missing)
    assert isinstance(error.value, FileNotFoundError)
    assert missing in str(error.value)


@pytest.mark.parametrize("options, match", [
    ({"strip_accents": "yes"}, "strip_accents='yes'"),
    ({"tokenize_chinese_chars": 1}, "tokenize_chinese_chars=1"),
    ({"special_tokens_in_strings": None}, "special_tokens_in_strings=None"),
    ({"clean_up_tokenization_spaces": "no"}, "clean_up_tokenization_spaces='no'"),
    ({"remove_control_chars": 0}, "remove_control_chars=0"),
    ({"never_split": "hello"}, r"never_split=\['hello'\]"),
    ({"never_split": ["a b"]}, "'a b'"),
    ({"never_split": [""]}, "''"),
])
def test_bad_options_are_named(options, match):
    with pytest.raises(ValueError, match=match):
        BertTokenizer(list(SPECIAL_TOKENS), **options)


def test_lite_tokenizer_follows_accent_options_and_refuses_the_others(setup, tokenizers):
    from keras_bert.export.tflite import LiteTokenizer

    texts = setup[0][:400]  # The LiteRT runtime: tests/export/test_tflite_text.py.
    for name in ("lower_keep_accents", "strip_accents_only"):
        tokenizer = tokenizers[name]
        lite = LiteTokenizer(tokenizer)
        assert lite(tf.constant(texts)).to_list() == tokenizer(tf.constant(texts)).to_list(), name
    for name, option in (("no_chinese_chars", "tokenize_chinese_chars=False"),
                         ("never_split", "never_split="),
                         ("special_tokens_in_strings", "special_tokens_in_strings=True"),
                         ("keep_control_chars", "remove_control_chars=False")):
        with pytest.raises(ValueError, match=f"option {option}.*--format saved_model"):
            LiteTokenizer(tokenizers[name])


def _control_chars_classifier(model_dir):
    from keras_bert import BertClassifier
    from keras_bert.text import BertPreprocessor

    model = BertClassifier.from_pretrained(model_dir, num_classes=2)
    tokenizer = BertTokenizer(model.preprocessor.tokenizer.vocabulary,
                              remove_control_chars=False)
    model.preprocessor = BertPreprocessor(tokenizer, sequence_length=None, max_seq_length=32)
    return model


def test_remove_control_chars_is_saved_with_the_model_and_refused_by_litert(tiny_model_dir):
    from keras_bert.export import build_serving_module
    from keras_bert.export.tflite import convert_module

    model = _control_chars_classifier(tiny_model_dir)
    # What save_pretrained writes into task.json (the slow test below reads it back).
    assert model.preprocessor.saved_settings()["tokenizer_options"] == {
        "remove_control_chars": False}
    with pytest.raises(ValueError, match="remove_control_chars=False.*--format saved_model"):
        convert_module(build_serving_module(model))


@pytest.mark.slow
def test_remove_control_chars_is_followed_by_the_saved_model_export(tiny_model_dir, tmp_path):
    from keras_bert.export import export_model

    model = _control_chars_classifier(tiny_model_dir)
    texts = ["the\u00adfilm", "a\x07b c", "good movie", "\u200b"]
    # Kept, the characters change the ids (here: [UNK] words), so the answers.
    kept = model.preprocessor.tokenizer(texts).to_list()
    assert kept != BertTokenizer(model.preprocessor.tokenizer.vocabulary)(texts).to_list()
    # Exported from the model directory: the option is read back from task.json.
    model.save_pretrained(str(tmp_path / "clf"))
    export_dir = export_model(str(tmp_path / "clf"), str(tmp_path / "exports" / "clf"),
                              warmup=False)
    serve = tf.saved_model.load(export_dir).signatures["serving_default"]
    got = serve(text=tf.constant(texts))
    np.testing.assert_allclose(got["probabilities"].numpy(),
                               tf.nn.softmax(model.predict(texts, verbose=0)).numpy(), atol=1e-5)
