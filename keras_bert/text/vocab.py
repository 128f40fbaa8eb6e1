"""WordPiece vocabularies: load, save, and learn one from text files."""

import collections
import os

import tensorflow as tf

from keras_bert.text import _unicode, text_files

# The special tokens every keras_bert vocabulary has, in the order that
# `build_vocabulary` writes them (ids 0-4).
SPECIAL_TOKENS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")


class VocabularyFileNotFoundError(FileNotFoundError, ValueError):
    """A vocabulary path that does not exist.

    Both a `FileNotFoundError` (what opening it raises) and a `ValueError`
    (what keras-hub's and transformers' BERT tokenizers raise for it), so
    code written for either catches it.
    """


def load_vocabulary(vocabulary):
    """Reads a vocabulary given as a list of tokens or a `vocab.txt` path.

    A file has one token per line, id = line number (from 0); each line is
    stripped of surrounding whitespace, as google-research/bert does (so
    CRLF line ends read as LF), and a UTF-8 byte order mark at the start is
    dropped. A file that is not UTF-8 text (Latin-1, UTF-16, compressed,
    binary) or that has CR-only line ends is an error naming the file.

    Args:
        vocabulary: list of str, or str / os.PathLike path of a text file.

    Returns:
        A tuple `(tokens, source)`: the tokens (list of str) and a short
        description of where they came from, for error messages.
    """
    if isinstance(vocabulary, (str, os.PathLike)):
        path = os.fspath(vocabulary)
        if not tf.io.gfile.exists(path):
            raise VocabularyFileNotFoundError(
                f"Vocabulary file not found: vocabulary={path!r}. Pass the "
                "path of a vocab.txt (one token per line) or a list of tokens."
            )
        if tf.io.gfile.isdir(path):
            raise ValueError(
                f"Vocabulary {path} is a directory: pass the vocab.txt file in it.")
        with tf.io.gfile.GFile(path, "rb") as f:
            data = f.read()
        text_files.check_text_bytes(data[: text_files.SNIFF_BYTES], path)
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as e:
            raise ValueError(
                f"Vocabulary {path}: {text_files.describe_invalid_utf8(data, e)}. Save it as "
                f"UTF-8 (e.g. iconv -f LATIN1 -t UTF-8 {path} > vocab.utf8.txt)."
            ) from None
        # A UTF-8 byte order mark (some editors write one) is not part of
        # the first token: "\ufeff[PAD]" would hide [PAD].
        text = text[1:] if text.startswith("\ufeff") else text
        if "\r" in text and "\n" not in text.rstrip("\r\n\t "):
            # Old Mac line ends: read by "\n" the whole file would be one token.
            raise ValueError(
                f"Vocabulary {path} has CR-only line ends (\\r, no \\n): one token a line "
                f"needs \\n or \\r\\n line ends. Convert it (e.g. tr '\\r' '\\n' < {path} > "
                f"vocab.lf.txt)."
            )
        # CRLF line ends: the "\r" goes with the whitespace that strip() drops.
        lines = text.split("\n")
        if lines and lines[-1] == "":
            lines.pop()  # The newline after the last token.
        tokens = [line.strip() for line in lines]
        source = f"file {path!r}"
    elif isinstance(vocabulary, (list, tuple)):
        tokens = list(vocabulary)
        bad = [t for t in tokens if not isinstance(t, str)]
        if bad:
            raise ValueError(
                "Expected the vocabulary to be a list of str. Received an "
                f"element {bad[0]!r} of type {type(bad[0]).__name__}."
            )
        source = "a list"
    else:
        raise ValueError(
            "Expected vocabulary to be a list of tokens or the path of a "
            f"vocab.txt file. Received: vocabulary={vocabulary!r} "
            f"(type {type(vocabulary).__name__})."
        )
    if not tokens:
        raise ValueError(f"The vocabulary ({source}) is empty.")
    return tokens, source


