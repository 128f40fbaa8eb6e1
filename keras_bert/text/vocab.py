"""WordPiece vocabularies: load, save, and learn one from text files."""

import collections
import os

import tensorflow as tf

from keras_bert.text import _unicode

# The special tokens every keras_bert vocabulary has, in the order that
# `build_vocabulary` writes them (ids 0-4).
SPECIAL_TOKENS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")


def load_vocabulary(vocabulary):
    """Reads a vocabulary given as a list of tokens or a `vocab.txt` path.

    A file has one token per line, id = line number (from 0); each line is
    stripped of surrounding whitespace, as google-research/bert does, and a
    UTF-8 byte order mark at the start is dropped.

    Args:
        vocabulary: list of str, or str / os.PathLike path of a text file.

    Returns:
        A tuple `(tokens, source)`: the tokens (list of str) and a short
        description of where they came from, for error messages.
    """
    if isinstance(vocabulary, (str, os.PathLike)):
        path = os.fspath(vocabulary)
        if not tf.io.gfile.exists(path):
            raise FileNotFoundError(
                f"Vocabulary file not found: vocabulary={path!r}. Pass the "
                "path of a vocab.txt (one token per line) or a list of tokens."
            )
        with tf.io.gfile.GFile(path, "r") as f:
            text = f.read()
        # A UTF-8 byte order mark (some editors write one) is not part of
        # the first token: "\ufeff[PAD]" would hide [PAD].
        text = text[1:] if text.startswith("\ufeff") else text
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


def count_words(texts, lowercase=True, batch_size=1024, progress=None):
    """Counts the words that `BertTokenizer` would feed to WordPiece.

    Normalization and pre-tokenization are the tokenizer's own (same ops),
    so the vocabulary is learnt from exactly the words it will see.

    Args:
        texts: a `tf.data.Dataset` of scalar strings, or an iterable of str.
        lowercase: bool, as for `BertTokenizer`.
        batch_size: int, strings pre-tokenized per graph call.
        progress: optional callable(num_bytes) called after each batch with
            the number of UTF-8 bytes just processed.

    Returns:
        `collections.Counter` mapping word (str) to count.
    """
    tables = {
        name: tf.constant(array)
        for name, array in _unicode.unicode_tables().items()
    }

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
    def words_of(batch):
        words = _unicode.pretokenize(batch, tables, lowercase)["words"]
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


def build_vocabulary(
    word_counts,
    vocab_size,
    reserved_tokens=SPECIAL_TOKENS,
    max_unique_chars=1000,
    max_token_length=50,
):
    """Learns a WordPiece vocabulary of exactly `vocab_size` tokens.

    Uses tensorflow-text's WordPiece learner (the algorithm behind
    `bert_vocab_from_dataset`) on word counts from `count_words`. The
    vocabulary starts with `reserved_tokens` (ids 0, 1, ...), then the single
    characters (and their "##" forms), then the learnt pieces by frequency.
    The learner aims a little under `vocab_size`; the rest is filled with
    "[unused0]", "[unused1]", ... so ids line up with `vocab_size` exactly, as
    in Google's vocabularies.

    Args:
        word_counts: dict or Counter, word (str) -> count.
        vocab_size: int, number of tokens wanted.
        reserved_tokens: sequence of str placed first.
        max_unique_chars: int, the alphabet is cut to this many most frequent
            characters (words with other characters are left out).
        max_token_length: int, longest piece learnt, in characters.

    Returns:
        list of str of length `vocab_size`.

    Example:
    >>> counts = count_words(["the quick fox", "the lazy dog"])
    >>> vocab = build_vocabulary(counts, vocab_size=64)
    >>> vocab[:5]
    ['[PAD]', '[UNK]', '[CLS]', '[SEP]', '[MASK]']
    """
    from tensorflow_text.tools.wordpiece_vocab import (
        wordpiece_tokenizer_learner_lib as learner,
    )

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
    vocab = learner.learn(
        dict(word_counts),
        vocab_size,
        reserved_tokens,
        # Counts as low as 1 may be used: the search over the threshold
        # stops near vocab_size anyway, and small corpora still fill it.
        lower_thresh=1,
        max_unique_chars=max_unique_chars,
        max_token_length=max_token_length,
    )
    vocab = vocab[:vocab_size]
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

    Uncased BERT vocabularies were built from lower-cased, accent-stripped
    text, so (almost) no token has an upper-case letter; a cased one has
    thousands ("The", "##ER"). Bracketed special tokens ("[CLS]") don't count.

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
