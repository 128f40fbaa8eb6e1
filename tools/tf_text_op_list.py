"""Write the list of ops a tensorflow-text release registers (for the static TF Serving check).

TF Serving images 2.12 to 2.19 link tensorflow-text 2.12.1; an export whose
graph uses a tensorflow-text op that release lacks fails to load there with
"Op type not registered". This loads every op library of a tensorflow-text
wheel in a TensorFlow of the same release (as tf.load_op_library does, reading
each library's OpList) and writes the op names, one a line, with a header that
says how the list was made. keras_bert/export/tf_text_2_12_ops.txt was written
by the first example; tests/export/test_tf_text_2_12_ops.py checks every
export kind against it.

The runtime is a cached virtual environment (as tools/check_serving_runtime.py
makes them: ~/.cache/keras_bert/serving-runtime-tf2.12, created on first use
with tensorflow==2.12.* and tensorflow-text==2.12.*), or --python.

Examples
--------
  python tools/tf_text_op_list.py --runtime 2.12 --output keras_bert/export/tf_text_2_12_ops.txt
  python tools/tf_text_op_list.py --python /tmp/venv-tf212/bin/python --output ops.txt

(keras_bert/export/tf_text_2_12_ops.txt was made the second way: /tmp/venv-tf212 held
tensorflow-cpu==2.12.1 and, installed with --no-deps, the tensorflow_text-2.12.1 cp311
manylinux wheel from `pip download --no-deps tensorflow-text==2.12.1`.)
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import _cli  # noqa: E402


def build_parser():
    parser = _cli.parser(__doc__)
    parser.add_argument("--output", required=True, help="The op-list file to write.")
    parser.add_argument("--runtime", default="2.12",
                        help="TensorFlow / tensorflow-text release (default 2.12, as in TF "
                        "Serving images 2.12-2.19).")
    parser.add_argument("--python", default=None,
                        help="An interpreter that has that TensorFlow and tensorflow-text "
                        "(default: the cached runtime venv, created if missing).")
    parser.add_argument("--venv", default=None, help="Where the cached runtime venv lives.")
    return parser


def main(argv=None):
    command = sys.argv[1:] if argv is None else list(argv)
    args = build_parser().parse_args(argv)
    from keras_bert.export.op_set import tf_text_registered_ops
    from keras_bert.export.runtime_check import RuntimeUnavailable, ensure_runtime
    from keras_bert.files import write_text_atomic

    try:
        python = args.python or ensure_runtime(args.venv, args.runtime)
    except RuntimeUnavailable as e:
        print(f"error: {e}", file=sys.stderr)
        return 3
    found = tf_text_registered_ops(python)
    if not found["tensorflow_text"].startswith(args.runtime + "."):
        print(f"error: {python} has tensorflow-text {found['tensorflow_text']}, not "
              f"{args.runtime}: pass --python of a {args.runtime} runtime.", file=sys.stderr)
        return 1
    if found["failed"]:
        print(f"error: op libraries that did not load in TensorFlow {found['tensorflow']}: "
              f"{found['failed']}", file=sys.stderr)
        return 1
    lines = [f"# The ops that tensorflow-text {found['tensorflow_text']} registers, one a line "
             f"({len(found['ops'])} ops).",
             f"# Made by: python tools/tf_text_op_list.py {' '.join(command)}",
             "# (each tensorflow_text/python/ops/_*.so of the",
             f"# tensorflow-text {found['tensorflow_text']} wheel loaded in TensorFlow "
             f"{found['tensorflow']} (TF_LoadLibrary), names from its TF_GetOpList).",
             "# Read by keras_bert.export.op_set.missing_in_tf_text."]
    lines += sorted(found["ops"])
    write_text_atomic(args.output, "\n".join(lines) + "\n")
    print(f"wrote {args.output}: {len(found['ops'])} ops of tensorflow-text "
          f"{found['tensorflow_text']} (TensorFlow {found['tensorflow']})")
    return 0


if __name__ == "__main__":
    sys.exit(_cli.run(main))
