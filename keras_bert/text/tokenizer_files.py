"""Which tokenizer a folder's vocabulary files are for; reading and writing them.

A model directory holds the files of one tokenizer, and they say which:

    vocab.txt                 BertTokenizer (WordPiece)
    sentencepiece.model       SentencePieceTokenizer (XLM-R's layout; or its
                              Hugging Face name, sentencepiece.bpe.model)
    vocab.json + merges.txt   BytePairTokenizer (RoBERTa's byte-level BPE)

The first file of each (its "vocabulary file") names the kind: a model's
`vocab_file` is that path, and `load_tokenizer` builds the tokenizer from it.
WordPiece keeps its casing in the text settings (task.json); SentencePiece
and BPE normalize as their files say, so their `lowercase` is the
tokenizer's own. Options that differ from a class's defaults are
task.json's `tokenizer_options`, for every kind.
"""

import os

from keras_bert import storage
from keras_bert.text import byte_pair, sentencepiece
from keras_bert.text.byte_pair import BytePairTokenizer
from keras_bert.text.sentencepiece import SentencePieceTokenizer
from keras_bert.text.tokenizer import BertTokenizer
from keras_bert.text.vocab import load_vocabulary, save_vocabulary

WORDPIECE_FILE = "vocab.txt"

#: vocabulary file -> (tokenizer class, every file of its vocabulary), in the order looked for.
TOKENIZER_FILES = {
    WORDPIECE_FILE: (BertTokenizer, (WORDPIECE_FILE,)),
    sentencepiece.MODEL_FILE: (SentencePieceTokenizer, (sentencepiece.MODEL_FILE,)),
    # A Hugging Face XLM-R folder's own name for it, as a converter may copy it in.
    "sentencepiece.bpe.model": (SentencePieceTokenizer, ("sentencepiece.bpe.model",)),
    byte_pair.VOCAB_JSON: (BytePairTokenizer, (byte_pair.VOCAB_JSON, byte_pair.MERGES_TXT)),
}


def vocabulary_file(folder):
    """The path of the vocabulary file `folder` holds (see `TOKENIZER_FILES`), or None."""
    for name in TOKENIZER_FILES:
        path = storage.join(folder, name)
        if storage.exists(path):
            return path
    return None


def _kind(path):
    """(class, file names) of a vocabulary file; any other name is a WordPiece vocab.txt."""
    return TOKENIZER_FILES.get(os.path.basename(os.fspath(path)),
                               TOKENIZER_FILES[WORDPIECE_FILE])


def vocabulary_files(path):
    """[(path, its name in a model directory)] of the files of the vocabulary whose
    vocabulary file is `path` (a WordPiece file of any name is the directory's vocab.txt)."""
    if is_wordpiece(path):
        return [(path, WORDPIECE_FILE)]
    folder = os.path.dirname(os.fspath(path))
    return [(storage.join(folder, name), name) for name in _kind(path)[1]]


def is_wordpiece(vocabulary):
    """True for a list of tokens, a vocab.txt path or a `BertTokenizer`."""
    if isinstance(vocabulary, (list, tuple)):
        return True
    if not isinstance(vocabulary, (str, os.PathLike)):
        return isinstance(vocabulary, BertTokenizer)
    return _kind(vocabulary)[0] is BertTokenizer


def load_tokenizer(vocabulary, lowercase=None, options=None):
    """The tokenizer of a vocabulary file (or of a list of WordPiece tokens).

    Args:
        vocabulary: a path named in `TOKENIZER_FILES`, or a list of tokens.
        lowercase: bool; WordPiece: the casing (required); the others: None,
            or the tokenizer's own casing (another is an error).
        options: dict of other arguments of the tokenizer's class.
    """
    if is_wordpiece(vocabulary):
        return BertTokenizer(vocabulary, lowercase=lowercase, **(options or {}))
    cls = _kind(vocabulary)[0]
    tokenizer = cls.from_folder(os.path.dirname(os.fspath(vocabulary)), **(options or {}))
    if lowercase is not None and bool(lowercase) != tokenizer.lowercase:
        raise ValueError(
            f"lowercase={lowercase!r}, but the {cls.__name__} of {vocabulary} has "
            f"lowercase={tokenizer.lowercase}: its files say how it normalizes text. Leave "
            f"lowercase unset (--lowercase / --no-lowercase are for WordPiece vocabularies).")
    return tokenizer


def vocabulary_size(path):
    """The number of ids of the vocabulary whose vocabulary file is `path`."""
    if is_wordpiece(path):
        return len(load_vocabulary(path)[0])  # (tokens, where they came from)
    return load_tokenizer(path).vocab_size


def save_tokenizer_files(tokenizer, folder):
    """Writes `tokenizer`'s vocabulary files into `folder`; returns its vocabulary file."""
    name = next(name for name, (cls, _) in TOKENIZER_FILES.items()
                if type(tokenizer) is cls or (cls is BertTokenizer
                                              and isinstance(tokenizer, BertTokenizer)))
    if isinstance(tokenizer, BertTokenizer):
        save_vocabulary(tokenizer.vocabulary, storage.join(folder, name))
    else:
        tokenizer.save_vocabulary_files(folder)
    return storage.join(folder, name)
