"""Export-time tuning (keras_bert/export/tuning.py): the measured fastest sub-batching is
exported, recorded in keras_bert_export.json, and answers as the untuned export does."""

import json
import os

import numpy as np
import pytest
import tensorflow as tf

from keras_bert.export import tuning
from keras_bert.export.export import build_serving_module
from keras_bert.tasks.classification.serving import ClassifierServingModule
from tests.conftest import run_tool

# Fake medians (seconds) per request size and k: k=2 is fastest at 16 texts, k=4 at 32
# and 64 (k=8 is slower at 64); 1 text runs alike whatever k.
FAKE_TIMES = {1: {1: 0.010, "chosen": 0.010},
              16: {1: 0.100, 2: 0.080},
              32: {1: 0.200, 2: 0.150, 4: 0.120},
              64: {1: 0.400, 2: 0.300, 4: 0.220, 8: 0.250}}


def fake_timer(name, function, size, requests):
    """tuning._timer on FAKE_TIMES instead of the clock (the candidate is not run)."""
    return lambda round_index: FAKE_TIMES[size][name] * (1 + 0.01 * (round_index % 2))


def texts_of(vocabulary, count=64):
    return tuning.synthetic_texts(vocabulary, count=count, seed=1)


def test_the_measured_fastest_per_request_size_is_chosen(classifier_export, monkeypatch):
    module = build_serving_module(classifier_export["model"])
    texts = texts_of(module._keras.tokenizer.vocabulary)
    monkeypatch.setattr(tuning, "_timer", fake_timer)
    record = tuning.tune_sub_batches(module, texts, seconds=0)

    assert record["fastest"] == {"1": 1, "16": 2, "32": 4, "64": 4}
    assert record["chosen"] == [[16, 2], [32, 4]]
    assert module.sub_batches == ((16, 2), (32, 4))
    assert record["median_ms"]["64"] == {"1": 400.0, "2": 300.0, "4": 220.0, "8": 250.0}
    # A k is timed only where it splits (8 texts a sub-batch at least).
    assert sorted(record["median_ms"]["16"]) == ["1", "2"]
    assert record["rounds"] == tuning.MIN_ROUNDS
    assert record["cpu"]["model"] and set(record["cpu"]["flags"]) <= set(tuning.CPU_FLAGS)

    # The tuned module answers as one batch does (the untuned export's path), rows in
    # request order, through every branch of the table (1 text, 16 -> k=2, 40 -> k=4).
    one_batch = module._keras.classify_in_sub_batches
    for size in (1, 16, 40):
        request = tf.constant(texts[:size])
        ours, reference = module.classify(request), one_batch(request, tf.constant(1))
        np.testing.assert_allclose(ours["probabilities"], reference["probabilities"], atol=1e-6)
        np.testing.assert_array_equal(ours["label"], reference["label"])
    with pytest.raises(RuntimeError, match="classify is traced already"):
        module.set_sub_batches(2)


def test_a_split_within_the_margin_is_not_taken():
    times = {16: {1: 0.100, 2: 0.099}, 32: {1: 0.200, 2: 0.150, 4: 0.160}, 64: {1: 0.4, 8: 0.1}}
    table, best = tuning.choose_table(times, min_sub_batch=8)
    assert best == {16: 1, 32: 2, 64: 8} and table == [(32, 2), (64, 8)]
    # k=8 needs 64 texts: at 32 texts it is not a choice even if timed fastest.
    assert tuning.choose_table({32: {1: 0.2, 8: 0.01}}, min_sub_batch=8) == ([], {32: 1})


def test_sub_batch_tables_are_checked():
    assert ClassifierServingModule.sub_batch_table(4) == ((32, 4),)
    assert ClassifierServingModule.sub_batch_table(1) == ()
    assert ClassifierServingModule.sub_batch_table([[16, 2], [64, 1]]) == ((16, 2), (64, 1))
    for bad in ([[16, 4]], [[32, 2], [16, 2]], [], 0, "auto"):
        with pytest.raises(ValueError, match="Expected sub_batches"):
            ClassifierServingModule.sub_batch_table(bad)


