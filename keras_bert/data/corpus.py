"""Pretraining corpora in the BERT paper's format, and ways to make them.

The format (google-research/bert `create_pretraining_data.py`): UTF-8 text,
one sentence per line, an empty line between documents. Sentence pairs for
next-sentence prediction are cut along those lines, so a "sentence" may also
be a short paragraph or a line of code; what matters is that consecutive
lines of a document are consecutive text.
"""

import os
import re

import tensorflow as tf

from keras_bert.text import text_files

# A line made only of one repeated punctuation character: a heading underline.
_UNDERLINE = re.compile(r"^\s*([*=\-~^#+`'\".])\1{2,}\s*$")
# Sentence end: . ! or ? (plus closing quotes/brackets), whitespace, then
# something that can start a sentence.
_SENTENCE_END = re.compile(r"(?<=[.!?])([\"'”’)\]]*)\s+(?=[\"'“‘(\[]?[A-Z0-9])")
# Words that end with a period but rarely end a sentence.
_ABBREVIATIONS = frozenset(
    "e.g i.e etc vs cf al mr mrs ms dr prof st no fig eq sec ch vol ed "
    "approx resp jan feb mar apr jun jul aug sep sept oct nov dec".split()
)


def split_sentences(text):
    """Splits one paragraph of prose into sentences.

    A rule-based splitter: a sentence ends at ".", "!" or "?" followed by
    whitespace and a capital, digit or opening quote, unless the word before
    the period is a common abbreviation or a single letter. For other than
    documentation and news-like prose, use a real sentence splitter.

    Args:
        text: str, one paragraph (newlines inside it are treated as spaces).

    Returns:
        list of str, the sentences with surrounding whitespace removed.

    Example:
    >>> split_sentences("It works, e.g. here. Does it? Yes!")
    ['It works, e.g. here.', 'Does it?', 'Yes!']
    """
    text = " ".join(text.split())
    if not text:
        return []
    sentences, start = [], 0
    for match in _SENTENCE_END.finditer(text):
        end = match.start(1) + len(match.group(1))
        last_word = text[start:end].rstrip("\"'”’)]").rsplit(" ", 1)[-1]
        word = last_word.rstrip(".!?").lstrip("\"'“‘([").lower()
        if text[match.start(1) - 1] == "." and (
            word in _ABBREVIATIONS or (len(word) == 1 and word.isalpha())
        ):
            continue
        sentences.append(text[start:end].strip())
        start = match.end()
    sentences.append(text[start:].strip())
    return [s for s in sentences if s]


def prose_to_sentences(text):
    """Turns one document of plain text into a list of sentences.

    A paragraph (blank lines apart) whose lines are all indented is code: each
    line is one "sentence"; others are split with `split_sentences`. Heading
    underlines ("*****") are dropped.

    Args:
        text: str, the whole document.

    Returns:
        list of str, one entry per line of the corpus format.

    Example:
    >>> prose_to_sentences("Title\\n*****\\n\\nOne. Two.\\n\\n   x = 1\\n   y = 2\\n")
    ['Title', 'One.', 'Two.', 'x = 1', 'y = 2']
    """
    sentences = []
    for paragraph in re.split(r"\n\s*\n", text):
        lines = [
            line.rstrip()
            for line in paragraph.split("\n")
            if line.strip() and not _UNDERLINE.match(line)
        ]
        if not lines:
            continue
        if all(line[:1].isspace() for line in lines):
            sentences.extend(" ".join(line.split()) for line in lines)
        else:
            sentences.extend(split_sentences(" ".join(lines)))
    return sentences


def pydoc_topics_documents():
    """`(name, sentences)` of each of `pydoc_data.topics`' help texts, sorted by name:
    a real corpus, shipped with Python."""
    from pydoc_data.topics import topics

    return [(name, prose_to_sentences(topics[name])) for name in sorted(topics)]


def write_corpus(documents, path):
    """Writes documents in the corpus format (sentence lines, blank lines between).

    Args:
        documents: iterable of lists of str (sentences). Newlines inside a
            sentence are replaced by spaces; empty documents are skipped.
        path: str, the file to write (any `tf.io.gfile` path); its
            directory is created if needed.

    Returns:
        int, the number of documents written.
    """
    count = 0
    parent = os.path.dirname(os.fspath(path))
    if parent:
        tf.io.gfile.makedirs(parent)
    with tf.io.gfile.GFile(os.fspath(path), "w") as f:
        for sentences in documents:
            lines = [" ".join(s.split()) for s in sentences]
            lines = [line for line in lines if line]
            if not lines:
                continue
            if count:
                f.write("\n")
            f.write("\n".join(lines) + "\n")
            count += 1
    return count


def read_documents(paths):
    """Streams documents from corpus files, one at a time.

    Lines are stripped; an empty line ends a document, as does the end of a
    file. A file that is not text is a ValueError naming it.

    Args:
        paths: list of str, corpus files (any `tf.io.gfile` path).

    Yields:
        list of str: the sentences of one document (never empty).
    """
    for path in paths:
        text_files.check_text_file(path, "corpus file")
        document = []
        with tf.io.gfile.GFile(os.fspath(path), "rb") as f:
            for raw in f:
                line = raw.decode("utf-8", errors="replace").strip()
                if line:
                    document.append(line)
                elif document:
                    yield document
                    document = []
        if document:
            yield document
