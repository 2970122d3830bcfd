# Sourced by .ci/lmms-venv.sh and .ci/vllm-venv.sh once they have set `target` (the folder of the
# new environment): creates it with $PYTHON (default python3), updates its pip and installs the CPU
# wheel of torch. Leaves `repo` (this checkout) and `pip` (the new environment's quiet pip install).
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
py="${PYTHON:-python3}"

"$py" -m venv "$target"
pip=("$target/bin/python" -m pip install -q)
"${pip[@]}" -U pip
# The CPU wheel of torch first (a bare or newer pin would pull a multi-GB CUDA build).
"${pip[@]}" torch==2.13.0
