# Set-up in two commands, each of which creates the environment when it is missing:
#   make run    install what the main job needs (torch, then the `eval` extra) and run it
#   make test   install the test dependencies (torch, then the `dev` extra) and run the fast suite
# The documentation site (docs/ + mkdocs.yml):
#   make docs          install the `docs` extra and build the site with `mkdocs build --strict` into site/
#   make docs-figures  rerun the bundled models and redraw docs/figures/ (bench/docs_figures.py; the
#                      `dev` extra: plots, the Space and Playwright for its screenshot in Debian's chromium)
# Both are quick once installed: a stamp per step, redone when pyproject.toml changes.
# Variables (none needs to be set):
#   TORCH_INDEX  where torch comes from. Empty (default): PyPI, which on Linux is the CUDA build
#                (about 3 GB). A CPU-only machine: TORCH_INDEX=https://download.pytorch.org/whl/cpu
#   VENV         the environment's folder, a path without spaces (default .venv; CI uses .venv-ci)
#   PYTHON       the interpreter that creates it (default python3, 3.10 or newer)
#   PYTEST_ARGS  passed to pytest, e.g. PYTEST_ARGS="-k readme -x"

PYTHON ?= python3
VENV ?= .venv
TORCH_INDEX ?=
PYTEST_ARGS ?=
TORCH := torch==2.13.0

BIN := $(VENV)/bin
PIP := $(BIN)/python -m pip install -q

.PHONY: run test docs docs-figures

run: $(VENV)/.stamp-eval
	$(BIN)/mmspubench eval --out runs/default

test: $(VENV)/.stamp-dev
	HF_HUB_OFFLINE=1 $(BIN)/python -m pytest$(if $(PYTEST_ARGS), $(PYTEST_ARGS))

docs: $(VENV)/.stamp-docs
	$(BIN)/mkdocs build --strict --quiet

docs-figures: $(VENV)/.stamp-dev
	HF_HUB_OFFLINE=1 $(BIN)/python bench/docs_figures.py

$(BIN)/python:
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 10))' && $(PYTHON) -m venv $(VENV) || { echo "make: cannot create $(VENV) with $(PYTHON): Python 3.10+ with venv is needed (Debian/Ubuntu: apt install python3-venv)" >&2; rm -rf $(VENV); exit 2; }
	$(PIP) --upgrade pip

# torch before the extras, so that pip keeps this build instead of choosing one for `torch>=2.4`.
$(VENV)/.stamp-torch: | $(BIN)/python
	$(PIP) $(TORCH)$(if $(TORCH_INDEX), --index-url $(TORCH_INDEX))
	@touch $@

$(VENV)/.stamp-%: pyproject.toml $(VENV)/.stamp-torch
	$(PIP) -e ".[$*]"
	@touch $@
