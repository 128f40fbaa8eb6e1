"""BertTokenizer: id-for-id parity with the reference BERT tokenizer."""

import json
import os
import unicodedata

import keras
import numpy as np
import pytest
import tensorflow as tf
import tensorflow_text as tf_text

from keras_bert.text import BertTokenizer
from tests.text.conftest import TINY_VOCAB
from tests.text.reference_tokenizer import ReferenceTokenizer
from tests.text.reference_tokenizer import strip_accents

FIXTURE = os.path.join(
    os.path.dirname(__file__), "..", "data", "text",
    "hf_slow_tokenizer_fixture.json",
)

EDGE_CASES = [
    "Héllo Wörld, naïve café à la crème brûlée. ÅNGSTRÖM Øre Łódź",
    "İstanbul ǅemal ẞ ß ΟΔΟΣ ΣΟΦΟΣ Σ.Α σς",  # Special lower-casing.
    "中文字符测试，日本語のテキスト。한국어 텍스트",  # CJK, kana, Hangul.
    "emoji 😀👍🏽 🇫🇷 ok ❤️",
    "ctrl\x00a\x07b\x1fc\x7fd\x85e\x0bf\x0cg",  # Control characters.
    "zero\u200bwidth\u200cjoin\u200dner\ufeffbom\u2060wj\u00adsoft",
    "tab\there\r\nnew\nline\u00a0nbsp\u3000ideo\u2003em\u2028ls\u2029ps",
    "!!!...??--;;((]]}}@@##$$%%^^&&**__++==~~`` “curly” — … «»",
    "",
    " \t\n ",
    "ﬁne ﬂow straße µ-meter ① ② ㈱ ½ ™ Ⅻ",  # No compatibility folding.
    "replacement \ufffd char\ufffd",
    "e\u0301cole\u0301 A\u030a \u0301",  # Decomposed accents.
    "x" * 10_000,
    "word " * 2_000,
    "a" * 100 + " " + "b" * 101,  # 100 chars: pieces; 101: [UNK].
    "привет" * 10 + " " + "é" * 60,  # >100 bytes, <=100 characters.
    "private\U000f0000use \U0001fae8 new-emoji",
    "[CLS] [SEP] [MASK] are text here ##s",
]


def _ids(tokenizer, texts):
    return tokenizer(tf.constant(texts)).to_list()


def test_special_token_ids_and_vocab_size(tokenizer):
    assert tokenizer.vocab_size == 30522
    assert (
        tokenizer.pad_token_id,
        tokenizer.unk_token_id,
        tokenizer.cls_token_id,
        tokenizer.sep_token_id,
        tokenizer.mask_token_id,
    ) == (0, 100, 101, 102, 103)
    vocabulary = tokenizer.vocabulary
    assert len(vocabulary) == 30522 and vocabulary[101] == "[CLS]"
    vocabulary[101] = "changed"  # A copy: the tokenizer keeps its own.
    assert tokenizer.id_to_token(101) == "[CLS]"


def test_known_values(tokenizer):
    # Pinned from the reference; FastBertTokenizer gets the last two wrong.
    assert _ids(tokenizer, ["unaffable", "Héllo, Wörld!", "ΟΔΟΣ"]) == [
        [14477, 20961, 3468],
        [7592, 1010, 2088, 999],
        [1169, 29722, 15297],  # ο ##δ ##ος: final sigma.
    ]
    assert _ids(tokenizer, ["ﬁne straße µm ①"]) == [
        [1984, 2638, 2358, 27807, 1085, 2213, 100]
    ]


def test_matches_reference_on_pydoc_topics(tokenizer, reference):
    from pydoc_data.topics import topics

    docs = [topics[k] for k in sorted(topics)]  # All 79, 465 KB.
    ours = _ids(tokenizer, docs)
    for doc, ids in zip(docs, ours):
        assert ids == reference.encode(doc)
    assert sum(len(ids) for ids in ours) > 100_000


@pytest.mark.parametrize("text", EDGE_CASES, ids=range(len(EDGE_CASES)))
def test_matches_reference_on_edge_cases(tokenizer, reference, text):
    assert _ids(tokenizer, [text])[0] == reference.encode(text)


def test_matches_hugging_face_slow_tokenizer_fixture(tokenizer, reference):
    with open(FIXTURE, encoding="utf-8") as f:
        cases = json.load(f)["cases"]
    assert len(cases) >= 40
    texts = [case["text"] for case in cases]
    for case, ids in zip(cases, _ids(tokenizer, texts)):
        assert ids == case["ids"], case["text"][:50]
        # And the test's own reference agrees with Hugging Face.
        assert reference.encode(case["text"]) == case["ids"]


