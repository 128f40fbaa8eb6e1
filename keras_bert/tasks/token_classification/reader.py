"""CoNLL-style token classification data (NER, chunking, POS).

File format: one token a line, columns separated by ASCII spaces or tabs
(a no-break space inside a token is part of it), the token in
the first column and its tag in the last (CoNLL-2003's
"EU NNP B-NP B-ORG" and two-column "EU B-ORG" both work); a blank line
between sentences; `-DOCSTART-` lines are skipped.

Bad input, reported as "FILE:LINE: ..." and counted in the `DataReport`:
a line with a single column, or a tag that is not "O" / "B-X" / "I-X"
(also "E-X", "S-X"): the whole sentence is skipped ("malformed row"), since
dropping one word would shift every tag after it. Invalid UTF-8 is
replaced by U+FFFD and counted.

Labels go on the first WordPiece of each word (the paper's NER recipe,
`first_piece_examples`). A sentence whose pieces do not fit in its
`max_seq_length` loses its last words (their prediction is "O" at
evaluation, so the entity scores stay honest).
"""

import dataclasses
import re

import numpy as np
import tensorflow as tf

from keras_bert.data import labels as labels_lib
from keras_bert.data.report import DataReport
from keras_bert.data.text_data import ParallelExamples, read_lines

_TAG = re.compile(r"^(O|[BIES]-\S+)$")
# Column separators: ASCII whitespace only. str.split() would also cut at a
# no-break space (U+00A0) or other Unicode spaces that sit inside a token.
_ASCII_SPACE = " \t\r\n\f\v"
_COLUMNS = re.compile(f"[{re.escape(_ASCII_SPACE)}]+")


@dataclasses.dataclass
class ConllSentences(ParallelExamples):
    """Parallel lists, one entry per kept sentence.

    Attributes:
        words: list of lists of str.
        tags: list of lists of str, as long as `words`.
        where: list of str, "FILE:LINE" of each sentence's first word.
        report: the `DataReport` of the reading.
    """

    words: list
    tags: list
    where: list
    report: DataReport = None


def read_conll(path, max_logged=20):
    """Reads a CoNLL-style file into sentences of (word, tag).

    Args:
        path: str, the file.
        max_logged: int, problems logged one by one (all are counted).

    Returns:
        `ConllSentences`.

    Example:
    >>> sentences = read_conll("eng.train")
    >>> sentences.words[0][:2], sentences.tags[0][:2]
    (['EU', 'rejects'], ['B-ORG', 'O'])
    """
    report = DataReport(path, max_logged=max_logged)
    result = ConllSentences([], [], [], report)
    words, tags, start, problem = [], [], None, None

    def flush():
        nonlocal words, tags, start, problem
        if words or problem:
            if problem:
                report.skip(*problem)
            else:
                result.words.append(words)
                result.tags.append(tags)
                result.where.append(f"{path}:{start}")
                report.kept()
        words, tags, start, problem = [], [], None, None

    for number, line in read_lines(path, report, "CoNLL file"):
        columns = _COLUMNS.split(line.strip(_ASCII_SPACE)) if line.strip() else []
        if not columns:
            flush()
            continue
        if columns[0] == "-DOCSTART-":
            flush()
            continue
        start = start or number
        if problem:
            continue
        where = f"{path}:{number}"
        if len(columns) < 2:
            problem = (where, "malformed row", f"one column {line.strip()!r}, expected token and tag")
        elif not _TAG.match(columns[-1]):
            problem = (where, "malformed row", f"tag {columns[-1]!r} is not O, B-X, I-X, E-X or S-X")
        else:
            words.append(columns[0])
            tags.append(columns[-1])
    flush()
    return result


def _tag_order(tag):
    return tag[0] != "B", tag[2:], tag


#: How tag names are inferred from training data (`keras_bert.data.labels.infer_label_names`
#: arguments): "O" first, then the other tags sorted by type, B before I (E, S):
#: [["B-PER", "O", "I-PER", "B-LOC"]] gives ["O", "B-LOC", "B-PER", "I-PER"].
TAG_INFERENCE = {"first": ("O",), "sort_key": _tag_order}


def encode_tags(sentences, label_names, unknown_labels="error"):
    """Tag strings -> lists of int ids: `keras_bert.data.labels.encode_labels` on tags.

    A sentence with an unknown tag is an error naming its first line, or
    (`unknown_labels="skip"`) is skipped whole and counted.

    Returns:
        A tuple `(sentences, ids)`: the sentences kept and a list of int32
        numpy arrays, one per sentence.
    """
    sentences, ids = labels_lib.encode_labels(
        sentences, label_names, unknown_labels, labels=sentences.tags, noun="tag")
    return sentences, list(ids)


