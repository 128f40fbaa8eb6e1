"""tools/*.py as one family: one spelling per concept, a quiet --help, true defaults."""

import argparse
import dataclasses
import glob
import json
import os
import subprocess
import sys

import pytest

from tests.conftest import tool_module

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tools"))

import _cli  # noqa: E402  (tools/_cli.py)

TOOLS = sorted(os.path.basename(p) for p in glob.glob(os.path.join(ROOT, "tools", "*.py"))
               if not os.path.basename(p).startswith("_"))

# Runs a tool's --help as `python tools/X.py --help` would, then reports what got imported.
HELP_PROBE = """
import json, runpy, sys
path = sys.argv[1]
sys.argv = [path, "--help"]
code = None
try:
    runpy.run_path(path, run_name="__main__")
except SystemExit as e:
    code = e.code
sys.stderr.write("PROBE " + json.dumps({"code": code, "torch": "torch" in sys.modules}) + "\\n")
"""

# Spellings that one of the flags below replaced.
RETIRED = {"--model-dir", "--output-dir", "--max-length", "--sequence-length", "--seq-length",
           "--jit", "--xla", "--vocab", "--eval-data-dir", "--data-dir", "--init-from"}


def load_tool(name):
    """tools/NAME (a file name: "finetune.py"), loaded once (tests.conftest.tool_module)."""
    return tool_module(name[:-3])


def parser_of(name):
    return load_tool(name).build_parser()


def options(parser):
    """A parser's arguments, and those of each of its subcommands (tools/benchmark.py)."""
    found = []
    for action in parser._actions:
        if isinstance(action, argparse._HelpAction):
            continue
        found.append(action)
        if isinstance(action, argparse._SubParsersAction):
            for subparser in action.choices.values():
                found += options(subparser)
    return found


def run_help(name):
    done = subprocess.run([sys.executable, "-c", HELP_PROBE, os.path.join(ROOT, "tools", name)],
                          capture_output=True, text=True, timeout=120, cwd=ROOT)
    noise, _, probe = done.stderr.partition("PROBE ")
    return done.stdout, dict(json.loads(probe), noise=noise)


def test_every_tool_imports_cli_before_tensorflow_or_keras_bert():
    # tools/_cli.py imports TensorFlow quietly: a tool that imported either first would not be.
    assert len(TOOLS) >= 15
    for name in TOOLS:
        lines = open(os.path.join(ROOT, "tools", name), encoding="utf-8").read().splitlines()
        cli = next(i for i, line in enumerate(lines) if line.startswith("import _cli"))
        heavy = [i for i, line in enumerate(lines) if line.lstrip().startswith(
            ("import tensorflow", "import keras", "from keras_bert", "from keras "))]
        assert not heavy or min(heavy) > cli, (name, lines[min(heavy)])


@pytest.mark.parametrize("name", ["finetune.py", "predict.py"])
def test_help_is_quiet_in_a_fresh_process(name):
    out, probe = run_help(name)
    assert probe["code"] in (0, None) and out.startswith("usage: "), name
    # TensorFlow loads (plain imports), its start-up notices hidden; torch never.
    assert probe["noise"] == "" and not probe["torch"], (name, probe)


@pytest.mark.parametrize("name", TOOLS)
def test_every_flag_has_help_and_shows_its_default(name):
    parser = parser_of(name)
    assert parser.formatter_class is _cli.HelpFormatter
    formatter = parser._get_formatter()
    for action in options(parser):
        label = action.option_strings or action.dest
        assert action.help and action.help.strip(), f"{name} {label} has no help"
        text = formatter._get_help_string(action)
        if action.default not in (None, False) and action.option_strings and not action.required:
            assert "default" in text.lower(), f"{name} {label}: default not shown"


def test_one_spelling_per_concept():
    flags = {}
    for name in TOOLS:
        for action in options(parser_of(name)):
            for flag in action.option_strings:
                flags.setdefault(flag, []).append((name, action))
            assert action.dest not in ("export_dir", "model_dir", "model"
                                       ) or action.option_strings, f"{name}: positional model"
    assert not RETIRED & set(flags), sorted(RETIRED & set(flags))
    for name, action in flags["--jit-compile"]:
        if action.choices is not None:
            assert tuple(action.choices) == ("auto", "on", "off"), name
        else:  # The benchmarks compare several settings: a comma-separated list of them.
            assert set(action.type(action.default)) <= {"auto", "on", "off"}, name
    for name, action in flags["--tensorboard"]:
        assert isinstance(action, argparse.BooleanOptionalAction), name  # A switch, no value.
    for name, action in flags["--text-b"]:
        assert "QA" not in action.help and "context" not in action.help, name
    assert [name for name, _ in flags["--context"]] == ["predict.py"]
    for flag in ("--model", "--output", "--max-seq-length", "--vocab-file", "--eval",
                 "--verbose", "--jit-compile"):
        assert len(flags[flag]) >= 2, flag  # Each spelling is the shared one.


