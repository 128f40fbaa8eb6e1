#!/usr/bin/env bash
# The test command of README.md: installs what the tests need into .venv and
# runs the default tier (every test not marked `slow`). Extra arguments go to
# pytest, after the default ones: `bash tools/test.sh -m slow` runs the slow
# tier, `bash tools/test.sh -m ""` everything.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/setup_env.sh test
exec .venv/bin/python -m pytest -q -m "not slow" "$@"