def load_bert_vocabulary(vocabulary, way_out):
    """`load_vocabulary`, and the token -> id dict, checked to hold every special token.

    Args:
        vocabulary: list of str, or the path of a vocab.txt (see
            `load_vocabulary`).
        way_out: str, the end of the error message on a missing special
            token: what to do about it.

    Returns:
        A tuple `(tokens, token_to_id, source)`: the tokens (list of str), a
        dict token -> id in which, like the reference's dict, a repeated
        token keeps its last id, and where they came from (for messages).

    Raises:
        ValueError: a token of `SPECIAL_TOKENS` is missing (the message names
            it and the vocabulary's source, then `way_out`).
    """
    tokens, source = load_vocabulary(vocabulary)
    token_to_id = {token: index for index, token in enumerate(tokens)}
    for token in SPECIAL_TOKENS:
        if token not in token_to_id:
            raise ValueError(
                f"The special token {token!r} is missing from the vocabulary ({source}). "
                f"{way_out}"
            )
    return tokens, token_to_id, source


def save_vocabulary(tokens, path):
    """Writes tokens to `path`, one per line (the `vocab.txt` format)."""
    with tf.io.gfile.GFile(os.fspath(path), "w") as f:
        f.write("".join(token + "\n" for token in tokens))


def _chunks(texts, size):
    """Lists of up to `size` strings from an iterable of str."""
    chunk = []
    for text in texts:
        chunk.append(text)
        if len(chunk) == size:
            yield tf.constant(chunk, tf.string)
            chunk = []
    if chunk:
        yield tf.constant(chunk, tf.string)


def count_words(texts, lowercase=True, batch_size=1024, progress=None,
                strip_accents=None, tokenize_chinese_chars=True):
    """Counts the words that `BertTokenizer` would feed to WordPiece.

    Normalization and pre-tokenization are the tokenizer's own (same ops),
    so the vocabulary is learnt from exactly the words it will see.

    Args:
        texts: a `tf.data.Dataset` of scalar strings, or an iterable of str.
        lowercase: bool, as for `BertTokenizer`.
        strip_accents, tokenize_chinese_chars: as for `BertTokenizer`.
        batch_size: int, strings pre-tokenized per graph call.
        progress: optional callable(num_bytes) called after each batch with
            the number of UTF-8 bytes just processed.

    Returns:
        `collections.Counter` mapping word (str) to count.
    """
    tables = {
        name: tf.constant(array)
        for name, array in _unicode.unicode_tables(
            _unicode.normalization_of(lowercase, strip_accents)).items()
    }

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string)], autograph=False)
    def words_of(batch):
        words = _unicode.pretokenize(
            batch, tables, lowercase, strip_accents=strip_accents,
            tokenize_chinese_chars=tokenize_chinese_chars)["words"]
        return words, tf.reduce_sum(tf.strings.length(batch))

    if isinstance(texts, tf.data.Dataset):
        batches = texts.batch(batch_size)
    else:
        batches = _chunks(texts, batch_size)
    counts = collections.Counter()
    for batch in batches:
        words, num_bytes = words_of(batch)
        counts.update(words.numpy().tolist())
        if progress is not None:
            progress(int(num_bytes))
    return collections.Counter(
        {word.decode("utf-8"): count for word, count in counts.items()}
    )


# Unique words the learner reads at most (the most frequent ones): bounds
# its memory on web-scale corpora, whose long tail is mostly noise.
_MAX_LEARNER_WORDS = 5_000_000
_SUFFIX = "##"


def _piece_starts(word, pieces, max_token_length):
    """Where the greedy longest-match-first split of `word` starts pieces.

    The split WordPiece itself does with the vocabulary `pieces` (a set of
    str, "##" forms included). Every character of `word` is in `pieces`, so a
    split always exists.
    """
    starts, start = [], 0
    while start < len(word):
        starts.append(start)
        prefix = _SUFFIX if start else ""
        end = min(len(word), start + max_token_length)
        while end > start + 1 and prefix + word[start:end] not in pieces:
            end -= 1
        start = end
    return starts