def _defaults(parser):
    return {a.dest: a.default for a in options(parser)}


def _check_defaults(parser, dataclass, renamed=()):
    defaults = _defaults(parser)
    checked = 0
    for field in dataclasses.fields(dataclass):
        dest = dict(renamed).get(field.name, field.name)
        if dest in defaults:
            assert defaults[dest] == getattr(dataclass(), field.name), field.name
            checked += 1
    return checked


def test_tool_defaults_and_choices_are_the_library_s():
    from keras_bert.checkpoints import convert
    from keras_bert.config import DTYPES, PRESETS
    from keras_bert.data.pretraining_data import MASKING_MODES, PretrainingDataConfig
    from keras_bert.models.registry import get_task
    from keras_bert.tasks.classification import tweets
    from keras_bert.training import OPTIMIZERS, STRATEGIES, PretrainingConfig
    from keras_bert.training.finetune import FinetuneOptions, fine_tunable_tasks
    from keras_bert.training.pretrain import JIT_SETTINGS

    assert _cli.STRATEGIES == STRATEGIES and _cli.JIT_COMPILE_CHOICES == JIT_SETTINGS
    pretrain = parser_of("pretrain.py")
    choices = {a.dest: a.choices for a in options(pretrain)}
    assert tuple(choices["optimizer"]) == OPTIMIZERS
    assert tuple(choices["dtype"]) == DTYPES and sorted(choices["preset"]) == sorted(PRESETS)
    assert _check_defaults(pretrain, PretrainingConfig) == len(
        dataclasses.fields(PretrainingConfig))

    finetune = load_tool("finetune.py")
    assert sorted(_cli.task_options()) == sorted(fine_tunable_tasks())
    assert _check_defaults(finetune.build_parser(), FinetuneOptions) == len(
        dataclasses.fields(FinetuneOptions))
    for task in fine_tunable_tasks():
        task_options = get_task(task).options
        assert _check_defaults(finetune.build_parser(), task_options) == len(
            dataclasses.fields(task_options))

    data = load_tool("create_pretraining_data.py")
    assert data.MASKING_MODES == MASKING_MODES
    assert _check_defaults(data.build_parser(), PretrainingDataConfig) == len(
        dataclasses.fields(PretrainingDataConfig))

    tool = load_tool("convert_checkpoint.py")
    assert tool.FORMATS == convert.FORMATS and tool.DEFAULT_TOLERANCE == convert.DEFAULT_TOLERANCE
    tool = load_tool("sentiment_baseline.py")
    assert (tool.TWEETS_EVAL_FRACTION, tool.TWEETS_SPLIT_SEED) == (
        tweets.TWEETS_EVAL_FRACTION, tweets.TWEETS_SPLIT_SEED)


def test_finetune_s_generic_flags_are_finetune_options_fields():
    from keras_bert.config import DTYPES
    from keras_bert.data.task_options import field
    from keras_bert.training.finetune import FinetuneOptions
    from keras_bert.training.finetune_fields import FinetuneFields

    tool = load_tool("finetune.py")
    actions = {a.dest: a for a in options(tool.build_parser())}
    fields = dataclasses.fields(FinetuneOptions)
    assert len(fields) == 23 and [f.name for f in fields] == [
        f.name for f in dataclasses.fields(FinetuneFields)]
    for f in fields:  # One name: the field is the flag; its help and default are the field's.
        action = actions[f.name]
        assert action.option_strings[0] == "--" + f.name.replace("_", "-"), f.name
        assert (action.help, action.default) == (f.metadata["help"], f.default), f.name
    assert actions["learning_rate"].type is float and actions["epochs"].type is int
    assert isinstance(actions["lowercase"], argparse.BooleanOptionalAction)
    assert actions["freeze_embeddings"].const is True  # A store_true switch.
    assert tuple(actions["dtype"].choices) == DTYPES
    assert actions["class_weights"].metavar == "auto|FILE"
    assert actions["lora_rank"].metavar == "N" and actions["lora_rank"].type is int

    args = tool.parse_args(["--task", "classification", "--model", "m", "--output", "o",
                            "--train", "t", "--eval", "e", "--learning-rate", "2e-5",
                            "--no-lowercase", "--freeze-embeddings", "--eval-batch-size", "7",
                            "--strategy", "cpu"])
    assert FinetuneOptions(**tool.finetune_option_values(args)) == FinetuneOptions(
        learning_rate=2e-5, lowercase=False, freeze_embeddings=True, eval_batch_size=7,
        strategy="cpu")

    # A field added to the dataclass is a flag, with no edit to the tool.
    @dataclasses.dataclass
    class MoreFields(FinetuneFields):
        warmup_steps: int = field(None, "Warmup updates.", flag="--warmup", group="extra")

    parser = argparse.ArgumentParser()
    flags = _cli.add_options(parser, MoreFields, default_group="training")
    assert flags["warmup_steps"] == "--warmup" and flags["learning_rate"] == "--learning-rate"
    assert parser.parse_args(["--warmup", "5"]).warmup_steps == 5
    assert [g.title for g in parser._action_groups][-3:] == [
        "training", "fine-tuning controls", "extra"]


