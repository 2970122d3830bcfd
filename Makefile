# Set-up in two commands, each of which creates the environment when it is missing:
#   make run    install what the main job needs (torch, then the `eval` extra at the versions of
#               requirements/eval.lock) and run it
#   make test   install the test dependencies (torch, then the `dev` extra at the versions of
#               requirements/dev.lock) and run the fast suite
# Afterwards, for the common commands on that run (each installs what it needs, like `make run`):
#   make report show the run's table (mmspubench report runs/default)
#   make help   list the targets and how to reach the environment's commands directly
# The documentation site (docs/ + mkdocs.yml):
#   make docs          install the `docs` extra and build the site with `mkdocs build --strict` into site/
#   make docs-figures  rerun the bundled models and redraw docs/figures/ (bench/docs_figures.py; the
#                      `dev` extra: plots, the Space and Playwright for its screenshot in Debian's chromium)
# The lock (requirements/*.lock, one version per package; pyproject.toml keeps ranges for library users):
#   make lock          rewrite both locks from pyproject.toml (requirements/lock.sh, uv from PyPI)
#   make test-latest   the fast suite and the family matrix in .venv-latest with the newest versions
#                      pyproject.toml allows (no lock): what a new user of `pip install mm-spubench` gets
# All are quick once installed: a stamp per step, redone when pyproject.toml or the lock changes.
# Variables (none needs to be set):
#   TORCH_INDEX  where torch comes from. Empty (default): PyPI, which on Linux is the CUDA build
#                (about 3 GB). A CPU-only machine: TORCH_INDEX=https://download.pytorch.org/whl/cpu
#   VENV         the environment's folder, a path without spaces (default .venv; CI uses .venv-ci)
#   PYTHON       the interpreter that creates it (default python3, 3.10 or newer; 3.11+ for `make test`)
#   PYTEST_ARGS  passed to pytest, e.g. PYTEST_ARGS="-k readme -x"
#   WORKERS      test processes of the fast suite (default auto: one per core, pytest-xdist; 0: none)
#   LATEST_SAME_AS  a venv folder (CI: .venv-ci): `make test-latest` skips its tests when .venv-latest
#                holds exactly that folder's versions (requirements/same-versions.sh)
#   LOCK_ARGS    passed to uv by `make lock`: --upgrade takes the newest allowed versions of everything

PYTHON ?= python3
VENV ?= .venv
TORCH_INDEX ?=
PYTEST_ARGS ?=
WORKERS ?= auto
LOCK_ARGS ?=
LATEST_SAME_AS ?=
TORCH := torch==2.13.0
UV := uv==0.13.9
LATEST := .venv-latest

BIN := $(VENV)/bin
PIP := $(BIN)/python -m pip install -q
# setuptools notes on every editable install of this layout (a finder maps mmspubench.eval to eval/ and
# so on) that "folders in your working directory with the same name as your package may take
# precedence during imports". The one such folder, mmspubench/, is the package itself (the finder and
# the folder give the same modules), so the note is silenced instead of printed on each install.
QUIET_EDITABLE := PYTHONWARNINGS="ignore:Editable installation"

.PHONY: run test report help main-job docs docs-figures lock test-latest latest-venv latest-tests

# `make -n` (a dry run) shows the commands only, never the note below.
DRY_RUN := $(findstring n,$(firstword -$(MAKEFLAGS)))

define NEXT_STEPS

The environment is $(VENV): its commands are not on your PATH. Either call them by their path,
  $(BIN)/mmspubench report runs/default
or activate it once in this shell (then plain `mmspubench ...` works):
  . $(BIN)/activate
