"""Task readers never reinterpret input in silence (issue 23).

Numerically equal labels are one class; a header or JSON object that names a
column twice, and an is_impossible that is not a JSON boolean, are errors
naming the file and line (question); CoNLL columns split on ASCII whitespace
only; a directory, gzip, UTF-16 or binary input is a one-line error naming
the file, from every reader.
"""

import gzip
import json

import numpy as np
import pytest

from keras_bert.data import labels as labels_lib
from keras_bert.tasks.classification import reader as classification
from keras_bert.tasks.span_qa import reader as squad
from keras_bert.tasks.token_classification import reader as conll
from keras_bert.training.finetune import read_task_data
from tests.training.finetune_fixtures import squad_json, write_json


def write(tmp_path, name, data):
    path = tmp_path / name
    path.write_bytes(data if isinstance(data, bytes) else data.encode("utf-8"))
    return str(path)


# --- Labels that are numerically equal are one class -------------------------------------

def test_jsonl_labels_1_and_1_0_are_one_class(tmp_path):
    path = write(tmp_path, "train.jsonl", "\n".join(json.dumps(row) for row in [
        {"text": "a", "label": 1}, {"text": "b", "label": 1.0}, {"text": "c", "label": "1"},
        {"text": "d", "label": 0}, {"text": "e", "label": 0.0}, {"text": "f", "label": " 0 "},
    ]) + "\n")
    examples = classification.read_classification_file(path)
    names = labels_lib.infer_label_names(examples.labels, key=classification.label_key)
    assert names == ["0", "1"]  # A binary task: two outputs, not four.
    _, ids = classification.encode_labels(examples, names)
    assert ids.tolist() == [1, 1, 1, 0, 0, 0]


def test_csv_labels_are_matched_by_value_and_sorted_numerically(tmp_path):
    path = write(tmp_path, "train.csv", "text,label\na,2.0\nb,10\nc,2\nd,-1.50\ne,-1.5\n")
    examples = classification.read_classification_file(path)
    assert examples.labels == ["2", "10", "2", "-1.5", "-1.5"]
    assert labels_lib.infer_label_names(examples.labels, key=classification.label_key) == [
        "-1.5", "2", "10"]
    # Declared names in another spelling of the same numbers still match.
    _, ids = classification.encode_labels(examples, ["10.0", "2.00", "-1.5"])
    assert ids.tolist() == [1, 0, 1, 2, 2]


def test_label_key_keeps_text_labels_and_long_integers_apart():
    assert classification.label_key("pos") == "pos"
    assert classification.label_key(True) == classification.label_key("true") == "true"
    assert classification.label_key(0.1) == classification.label_key("0.10") == "0.1"
    # Integers beyond float precision stay distinct classes.
    assert (classification.label_key("12345678901234567890")
            != classification.label_key("12345678901234567891"))
    assert classification.label_key("1e3") == classification.label_key(1000) == "1000"


# --- Duplicate columns ---------------------------------------------------------------------

@pytest.mark.parametrize("name,header,row", [
    ("train.csv", "text,label,label", "good,pos,neg"),
    ("train.tsv", "label\ttext\ttext", "pos\tgood\tbad"),
    ("train.csv", "text,label,text", "good,pos,bad"),
])
def test_a_column_named_twice_is_an_error_at_line_1(tmp_path, name, header, row):
    path = write(tmp_path, name, f"{header}\n{row}\n")
    with pytest.raises(ValueError, match=f"^{path}:1: the header names column '(label|text)' 2 "
                                         f"times") as info:
        classification.read_classification_file(path)
    assert "\n" not in str(info.value)


def test_a_jsonl_key_named_twice_is_an_error_at_its_line(tmp_path):
    path = write(tmp_path, "train.jsonl",
                 '{"text": "good", "label": "pos"}\n'
                 '{"text": "bad", "label": "neg", "label": "pos"}\n')
    with pytest.raises(ValueError, match=f"^{path}:2: the object has key 'label' twice"):
        classification.read_classification_file(path)


# --- SQuAD is_impossible ---------------------------------------------------------------------

@pytest.mark.parametrize("value", ["false", "true", 0, 1, None, "False"])
def test_is_impossible_must_be_a_json_boolean(tmp_path, value):
    data = squad_json()
    data["data"][0]["paragraphs"][0]["qas"][1]["is_impossible"] = value
    path = write_json(str(tmp_path / "squad.json"), data)
    with pytest.raises(ValueError, match=f"^{path}: question q2: is_impossible is {value!r}"):
        squad.read_squad(path, training=True)


