#!/usr/bin/env bash
# Install bio-roberta into a Python environment that already has its torch (a CUDA build on a GPU
# cluster, or the CPU wheel), without replacing that torch:
#   1. fairseq's build requirements (cython, numpy, setuptools<81, wheel);
#   2. fairseq-fixed==0.12.3.1 (the fairseq 0.12 that installs on Python 3.11) built against the
#      torch already there: --no-build-isolation (isolation would build against a fresh torch) and
#      --no-deps (its torchaudio requirement would replace torch);
#   3. this package with the extras named, every pip call constrained to the torch found in step 0.
#
#   scripts/install.sh [--python PYTHON] [--extras hf,slurm,test] [--editable] [--only fairseq]
#
# PYTHON defaults to `python`, the environment's one (activate it first, or name its python).
# `make install PYTHON=... EXTRAS=...` runs this; `make venv` runs it for .venv with the CPU torch.
set -euo pipefail
REPO=$(cd "$(dirname "$0")/.." && pwd)
PYTHON=python EXTRAS="" EDITABLE="" ONLY=""
while [ $# -gt 0 ]; do
  case $1 in
    --python) PYTHON=$2; shift 2 ;;
    --extras) EXTRAS=$2; shift 2 ;;
    --editable) EDITABLE=-e; shift ;;
    --only) ONLY=$2; shift 2 ;;
    *) echo "install.sh: unknown argument $1 (see the header of scripts/install.sh)" >&2; exit 2 ;;
  esac
done
if [ -n "$ONLY" ] && [ "$ONLY" != fairseq ]; then
  echo "install.sh: --only takes fairseq (its build alone), not $ONLY" >&2; exit 2
fi

# 0. the torch this environment has, which every step below must keep
if ! TORCH=$("$PYTHON" -c "import torch; print(torch.__version__)" 2>/dev/null); then
  echo "install.sh: $PYTHON has no torch; install the build for your machine first" \
    "(https://pytorch.org/get-started/locally/; CPU: pip install torch==2.13.0)" >&2
  exit 2
fi
CONSTRAINTS=$(mktemp)
trap 'rm -f "$CONSTRAINTS"' EXIT
# constraints.txt's pins but torch, then the torch found: pip may resolve nothing else for it
{ grep -v '^torch==' "$REPO/constraints.txt"; echo "torch==$TORCH"; } > "$CONSTRAINTS"
PIP=("$PYTHON" -m pip install --quiet --constraint "$CONSTRAINTS")
echo "install.sh: installing into $("$PYTHON" -c 'import sys; print(sys.prefix)') (torch $TORCH kept)" >&2

# 1-2. fairseq (compiles its C++ extensions for a few minutes; pip's wheel cache keeps the build)
"${PIP[@]}" 'setuptools<81' wheel cython numpy
# pip's resolver would report fairseq-fixed's missing torchaudio after each install from here on:
# left out on purpose, so conflicts are checked once at the end with that one explained.
"${PIP[@]}" --no-warn-conflicts --no-build-isolation --no-deps fairseq-fixed==0.12.3.1
[ "$ONLY" = fairseq ] && exit 0

# 3. the package; our setup.py builds against the setuptools above.
"${PIP[@]}" --no-warn-conflicts --no-build-isolation $EDITABLE "$REPO${EXTRAS:+[$EXTRAS]}"
conflicts=$("$PYTHON" -m pip check 2>&1 | grep -v -e '^fairseq-fixed .* requires torchaudio' \
  -e '^No broken requirements' || true)
echo "install.sh: fairseq-fixed declares torchaudio, used only by its speech tasks; it is left out" \
  "so that torch stays $TORCH (pip check reports it, nothing else needs it)" >&2
if [ -n "$conflicts" ]; then
  printf 'install.sh: pip check reports other conflicts in this environment:\n%s\n' "$conflicts" >&2
fi
"$PYTHON" -c "
import torch, fairseq, bio_roberta, user_dir
assert torch.__version__ == '$TORCH', f'torch changed: $TORCH -> {torch.__version__}'
print('install.sh: bio-roberta', bio_roberta.__version__, 'with fairseq', fairseq.__version__,
      'and torch', torch.__version__)
"
