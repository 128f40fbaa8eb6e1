"""Generated hard strings for tokenizer tests, and a vocabulary that covers them.

Scripts, combining marks, Greek sigmas, controls, CJK, kana, Hangul, emoji,
whitespace of every kind, punctuation, special tokens written in the text
and long words, mixed with random assigned characters. Each text is NFC and
has no unassigned or private-use character: what transformers' slow
BertTokenizer does differently from BERT's reference (NFC, deleting every
"C" category) never shows, so the two tokenizers can be compared id for id.
"""

import random
import unicodedata

from keras_bert.text.vocab import SPECIAL_TOKENS

PIECES = [
    "hello", "Hello", "HELLO", "world", "unwanted", "running", "C++", "e-mail",
    "Héllo", "HÉLLO", "héllo", "naïve", "NAÏVE", "Ångström", "crème brûlée", "q\u0301",
    "\u0301", "a\u0308\u0301", "İstanbul", "ǅemal", "ß", "ẞ", "ΟΔΟΣ", "ΣΟΦΟΣ", "Σ.Α",
    "σς", "ΣΑΣ", "中文", "日本語", "漢字かな", "한국어", "テキスト", "😀", "👍🏽", "🇫🇷",
    "❤️", "ﬁne", "①", "µ", "\x00", "\x07", "\x7f", "\x85", "\u200b", "\ufeff", "\u00ad",
    " ", "  ", "\t", "\n", "\r\n", "\u00a0", "\u3000", "\u2028", "!", ",", ".", "'",
    "n't", "'s", "?", "“", "”", "—", "…", "¿", "#", "##", "##x", "[", "]", "[MASK]",
    "[CLS]", "[SEP]", "[PAD]", "[UNK]", "[mask]", "[MA\x00SK]", "[MASK]\u0301",
    "hello!", "hello!!", "x" * 101, "é" * 60, "ab" * 40, "\ufffd",
]
_TEXT_CATEGORIES = ("L", "M", "N", "P", "S", "Z")


def _random_char(rng):
    """An assigned, non-private code point of a letter, mark, number, punctuation,
    symbol or separator (transformers deletes the unassigned ones)."""
    while True:
        cp = rng.choice((rng.randrange(0x20, 0x3000), rng.randrange(0x3000, 0x30000)))
        if unicodedata.category(chr(cp))[0] in _TEXT_CATEGORIES:
            return chr(cp)


def _same_for_both(text):
    """Whether transformers' NFC (after its clean-up) leaves the text as it is."""
    cleaned = "".join(c for c in text if unicodedata.category(c) not in ("Cc", "Cf"))
    cleaned = cleaned.replace("\ufffd", "")
    return unicodedata.normalize("NFC", cleaned) == cleaned


def hard_texts(num_texts, seed=0):
    """Generated strings: PIECES and random characters, joined with or without spaces."""
    rng = random.Random(seed)
    texts = []
    while len(texts) < num_texts:
        parts = []
        for _ in range(rng.randrange(1, 12)):
            parts.append(rng.choice(PIECES) if rng.random() < 0.7 else "".join(
                _random_char(rng) for _ in range(rng.randrange(1, 6))))
            parts.append(rng.choice(["", " ", " ", "\n"]))
        text = unicodedata.normalize("NFC", "".join(parts))
        if _same_for_both(text):
            texts.append(text)
    return texts


def hard_texts_vocabulary(texts, seed=0):
    """Specials, each character of the texts (as written, lower-cased, NFD) and its
    "##" form, less a tenth (so some words are [UNK]), and some whole words."""
    rng = random.Random(seed)
    chars = set()
    for text in texts:
        for form in (text, text.lower()):
            chars.update(form)
            chars.update(unicodedata.normalize("NFD", form))
    chars = sorted(c for c in chars if not c.isspace() and c not in "\x00\ufffd"
                   and unicodedata.category(c) not in ("Cc", "Cf"))
    chars = [c for c in chars if rng.random() > 0.1]
    words = ["hello", "world", "un", "##want", "##ed", "running", "héllo", "Héllo",
             "hello!", "naïve", "naive", "σοφος", "ΣΟΦΟΣ", "中文", "日本語", "##llo", "##ß"]
    return list(SPECIAL_TOKENS) + words + chars + ["##" + c for c in chars]


# Letters of scripts an XLM-R vocabulary covers, and what NFKC changes.
SCRIPTS = [
    "абвгдежзийклмнопрстуфхцчшщъыьэюяАБВГДЕЖЗИЙКЛМН",
    "αβγδεζηθικλμνξοπρστυφχψωςΑΒΓΔΕΖΗΘ",
    "的一是不了人我在有他这中大来上国个到说们为子和地出道也时年得就那要下以生会自之着去过家学对可",
    "ابتثجحخدذرزسشصضطظعغفقكلمنهوي",
    "अआइईउऊएऐओऔकखगघङचछजझञटठडढणतथदधनपफबभमयरलवशषसह्ािीुूेैोौं",
    "😀😂👍🏽🇫🇷❤️🎉",
]
EXTRAS = ["e\u0301", "ﬁne", "ＡＢＣ", "①", "ﾊﾝｶｸ", "ß", "İ", "…", "!!!", "=====", "🏽🏽🏽",
          "\u3000", "\u00a0", "\t", "\u200b", "\u2028", "\u0085", "<mask>", "</s>", "x<s>y",
          "<pad>", "<unk>", "123", "3.14", "Hello", "WORLD", "don't"]


def multilingual_texts(num_texts, seed=0):
    """Generated lines: words of SCRIPTS, EXTRAS and ASCII, between spaces of every kind."""
    rng = random.Random(seed)
    texts = []
    for _ in range(num_texts):
        parts = []
        for _ in range(rng.randrange(1, 12)):
            if rng.random() < 0.2:
                parts.append(rng.choice(EXTRAS))
            else:
                letters = rng.choice(SCRIPTS + ["abcdefghijklmnopqrstuvwxyz"])
                parts.append("".join(rng.choice(letters) for _ in range(rng.randrange(1, 9))))
            parts.append(rng.choice([" ", " ", " ", "", "  ", "\n", ", ", ". "]))
        texts.append("".join(parts))
    return texts
