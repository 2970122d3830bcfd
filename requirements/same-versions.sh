#!/usr/bin/env bash
# requirements/same-versions.sh A B: exit 0, saying so, when the virtual environments A and B hold the
# same distributions at the same versions (this project's own install aside); else exit 1, naming
# what differs. `make test-latest LATEST_SAME_AS=A` runs its tests only when B (.venv-latest, the
# newest versions pyproject.toml allows) differs from A, an environment the fast suite already ran in
# (CI: .venv-ci, installed from the lock): on the same versions the suite would repeat itself.
# torch's CUDA-only packages (triton, nvidia-*, cuda-*) are aside too: the lock leaves them to the
# torch step (requirements/lock.sh), so .venv-ci has them only where torch brings them, while pip in
# .venv-latest also installs them for another requirer (xgrammar asks for triton on Linux x86_64).
set -euo pipefail
list() {
  "$1/bin/python" - <<'PY'
import importlib.metadata as metadata

versions = {}
for dist in metadata.distributions():
    name = (dist.metadata["Name"] or "").lower().replace("_", "-")
    cuda_only = name == "triton" or name.startswith(("nvidia-", "cuda-"))
    if name and name != "mm-spubench" and not cuda_only:
        versions[name] = dist.version
print("\n".join(f"{name}=={version}" for name, version in sorted(versions.items())))
PY
}
a=$(list "${1:?usage: same-versions.sh A B}") || exit 1
b=$(list "${2:?usage: same-versions.sh A B}") || exit 1
if [ "$a" = "$b" ]; then
  echo "$2 holds the versions of $1, where the fast suite ran: its tests are not repeated"
  exit 0
fi
echo "$2 differs from $1 in: $(comm -13 <(echo "$a") <(echo "$b") | tr '\n' ' ')" >&2
exit 1
