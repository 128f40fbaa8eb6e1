"""The LiteRT tokenizer (--format tflite) gives BertTokenizer's ids, also on unclean text."""

import numpy as np
import pytest
import tensorflow as tf

from keras_bert.export import litert_interpreter
from keras_bert.export.tflite import LiteTokenizer
from keras_bert.text import BertTokenizer
from tests.text.hard_texts import hard_texts, hard_texts_vocabulary

VOCAB = [
    "[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]",
    "a", "b", "ab", "##b", "caf", "cafe", "don", "##t", "dont", "x", "y", "fine",
    "ss", "ß", "##ß", "fi", "ﬁ", "stra", "##sse", "##ße", "dz", "ǆ", "ǅ", "եւ", "և",
    "①", "1", "µ", "μ", "σ", "ς", "##σ", "##ς", "i", "istanbul", "你", "好",
    "!", ",", ".", "-", "'", "##x",
]

# Each text tokenizes differently with tensorflow-text's FastBertNormalize
# (the LiteRT tokenizer before): U+FFFD and control characters are deleted
# by the reference (joining the word around them), and compatibility
# characters are kept, not folded.
UNCLEAN = [
    "don\ufffdt", "caf\ufffd x", "\ufffd\ufffd", "a\ufffd\ufffdb!",  # U+FFFD.
    "a\x01b", "a\x0bb", "a\x7fb", "x\x90y", "a\x00b", "\x1fab\x9f",  # Cc controls.
    "ab\u200b\u00adx",  # Cf: deleted by both.
    "stra\u00dfe", "\ufb01ne", "\u01c5", "\u0587", "\u2460", "\u00b5",  # Compatibility.
]
OTHER = [
    "", "   ", "Don't, a b!", "Caf\u00e9 na\u00efve", "\u0130stanbul",
    "\u4f60\u597dx", "a\u3000b\u2028x\u00a0y", "a\u0301b",
    "x" * 120,  # Over max_chars_per_word (100 characters; the kernel counts bytes).
    "\u03a3\u03a3 a\u03a3. \u03a3a \u0391\u03a3'\u00ad",  # Final sigma.
    "a\u1b4eb x\U00011f43",  # Punctuation to tensorflow-text's ICU, unassigned in Python 3.11.
]
INVALID_UTF8 = [
    b"caf\xe9 x", b"a\xc3", b"\xc3\xa9b\x80\x80",  # Lone, truncated, stray.
    b"a\xed\xa0\x80b", b"a\xe0\x80\x80b", b"a\xc0\xafb",  # Surrogate, overlong.
    b"a\xf4\x90\x80\x80b", b"a\xf0\x9f\x98b",  # Past U+10FFFF, truncated.
    b"\xff\xfeab", b"a\xf0\x9f\x98\x80b",
]


@pytest.fixture(scope="module", params=[True, False], ids=["uncased", "cased"])
def tokenizers(request):
    tokenizer = BertTokenizer(VOCAB, lowercase=request.param)
    return tokenizer, LiteTokenizer(tokenizer)


def test_lite_tokenizer_ids_equal_bert_tokenizer_ids(tokenizers):
    tokenizer, lite = tokenizers
    texts = [t.encode("utf-8") for t in UNCLEAN + OTHER] + INVALID_UTF8
    expected = tokenizer(tf.constant(texts)).to_list()
    assert lite(tf.constant(texts)).to_list() == expected
    # Not trivially equal: the reference deletes U+FFFD inside a word and
    # keeps "ß" (the uncased vocabulary has "dont", "##ße").
    if tokenizer.lowercase:
        assert expected[:2] == [[13], [9, 14]]
        assert expected[UNCLEAN.index("stra\u00dfe")] == [22, 24]


def test_lite_tokenizer_on_random_bytes(tokenizers):
    """Random mixes of ASCII, valid multi-byte characters and stray bytes."""
    tokenizer, lite = tokenizers
    rng = np.random.default_rng(0)
    alphabet = [c.encode("utf-8") for c in "ab xy!,\u00df\ufb01\u0587\u00e9\u4f60\ufffd\x01\x90"]
    alphabet += [bytes([b]) for b in (0x80, 0xbf, 0xc3, 0xe0, 0xed, 0xf0, 0xf4, 0xff)]
    texts = [b"".join(rng.choice(alphabet, size=rng.integers(0, 12))) for _ in range(300)]
    assert lite(tf.constant(texts)).to_list() == tokenizer(tf.constant(texts)).to_list()


def test_lite_tokenizer_refuses_a_token_it_cannot_reach():
    # U+0080 stands for words too long for WordPiece; BERT deletes it, so
    # the token is unreachable in the SavedModel too, but LiteRT would reach it.
    tokenizer = BertTokenizer(VOCAB + ["x\u0080"])
    with pytest.raises(ValueError, match=r"token 'x\\x80' holds U\+0080.*--format saved_model"):
        LiteTokenizer(tokenizer)


def _lite_tokenize(lite, texts, tmp_path):
    """Ids of `texts` from the LiteRT runtime, after converting `lite` to a flatbuffer."""
    module = tf.Module()
    module.lite = lite

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name="text")])
    def tokenize(text):
        ids = lite(text)
        return {"values": ids.flat_values, "row_splits": tf.cast(ids.row_splits, tf.int32)}

    tf.saved_model.save(module, str(tmp_path), signatures={"tokenize": tokenize})
    converter = tf.lite.TFLiteConverter.from_saved_model(str(tmp_path), signature_keys=["tokenize"])
    converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS]  # No Flex ops.
    converter.allow_custom_ops = True
    run = litert_interpreter(converter.convert()).get_signature_runner("tokenize")
    out = run(text=np.array([t.encode("utf-8") for t in texts], dtype=object))
    return tf.RaggedTensor.from_row_splits(out["values"], out["row_splits"]).to_list()


@pytest.mark.parametrize("options", [
    {"strip_accents": False}, {"lowercase": False, "strip_accents": True},
], ids=["lower_keep_accents", "strip_accents_only"])
def test_litert_runtime_follows_the_accent_options(options, tmp_path):
    texts = hard_texts(400, seed=1)
    vocab = hard_texts_vocabulary(texts)
    tokenizer = BertTokenizer(vocab, **options)
    expected = tokenizer(tf.constant(texts)).to_list()
    assert _lite_tokenize(LiteTokenizer(tokenizer), texts, tmp_path) == expected
    # The option matters on these texts: the default rule gives other ids.
    default = BertTokenizer(vocab, lowercase=options.get("lowercase", True))
    assert sum(a != b for a, b in zip(default(tf.constant(texts)).to_list(), expected)) > 20
