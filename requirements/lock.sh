#!/usr/bin/env bash
# `make lock`: rewrites requirements/dev.lock and requirements/eval.lock from pyproject.toml with uv.
#   dev.lock   the `dev` extra (the tests, `make test`), Python 3.11+: inspect-ai and the docs pins need it
#   eval.lock  the `eval` extra (the main job, `make run`), Python 3.10+, resolved under dev.lock for 3.11+
#              so that the two agree wherever both install
# Both hold on Linux, macOS and Windows (--universal). torch is the Makefile's pin, installed before
# the lock, so it and its CUDA-only packages (nvidia-*, cuda-*, triton: the torch step brings those
# with the CUDA build) are left out. A locked version stays unless pyproject.toml rules it out;
# LOCK_ARGS=--upgrade takes the newest allowed versions of everything.
# The Makefile passes PYTHON, TORCH (torch==X) and UV (uv==X, installed from PyPI into a throwaway folder).
set -euo pipefail
cd "$(dirname "$0")/.."
: "${PYTHON:=python3}" "${TORCH:?set TORCH, e.g. torch==2.13.0}" "${UV:?set UV, e.g. uv==0.13.9}"
DEV_PYTHON=3.11
EVAL_PYTHON=3.10

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$PYTHON" -m venv "$tmp/venv"
"$tmp/venv/bin/python" -m pip install -q --disable-pip-version-check "$UV"
echo "$TORCH" >"$tmp/torch.txt"

# compile EXTRA PYTHON_VERSION OUTPUT [OPTION...]: the existing lock, copied to OUTPUT, is uv's preference.
compile() {
  local extra=$1 python=$2 out=$3
  shift 3
  [ ! -f "requirements/$extra.lock" ] || cp "requirements/$extra.lock" "$out"
  # shellcheck disable=SC2086  # LOCK_ARGS is a list of options
  "$tmp/venv/bin/uv" pip compile pyproject.toml --extra "$extra" --universal --python-version "$python" \
    --no-python-downloads --quiet --custom-compile-command "make lock" -c "$tmp/torch.txt" \
    ${LOCK_ARGS:-} "$@" -o "$out"
}

# header EXTRA PYTHON_VERSION TARGET: what the lock is and how it is installed, then uv's output.
header() {
  cat <<HEADER
# The \`$1\` extra of pyproject.toml at one version per package, for Python $2+ on Linux, macOS and
# Windows: what \`make $3\` installs, with \`pip install --no-deps -r requirements/$1.lock\` after
# $TORCH and before \`pip install --no-deps -e .\` (so that pip resolves nothing itself).
# Made by \`make lock\` (requirements/lock.sh: uv pip compile pyproject.toml --extra $1 --universal
# --python-version $2, $UV); torch and its CUDA-only packages are left to the torch step.
HEADER
}

# First the whole resolution, to name torch's CUDA-only packages (they change with torch's version).
compile dev "$DEV_PYTHON" "$tmp/dev-all.txt"
leave_out=()
for name in $(grep -oE '^(torch|triton|nvidia-[a-z0-9-]+|cuda-[a-z0-9-]+)==' "$tmp/dev-all.txt" | tr -d '='); do
  leave_out+=(--no-emit-package "$name")
done

compile dev "$DEV_PYTHON" "$tmp/dev.lock" "${leave_out[@]}"
# dev.lock's versions as constraints for Python 3.11+ only (3.10 has a resolution of its own).
awk -v floor="python_full_version >= '$DEV_PYTHON'" '/^[a-z0-9]/ {
  if (index($0, " ; ")) { sub(/ ; /, " ; ("); print $0 ") and " floor } else print $0 " ; " floor
}' "$tmp/dev.lock" >"$tmp/dev-constraints.txt"
compile eval "$EVAL_PYTHON" "$tmp/eval.lock" "${leave_out[@]}" -c "$tmp/dev-constraints.txt"

# The annotations name the temporary files by what they hold (a lock is the same from any folder).
for extra in dev eval; do
  python=$DEV_PYTHON target=test
  [ "$extra" = dev ] || python=$EVAL_PYTHON target=run
  { header "$extra" "$python" "$target"; sed -e "s#-c $tmp/dev-constraints.txt#-c requirements/dev.lock#" \
    -e "s#-c $tmp/torch.txt#-c $TORCH (the Makefile's TORCH)#" "$tmp/$extra.lock"; } >"requirements/$extra.lock"
done
echo "wrote requirements/dev.lock and requirements/eval.lock"
