"""Pretraining on pydoc_data.topics learns; runs refuse mismatched data and models."""

import collections
import dataclasses
import glob
import json
import os

import numpy as np
import pytest
import tensorflow as tf

from keras_bert.config import BertConfig
from keras_bert.data import read_metadata
from keras_bert.models import BertEncoder, BertPretrainer
from keras_bert.training import (
    PretrainingConfig,
    build_pretrainer,
    cpu_has_amx,
    pretraining_dataset,
    resolve_jit_compile,
    run_pretraining,
)
from tests.conftest import tool_module
from tests.training.conftest import VOCAB_SIZE, tiny_bert_config


def _most_frequent_token_share(data_dir):
    counts = collections.Counter()
    for _, y in pretraining_dataset(data_dir, 512, training=False):
        used = y["masked_weights"].numpy() > 0
        counts.update(y["masked_ids"].numpy()[used].tolist())
    return counts.most_common(1)[0][1] / sum(counts.values())


@pytest.mark.slow  # A quality run: 17 s of pretraining (README, The test suite).
def test_tiny_model_beats_the_unigram_baseline_on_held_out_documents(mlm_data, tmp_path):
    # XLA off: on 2 CPU cores it compiles longer than it saves here.
    config = PretrainingConfig(num_train_steps=400, batch_size=32, learning_rate=3e-3,
                               warmup_steps=30, checkpoint_every=400, log_every=100,
                               jit_compile="off")
    result = run_pretraining(mlm_data["train"], str(tmp_path), config,
                             bert_config=tiny_bert_config(64, hidden=64, layers=2),
                             eval_data_dir=mlm_data["held"], verbose=0, tensorboard=True)
    # Always guessing the held-out data's own most frequent masked token
    # (a generous unigram baseline) is right about 5% of the time.
    baseline = _most_frequent_token_share(mlm_data["held"])
    assert 0.03 < baseline < 0.08
    accuracy = result["eval"]["masked_lm_accuracy"]
    assert accuracy > baseline + 0.04, (accuracy, baseline)
    assert result["logs"]["mlm_loss"] < 5.5 < np.log(VOCAB_SIZE)
    # The model directory holds what fine-tuning needs, and reloads.
    model_dir = result["model_dir"]
    assert sorted(os.listdir(model_dir)) == ["config.json", "model.weights.h5", "task.json",
                                             "vocab.txt"]
    with open(os.path.join(model_dir, "task.json")) as f:
        task = json.load(f)
    assert task["task"] == "pretraining" and task["max_seq_length"] == 64
    assert task["lowercase"] is True  # The data's casing (metadata.json) travels with it.
    reloaded = BertPretrainer.from_pretrained(model_dir)
    x, _ = next(iter(pretraining_dataset(mlm_data["held"], 4, training=False)))
    np.testing.assert_allclose(reloaded.predict(x, verbose=0)["mlm_logits"],
                               result["model"].predict(x, verbose=0)["mlm_logits"], atol=1e-5)
    # TensorBoard: training metrics in logs/train, the evaluation's in logs/eval at step 400.
    assert glob.glob(os.path.join(str(tmp_path), "logs", "train", "events.out.tfevents.*"))
    logged = {}
    for path in glob.glob(os.path.join(str(tmp_path), "logs", "eval", "events.out.tfevents.*")):
        for event in tf.compat.v1.train.summary_iterator(path):
            for value in event.summary.value:
                logged[value.tag] = (event.step, float(tf.make_ndarray(value.tensor)))
    assert logged["masked_lm_accuracy"] == (400, pytest.approx(accuracy))
    assert set(logged) == set(result["eval"])
    with open(os.path.join(str(tmp_path), "pretraining_run.json")) as f:
        run = json.load(f)
    assert run["model_config"]["vocab_size"] == VOCAB_SIZE and run["jit_compile"] == "off"
    # Rerunning in this directory resumes it; other settings would not.
    other = dataclasses.replace(config, batch_size=16)
    with pytest.raises(ValueError, match="batch_size"):
        run_pretraining(mlm_data["train"], str(tmp_path), other,
                        bert_config=tiny_bert_config(64, hidden=64, layers=2),
                        verbose=0, tensorboard=False)


