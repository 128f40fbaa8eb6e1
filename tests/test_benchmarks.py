"""tools/benchmark.py as subcommands over tools/benchmarks/: each owns its flags; records parse."""

import argparse
import ast
import glob
import json
import os
import re
import shlex
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tools"))

import benchmark  # noqa: E402  (tools/benchmark.py)
from benchmarks import finetune, harness  # noqa: E402

COMMON = {"--output", "--verbose"}
SYNTHETIC = {"--max-seq-length", "--repeats", "--dtypes", "--jit-compile", "--systems",
             "--matmul-peak-size"}
# What each benchmark reads, and so the flags of its subcommand.
FLAGS = {
    "inference": {"--preset", "--batch-size", "--peak-tflops", *SYNTHETIC},
    "training": {"--train-presets", "--train-batch-size", "--train-steps", "--peak-tflops",
                 *SYNTHETIC},
    "profile": {"--train-presets", "--train-batch-size", *SYNTHETIC},
    "tokenizer": {"--repeats"},
    "sentencepiece": {"--repeats"},
    "bpe-tokenizer": {"--repeats"},
    "realtext": {"--preset", "--realtext-count", "--repeats", "--dtypes", "--jit-compile"},
    "serving": {"--repeats", "--jit-compile"},
    "serving-e2e": {"--serving-texts", "--request-batch-size", "--serving-variants",
                    "--latency-calls", "--repeats", "--dtypes", "--jit-compile"},
    "serving-accuracy": {"--model", "--request-batch-size", "--latency-calls", "--repeats",
                         "--accuracy-exports"},
    "serving-litert": {"--model", "--request-batch-size", "--latency-calls"},
    "finetune": {"--finetune-limit", "--finetune-epochs", "--finetune-learning-rate"},
    "finetune-step": {"--train-batch-size", "--finetune-lengths", "--repeats", "--train-steps",
                      "--jit-compile", "--systems", "--matmul-peak-size"},
    "finetune-multilabel": {"--multilabel-train", "--finetune-epochs",
                            "--finetune-learning-rate"},
    "long-docs": {"--model", "--long-docs-count", "--window-stride"},
    "embedding-recall": {"--embedding-train", "--embedding-eval", "--embedding-epochs",
                         "--embedding-learning-rate"},
    "embedding-sts": {"--embedding-train", "--embedding-eval", "--embedding-epochs",
                      "--embedding-learning-rate"},
    "embedding-speed": {"--repeats", "--latency-texts"},
    "lora": {"--lora-rank", "--lora-train", "--lora-eval", "--lora-epochs",
             "--full-learning-rate", "--lora-learning-rate"},
    "pretraining-data": {"--data-documents", "--data-workers"},
}
HELP_PROBE = """
import json, runpy, sys
path = sys.argv[1]
sys.argv = [path, *sys.argv[2:], "--help"]
try:
    runpy.run_path(path, run_name="__main__")
except SystemExit:
    pass
sys.stderr.write("PROBE " + json.dumps("torch" in sys.modules) + "\\n")
"""


def subcommands():
    action = next(a for a in benchmark.build_parser()._actions
                  if isinstance(a, argparse._SubParsersAction))
    return action.choices


def flags_of(parser):
    return {flag for action in parser._actions for flag in action.option_strings} - {"-h",
                                                                                       "--help"}


def test_each_subcommand_owns_exactly_the_flags_its_benchmark_reads():
    parsers = subcommands()
    assert list(parsers) == [*FLAGS, "all"]
    for name, expected in FLAGS.items():
        assert flags_of(parsers[name]) == expected | COMMON, name
        assert parsers[name].formatter_class is benchmark._cli.HelpFormatter, name
    assert flags_of(parsers["all"]) == set().union(*FLAGS.values()) | COMMON


def test_a_flag_of_another_benchmark_is_refused(capsys):
    with pytest.raises(SystemExit):
        benchmark.build_parser().parse_args(["tokenizer", "--train-presets", "small"])
    assert "unrecognized arguments: --train-presets small" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        benchmark.build_parser().parse_args(["--repeats", "3", "inference"])


