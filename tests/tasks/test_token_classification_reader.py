"""CoNLL reader and first-WordPiece label alignment."""

import numpy as np
import pytest
import tensorflow as tf

from keras_bert.data import batching
from keras_bert.data import labels as labels_lib
from keras_bert.tasks.token_classification import reader as conll
from keras_bert.text import BertPreprocessor, BertTokenizer
from tests.training.finetune_fixtures import CONLL_TEXT, make_vocab


@pytest.fixture
def tokenizer(tmp_path):
    path = str(tmp_path / "vocab.txt")
    make_vocab(path)
    return BertTokenizer(path)


def preprocessor_of(tokenizer, max_seq_length):
    """A model's preprocessor: each batch padded to its longest text."""
    return BertPreprocessor(tokenizer, sequence_length=None, max_seq_length=max_seq_length)


def packer(tokenizer, max_seq_length):
    return preprocessor_of(tokenizer, max_seq_length).packer


def test_reader_sentences_docstart_and_last_column(tmp_path):
    path = tmp_path / "train.txt"
    path.write_text(CONLL_TEXT)
    sentences = conll.read_conll(str(path))
    assert sentences.words == [
        ["John", "Smith", "lives", "in", "Paris", "."],
        ["Acme", "Corp", "works", "in", "Berlin", ",", "Germany"],
    ]
    assert sentences.tags[0] == ["B-PER", "I-PER", "O", "O", "B-LOC", "O"]
    assert sentences.where == [f"{path}:3", f"{path}:10"]


def test_malformed_sentences_are_skipped_with_file_and_line(tmp_path):
    path = tmp_path / "bad.txt"
    path.write_bytes(
        b"John B-PER\nSmith\n\n"              # line 2: one column
        b"Paris B-LOC\nis X-LOC\n\n"          # line 5: not a BIO tag
        b"Caf\xe9 B-LOC\nok O\n\n"            # invalid UTF-8, kept
        b"Berlin\tB-LOC\n")                   # tab separated, no final blank line
    sentences = conll.read_conll(str(path))
    assert sentences.words == [["Caf\ufffd", "ok"], ["Berlin"]]
    assert sentences.where == [f"{path}:7", f"{path}:10"]
    messages = sentences.report.messages
    assert messages[0].startswith(f"{path}:2: skipped: malformed row: one column 'Smith'")
    assert messages[1].startswith(f"{path}:5: skipped: malformed row: tag 'X-LOC'")
    assert messages[2].startswith(f"{path}:7: invalid UTF-8")
    assert sentences.report.summary() == (
        f"{path}: kept 2 of 4 rows; skipped 2 (malformed row: 2); repaired 1 (invalid UTF-8: 1)")


def test_tag_names_and_unknown_tags():
    assert labels_lib.infer_label_names([["B-PER", "O", "I-PER", "B-LOC"]], **conll.TAG_INFERENCE) \
        == ["O", "B-LOC", "B-PER", "I-PER"]
    # "O" first even where the data has none (words without a prediction are "O").
    assert labels_lib.infer_label_names([["I-LOC", "B-LOC"]], **conll.TAG_INFERENCE) == [
        "O", "B-LOC", "I-LOC"]
    sentences = conll.ConllSentences([["a"], ["b"]], [["B-PER"], ["B-LOC"]], ["f:1", "f:3"])
    with pytest.raises(ValueError, match=r"f:3: unknown tag 'B-LOC'"):
        conll.encode_tags(sentences, ["O", "B-PER"])


def batch_of_one(pieces):
    return tf.RaggedTensor.from_row_lengths(pieces, [pieces.nrows()])


def one_sentence(outputs):
    return tf.nest.map_structure(lambda x: x[0], outputs)


def test_labels_go_on_the_first_piece_only(tokenizer):
    # "johnx" -> john ##x ; "1889" -> 1 ##8 ##8 ##9 (digits are single pieces here).
    words = tf.constant(["johnx", "in", "1889", "!"])
    pieces = tokenizer(words)
    assert [len(p) for p in pieces.to_list()] == [2, 1, 4, 1]
    features, labels, weights, word_index = one_sentence(conll.align_first_pieces(
        batch_of_one(pieces), tf.ragged.constant([[3, 0, 5, 0]]), packer(tokenizer, 32)))
    # [CLS] john ##x in 1 ##8 ##8 ##9 ! [SEP]
    assert features["token_ids"].numpy()[0] == tokenizer.cls_token_id
    assert len(features["token_ids"].numpy()) == 10
    assert labels.numpy().tolist() == [0, 3, 0, 0, 5, 0, 0, 0, 0, 0]
    assert weights.numpy().tolist() == [0, 1, 0, 1, 1, 0, 0, 0, 1, 0]
    assert word_index.numpy().tolist() == [-1, 0, -1, 1, 2, -1, -1, -1, 3, -1]


