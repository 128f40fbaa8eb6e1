#!/usr/bin/env bash
# Device check: the device-relevant tests, then BERT-base bfloat16 + XLA training and
# inference on the accelerator (tokens/s and MFU against the device's bf16 peak).
#
#   bash tools/device_check.sh              # a GPU: full run, tables appended to BENCHMARKS.md
#   bash tools/device_check.sh --dry-run    # no GPU (or forced): tiny sizes, nothing appended
#   bash tools/device_check.sh --with-tests # also run the tests in a dry run
#
# Without a GPU it runs as a dry run: it collects the device tests (without running
# them, unless --with-tests) and runs the benchmarks at tiny sizes, to show the script
# and the tools work end to end. Environment: PYTHON (default .venv/bin/python, else
# python3), OUTPUT (markdown file the full run appends to; default BENCHMARKS.md),
# PEAK_TFLOPS (the device's bf16 peak when tools/benchmark.py does not know it).
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON="${PYTHON:-}"
if [ -z "$PYTHON" ]; then
  if [ -x .venv/bin/python ]; then PYTHON=.venv/bin/python; else PYTHON=python3; fi
fi
mode=auto
tests=auto
for arg in "$@"; do
  case "$arg" in
    --dry-run) mode=dry ;;
    --with-tests) tests=run ;;
    *) echo "usage: bash tools/device_check.sh [--dry-run] [--with-tests]" >&2; exit 2 ;;
  esac
done

export TF_CPP_MIN_LOG_LEVEL=2
gpus=$("$PYTHON" -c "import tensorflow as tf; print(len(tf.config.list_physical_devices('GPU')))")
if [ "$mode" = auto ]; then
  if [ "$gpus" -gt 0 ]; then mode=full; else mode=dry; fi
fi
if [ "$tests" = auto ]; then
  if [ "$mode" = full ]; then tests=run; else tests=collect; fi
fi
echo "device check: $gpus GPU(s), mode $mode, tests $tests ($(date -u +%Y-%m-%dT%H:%MZ))"
if command -v nvidia-smi > /dev/null 2>&1; then
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader || true
fi

# 1. Tests whose behaviour depends on the device: XLA and several devices (MirroredStrategy
#    over 2 logical CPUs, float32 and bfloat16), multi-worker training, mixed precision,
#    the fused optimizer with and without XLA, XLA exports and the serving runtimes.
DEVICE_TESTS=(
  tests/training/test_multi_device_xla.py
  tests/training/test_distribute.py
  tests/training/test_optimizers.py
  tests/training/test_trainer.py
  tests/models/test_encoder.py
  tests/export/test_op_set.py
  tests/export/test_tf_serving_files.py
  tests/export/test_serving_runtime.py
  tests/export/test_windowed_export.py::test_every_export_kind_answers_alike_in_tf_serving_runtime
)
if [ "$tests" = run ]; then
  "$PYTHON" -m pytest -q "${DEVICE_TESTS[@]}"
else
  "$PYTHON" -m pytest -q --collect-only "${DEVICE_TESTS[@]}" | tail -n 1
fi

# 2. BERT-base, bfloat16 + XLA: inference and MLM training steps, tokens/s and MFU.
peak=()
if [ -n "${PEAK_TFLOPS:-}" ]; then peak=(--peak-tflops "$PEAK_TFLOPS"); fi
# Each subcommand takes only its own flags (tools/benchmark.py SUB --help).
if [ "$mode" = full ]; then
  sizes=(--max-seq-length 128 --repeats 5 --output "${OUTPUT:-BENCHMARKS.md}")
  inference=(--preset base --batch-size 64)
  training=(--train-presets base --train-batch-size 32 --train-steps 10)
else
  sizes=(--max-seq-length 16 --repeats 1 --matmul-peak-size 256 --output "")
  inference=(--preset tiny --batch-size 2)
  training=(--train-presets tiny --train-batch-size 2 --train-steps 1)
fi
"$PYTHON" tools/benchmark.py inference --dtypes bfloat16 --jit-compile on --systems keras_bert \
  "${inference[@]}" "${sizes[@]}" "${peak[@]}"
"$PYTHON" tools/benchmark.py training --dtypes bfloat16 --jit-compile on --systems keras_bert \
  "${training[@]}" "${sizes[@]}" "${peak[@]}"
echo "device check: done ($mode)"
