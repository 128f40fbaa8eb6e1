"""The span QA export refuses the question lengths that fine-tuning refuses (issue 23).

It used to cut max_query_length to max_seq_length - 4 in silence, leaving one
context token per window; fine-tuning (`squad_features`) refuses the same
numbers. Both now call `windows.check_query_length`.
"""

import os

import pytest

from keras_bert.data.report import DataReport
from keras_bert.export import export_model
from keras_bert.tasks import BertSpanLabeler
from keras_bert.tasks.span_qa import reader as squad
from keras_bert.tasks.span_qa.serving import SpanQAServingModule
from keras_bert.text import BertPreprocessor, BertTokenizer
from tests.export.conftest import MAX_SEQ_LENGTH, tiny_encoder, write_vocab


@pytest.fixture(scope="module")
def qa_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("qa_query_length")
    model_dir = str(root / "qa_model")
    BertSpanLabeler(tiny_encoder()).save_pretrained(
        model_dir, vocab_file=write_vocab(str(root)), task_info={"max_seq_length": MAX_SEQ_LENGTH})
    return model_dir


def _finetuning_error(max_seq_length, max_query_length, vocab_file):
    data = squad.SquadData([], False, DataReport("squad.json"))
    try:
        preprocessor = BertPreprocessor(BertTokenizer(vocab_file), sequence_length=None,
                                        max_seq_length=max_seq_length)
        squad.squad_features(data, preprocessor, max_query_length=max_query_length)
    except ValueError as e:
        return str(e)
    return None


@pytest.mark.parametrize("max_query_length", [MAX_SEQ_LENGTH - 3, MAX_SEQ_LENGTH, 64])
def test_export_refuses_what_finetuning_refuses(qa_dir, tmp_path, max_query_length):
    expected = _finetuning_error(MAX_SEQ_LENGTH, max_query_length,
                                 os.path.join(qa_dir, "vocab.txt"))
    assert expected is not None
    output = tmp_path / "exports" / "qa"
    with pytest.raises(ValueError) as info:
        export_model(qa_dir, str(output), max_query_length=max_query_length)
    assert str(info.value) == expected
    assert str(info.value).startswith(
        f"max_seq_length={MAX_SEQ_LENGTH} leaves no room for context after a question of "
        f"max_query_length={max_query_length} tokens")
    assert "--max-query-length" in str(info.value)
    assert not output.exists()


def test_task_json_query_length_is_checked_too(qa_dir, tmp_path):
    with pytest.raises(ValueError, match=f"max_query_length={MAX_SEQ_LENGTH - 2} tokens"):
        export_model(qa_dir, str(tmp_path / "qa"),
                     task_info={"max_seq_length": MAX_SEQ_LENGTH,
                                "max_query_length": MAX_SEQ_LENGTH - 2})


def test_the_longest_accepted_question_is_kept_whole(qa_dir):
    longest = MAX_SEQ_LENGTH - 4
    assert _finetuning_error(MAX_SEQ_LENGTH, longest, os.path.join(qa_dir, "vocab.txt")) is None
    model = BertSpanLabeler.from_pretrained(qa_dir)
    vocab_file = os.path.join(qa_dir, "vocab.txt")
    preprocessor = BertPreprocessor(BertTokenizer(vocab_file), sequence_length=None,
                                    max_seq_length=MAX_SEQ_LENGTH)
    module = SpanQAServingModule(model, preprocessor, vocab_file=vocab_file,
                                 max_query_length=longest)
    assert module.max_query_length == longest  # Not cut.
    # Not given (no task.json setting): run_squad.py's 64 does not fit, half the window does.
    default = SpanQAServingModule(model, preprocessor, vocab_file=vocab_file)
    assert default.max_query_length == (MAX_SEQ_LENGTH - 3) // 2
