#!/usr/bin/env bash
# Build the separate virtual environment that loads lmms-eval's task manager (lmms-eval pulls a CUDA
# torch through torchvision, so it cannot share the main environment). Usage: .ci/lmms-venv.sh TARGET_DIR
# lmms-eval goes in with --no-deps, then only what its task loader imports, and this checkout
# (no extras: the task's hooks use the schema, prompts, parser and metrics). Tests find it through
# MMSPUBENCH_LMMS_PYTHON=TARGET_DIR/bin/python.
set -euo pipefail
target="${1:?usage: .ci/lmms-venv.sh TARGET_DIR}"
# shellcheck source=.ci/venv-start.sh
. "$(dirname "$0")/venv-start.sh"
"${pip[@]}" --no-deps lmms-eval==0.7.3
# What `from lmms_eval.tasks import TaskManager` imports, found by trying.
"${pip[@]}" loguru pytz transformers accelerate tenacity evaluate sacrebleu "pytest>=8" "pytest-timeout>=2.3"
"${pip[@]}" -e "$repo"
"$target/bin/python" -c "from lmms_eval.tasks import TaskManager; import lmms_eval, mmspubench; print('lmms-eval ok')"