def _learn_pieces(words, threshold, base, max_token_length, num_iterations=4):
    """Pieces (str -> count) seen at least `threshold` times.

    Top-down WordPiece learning: count every substring that starts where a
    piece of the current vocabulary starts (at first: every position),
    weighted by word count. From the longest down, a substring counted at
    least `threshold` times becomes a piece, and its count is taken off its
    own prefixes, since greedy longest-match would read those occurrences as
    the longer piece. Re-splitting with the new pieces and counting again
    drops pieces that the split no longer reaches.
    """
    pieces = dict.fromkeys(base, 0)
    for iteration in range(num_iterations):
        counts = collections.defaultdict(int)
        for word, count in words:
            starts = (
                range(len(word)) if iteration == 0
                else _piece_starts(word, pieces, max_token_length)
            )
            for start in starts:
                prefix = _SUFFIX if start else ""
                for end in range(
                    start + 1, min(len(word), start + max_token_length) + 1
                ):
                    counts[prefix + word[start:end]] += count
        kept = {}
        for piece in sorted(counts, key=len, reverse=True):
            count = counts[piece]
            if count < threshold:
                continue
            kept[piece] = count
            prefix = _SUFFIX if piece.startswith(_SUFFIX) else ""
            for length in range(len(prefix) + 1, len(piece)):
                shorter = piece[:length]
                if shorter in counts:
                    counts[shorter] -= count
        pieces = dict.fromkeys(base, 0)
        pieces.update(kept)
    return pieces


def build_vocabulary(
    word_counts,
    vocab_size,
    reserved_tokens=SPECIAL_TOKENS,
    max_unique_chars=1000,
    max_token_length=50,
):
    """Learns a WordPiece vocabulary of exactly `vocab_size` tokens.

    Top-down WordPiece learning (tensorflow-text's `bert_vocab_from_dataset`
    algorithm, `_learn_pieces`) with its count threshold binary-searched so
    that the size lands just under `vocab_size`. The vocabulary is
    `reserved_tokens`, the single characters, their "##" forms, the learnt
    pieces by frequency, then "[unused0]", "[unused1]", ... up to
    `vocab_size`, as in Google's vocabularies.

    Args:
        word_counts: dict or Counter, word (str) -> count.
        vocab_size: int, number of tokens wanted.
        reserved_tokens: sequence of str placed first.
        max_unique_chars: int, the alphabet is cut to this many most frequent
            characters (words with other characters are left out).
        max_token_length: int, longest piece learnt, in characters (longer
            words are left out).

    Returns:
        list of str of length `vocab_size`.

    Example:
    >>> counts = count_words(["the quick fox", "the lazy dog"])
    >>> vocab = build_vocabulary(counts, vocab_size=64)
    >>> vocab[:5]
    ['[PAD]', '[UNK]', '[CLS]', '[SEP]', '[MASK]']
    """
    reserved_tokens = list(reserved_tokens)
    if not isinstance(vocab_size, int) or vocab_size <= len(reserved_tokens):
        raise ValueError(
            "Expected vocab_size to be an int larger than the number of "
            f"reserved tokens ({len(reserved_tokens)}). "
            f"Received: vocab_size={vocab_size!r}"
        )
    if not word_counts:
        raise ValueError(
            "No words to learn a vocabulary from: the input text is empty."
        )
    reserved = set(reserved_tokens)
    words = [
        (word, count) for word, count in word_counts.items()
        if word and len(word) <= max_token_length and word not in reserved
    ]
    char_counts = collections.Counter()
    for word, count in words:
        for char in word:
            char_counts[char] += count
    alphabet = {
        char for char, _ in sorted(
            char_counts.items(), key=lambda item: (-item[1], item[0])
        )[:max_unique_chars]
    }
    words = sorted(
        (item for item in words if alphabet.issuperset(item[0])),
        key=lambda item: (-item[1], item[0]),
    )[:_MAX_LEARNER_WORDS]
    chars = sorted({char for word, _ in words for char in word})
    base = chars + [_SUFFIX + char for char in chars]

    def vocab_at(threshold):
        pieces = _learn_pieces(words, threshold, base, max_token_length)
        learnt = sorted(
            (p for p in pieces if p not in base and p not in reserved),
            key=lambda p: (-pieces[p], p),
        )
        return reserved_tokens + [t for t in base if t not in reserved] + learnt

    # The size falls as the threshold rises: find the lowest threshold whose
    # vocabulary fits, stopping early within 5% under vocab_size. No
    # substring occurs more often than `high`: there, only the alphabet.
    low, high = 1, 1 + sum(count * len(word) for word, count in words)
    best = None
    while low <= high:
        threshold = (low + high) // 2
        vocab = vocab_at(threshold)
        if len(vocab) > vocab_size:
            low = threshold + 1
            continue
        best = vocab
        if len(vocab) >= 0.95 * vocab_size:
            break
        high = threshold - 1
    if best is None:  # Even the alphabet alone is too large: cut it.
        best = vocab_at(1 + sum(count * len(word) for word, count in words))
    vocab = best[:vocab_size]
    seen = set(vocab)
    filler = (f"[unused{i}]" for i in range(vocab_size * 2))
    while len(vocab) < vocab_size:
        token = next(filler)
        if token not in seen:
            vocab.append(token)
    return vocab