@pytest.mark.slow  # Tens of seconds of the default tier's time (round 10).
def test_tools_export_tunes_by_default_and_records_it(classifier_export, tmp_path, monkeypatch):
    # The fake clock of the test above, through tools/export.py's default path.
    monkeypatch.setattr(tuning, "_timer", fake_timer)
    sample = tmp_path / "sample.txt"
    sample.write_text("a good movie\nthe film was not very good !\n\nthe cat\n")
    status, out, err = run_tool("export", "--model", classifier_export["model_dir"], "--output",
                                tmp_path / "tuned", "--tune-texts", sample, "--tune-seconds", 0)
    assert status == 0, err
    assert out.startswith("Tuned on this CPU (")
    assert ("requests of >= 16 texts: 2 sub-batches, >= 32 texts: 4 sub-batches (16 texts: "
            "1.25x one batch's speed; 32 texts: 1.67x") in out.splitlines()[0]
    with open(tmp_path / "tuned" / "1" / "keras_bert_export.json") as f:
        info = json.load(f)
    record = info["tuning"]
    assert info["sub_batches"] == record["chosen"] == [[16, 2], [32, 4]]
    assert record["candidates"] == [1, 2, 4, 8]
    assert record["median_ms"]["32"] == {"1": 200.0, "2": 150.0, "4": 120.0}
    assert record["date"].startswith("20") and record["cpu"]["cores"] >= 1


@pytest.mark.slow  # Tens of seconds of the default tier's time (round 10).
def test_real_timing_of_the_candidates(classifier_export):
    module = build_serving_module(classifier_export["model"])
    texts = texts_of(module._keras.tokenizer.vocabulary, count=32)
    record = tuning.tune_sub_batches(module, texts, candidates=(1, 2), request_sizes=(1, 16),
                                     seconds=0)
    assert sorted(record["median_ms"]) == ["1", "16"] and record["rounds"] == tuning.MIN_ROUNDS
    assert all(t > 0 for by_k in record["median_ms"].values() for t in by_k.values())
    assert record["batch_1_ms"]["chosen"] > 0
    assert module.sub_batches == (1 if record["chosen"] == 1 else ((16, 2),))


@pytest.mark.parametrize("flags, sub_batches", [(["--sub-batches", "2"], 2), (["--no-tune"], None),
                                                ([], "auto")])
def test_an_explicit_sub_batches_or_no_tune_skips_the_tuning(monkeypatch, tmp_path, flags,
                                                              sub_batches):
    # What tools/export.py asks export_model for (export_model(sub_batches=2) itself:
    # tests/export/test_classifier_export.py; no "auto", no tuning).
    import keras_bert.export

    calls = []

    def fake_export_model(model, output, **kwargs):
        calls.append(kwargs)
        raise ValueError("stopped here")

    monkeypatch.setattr(keras_bert.export, "export_model", fake_export_model)
    status, _, err = run_tool("export", "--model", tmp_path / "model", "--output",
                              tmp_path / "e", *flags)
    assert status == 1 and "stopped here" in err
    assert calls[0].get("sub_batches") == sub_batches


@pytest.mark.parametrize("flags", [["--sub-batches", "2", "--tune-seconds", "5"],
                                   ["--no-tune", "--tune-texts", "x.txt"]])
def test_tuning_flags_without_tuning_are_refused(classifier_export, tmp_path, flags):
    status, _, err = run_tool("export", "--model", classifier_export["model_dir"], "--output",
                              tmp_path / "e", *flags)
    assert status == 1 and len(err.strip().splitlines()) == 1
    assert "--tune-texts / --tune-seconds" in err


@pytest.mark.parametrize("content, message", [(None, "Cannot read the tuning texts"),
                                              ("\n  \n", "holds no text")])
def test_bad_tune_texts_give_one_line(classifier_export, tmp_path, content, message):
    path = tmp_path / "texts.txt"
    if content is not None:
        path.write_text(content)
    status, _, err = run_tool("export", "--model", classifier_export["model_dir"], "--output",
                              tmp_path / "e", "--tune-texts", path)
    assert status == 1 and len(err.strip().splitlines()) == 1, err
    assert message in err and str(path) in err and "--tune-texts" in err
    assert not os.path.exists(tmp_path / "e" / "1")