or use the make targets: make report (the run's table), make help (all targets).
endef

# The note comes after the run (a target of its own: make expands a recipe before running it).
run: main-job
	$(if $(DRY_RUN),,$(info $(NEXT_STEPS)))

main-job: $(VENV)/.stamp-eval
	$(BIN)/mmspubench eval --out runs/default

report: $(VENV)/.stamp-eval
	$(BIN)/mmspubench report runs/default

help:
	$(info make run          install the `eval` extra (requirements/eval.lock) into $(VENV), run the main job into runs/default)
	$(info make main-job     the main job alone (mmspubench eval --out runs/default), without the note below)
	$(info make test         install the `dev` extra (requirements/dev.lock) into $(VENV), run the fast test suite)
	$(info make report       the Markdown table of runs/default (mmspubench report runs/default))
	$(info make docs         install the `docs` extra and build the documentation site (mkdocs build --strict))
	$(info make docs-figures rerun the bundled models and redraw docs/figures/ (the `dev` extra))
	$(info make lock         rewrite requirements/dev.lock and eval.lock from pyproject.toml (LOCK_ARGS=--upgrade: newest))
	$(info make test-latest  the fast suite and the family matrix in $(LATEST) with the newest versions pyproject.toml allows (no lock))
	$(info make latest-venv  its first half: a fresh $(LATEST) with the newest versions (CI builds it while other tests run))
	$(info make latest-tests its second half: the fast suite and the family matrix in the $(LATEST) already built)
	$(info make help         this list)
	$(info $(NEXT_STEPS))
	@:

test: $(VENV)/.stamp-dev
	HF_HUB_OFFLINE=1 $(BIN)/python -m pytest -n $(WORKERS)$(if $(PYTEST_ARGS), $(PYTEST_ARGS))

docs: $(VENV)/.stamp-docs
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --quiet

docs-figures: $(VENV)/.stamp-dev
	HF_HUB_OFFLINE=1 $(BIN)/python bench/docs_figures.py

lock:
	PYTHON=$(PYTHON) TORCH=$(TORCH) UV=$(UV) LOCK_ARGS="$(LOCK_ARGS)" requirements/lock.sh

# A fresh environment each time, so that every package is the newest that pyproject.toml allows (torch
# stays at TORCH): a new release that breaks the suite shows here before a user meets it. Then the
# whole family matrix (every family's tiny model through eval, fast CGLs against plain), whose
# exactness rests on how the newest transformers computes attention and the output head.
# LATEST_SAME_AS=FOLDER (CI: .venv-ci): skip the tests when .venv-latest holds exactly FOLDER's versions.
# Its two halves are targets of their own: CI builds the environment in the background while the fast
# suite runs, and runs its tests at the end.
SAME_GUARD = $(if $(LATEST_SAME_AS),requirements/same-versions.sh $(LATEST_SAME_AS) $(LATEST) || ,)
test-latest: latest-venv latest-tests

latest-venv:
	rm -rf $(LATEST)
	$(call new_venv,$(LATEST))
	$(LATEST)/bin/python -m pip install -q --upgrade pip
	$(LATEST)/bin/python -m pip install -q $(TORCH)$(if $(TORCH_INDEX), --index-url $(TORCH_INDEX))
	echo "$(TORCH)" > $(LATEST)/torch-pin.txt
	$(QUIET_EDITABLE) $(LATEST)/bin/python -m pip install -q --upgrade --upgrade-strategy eager -c $(LATEST)/torch-pin.txt -e ".[dev]"

latest-tests:
	$(SAME_GUARD)HF_HUB_OFFLINE=1 $(LATEST)/bin/python -m pytest -n $(WORKERS)$(if $(PYTEST_ARGS), $(PYTEST_ARGS))
	$(SAME_GUARD)HF_HUB_OFFLINE=1 $(LATEST)/bin/python -m pytest -q -m slow tests/eval/families

# new_venv FOLDER: a virtual environment made by PYTHON, which must be 3.10 or newer.
new_venv = @$(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 10))' && $(PYTHON) -m venv $(1) || { echo "make: cannot create $(1) with $(PYTHON): Python 3.10+ with venv is needed (Debian/Ubuntu: apt install python3-venv)" >&2; rm -rf $(1); exit 2; }

$(BIN)/python:
	$(call new_venv,$(VENV))
	$(PIP) --upgrade pip

# torch before the rest, so that pip keeps this build instead of choosing one for `torch>=2.4`.
$(VENV)/.stamp-torch: | $(BIN)/python
	$(PIP) $(TORCH)$(if $(TORCH_INDEX), --index-url $(TORCH_INDEX))
	@touch $@

# The locked extras: exactly the versions of requirements/<extra>.lock and then the package itself,
# both --no-deps so that pip resolves nothing (the lock already holds every dependency but torch's).
define INSTALL_LOCK
	$(PIP) --no-deps -r requirements/$(1).lock
	$(QUIET_EDITABLE) $(PIP) --no-deps -e .
	@touch $(VENV)/.stamp-$(1)
endef

$(VENV)/.stamp-eval: requirements/eval.lock pyproject.toml $(VENV)/.stamp-torch
	$(call INSTALL_LOCK,eval)

# dev.lock is for Python 3.11+ (inspect-ai and the docs site's pins need it).
$(VENV)/.stamp-dev: requirements/dev.lock pyproject.toml $(VENV)/.stamp-torch
	@$(BIN)/python -c 'import sys; sys.exit(sys.version_info < (3, 11))' || { echo "make: the test environment (the dev extra) needs Python 3.11+, $(VENV) has $$($(BIN)/python -V): make test PYTHON=python3.11 VENV=<a new folder>" >&2; exit 2; }
	$(call INSTALL_LOCK,dev)

# Any other extra (docs), resolved by pip.
$(VENV)/.stamp-%: pyproject.toml $(VENV)/.stamp-torch
	$(QUIET_EDITABLE) $(PIP) -e ".[$*]"
	@touch $@