def align_first_pieces(pieces_per_word, tag_ids, packer):
    """Packs sentences: [CLS] pieces [SEP], labels on first pieces.

    In-graph (runs inside `tf.data.Dataset.map`). `packer` (the model
    preprocessor's) packs and truncates the pieces; the labels ride along:
    piece j of a sentence sits at position j + 1, after [CLS], for the
    pieces the packer kept.

    Args:
        pieces_per_word: int RaggedTensor [batch, (num_words), (num_pieces)].
        tag_ids: int32 RaggedTensor [batch, (num_words)].
        packer: a `BertPacker` (`BertPreprocessor.packer`); pieces beyond
            its `truncation_length` - 2 are cut.

    Returns:
        A tuple (features, labels, weights, word_index), [batch, seq] padded
        as the packer pads (to the longest sentence of the batch when its
        sequence_length is None): features a dict of
        int32 `token_ids`, `segment_ids`, `padding_mask`; labels int32 (the
        word's tag on its first piece, 0 elsewhere); weights float32 (1 on
        first pieces); word_index int32 (the word of each first piece, -1
        elsewhere).
    """
    words = pieces_per_word.values  # [total_words, (num_pieces)]
    pieces = tf.cast(pieces_per_word.merge_dims(1, 2), tf.int32)  # [batch, (num_pieces)]
    features = packer(pieces)  # [batch, seq]

    # Per piece, flat over the batch.
    is_first = tf.equal(tf.ragged.range(words.row_lengths()).flat_values, 0)
    word_in_sentence = tf.ragged.range(pieces_per_word.row_lengths()).flat_values
    word_of_piece = tf.cast(tf.repeat(word_in_sentence, words.row_lengths()), tf.int32)
    tag_of_piece = tf.repeat(tf.cast(tag_ids.flat_values, tf.int32), words.row_lengths())
    kept = tf.reduce_sum(features["padding_mask"], axis=1) - 2  # Pieces between [CLS], [SEP].
    shape = tf.shape(features["token_ids"])

    def ride_along(values, fill):  # Flat [total_pieces] -> [batch, seq], as token_ids.
        values = pieces.with_flat_values(values)
        starts = values.row_starts()
        values = tf.gather(values.flat_values,
                           tf.ragged.range(starts, starts + tf.cast(kept, starts.dtype)))
        column = tf.fill([values.nrows(), 1], fill)
        return tf.concat([column, values, column], axis=1).to_tensor(fill, shape=shape)

    return (features, ride_along(tf.where(is_first, tag_of_piece, 0), 0),
            ride_along(tf.cast(is_first, tf.float32), 0.0),
            ride_along(tf.where(is_first, word_of_piece, -1), -1))


def first_piece_examples(words, tag_ids, preprocessor):
    """Word lists and their tag ids -> unbatched `(encoder inputs, labels, word_index)`.

    The one labeling of words for the tagger: fine-tuning on CoNLL files and
    `BertTokenClassifier.fit` on word lists both call it. Each word is
    tokenized on its own, the pieces are packed by the preprocessor's packer
    and the word's tag goes on its first piece (`align_first_pieces`); labels
    are -1 (ignored by the loss; pad them with -1 too, `LABEL_PADDING`) on
    the other pieces, [CLS] and [SEP]. Cached in memory.

    Args:
        words: list (one per sentence) of lists of str.
        tag_ids: list (one per sentence) of int sequences, as long as the
            sentence's words (`encode_tags`).
        preprocessor: the model's `keras_bert.text.BertPreprocessor`; pieces
            beyond its `truncation_length` - 2 are cut.

    Returns:
        A `tf.data.Dataset` of `(features, labels, word_index)`: features a
        dict of int32 [seq]; labels int32 [seq]; word_index int32 [seq], the
        word of each first piece, -1 elsewhere (a word missing from it was
        cut by the preprocessor's length or has no pieces).
    """
    words = tf.ragged.constant([list(w) for w in words], dtype=tf.string, ragged_rank=1)
    tags = tf.ragged.constant([list(t) for t in tag_ids], dtype=tf.int32, ragged_rank=1)
    tokenizer, packer = preprocessor.tokenizer, preprocessor.packer

    def pack(batch_words, batch_tags):  # [batch, (num_words)] each.
        # Each word after a space, as transformers tokenizes is_split_into_words: byte-level
        # BPE marks a word's start by it (add_prefix_space); WordPiece and SentencePiece
        # read a leading space as nothing.
        spaced = tf.strings.join([" ", batch_words.flat_values])
        pieces = batch_words.with_flat_values(tokenizer(spaced))
        features, labels, weights, word_index = align_first_pieces(pieces, batch_tags, packer)
        labels = tf.where(weights > 0, labels, -1)
        return (features, labels, word_index), tf.reduce_sum(features["padding_mask"], axis=1)

    def unpad(element, length):  # One sentence: [seq] without the batch's padding.
        return tf.nest.map_structure(lambda x: x[:length], element)

    dataset = tf.data.Dataset.from_tensor_slices((words, tags)).batch(128)
    dataset = dataset.map(pack, num_parallel_calls=tf.data.AUTOTUNE).unbatch()
    return dataset.map(unpad).cache()


# Padding of `first_piece_examples` elements without word_index.
LABEL_PADDING = ({"token_ids": 0, "segment_ids": 0, "padding_mask": 0}, -1)


def predictions_to_tags(logits, word_index, num_words, label_names):
    """Word-level tags from per-piece logits (argmax at each word's first piece).

    Args:
        logits: list (one per sentence) of float arrays [seq, num_classes];
            rows may be padded beyond the sentence.
        word_index: list of int arrays [seq] (`first_piece_examples`).
        num_words: list of ints, words per sentence.
        label_names: list of str.

    Returns:
        A list of lists of tag strings; words without a kept first piece get "O".
    """
    result = []
    for sentence_logits, index, count in zip(logits, word_index, num_words):
        tags = ["O"] * count
        positions = np.flatnonzero(index >= 0)
        for position, tag_id in zip(positions, np.argmax(sentence_logits[positions], -1)):
            tags[index[position]] = label_names[tag_id]
        result.append(tags)
    return result