def test_differs_from_fast_bert_tokenizer_where_reference_does(
    tokenizer, vocab_path
):
    # Why the normalization is done by hand: tensorflow-text's own BERT
    # tokenizer folds compatibility characters and limits words by bytes.
    with open(vocab_path, encoding="utf-8") as f:
        vocab = [line.strip() for line in f]
    fast = tf_text.FastBertTokenizer(
        vocab, token_out_type=tf.int32, lower_case_nfd_strip_accents=True
    )
    for text in ["ﬁne straße ①", "привет" * 10, "x\ufffdy"]:
        assert fast.tokenize(tf.constant([text])).to_list() != _ids(
            tokenizer, [text]
        )


def test_invalid_utf8_is_dropped_like_reference(tokenizer, reference):
    raw = [b"caf\xc3 ok\xff\xfe bad\xe2\x82", b"\xc0\xaf", b"good"]
    ids = tokenizer(tf.constant(raw)).to_list()
    assert ids == [reference.encode(r) for r in raw]
    assert ids[1] == []
    _, starts, ends = tokenizer.tokenize_with_offsets(tf.constant(raw))
    for r, s, e in zip(raw, starts.to_list(), ends.to_list()):
        assert all(0 <= a < b <= len(r) for a, b in zip(s, e))


def test_cased_vocabulary_keeps_case_and_accents():
    vocab = TINY_VOCAB + ["Héllo", "World", "##ß", "stra", "e", "\u0301"]
    tokenizer = BertTokenizer(vocab, lowercase=False)
    reference = ReferenceTokenizer(vocab, lowercase=False)
    texts = ["Héllo World!", "hello world", "straß", "e\u0301 É", "ΟΔΟΣ"]
    assert _ids(tokenizer, texts) == [reference.encode(t) for t in texts]
    assert _ids(tokenizer, ["Héllo World!"]) == [[21, 22, 9]]


def test_offsets_on_hand_example(tokenizer):
    text = "Héllo, Wörld! unaffable 中x"
    ids, starts, ends = tokenizer.tokenize_with_offsets(
        tf.constant([text]), unit="UTF8_CHAR"
    )
    spans = [text[s:e] for s, e in zip(starts[0].numpy(), ends[0].numpy())]
    assert spans == [
        "Héllo", ",", "Wörld", "!", "una", "ffa", "ble", "中", "x"
    ]
    _, byte_starts, byte_ends = tokenizer.tokenize_with_offsets(
        tf.constant([text])
    )
    assert byte_starts[0].numpy().tolist()[:4] == [0, 6, 8, 14]
    assert byte_ends[0].numpy().tolist()[:4] == [6, 7, 14, 15]
    assert ids[0].numpy().tolist() == _ids(tokenizer, [text])[0]


def test_offsets_slice_original_text(tokenizer):
    from pydoc_data.topics import topics

    texts = [topics[k][:3000] for k in sorted(topics)[:12]]
    texts.append("Ça  va?\tNAÏVE\u00a0Façade, ǅemal—x" + "y" * 101)
    ids, starts, ends = tokenizer.tokenize_with_offsets(
        tf.constant(texts), unit="UTF8_CHAR"
    )
    checked = 0
    for text, row, s, e in zip(
        texts, ids.to_list(), starts.to_list(), ends.to_list()
    ):
        assert s == sorted(s)
        for token_id, a, b in zip(row, s, e):
            token = tokenizer.id_to_token(token_id)
            if token == "[UNK]":
                continue
            piece = token[2:] if token.startswith("##") else token
            assert strip_accents(text[a:b].lower()) == piece
            checked += 1
    assert checked > 5000
    # The 101-character word is one [UNK] spanning the whole word.
    assert tokenizer.id_to_token(ids[-1][-1]) == "[UNK]"
    assert texts[-1][starts[-1][-1] : ends[-1][-1]] == "x" + "y" * 101


