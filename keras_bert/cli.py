"""How every tool ends on an error: one line on stderr and exit status 1.

    if __name__ == "__main__":
        sys.exit(cli.run(main))

`--debug` on a tool's command line (taken out before the tool parses it),
or KERAS_BERT_DEBUG=1, shows the full traceback instead.
"""

import os
import sys


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

    Returns:
        int: main's return value (0 if None), 1 after an error, 130 after Ctrl-C.
    """
    argv = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in argv or os.environ.get("KERAS_BERT_DEBUG", "") not in ("", "0")
    argv = [arg for arg in argv if arg != "--debug"]
    try:
        status = main(argv)
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


def _close_progress_bars():
    # A tqdm bar left open shares its line with the error message.
    tqdm = sys.modules.get("tqdm")
    for bar in list(getattr(getattr(tqdm, "tqdm", None), "_instances", None) or []):
        bar.close()
