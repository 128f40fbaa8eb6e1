"""A plain-Python BERT tokenizer, written from google-research/bert's spec.

Used only by the tests, as the oracle for `BertTokenizer`: it follows
`tokenization.FullTokenizer` step by step (clean text, CJK spacing,
whitespace split, lower-case + NFD accent stripping when uncased, punctuation
split, greedy longest-match-first WordPiece with a 100-character limit).
Checked by hand against Hugging Face's slow BertTokenizer
(tests/fixtures/makers/make_tokenizer_fixture.py writes the fixture the tests compare to).
"""

import unicodedata

CJK_RANGES = (
    (0x4E00, 0x9FFF),
    (0x3400, 0x4DBF),
    (0x20000, 0x2A6DF),
    (0x2A700, 0x2B73F),
    (0x2B740, 0x2B81F),
    (0x2B820, 0x2CEAF),
    (0xF900, 0xFAFF),
    (0x2F800, 0x2FA1F),
)


def is_whitespace(char):
    if char in " \t\n\r":
        return True
    return unicodedata.category(char) == "Zs"


def is_control(char):
    if char in "\t\n\r":
        return False
    return unicodedata.category(char) in ("Cc", "Cf")


def is_punctuation(char):
    cp = ord(char)
    if 33 <= cp <= 47 or 58 <= cp <= 64 or 91 <= cp <= 96 or 123 <= cp <= 126:
        return True
    return unicodedata.category(char).startswith("P")


def is_cjk(char):
    cp = ord(char)
    return any(low <= cp <= high for low, high in CJK_RANGES)


def clean_text(text):
    out = []
    for char in text:
        if ord(char) in (0, 0xFFFD) or is_control(char):
            continue
        out.append(" " if is_whitespace(char) else char)
    return "".join(out)


def strip_accents(text):
    return "".join(
        c
        for c in unicodedata.normalize("NFD", text)
        if unicodedata.category(c) != "Mn"
    )


def split_punctuation(word):
    pieces = []
    current = []
    for char in word:
        if is_punctuation(char):
            if current:
                pieces.append("".join(current))
                current = []
            pieces.append(char)
        else:
            current.append(char)
    if current:
        pieces.append("".join(current))
    return pieces


def basic_tokenize(text, lowercase):
    text = clean_text(text)
    text = "".join(f" {c} " if is_cjk(c) else c for c in text)
    words = []
    for word in text.split():
        if lowercase:
            word = strip_accents(word.lower())
        words.extend(split_punctuation(word))
    return " ".join(words).split()


def wordpiece(word, vocab, unk="[UNK]", max_chars=100):
    if len(word) > max_chars:
        return [unk]
    pieces = []
    start = 0
    while start < len(word):
        end = len(word)
        found = None
        while start < end:
            candidate = word[start:end]
            if start > 0:
                candidate = "##" + candidate
            if candidate in vocab:
                found = candidate
                break
            end -= 1
        if found is None:
            return [unk]
        pieces.append(found)
        start = end
    return pieces


class ReferenceTokenizer:
    """FullTokenizer: text -> WordPiece tokens and ids."""

    def __init__(self, vocab, lowercase=True):
        """vocab: path of a vocab.txt, or a list of tokens."""
        if isinstance(vocab, str):
            with open(vocab, encoding="utf-8") as f:
                vocab = [line.strip() for line in f]
        self.vocab = {token: index for index, token in enumerate(vocab)}
        self.lowercase = lowercase

    def tokenize(self, text):
        if isinstance(text, bytes):
            text = text.decode("utf-8", "ignore")
        tokens = []
        for word in basic_tokenize(text, self.lowercase):
            tokens.extend(wordpiece(word, self.vocab))
        return tokens

    def encode(self, text):
        return [self.vocab[t] for t in self.tokenize(text)]