def build_vocabulary_from_files(
    paths,
    vocab_size,
    lowercase=True,
    reserved_tokens=SPECIAL_TOKENS,
    max_unique_chars=1000,
    progress=None,
):
    """Text files -> WordPiece vocabulary (`count_words` + `build_vocabulary`).

    Args:
        paths: list of text file paths (UTF-8; invalid bytes are dropped),
            read line by line.
        vocab_size: int, tokens in the result.
        lowercase: bool, True for an uncased vocabulary. Use the same value
            for `BertTokenizer`.
        reserved_tokens: sequence of str, ids 0, 1, ... .
        max_unique_chars: int; see `build_vocabulary`.
        progress: optional callable(done_bytes, total_bytes).

    Returns:
        list of str of length `vocab_size`.
    """
    paths = [os.fspath(p) for p in paths]
    missing = [p for p in paths if not tf.io.gfile.exists(p)]
    if not paths or missing:
        raise FileNotFoundError(
            f"Expected existing text files. Missing: {missing or paths!r}"
        )
    for path in paths:
        text_files.check_text_file(path, "text file")  # Not a folder, gzip, UTF-16, binary.
    total = sum(tf.io.gfile.stat(p).length for p in paths)
    done = 0

    def report(num_bytes):
        nonlocal done
        done += num_bytes
        if progress is not None:
            progress(min(done, total), total)

    counts = count_words(
        tf.data.TextLineDataset(paths), lowercase=lowercase, progress=report
    )
    if progress is not None:
        progress(total, total)
    return build_vocabulary(
        counts,
        vocab_size,
        reserved_tokens=reserved_tokens,
        max_unique_chars=max_unique_chars,
    )



def infer_lowercase(vocabulary):
    """Guesses whether a vocabulary is uncased (so the tokenizer must lower-case).

    Uncased vocabularies have (almost) no token with an upper-case letter; a
    cased one has thousands. Bracketed special tokens ("[CLS]") don't count.

    Args:
        vocabulary: path of a vocab.txt, or a list of tokens.

    Returns:
        bool, True when fewer than 0.5% of the tokens contain an upper-case
        letter.
    """
    tokens, _ = load_vocabulary(vocabulary)
    words = [t for t in tokens if not (t.startswith("[") and t.endswith("]"))]
    cased = sum(1 for t in words if any(c.isupper() for c in t))
    return cased < 0.005 * max(len(words), 1)