def test_pretrain_jit_compile_help_states_resolve_jit_compile_s_rule():
    from keras_bert.training.pretrain import resolve_jit_compile

    text = {a.dest: a.help for a in options(parser_of("pretrain.py"))}["jit_compile"]
    assert "off on TPU" in text and "AMX" in text and "on everywhere else" in text
    # What the help says for mixed precision on a CPU without AMX: on.
    cpu = __import__("tensorflow").distribute.get_strategy()
    if not __import__("tensorflow").config.list_logical_devices("GPU"):
        assert resolve_jit_compile("auto", "mixed_bfloat16", cpu, amx=False) is True
        assert resolve_jit_compile("auto", "mixed_bfloat16", cpu, amx=True) is False
    assert resolve_jit_compile("auto", "float32", cpu) is True


@pytest.mark.slow  # Tens of seconds of the default tier's time (round 10).
def test_tensorflow_loads_quietly_unless_verbose():
    code = ("import sys; sys.path.insert(0, 'tools'); import _cli; "
            "import tensorflow as tf; print(tf.constant(2).numpy() * 21)")
    env = {k: v for k, v in os.environ.items() if k != "TF_CPP_MIN_LOG_LEVEL"}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=300, cwd=ROOT, env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout == "42\n"
    # Without it: "WARNING: All log messages before absl::InitializeLog() ...",
    # "I0000 ... port.cc:153] oneDNN custom operations are on ...", "cudart_stub.cc".
    assert "absl::InitializeLog" not in done.stderr and "I0000" not in done.stderr, done.stderr


def test_finetune_benchmark_reads_both_logs_without_evaluation_time():
    from benchmarks.finetune import keras_bert_finetune_result, reference_finetune_result

    # Epoch 1's evaluation (4 s) ran inside the interval that ended at step 100;
    # epoch 2's after the last line, in no interval.
    ours = "\n".join([
        "step 50/100 loss 1.0 examples/s 160.0 (10.0 s)",
        "epoch 1 eval: accuracy 0.5000 macro_f1 0.4000 mcc 0.1000 (4.0 s) [best]",
        "step 100/100 loss 0.9 examples/s 114.3 (14.0 s)",
        "epoch 2 eval: accuracy 0.6000 macro_f1 0.5000 mcc 0.2000 (4.0 s) [best]",
    ])
    assert keras_bert_finetune_result(ours, 32) == (100 * 32 / 20.0, 0.6, 0.5)
    reference = ("epoch 1/2: held-out accuracy 0.7000 macro_f1 0.6000 mcc 0.3 (9 s; training "
                 "30.0 examples/s)\nepoch 2/2: held-out accuracy 0.8000 macro_f1 0.7000 mcc "
                 "0.4 (20 s; training 25.5 examples/s)")
    assert reference_finetune_result(reference) == (25.5, 0.8, 0.7)
    with pytest.raises(RuntimeError, match="did not finish"):
        keras_bert_finetune_result(ours.split("\n")[0], 32)


def test_finetune_reference_refuses_a_tokenizer_unlike_keras_bert(tmp_path, capsys):
    # transformers 5 ignores BertTokenizerFast(vocab_file=...) and maps every
    # word to [UNK]; the reference must stop rather than train on that.
    reference = tool_module("finetune_reference")
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "good", "movie",
                                "bad", "##s", "a"]) + "\n", encoding="utf-8")
    texts = ["a good movie", "bad movies", "A GOOD movie"]
    right = [[2, 9, 5, 6, 3], [2, 7, 6, 8, 3], [2, 9, 5, 6, 3]]

    def tokenizer(ids):
        return lambda batch, truncation, max_length: {"input_ids": ids[:len(batch)]}

    reference.check_tokenizer(tokenizer(right), texts, str(vocab))
    assert "3 of 3" in capsys.readouterr().out
    unknown = [[2] + [1] * (len(row) - 2) + [3] for row in right]
    with pytest.raises(SystemExit, match="agrees with keras_bert's on only 0 of 3"):
        reference.check_tokenizer(tokenizer(unknown), texts, str(vocab))