def test_truncation_cuts_words_and_their_labels(tokenizer):
    pieces = tokenizer(tf.constant(["johnx", "in", "1889"]))
    features, labels, weights, word_index = one_sentence(conll.align_first_pieces(
        batch_of_one(pieces), tf.ragged.constant([[3, 0, 5]]), packer(tokenizer, 6)))
    # 4 pieces fit: john ##x in 1 ; the rest of "1889" is cut, its label stays on "1".
    assert len(features["token_ids"].numpy()) == 6
    assert features["token_ids"].numpy()[-1] == tokenizer.sep_token_id
    assert word_index.numpy().tolist() == [-1, 0, -1, 1, 2, -1]
    assert labels.numpy().tolist() == [0, 3, 0, 0, 5, 0]


def test_dataset_marks_unlabeled_pieces_with_minus_one(tokenizer):
    sentences = conll.ConllSentences([["johnx", "smith"], ["paris"]],
                                     [["B-PER", "I-PER"], ["B-LOC"]], ["f:1", "f:4"])
    names = ["O", "B-LOC", "B-PER", "I-PER"]
    sentences, ids = conll.encode_tags(sentences, names)
    dataset = conll.first_piece_examples(sentences.words, ids, preprocessor_of(tokenizer, 16))
    (x0, y0, index0), (x1, y1, _) = list(dataset.as_numpy_iterator())
    assert y0.tolist() == [-1, 2, -1, 3, -1]
    assert index0.tolist() == [-1, 0, -1, 1, -1]
    assert y1.tolist() == [-1, 1, -1]
    batch = next(iter(batching.eval_batches(dataset.map(lambda x, y, i: (x, y)), 2,
                                            conll.LABEL_PADDING)))
    assert batch[1].numpy()[1].tolist() == [-1, 1, -1, -1, -1]  # Padded with -1, ignored.


@pytest.mark.parametrize("max_seq_length", [4, 7, 32])
def test_packing_is_the_preprocessors_and_labels_follow_their_pieces(tokenizer, max_seq_length):
    sentences = conll.ConllSentences(
        [["johnx", "in", "1889", "paris"], ["ab", "c"], ["x1y2z3"]],
        [["B-PER", "O", "B-LOC", "B-LOC"], ["O", "B-PER"], ["B-LOC"]], ["f:1", "f:6", "f:9"])
    names = ["O", "B-LOC", "B-PER"]
    sentences, ids = conll.encode_tags(sentences, names)
    preprocessor = preprocessor_of(tokenizer, max_seq_length)
    dataset = conll.first_piece_examples(sentences.words, ids, preprocessor)
    words_cut = 0
    for words, tags, (x, y, word_index) in zip(sentences.words, ids, dataset.as_numpy_iterator()):
        packed = preprocessor(tf.constant([" ".join(words)]))
        assert x["token_ids"].tolist() == packed["token_ids"].numpy()[0].tolist()
        assert x["segment_ids"].tolist() == packed["segment_ids"].numpy()[0].tolist()
        labeled = np.flatnonzero(y >= 0)
        first_pieces = [tokenizer(tf.constant([w]))[0].numpy()[0] for w in words]
        assert word_index[labeled].tolist() == list(range(len(labeled)))  # Words in order.
        for position in labeled:
            word = word_index[position]
            assert x["token_ids"][position] == first_pieces[word]
            assert y[position] == tags[word]
        words_cut += len(words) - len(labeled)
    assert (words_cut > 0) == (max_seq_length < 32)  # Truncation was tested.


def test_predictions_map_back_to_words():
    # Two words with first pieces at positions 1 and 3; word 2 was cut.
    word_index = [np.array([-1, 0, -1, 1, -1])]
    logits = np.zeros((1, 6, 3))
    logits[0, 1, 1] = 5  # word 0 -> B-PER
    logits[0, 2, 2] = 9  # a ## piece: ignored
    logits[0, 3, 2] = 5  # word 1 -> I-PER
    tags = conll.predictions_to_tags(list(logits), word_index, [3], ["O", "B-PER", "I-PER"])
    assert tags == [["B-PER", "I-PER", "O"]]
