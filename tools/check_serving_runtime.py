"""Check exports in the runtime TF Serving links, before a TF Serving rollout.

TF Serving 2.20.0 links TensorFlow 2.20 and tensorflow-text 2.20; exports are
written with TensorFlow 2.21. This creates, on first use, a cached virtual
environment with tensorflow==2.20.* and tensorflow-text==2.20.* (minutes; later
runs reuse it), loads each export there the way TF Serving does (a TF1
Session, the tensorflow-text op libraries, no Keras) and through
tf.saved_model.load, runs every signature that takes strings on a fixed batch
of texts (empty, whitespace, CJK, emoji, combining accents, control
characters, invalid UTF-8, a 22,500-character text, ...) and an empty batch,
and compares the outputs with this runtime's: strings and ints exactly, floats
to --atol. It also lists the ops each export needs besides core TensorFlow.

--runtime 2.19 (or 2.18) checks against that TensorFlow with the
tensorflow-text of the same release, each in its own cached venv
(~/.cache/keras_bert/serving-runtime-tf2.19, ...); --runtime all checks 2.20,
2.19 and 2.18 one after the other and ends with one line per runtime. (TF
Serving images 2.12-2.19 link tensorflow-text 2.12.1: its ops are checked
statically, tests/export/test_tf_text_2_12_ops.py.)

Exit status: 0 same answers, 1 a mismatch or an export that fails to load or
run, 3 the old runtime could not be installed.

Examples
--------
  python tools/check_serving_runtime.py --model exports/sentiment/3
  python tools/check_serving_runtime.py --model exports/sentiment --runtime all
  python tools/check_serving_runtime.py --model exports/sentiment --model exports/squad
  python tools/check_serving_runtime.py --model exports/ner --venv /tmp/tf220 --atol 1e-4
"""

import os
import sys

# Nothing here imports TensorFlow before the arguments are parsed (--help stays fast).
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import _cli  # noqa: E402


def build_parser():
    parser = _cli.parser(__doc__)
    parser.add_argument("--model", action="append", required=True, metavar="EXPORT_DIR",
                        help="An export: exports/NAME/VERSION, or exports/NAME for its latest "
                        "version. Repeat for several.")
    parser.add_argument("--venv", default=None,
                        help="The old runtime's virtual environment (default "
                        "~/.cache/keras_bert/serving-runtime-tfRUNTIME; created if missing). "
                        "Only with one --runtime.")
    parser.add_argument("--runtime", default="2.20",
                        help="TensorFlow / tensorflow-text release(s) to check against, "
                        "comma-separated, or 'all' (2.20,2.19,2.18). Default 2.20, what TF "
                        "Serving 2.20.0 links.")
    parser.add_argument("--atol", type=float, default=1e-5,
                        help="Float tolerance, absolute and relative (default 1e-5).")
    return parser


def parse_args(argv=None):
    return build_parser().parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    from keras_bert import __version__
    from keras_bert.export.op_set import ALLOWED_TEXT_OPS, non_core_ops
    from keras_bert.export.predict import latest_version
    from keras_bert.export.runtime_check import (
        RUNTIMES,
        RuntimeUnavailable,
        check_serving_runtime,
        format_report,
        run_probe,
    )

    runtimes = list(RUNTIMES) if args.runtime == "all" else args.runtime.split(",")
    if args.venv and len(runtimes) > 1:
        print(f"error: --venv names one runtime's venv; drop it to check {runtimes} "
              f"(each gets its cached venv).", file=sys.stderr)
        return 1

    try:
        export_dirs = [latest_version(path) for path in args.model]
    except FileNotFoundError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    log = lambda message: print(message, flush=True)  # noqa: E731
    problems = 0
    for path, ops in non_core_ops(export_dirs).items():
        extra = sorted(set(ops) - set(ALLOWED_TEXT_OPS))
        log(f"ops besides core TensorFlow in {path}: {ops or 'none'}"
            + (f"  <- NOT in the allowlist {list(ALLOWED_TEXT_OPS)}" if extra else ""))
        problems += bool(extra)
    verdicts, mismatch, unavailable = [], bool(problems), False
    reference = None
    if len(runtimes) > 1:  # One reference run for all the runtimes.
        log(f"running {len(export_dirs)} export(s) in this runtime ({sys.executable})")
        reference = run_probe(sys.executable, export_dirs, function=False)
    for runtime in runtimes:
        try:
            report = check_serving_runtime(export_dirs, venv=args.venv, runtime=runtime,
                                           atol=args.atol, rtol=args.atol, log=log,
                                           reference=reference)
        except RuntimeUnavailable as e:
            print(f"error: TensorFlow {runtime} is not available, nothing was checked there: "
                  f"{e}", file=sys.stderr)
            verdicts.append(f"  TensorFlow {runtime}: NOT CHECKED (could not be installed)")
            unavailable = True
            continue
        for line in format_report(report, args.atol):
            print(line)
        versions = (f"TensorFlow {report.candidate['tensorflow']} + tensorflow-text "
                    f"{report.candidate['tensorflow_text']}")
        verdicts.append(f"  {versions}: {'OK' if report.ok else 'MISMATCH'}")
        mismatch |= not report.ok
    if len(runtimes) > 1:
        print(f"exports made with keras_bert {__version__} (TensorFlow {tf_version()}), "
              f"{len(export_dirs)} export(s):")
        for line in verdicts:
            print(line)
    if problems:
        print(f"VERDICT: MISMATCH. {problems} export(s) use ops outside the allowlist (above).")
    # A mismatch first: it is a finding; an uninstallable runtime is a gap.
    return 1 if mismatch else 3 if unavailable else 0


def tf_version():
    import tensorflow as tf

    return tf.__version__


if __name__ == "__main__":
    sys.exit(_cli.run(main))
