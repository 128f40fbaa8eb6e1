"""What every tool in tools/ shares: help formatting, flag spellings, a quiet TensorFlow.

Importing this module imports TensorFlow, quietly (its C++ start-up notices
hidden, unless the tool's command line has --verbose), then keras_bert,
whose classes the tools' flags come from. So every tool, `--help` included,
costs one TensorFlow import and prints none of its noise.

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
import dataclasses
import logging
import os
import sys
import warnings

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:  # A tool runs with the keras_bert of its own checkout.
    sys.path.insert(0, ROOT)


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


def task_options():
    """{task name: its options dataclass}, for every registered task that has options."""
    from keras_bert.models.registry import get_task, task_names

    specs = [get_task(name) for name in task_names()]
    return {spec.name: spec.options for spec in specs if spec.options is not None}


def flag_name(field):
    """The flag of an options dataclass field: metadata "flag", else --field-name."""
    return field.metadata.get("flag") or "--" + field.name.replace("_", "-")


def add_field_flag(group, field, owner):
    """Adds the flag of one dataclass field to `group` (a parser or argument group).

    The field's metadata gives the flag's "help" (required), "choices",
    "metavar" and spelling ("flag"); its default is the flag's. A bool field
    is a switch: --name (default False), or --name / --no-name (default
    None: not given). A list field takes comma-separated values.

    Args:
        group: an `argparse.ArgumentParser` or argument group.
        field: a `dataclasses.Field`.
        owner: str, who declares the field, for the error on a missing help.
    """
    kwargs = {"dest": field.name, "default": field.default, "help": field.metadata.get("help")}
    if not kwargs["help"]:
        raise ValueError(f"{field.name} of {owner} has no metadata help.")
    if field.type in (bool, "bool"):
        kwargs["action"] = ("store_true" if field.default is not None
                            else argparse.BooleanOptionalAction)
    elif field.type in (list, "list"):
        kwargs["type"] = _comma_list
    else:
        kwargs["type"] = {int: int, float: float, "int": int, "float": float}.get(field.type, str)
        if "choices" in field.metadata:
            kwargs["choices"] = tuple(field.metadata["choices"])
    if "metavar" in field.metadata:
        kwargs["metavar"] = field.metadata["metavar"]
    group.add_argument(flag_name(field), **kwargs)


def add_options(parser, options, default_group):
    """Adds a flag per field of the dataclass `options`, in the sections its metadata names.

    Each field's metadata "group" is its --help section (default
    `default_group`); see `add_field_flag` for the rest.

    Returns:
        dict {field name: flag}.
    """
    groups = {}
    for field in dataclasses.fields(options):
        title = field.metadata.get("group", default_group)
        if title not in groups:
            groups[title] = parser.add_argument_group(title)
        add_field_flag(groups[title], field, options.__name__)
    return {field.name: flag_name(field) for field in dataclasses.fields(options)}


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
        add_field_flag(groups[title], field, owners[name])
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


def _import_quietly():
    """Imports TensorFlow and keras_bert with TensorFlow's start-up notices hidden.

    TF_CPP_MIN_LOG_LEVEL=3 hides the C++ lines logged once TensorFlow's
    logging is set up: INFO and WARNING, and ERROR too, as this CPU gets
    notices at ERROR level ("oneDNN supports DT_INT64 only on platforms with
    AVX-512. Falling back to the default Eigen-based implementation"); a real
    failure still raises a Python exception with its message, and --verbose
    shows everything. TensorFlow writes a few lines before that
    ("All log messages before absl::InitializeLog() is called are written to
    STDERR", the oneDNN notice, "Could not find cuda drivers",
    cpu_feature_guard's "rebuild TensorFlow with the appropriate compiler
    flags"), and again when it first probes its devices (the first op, a
    SavedModel load: "failed call to cuInit"); the variable does not reach
    them (tensorflow/tensorflow#100442), so stderr's file descriptor points at
    /dev/null while TensorFlow loads and probes its devices. Errors raised by
    the import itself still surface as Python exceptions once stderr is back.
    """
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    # Python warnings of the import (keras_bert's TF_USE_LEGACY_KERAS one) are shown after.
    with warnings.catch_warnings(record=True) as caught, _stderr_silenced():
        import tensorflow as tf

        import keras_bert  # noqa: F401 (tensorflow_text's libraries log too)

        tf.config.list_physical_devices()  # The device probe, while stderr is off.
    for warning in caught:
        warnings.showwarning(warning.message, warning.category, warning.filename,
                             warning.lineno)


# Every tool imports this module before keras_bert: TensorFlow loads here, quietly.
if "tensorflow" not in sys.modules and "--verbose" not in sys.argv[1:]:
    _import_quietly()
# The choices that tools/*.py take from the library for their flags.
from keras_bert.training.finetune_fields import JIT_COMPILE_CHOICES, STRATEGIES  # noqa: E402,F401


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
