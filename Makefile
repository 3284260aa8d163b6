# Two commands for a fresh machine (see README.md):
#   make lab    set up .venv and open the notebooks in JupyterLab
#   make test   set up .venv and run the whole test suite (unit tests, every notebook under
#               strict nbval, the classroom pipeline and, where Chromium is installed, the UI)
# Also: make notebooks (re-execute all notebooks in place), make lint, make bench.

PYTHON ?= python3
VENV ?= .venv
# The torch requirement for the venv. On Linux a plain `torch` is a multi-GB CUDA build; for a
# CPU-only laptop, `make lab TORCH_INDEX=https://download.pytorch.org/whl/cpu` fetches the CPU
# build instead. CI pins the CPU build that lies on its machines' disk.
TORCH ?= torch>=2.2
TORCH_INDEX ?=
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
PYTEST_ARGS ?=
# JupyterLab refuses to start as root (as in most containers) unless told --allow-root.
USER_ID ?= $(shell id -u)
LAB_FLAGS := $(if $(filter 0,$(USER_ID)),--allow-root)

.PHONY: setup lab test notebooks lint bench

setup: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet "$(TORCH)" $(if $(TORCH_INDEX),--index-url $(TORCH_INDEX))
	$(BIN)/python -m pip install --quiet -e ".[test]"
	touch $(STAMP)

lab: setup
	$(BIN)/jupyter lab $(LAB_FLAGS) notebooks/00_start_here.ipynb

test: setup
	$(BIN)/ruff check .
	$(BIN)/ruff format --check gptlib tests scripts benchmarks
	$(BIN)/python -m pytest --nbval --nbval-current-env \
		--nbval-sanitize-with tests/nbval_sanitize.cfg --nbval-cell-timeout=600 \
		-p no:cacheprovider --durations=15 $(PYTEST_ARGS)

notebooks: setup
	$(BIN)/python scripts/run_notebooks.py

lint: setup
	$(BIN)/ruff check .
	$(BIN)/ruff format --check gptlib tests scripts benchmarks

bench: setup
	for script in benchmarks/[!_]*.py; do echo "== $$script"; $(BIN)/python $$script || exit 1; done