def test_parsed_values_are_ready_to_use():
    args = benchmark.build_parser().parse_args(
        ["training", "--train-presets", "tiny,small", "--systems", "keras_bert,torch",
         "--jit-compile", "on", "--matmul-peak-size", "256"])
    assert args.train_presets == ["tiny", "small"] and args.systems == ["keras_bert", "torch"]
    assert args.jit_compile == ["on"] and args.matmul_peak_size == 256
    assert [b.name for b in args.benchmarks] == ["training"]
    assert args.benchmarks[0].title(args) == "tiny,small"
    args = benchmark.build_parser().parse_args(["all"])
    assert [b.name for b in args.benchmarks] == list(FLAGS)
    assert (args.dtypes, args.train_presets, args.repeats) == (
        ["float32", "bfloat16"], ["small", "base"], 5)


def _recorded_commands():
    """Every `python tools/benchmark.py ...` in BENCHMARKS.md and README.md."""
    found = []
    for name in ("BENCHMARKS.md", "README.md"):
        with open(os.path.join(ROOT, name), encoding="utf-8") as f:
            text = f.read()
        found += [(name, c) for c in re.findall(r"`(python tools/benchmark\.py [^`]*)`", text)]
        found += [(name, line.split("#")[0].strip()) for line in text.splitlines()
                  if line.startswith("python tools/benchmark.py ")]
    return found


def test_every_recorded_benchmark_command_parses():
    commands = _recorded_commands()
    # One command a table, about twenty tables (one per workload).
    assert len(commands) >= 20
    seen = set()
    for where, command in commands:
        words = shlex.split(command)
        try:
            args = benchmark.build_parser().parse_args(words[2:])
        except SystemExit as e:
            raise AssertionError(f"{where}: {command}") from e
        seen.add(words[2])
        # What a new table records parses back to the same values.
        again = benchmark.build_parser().parse_args(
            shlex.split(harness.recorded_command(words[2:]))[2:])
        assert vars(again) == vars(args), command
    assert {"inference", "training", "serving-e2e", "finetune", "all"} <= seen