@pytest.mark.slow
def test_a_model_with_another_vocabulary_is_refused(mlm_data, corpus, tmp_path):
    metadata = read_metadata(mlm_data["train"])
    # Same size, other order: vocab_size agrees, the ids do not.
    tokens = open(corpus["vocab"], encoding="utf-8").read().split("\n")[:VOCAB_SIZE]
    shuffled = tmp_path / "vocab.txt"
    shuffled.write_text("\n".join(tokens[:5] + tokens[5:][::-1]) + "\n", encoding="utf-8")
    encoder = BertEncoder(**tiny_bert_config(64).to_dict())
    BertPretrainer(encoder).save_pretrained(str(tmp_path / "other"), vocab_file=str(shuffled))
    with pytest.raises(ValueError, match="not the one the pretraining data"):
        build_pretrainer(metadata, mlm_data["train"], init_from=str(tmp_path / "other"))
    # The right vocabulary is accepted, and heads come with a pretrainer directory.
    BertPretrainer(encoder).save_pretrained(str(tmp_path / "same"), vocab_file=corpus["vocab"])
    model = build_pretrainer(metadata, mlm_data["train"], init_from=str(tmp_path / "same"))
    np.testing.assert_array_equal(model.mlm_head.weights[0].numpy(),
                                  BertPretrainer.from_pretrained(
                                      str(tmp_path / "same")).mlm_head.weights[0].numpy())
    with pytest.raises(ValueError, match="vocab_size=1000"):
        build_pretrainer(metadata, mlm_data["train"],
                         bert_config=BertConfig.from_preset("tiny", vocab_size=30522))
    with pytest.raises(ValueError, match="max_position_embeddings"):
        build_pretrainer(metadata, mlm_data["train"], bert_config=tiny_bert_config(32))


def test_jit_compile_rule():
    import tensorflow as tf

    default = tf.distribute.get_strategy()
    assert resolve_jit_compile("auto", "float32", default) is True
    assert resolve_jit_compile("auto", "mixed_bfloat16", default, amx=False) is True
    assert resolve_jit_compile("auto", "mixed_bfloat16",
                               tf.distribute.OneDeviceStrategy("/cpu:0"), amx=False) is True
    assert resolve_jit_compile("off", "float32", default) is False
    assert resolve_jit_compile("on", "mixed_bfloat16", default) is True
    # On an AMX CPU, half precision runs faster through oneDNN than XLA.
    assert resolve_jit_compile("auto", "mixed_bfloat16", default, amx=True) is False
    assert resolve_jit_compile("auto", "float32", default, amx=True) is True
    assert resolve_jit_compile("on", "mixed_bfloat16", default, amx=True) is True


def test_jit_compile_rule_without_xla_for_the_cpu(monkeypatch):
    """The tensorflow-tpu build (tools/compat.sh tpu): auto is off, on is refused."""
    import tensorflow as tf

    from keras_bert.training import pretrain

    monkeypatch.setattr(pretrain, "xla_cpu_available", lambda: False)
    default = tf.distribute.get_strategy()
    assert resolve_jit_compile("auto", "float32", default, amx=False) is False
    assert resolve_jit_compile("off", "float32", default) is False
    with pytest.raises(ValueError, match="no XLA for the CPU.*--jit-compile off"):
        resolve_jit_compile("on", "float32", default)


def test_cpu_has_amx_reads_the_flags(tmp_path):
    with_amx = tmp_path / "amx"
    with_amx.write_text("processor\t: 0\nflags\t\t: fpu avx512_bf16 amx_bf16 amx_tile\n")
    without = tmp_path / "plain"
    without.write_text("processor\t: 0\nflags\t\t: fpu avx512_bf16 amx_tilex\n")
    assert cpu_has_amx(str(with_amx)) is True
    assert cpu_has_amx(str(without)) is False
    assert cpu_has_amx(str(tmp_path / "missing")) is False


def test_settings_are_validated():
    with pytest.raises(ValueError, match="warmup_steps"):
        PretrainingConfig(num_train_steps=10, warmup_steps=10)
    with pytest.raises(ValueError, match="steps_per_execution"):
        PretrainingConfig(num_train_steps=10, warmup_steps=0, steps_per_execution=3)
    with pytest.raises(ValueError, match="dtype"):
        PretrainingConfig(dtype="float16")


@pytest.mark.parametrize("tool", ["pretrain.py", "create_pretraining_data.py",
                                  "prepare_corpus.py"])
def test_tools_have_help(tool, capsys):
    with pytest.raises(SystemExit) as exit_info:
        tool_module(tool[:-3]).main(["--help"])
    assert exit_info.value.code == 0
    assert "usage:" in capsys.readouterr().out
