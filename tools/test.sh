#!/usr/bin/env bash
# The test command of README.md: installs what the tests need into .venv and
# runs the whole suite. Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/setup_env.sh test
exec .venv/bin/python -m pytest -q "$@"