def test_boolean_is_impossible_still_reads(tmp_path):
    data = squad_json()
    data["data"][0]["paragraphs"][0]["qas"][1]["is_impossible"] = False
    path = write_json(str(tmp_path / "squad.json"), data)
    read = squad.read_squad(path, training=True)
    assert not read.version_2_with_negative
    assert len(read) == 6


# --- CoNLL: ASCII whitespace only --------------------------------------------------------

def test_conll_token_with_a_no_break_space_stays_one_token(tmp_path):
    path = write(tmp_path, "train.conll",
                 "New\u00a0York NNP B-LOC\nis VBZ O\n10\u00a0000 CD O\n\tfine\tJJ\tO \r\n\n")
    sentences = conll.read_conll(path)
    assert sentences.words == [["New\u00a0York", "is", "10\u00a0000", "fine"]]
    assert sentences.tags == [["B-LOC", "O", "O", "O"]]
    assert sentences.report.num_skipped == 0


# --- Directories, compressed and UTF-16 files -------------------------------------------

def _readers(kind):
    return {
        "classification": lambda p: classification.read_classification_file(p, file_format="csv"),
        "conll": conll.read_conll,
        "squad": lambda p: squad.read_squad(p, training=True),
    }[kind]


KINDS = ("classification", "conll", "squad")
CONTENT = {
    "classification": "text,label\ngood,pos\nbad,neg\n",
    "conll": "John B-PER\nlives O\n",
    "squad": json.dumps(squad_json()),
}


@pytest.mark.parametrize("kind", KINDS)
def test_gzip_input_says_decompress_it(tmp_path, kind):
    path = write(tmp_path, "train.csv", gzip.compress(CONTENT[kind].encode()))
    with pytest.raises(ValueError,
                       match=rf"^{path} is gzip-compressed: decompress it \(gunzip {path}\)"):
        _readers(kind)(path)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-le"])
def test_utf16_input_says_save_it_as_utf8(tmp_path, kind, encoding):
    # "utf-16" writes a byte-order mark; "utf-16-le" does not.
    path = write(tmp_path, "train.csv", CONTENT[kind].encode(encoding))
    with pytest.raises(ValueError, match=rf"^{path} looks like UTF-16 .*save it as UTF-8"):
        _readers(kind)(path)


@pytest.mark.parametrize("kind", KINDS)
def test_a_directory_says_pass_a_file(tmp_path, kind):
    folder = tmp_path / "data"
    folder.mkdir()
    (folder / "train.csv").write_text(CONTENT[kind])
    with pytest.raises(ValueError, match=f"^{folder} is a directory: pass a file"):
        _readers(kind)(str(folder))


def test_train_dir_through_read_task_data(tmp_path):
    with pytest.raises(ValueError, match=f"^{tmp_path} is a directory: pass a file"):
        read_task_data("classification", str(tmp_path), training=True)


@pytest.mark.parametrize("kind", KINDS)
def test_binary_input_is_named(tmp_path, kind):
    data = bytes(np.random.default_rng(0).integers(0, 256, 4096, dtype=np.uint8))
    path = write(tmp_path, "train.csv", b"\x00\x01" + data)
    with pytest.raises(ValueError, match=f"^{path} is a binary file"):
        _readers(kind)(path)


def test_latin1_text_is_still_read_with_repairs(tmp_path):
    # A few invalid bytes are not a binary file: the row is kept and counted.
    path = write(tmp_path, "train.csv", "text,label\ncaf\u00e9 ok,pos\n".encode("latin-1"))
    examples = classification.read_classification_file(path)
    assert examples.texts == ["caf\ufffd ok"]
    assert examples.report.repaired["invalid UTF-8"] == 1


def test_a_boolean_regression_label_is_not_a_number(tmp_path):
    path = write(tmp_path, "train.jsonl",
                 '{"text": "a", "label": true}\n{"text": "b", "label": 0.5}\n')
    examples = classification.read_classification_file(path, regression=True)
    assert examples.labels == [0.5]
    assert examples.report.skipped["bad label"] == 1


def test_a_huge_exponent_label_stays_small():
    assert classification.label_key("1e999999999") == "1E+999999999"
    assert classification.label_key("1e40") == classification.label_key("1" + "0" * 40)
    assert classification.label_key("1.00000000000000000000000000001") != "1"


@pytest.mark.parametrize("kind", KINDS)
def test_a_missing_file_is_named(tmp_path, kind):
    path = str(tmp_path / "nope.txt")
    with pytest.raises(FileNotFoundError, match=f"not found: {path}$"):
        _readers(kind)(path)
