"""What every tool in tools/ shares: help formatting, flag spellings, a quiet TensorFlow.

Tools parse their flags before importing TensorFlow (or keras_bert, whose
import loads it), so `--help` answers in a fraction of a second. This module
imports neither.

One spelling per concept, in every tool:
  --model DIR            a model directory to read (or an export, for predict)
  --output PATH          what the tool writes
  --train / --eval       training and evaluation data
  --max-seq-length N     longest packed sequence, in tokens
  --vocab-file FILE      a WordPiece vocab.txt
  --jit-compile {auto,on,off}  XLA
  --tensorboard / --no-tensorboard  TensorBoard logs (a switch, on by default)
  --progress {auto,bar,lines}  progress display
  --verbose              TensorFlow's own C++ log lines too
"""

import argparse
import contextlib
import importlib.util
import logging
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Choices that tools/*.py state before importing keras_bert (which loads
# TensorFlow); tests/test_tools.py checks them against the library's.
JIT_COMPILE_CHOICES = ("auto", "on", "off")  # keras_bert.training.pretrain.JIT_SETTINGS
STRATEGIES = ("auto", "cpu", "mirrored", "multiworker", "tpu")  # keras_bert.training.STRATEGIES
PROGRESS_CHOICES = ("auto", "lines")


class HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Keeps the docstring's layout and appends "(default: X)" to every flag that has one.

    Unlike `argparse.ArgumentDefaultsHelpFormatter`, it says nothing for
    defaults of None or False (an absent optional value, a switch that is
    off) and leaves alone help that already names its default.
    """

    def _get_help_string(self, action):
        text = action.help or ""
        default = action.default
        if ("%(default)" in text or "default" in text.lower() or default is None
                or default is False or default == argparse.SUPPRESS or action.required
                or not action.option_strings):
            return text
        if isinstance(default, (list, tuple)):
            default = ",".join(map(str, default))
        return f"{text} (default: {str(default).replace('%', '%%')})"


def parser(description, doc_epilog=True):
    """An `ArgumentParser` with `HelpFormatter`; `description` is the tool's docstring.

    With `doc_epilog`, the docstring's first paragraph is the description
    and the rest goes after the flags.
    """
    head, _, tail = description.strip().partition("\n\n")
    if not doc_epilog:
        head, tail = description, None
    return argparse.ArgumentParser(description=head, epilog=tail or None,
                                   formatter_class=HelpFormatter)


def bert_config_module():
    """keras_bert/config.py (BertConfig, PRESETS, DTYPES), loaded without TensorFlow.

    `import keras_bert.config` would run keras_bert/__init__.py, which loads
    TensorFlow; config.py itself imports only the standard library, so it is
    loaded here on its own, under another name, for flag names and choices.
    """
    return _load_file("_keras_bert_config_for_cli", os.path.join(ROOT, "keras_bert", "config.py"))


def _load_file(name, path):
    """The module of the Python file `path`, loaded once under `name` (no package imported)."""
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module  # dataclasses look their module up by name.
        spec.loader.exec_module(module)
    return sys.modules[name]


def task_options():
    """{task name: its options dataclass}, read from keras_bert/tasks/*/options.py without TensorFlow.

    The light view of the task registry (keras_bert/models/registry.py):
    each task folder's options.py imports only the standard library and
    names its dataclass in the folder's registration line (`TaskSpec(...,
    options=...)`); the folder's name is the task's registered name.
    Registering a task in the library imports TensorFlow, so tools read
    these files on their own, under other names (the classes are copies of
    the library's, for flag names, defaults, help and choices only).
    tests/training/test_task_options.py checks this view against the
    registry's fine-tunable tasks.

    The options files import one module of the library,
    keras_bert/data/task_options.py (standard library only too). It is
    loaded first, under its own name: `from keras_bert.data.task_options
    import ...` finds a module already in `sys.modules` without importing
    its packages (keras_bert/__init__.py loads TensorFlow).
    """
    name = "_keras_bert_task_options_for_cli"
    if name not in sys.modules:
        _load_file("keras_bert.data.task_options",
                   os.path.join(ROOT, "keras_bert", "data", "task_options.py"))
        found = {}
        tasks_dir = os.path.join(ROOT, "keras_bert", "tasks")
        for task in sorted(os.listdir(tasks_dir)):
            path = os.path.join(tasks_dir, task, "options.py")
            if os.path.isfile(path):
                found[task] = _options_class(_load_file(f"{name}_{task}", path), path)
        sys.modules[name] = found
    return dict(sys.modules[name])


def _options_class(module, path):
    """The one dataclass that `module` (a task's options.py) defines."""
    import dataclasses

    classes = [value for value in vars(module).values()
               if isinstance(value, type) and dataclasses.is_dataclass(value)
               and value.__module__ == module.__name__]
    if len(classes) != 1:
        raise ValueError(f"{path} must define exactly one options dataclass. Received: "
                         f"{[c.__name__ for c in classes]}.")
    return classes[0]


def flag_name(field):
    """The flag of an options dataclass field: metadata "flag", else --field-name."""
    return field.metadata.get("flag") or "--" + field.name.replace("_", "-")


def add_task_options(parser, tasks):
    """Adds a flag per field of the tasks' options dataclasses, in argument groups.

    A field that several tasks declare (label_names) is one flag, in a
    group titled with all of them; they must agree on its default.

    Args:
        parser: an `argparse.ArgumentParser`.
        tasks: dict {task name: options dataclass} (see `task_options`).

    Returns:
        dict {field name: (flag, [task names])}: each flag's spelling and the
        tasks its value goes to.
    """
    import dataclasses

    owners, fields = {}, {}
    for task, options in sorted(tasks.items()):
        for field in dataclasses.fields(options) if options is not None else ():
            if field.name in fields and fields[field.name].default != field.default:
                raise ValueError(
                    f"Task options disagree on {field.name}'s default: "
                    f"{fields[field.name].default!r} and {field.default!r} ({task}).")
            fields.setdefault(field.name, field)
            owners.setdefault(field.name, []).append(task)
    groups = {}
    for name, field in fields.items():
        title = ", ".join(owners[name])
        if title not in groups:
            groups[title] = parser.add_argument_group(f"{title} options")
        kwargs = {"dest": name, "default": field.default, "help": field.metadata.get("help")}
        if not kwargs["help"]:
            raise ValueError(f"{name} of {owners[name]} has no metadata help.")
        if field.type in (bool, "bool"):
            kwargs["action"] = "store_true"
        elif field.type in (list, "list"):
            kwargs["type"] = _comma_list
        else:
            kwargs["type"] = {int: int, float: float, "int": int, "float": float}.get(field.type, str)
            if "choices" in field.metadata:
                kwargs["choices"] = tuple(field.metadata["choices"])
        groups[title].add_argument(flag_name(field), **kwargs)
    return {name: (flag_name(field), owners[name]) for name, field in fields.items()}


def _comma_list(text):
    return text.split(",") if text else None


def add_progress(parser):
    parser.add_argument(
        "--progress", choices=PROGRESS_CHOICES, default="auto",
        help="auto: a progress bar with ETA on a terminal, a line every --log-every steps "
        "elsewhere; lines: lines on a terminal too.")


def add_verbose(parser):
    parser.add_argument(
        "--verbose", action="store_true",
        help="Also show TensorFlow's C++ log lines (oneDNN, CUDA probing, ...), hidden by "
        "default.")


def add_jit_compile(parser, default="auto", help_text=None):
    parser.add_argument("--jit-compile", choices=JIT_COMPILE_CHOICES, default=default,
                        help=help_text or "XLA-compile the model (auto: the tool's rule).")


@contextlib.contextmanager
def _stderr_silenced():
    """Points file descriptor 2 at /dev/null (C++ code writes there, not to sys.stderr)."""
    try:
        sys.stderr.flush()
        saved = os.dup(2)
    except (OSError, ValueError):
        yield
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(devnull)


def quiet_tensorflow(verbose=False):
    """Imports TensorFlow without its C++ start-up notices, unless `verbose`.

    TF_CPP_MIN_LOG_LEVEL=3 hides the C++ lines logged once TensorFlow's
    logging is set up: INFO and WARNING, and ERROR too, as this CPU gets
    notices at ERROR level ("oneDNN supports DT_INT64 only on platforms with
    AVX-512. Falling back to the default Eigen-based implementation"); a real
    failure still raises a Python exception with its message, and --verbose
    shows everything. TensorFlow 2.21 writes a few lines before that
    ("All log messages before absl::InitializeLog() is called are written to
    STDERR", the oneDNN notice, "Could not find cuda drivers"), and the
    variable does not reach them (tensorflow/tensorflow#100442), so stderr's
    file descriptor points at /dev/null while TensorFlow loads and probes its
    devices. Errors raised by the import itself still surface as Python
    exceptions once stderr is back. A no-op when TensorFlow is loaded already.
    """
    if "tensorflow" in sys.modules:
        return
    if verbose:
        os.environ.pop("TF_CPP_MIN_LOG_LEVEL", None)
        import tensorflow  # noqa: F401
        return
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    with _stderr_silenced():
        import tensorflow as tf

        tf.config.list_physical_devices()  # The CUDA probe ("failed call to cuInit").


# === How every tool ends on an error: one line on stderr and exit status 1 ===
#
#     if __name__ == "__main__":
#         sys.exit(_cli.run(main))
#
# `--debug` on a tool's command line (taken out before the tool parses it), or
# KERAS_BERT_DEBUG=1, shows the full traceback instead. It lives here, not in
# keras_bert, so that importing it imports neither keras_bert nor TensorFlow.


def error_line(error):
    """`error` as one line: its message (a TF error's own), whitespace collapsed.

    ValueError and OSError messages stand alone ("file ... not found"); other
    types are named, since their message alone (a KeyError's key) says little.
    """
    message = getattr(error, "message", None) or str(error) or type(error).__name__
    message = " ".join(str(message).split())
    if isinstance(error, (ValueError, OSError)):
        return message
    return f"{type(error).__name__}: {message}"


def run(main, argv=None):
    """Calls `main(argv)` and returns its exit status; an exception becomes one line.

    Args:
        main: the tool's main function, taking a list of arguments.
        argv: list of str, default `sys.argv[1:]`.

    A closed standard output (`tool | head`) ends the tool quietly with its
    status so far (0): the reader has what it wanted.

    Returns:
        int: main's return value (0 if None), 1 after an error, 130 after Ctrl-C.
    """
    argv = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in argv or os.environ.get("KERAS_BERT_DEBUG", "") not in ("", "0")
    argv = [arg for arg in argv if arg != "--debug"]
    try:
        status = main(argv)
        # Output to a pipe is block-buffered: a closed pipe shows up here.
        sys.stdout.flush()
    except BrokenPipeError:
        _detach_stdout()
        return 0
    except KeyboardInterrupt:
        if debug:
            raise
        print("interrupted", file=sys.stderr)
        return 130
    except Exception as e:  # noqa: BLE001 (every error ends the tool the same way)
        if debug:
            raise
        _close_progress_bars()
        print(f"error: {error_line(e)} (run with --debug for the traceback)", file=sys.stderr)
        return 1
    return 0 if status is None else status


class StdoutLogHandler(logging.StreamHandler):
    """A logging handler on stdout that lets a closed pipe end the tool.

    `logging` reports a failed write on stderr and carries on, so
    `tools/finetune.py ... | head` would print a "Logging error" traceback
    per log line; a BrokenPipeError propagates instead, and `run` ends
    the tool quietly.
    """

    def __init__(self):
        super().__init__(sys.stdout)

    def handleError(self, record):
        if isinstance(sys.exc_info()[1], BrokenPipeError):
            raise  # noqa: PLE0704 (re-raises the error being handled)
        super().handleError(record)


def _detach_stdout():
    """Points stdout at /dev/null, so that the interpreter's last flush of
    what is still buffered does not fail again ("Exception ignored ...
    BrokenPipeError") on the way out."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):
        pass


def _close_progress_bars():
    # A tqdm bar left open shares its line with the error message.
    tqdm = sys.modules.get("tqdm")
    for bar in list(getattr(getattr(tqdm, "tqdm", None), "_instances", None) or []):
        bar.close()
