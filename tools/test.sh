#!/usr/bin/env bash
# The test command of README.md: installs what the tests need into .venv and
# runs the default tier (every test not marked `slow`) in three pytest-xdist
# workers (on 2 cores a third fills the time the others wait on a process, a
# session build or a socket: docs/testing.md has the times; a module's tests
# stay in one worker, the longest modules first: tests/conftest.py
# pytest_collection_modifyitems; session exports are built once,
# tests/conftest.py built_once). Extra arguments go to pytest, after the default
# ones: `bash tools/test.sh -m slow` runs the slow tier, `bash tools/test.sh -m ""`
# everything, `-n 0` one process.
set -euo pipefail
cd "$(dirname "$0")/.."
# Python writes each module's bytecode once (.pyc) and every later process reads it: with
# PYTHONDONTWRITEBYTECODE set (as this project's machines set it) and pip's
# --no-compile (tools/setup_env.sh), every process the tests start compiled TensorFlow's,
# Keras' and keras_bert's sources again (about 1.8 CPU s of each fresh `import keras_bert`).
unset PYTHONDONTWRITEBYTECODE
bash tools/setup_env.sh test
exec .venv/bin/python -m pytest -q -m "not slow" -n 3 --dist loadgroup --no-loadscope-reorder "$@"
