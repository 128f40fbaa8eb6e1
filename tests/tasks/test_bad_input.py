"""Task readers on bad input: a stray quote never swallows rows or makes a class."""

from keras_bert.tasks.classification import reader as classification


def write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return str(path)


def test_unterminated_quote_in_a_csv_label_is_skipped_at_its_line(tmp_path):
    path = write(tmp_path, "t.csv", 'text,label\na,pos\nb,"neg\nc,pos\nd,neu\ne,pos\n')
    examples = classification.read_classification_file(path)
    assert examples.labels == ["pos", "pos", "neu", "pos"]
    assert examples.texts == ["a", "c", "d", "e"]
    assert examples.report.num_kept == 4 and examples.report.num_skipped == 1
    assert examples.report.messages[0].startswith(f"{path}:3: skipped: malformed row")
    assert "never closed" in examples.report.messages[0]


def test_unterminated_quote_in_a_csv_text_does_not_swallow_later_rows(tmp_path):
    # The quote opened on line 3 closes by accident on line 5.
    path = write(tmp_path, "t.csv", 'text,label\na,pos\n"b,neg\nc,pos\nd,"neu"\ne,pos\n')
    examples = classification.read_classification_file(path)
    assert examples.texts == ["a", "c", "d", "e"]
    assert examples.labels == ["pos", "pos", "neu", "pos"]
    assert examples.report.messages[0].startswith(f"{path}:3: skipped: malformed row")


def test_quote_that_carries_line_breaks_into_the_label_is_skipped(tmp_path):
    path = write(tmp_path, "t.csv", 'text,label\na,"pos\nb,neg\nc,"neu\nd,pos\n')
    examples = classification.read_classification_file(path)
    assert all("\n" not in label for label in examples.labels)
    assert examples.texts == ["b", "d"] and examples.labels == ["neg", "pos"]
    assert examples.report.num_skipped == 2


def test_stray_quote_in_a_tsv_label_is_skipped(tmp_path):
    path = write(tmp_path, "t.tsv", 'text\tlabel\na\tpos\nb\t"neg\nc\tpos\nd\tneg"\n')
    examples = classification.read_classification_file(path)
    assert examples.labels == ["pos", "pos"]
    assert examples.report.skipped["bad label"] == 2
    assert examples.report.messages[0].startswith(f"{path}:3: skipped: bad label")


def test_jsonl_label_with_a_line_break_is_skipped(tmp_path):
    path = write(tmp_path, "t.jsonl", '{"text": "a", "label": "pos"}\n'
                 '{"text": "b", "label": "neg\\nc"}\n')
    examples = classification.read_classification_file(path)
    assert examples.labels == ["pos"]
    assert examples.report.messages[0].startswith(f"{path}:2: skipped: bad label")