def test_help_is_quiet_and_imports_no_torch():
    # One fresh process: build_parser() builds every subcommand's parser whichever one argv
    # names, so a bare start imports and prints the same for each (usage lines: below).
    done = subprocess.run(
        [sys.executable, "-c", HELP_PROBE, os.path.join(ROOT, "tools", "benchmark.py"),
         "inference"], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert done.stdout.startswith("usage: benchmark.py inference"), done.stdout[:200]
    noise, _, torch = done.stderr.partition("PROBE ")
    assert noise == "" and json.loads(torch) is False, done.stderr[-2000:]
    assert "--finetune-lengths" not in done.stdout and "--peak-tflops" in done.stdout


@pytest.mark.parametrize("argv", [[], ["serving-e2e"], ["finetune"], ["all"]])
def test_help_shows_the_usage_of_what_it_names(argv, monkeypatch, capsys):
    monkeypatch.setattr(sys, "argv", [os.path.join(ROOT, "tools", "benchmark.py")])
    with pytest.raises(SystemExit) as e:
        benchmark.build_parser().parse_args([*argv, "--help"])
    assert e.value.code == 0
    assert capsys.readouterr().out.startswith("usage: benchmark.py " + " ".join(argv))


def test_no_module_global_is_assigned_at_run_time():
    paths = [os.path.join(ROOT, "tools", "benchmark.py"),
             *glob.glob(os.path.join(ROOT, "tools", "benchmarks", "*.py"))]
    for path in paths:
        with open(path, encoding="utf-8") as f:
            tree = ast.parse(f.read())
        for node in ast.walk(tree):
            assert not isinstance(node, (ast.Global, ast.Nonlocal)), f"{path}:{node.lineno}"
            # A module-level list or dict written inside a function (X[0] = ...).
            if isinstance(node, ast.FunctionDef):
                for inner in ast.walk(node):
                    if isinstance(inner, ast.Assign):
                        for target in inner.targets:
                            assert not (isinstance(target, ast.Subscript)
                                        and isinstance(target.value, ast.Name)
                                        and target.value.id.isupper()), (
                                f"{path}:{inner.lineno}")


def test_finetune_results_are_public_functions():
    assert callable(finetune.keras_bert_finetune_result)
    assert finetune.reference_finetune_result(
        "epoch 1/1: held-out accuracy 0.5000 macro_f1 0.4000 mcc 0.1 (9 s; training "
        "12.5 examples/s)") == (12.5, 0.5, 0.4)


PEER_TEXTS = ["the movie was good", "the dog was bad !", "a cat", "good good bad"]


def test_torch_peer_copies_every_weight(classifier_export, tmp_path):
    """serving-e2e / serving-accuracy's PyTorch model: transformers, every weight copied,
    gives the export's probabilities on raw texts."""
    import numpy as np
    import tensorflow as tf
    import torch
    import transformers

    from benchmarks import peers

    folder = str(tmp_path / "torch")
    sizes = peers.save_torch_classifier(classifier_export["model"],
                                        classifier_export["export_dir"], folder)
    model = transformers.BertForSequenceClassification.from_pretrained(folder).eval()
    inputs = transformers.BertTokenizerFast.from_pretrained(folder)(
        PEER_TEXTS, padding=True, return_tensors="pt")
    with torch.inference_mode():
        got = torch.softmax(model(**inputs).logits, -1).numpy()
    serve = tf.saved_model.load(classifier_export["export_dir"]).signatures["serving_default"]
    expected = serve(text=tf.constant(PEER_TEXTS))["probabilities"].numpy()
    np.testing.assert_allclose(got, expected, atol=1e-5)
    assert sizes["float32"] == sum(f.stat().st_size for f in (tmp_path / "torch").iterdir())


@pytest.mark.slow
def test_torch_workers_serve_float32_and_int8(classifier_export, tmp_path):
    """The two PyTorch systems in their own processes: float32 gives the export's
    probabilities, dynamic int8 is near them and not equal; latency calls are timed."""
    import numpy as np

    from benchmarks import serving

    ours = serving.ServingWorker({"ours": classifier_export["export_dir"]}, PEER_TEXTS,
                                 str(tmp_path))
    try:
        expected = np.array(ours.ask(outputs="ours", count=4)["probabilities"])
    finally:
        ours.close()
    workers = serving.torch_workers(classifier_export["model"], classifier_export["export_dir"],
                                    PEER_TEXTS, str(tmp_path))
    try:
        got = {name: np.array(worker.ask(outputs=name, count=4, batch_size=2)["probabilities"])
               for name, (worker, _) in workers.items()}
        timed = workers["PyTorch + BertTokenizerFast"][0].ask(
            run="PyTorch + BertTokenizerFast", batch_size=1, count=3)["seconds"]
    finally:
        for worker, _ in workers.values():
            worker.close()
    float32, int8 = (got[name] for name in serving.TORCH_SYSTEMS)
    np.testing.assert_allclose(float32, expected, atol=1e-5)
    assert 0 < np.abs(int8 - float32).max() < 0.05
    assert len(timed) == 3 and all(t > 0 for t in timed)


def test_one_text_calls_take_turns_over_every_text():
    """Latency calls of several systems alternate in turns (a drift of the machine's speed
    falls on all alike), each system timing texts 0..calls-1 once."""
    from benchmarks import serving

    asked = []

    def ask(name):
        def answer(batch_size, start, count):
            assert batch_size == 1
            asked.append((name, start, count))
            return {"seconds": [float(start + i) for i in range(count)]}
        return answer

    latencies = {"a": [], "b": []}
    serving.one_text_calls({"a": ask("a"), "b": ask("b")}, 25, latencies, turn=10)
    assert asked == [("a", 0, 10), ("b", 0, 10), ("b", 10, 10), ("a", 10, 10),
                     ("a", 20, 5), ("b", 20, 5)]
    assert latencies["a"] == latencies["b"] == [float(i) for i in range(25)]