def test_ids_to_tokens_and_detokenize(tokenizer):
    ids = tokenizer(tf.constant(["The unaffable fox!", ""]))
    tokens = tokenizer.ids_to_tokens(ids).to_list()
    assert tokens[0] == [b"the", b"una", b"##ffa", b"##ble", b"fox", b"!"]
    assert tokenizer.id_to_token(101) == "[CLS]"
    assert tokenizer.token_to_id("fox") == ids[0][4]
    text = tokenizer.detokenize(ids).numpy().tolist()
    assert text == [b"the unaffable fox !", b""]
    padded = tf.constant([[101, 1996, 4419, 102, 0, 0]])
    assert tokenizer.detokenize(padded).numpy().tolist() == [
        b"[CLS] the fox [SEP]"
    ]


def test_graph_modes_and_scalar_input(tokenizer):
    texts = ["The quick fox.", "Ünïcode ΟΔΟΣ 中文"]
    want = _ids(tokenizer, texts)
    fn = tf.function(lambda t: tokenizer(t).to_tensor())
    got = fn(tf.constant(texts)).numpy()
    assert [list(r[: len(w)]) for r, w in zip(got, want)] == want
    ds = tf.data.Dataset.from_tensor_slices(texts).map(tokenizer)
    assert [x.numpy().tolist() for x in ds] == want
    assert tokenizer(tf.constant(texts[1])).numpy().tolist() == want[1]
    # Python and NumPy strings, as tf.constant takes them.
    assert tokenizer(texts).to_list() == want
    assert tokenizer(texts[1]).numpy().tolist() == want[1]
    assert tokenizer(np.array(texts)).to_list() == want


def test_config_round_trip(tokenizer, tmp_path):
    config = tokenizer.get_config()
    assert config["lowercase"] is True and config["max_chars_per_word"] == 100
    # The vocabulary is an asset (vocab.txt in a .keras file), not config.
    assert config["vocabulary"] is None
    clone = keras.saving.deserialize_keras_object(
        keras.saving.serialize_keras_object(tokenizer)
    )
    assert isinstance(clone, BertTokenizer) and not clone.has_vocabulary
    tokenizer.save_assets(str(tmp_path))
    assert (tmp_path / "vocab.txt").read_text().splitlines() == tokenizer.vocabulary
    clone.load_assets(str(tmp_path))
    text = tf.constant(["Round trip, héllo!"])
    assert clone(text).to_list() == tokenizer(text).to_list()


def test_missing_special_token_error_names_token_and_file(tmp_path):
    path = tmp_path / "vocab.txt"
    path.write_text("\n".join(t for t in TINY_VOCAB if t != "[MASK]") + "\n")
    with pytest.raises(ValueError, match=r"'\[MASK\]'.*vocab\.txt"):
        BertTokenizer(str(path))
    with pytest.raises(ValueError, match=r"'\[CLS\]'"):
        BertTokenizer([t for t in TINY_VOCAB if t != "[CLS]"])


def test_argument_and_input_errors():
    with pytest.raises(ValueError, match="lowercase='yes'"):
        BertTokenizer(TINY_VOCAB, lowercase="yes")
    with pytest.raises(FileNotFoundError, match="no/such/vocab.txt"):
        BertTokenizer("no/such/vocab.txt")
    tokenizer = BertTokenizer(TINY_VOCAB)
    with pytest.raises(ValueError, match="dtype=int32"):
        tokenizer(tf.constant([1, 2]))
    with pytest.raises(ValueError, match="unit='WORD'"):
        tokenizer.tokenize_with_offsets(tf.constant(["a"]), unit="WORD")


def test_repeated_and_empty_vocabulary_lines_keep_reference_ids():
    # The reference's dict keeps a repeated token's last id; FastWordpiece
    # alone would refuse the vocabulary.
    vocab = TINY_VOCAB + ["fox", ""]
    assert BertTokenizer(vocab)(tf.constant(["fox"])).to_list() == [
        [len(TINY_VOCAB)]
    ]


def test_unicode_table_follows_python_unicodedata():
    from keras_bert.text import _unicode

    tables = _unicode.unicode_tables()

    def info(cp):
        block = tables["block_index"][cp // 256]
        return int(tables["blocks"][block * 256 + cp % 256])

    assert info(0x200B) & _unicode.DROP  # Zero-width space: Cf.
    assert info(0x3000) & _unicode.SPACE
    assert info(0x2028) & _unicode.SPACE  # Python's str.split() splits it.
    assert info(ord("$")) & _unicode.PUNCT
    assert info(0x4E2D) & _unicode.CJK
    assert not info(0xAC00) & _unicode.CJK  # Hangul is not "CJK" in BERT.
    assert unicodedata.category(chr(0x0301)) == "Mn"
    assert np.all(tables["expansion_splits"][1:] >= tables["expansion_splits"][:-1])
