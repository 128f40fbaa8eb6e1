"""resolve_text_settings: explicit argument > saved settings > documented default, and its errors."""

import logging

import pytest

from keras_bert.text import TextSettings, resolve_text_settings

UNCASED = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "hello", "##s"]
CASED = UNCASED + ["The", "Hello", "World"]


def test_explicit_beats_saved_beats_default():
    saved = {"max_seq_length": 64, "lowercase": False, "truncation": "round_robin",
             "task": "classification"}  # Other task.json keys are not settings.
    assert resolve_text_settings(saved, 128, UNCASED) == TextSettings(64, False, "round_robin")
    assert resolve_text_settings(saved, 128, UNCASED, max_seq_length=32, lowercase=True,
                                 truncation="longest_first") == TextSettings(
        32, True, "longest_first")
    # Nothing saved: min(512, positions) or the caller's default, capped at the
    # positions; the paper's truncation; the casing the vocabulary suggests.
    assert resolve_text_settings(None, 1024, UNCASED) == TextSettings(512, True, "longest_first")
    assert resolve_text_settings({}, 128, CASED).max_seq_length == 128
    assert resolve_text_settings({}, 128, CASED).lowercase is False
    assert resolve_text_settings({}, 512, UNCASED, default_max_seq_length=384).max_seq_length == 384
    assert resolve_text_settings({}, 24, UNCASED, default_max_seq_length=128).max_seq_length == 24
    # A saved value beats the caller's default; a preprocessor's settings count as saved.
    assert resolve_text_settings({"max_seq_length": 40}, 128, UNCASED,
                                 default_max_seq_length=128).max_seq_length == 40
    assert resolve_text_settings(TextSettings(20, False), 128, UNCASED).lowercase is False


def test_a_guessed_casing_is_logged_once_and_a_saved_one_is_not(caplog):
    with caplog.at_level(logging.WARNING, logger="keras_bert"):
        resolve_text_settings({"lowercase": True}, 128, CASED, where="models/x/task.json")
        assert caplog.records == []
        assert resolve_text_settings({}, 128, CASED, where="models/x/task.json").lowercase is False
    (record,) = caplog.records
    assert "models/x/task.json" in record.getMessage()
    assert "lowercase=False, guessed from vocab.txt" in record.getMessage()


def test_json_round_trip_keeps_only_known_fields():
    settings = TextSettings(max_seq_length=128, lowercase=False, truncation="round_robin")
    assert settings.to_json() == {"max_seq_length": 128, "lowercase": False,
                                  "truncation": "round_robin"}
    assert TextSettings.from_json(settings.to_json()) == settings
    assert TextSettings(lowercase=True).to_json() == {"lowercase": True}
    assert TextSettings.from_json({"lowercase": True, "epoch": 3}) == TextSettings(lowercase=True)
    assert not TextSettings(lowercase=True).complete and settings.complete


@pytest.mark.parametrize("values, message", [
    ({"lowercase": "false"}, r"task.json: lowercase must be true or false. Received: "
                             r"lowercase='false'"),
    ({"max_seq_length": "64"}, r"task.json: max_seq_length must be an integer"),
    ({"max_seq_length": True}, r"task.json: max_seq_length must be an integer"),
    ({"max_seq_length": 2}, r"task.json: max_seq_length must be >= 3"),
    ({"truncation": "left"}, r"task.json: truncation must be one of \['longest_first', "
                             r"'round_robin'\]"),
])
def test_bad_saved_values_name_the_file_and_key(values, message):
    with pytest.raises(ValueError, match=message):
        resolve_text_settings(values, 128, UNCASED, where="m/task.json")


def test_bad_explicit_values_and_lengths_past_the_model_are_refused():
    with pytest.raises(ValueError, match=r"lowercase must be true or false. Received: "
                                         r"lowercase=1"):
        resolve_text_settings(None, 128, UNCASED, lowercase=1)
    with pytest.raises(ValueError, match=r"Expected max_seq_length in \[3, 128\] .* Received: "
                                         r"max_seq_length=200 \(given\)\. Pass"):
        resolve_text_settings(None, 128, UNCASED, max_seq_length=200)
    # A saved value past the model names the file to fix.
    with pytest.raises(ValueError, match=r"max_seq_length=200 \(saved in m/task.json\)\. Fix "
                                         r"m/task.json"):
        resolve_text_settings({"max_seq_length": 200}, 128, UNCASED, where="m/task.json")
    # What packing reaches is checked: a saved fixed length past the model.
    with pytest.raises(ValueError, match=r"Expected sequence_length in \[3, 32\] .* "
                                         r"sequence_length=64 \(saved in m/task.json\)"):
        resolve_text_settings({"max_seq_length": 64, "sequence_length": 64}, 32, UNCASED,
                              where="m/task.json")
    # No casing anywhere and no vocabulary to guess it from.
    with pytest.raises(ValueError, match=r"m/task.json does not say .* pass lowercase="):
        resolve_text_settings({}, 128, None, where="m/task.json")


def lengths(settings):
    return settings.sequence_length, settings.max_seq_length


def test_the_length_not_given_follows_and_only_what_packs_must_fit():
    # A fixed length within the model packs; the saved max_seq_length past it is kept.
    saved = {"max_seq_length": 512, "sequence_length": 16}
    assert lengths(resolve_text_settings(saved, 32, UNCASED)) == (16, 512)
    # A fixed length given alone: max_seq_length follows it up, never below the saved one.
    assert lengths(resolve_text_settings({"max_seq_length": 32}, 128, UNCASED,
                                         sequence_length=64)) == (64, 64)
    assert lengths(resolve_text_settings({"max_seq_length": 96}, 128, UNCASED,
                                         sequence_length=64)) == (64, 96)
    assert lengths(resolve_text_settings(None, 128, UNCASED, sequence_length=20)) == (20, 20)
    # A max_seq_length given alone: the saved fixed length goes (batch-longest padding).
    assert lengths(resolve_text_settings(saved, 32, UNCASED, max_seq_length=24)) == (None, 24)
    # Both given and crossing: both named, as given.
    with pytest.raises(ValueError, match=r"Received: sequence_length=64 \(given\), "
                                         r"max_seq_length=32 \(given\)"):
        resolve_text_settings(None, 128, UNCASED, sequence_length=64, max_seq_length=32)
