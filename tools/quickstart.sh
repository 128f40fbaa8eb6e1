#!/usr/bin/env bash
# The main job of README.md: installs keras_bert into .venv, then runs
# tools/quickstart.py. Extra arguments go to quickstart.py (see --help).
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/setup_env.sh
exec .venv/bin/python tools/quickstart.py "$@"
