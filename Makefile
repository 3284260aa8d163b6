# Two commands for a fresh machine (see README.md):
#   make lab    set up .venv and open the workbook (your copy, in my-work/) in JupyterLab
#   make test   set up .venv and run the whole test suite (unit tests, every notebook under
#               strict nbval, the classroom pipeline and, where Chromium is installed, the UI)
# Also: make check (ruff and the fast unit tests: no notebook, site, browser or classroom run),
#       make test-portable (strict nbval on torch's portable kernels with one thread),
#       make notebooks (re-execute all notebooks in place), make lint, make bench,
#       make gpu-check (the notebooks, tests and benchmark on a CUDA GPU, where there is one),
#       make site (the course website in book/_build/html; see README.md),
#       make lock (refresh constraints.txt, the exact versions of the test and site tools).

PYTHON ?= python3
VENV ?= .venv
# The torch requirement for the venv. On Linux a plain `torch` is a multi-GB CUDA build; for a
# CPU-only laptop, `make lab TORCH_INDEX=https://download.pytorch.org/whl/cpu` fetches the CPU
# build instead. CI pins the CPU build that lies on its machines' disk. torch is not in LOCK.
TORCH ?= torch>=2.10
TORCH_INDEX ?=
# Every other package of the venv is installed at the exact version this file names.
LOCK := constraints.txt
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
SITE_STAMP := $(VENV)/.installed-site
PYTEST_ARGS ?=
# JupyterLab refuses to start as root (as in most containers) unless told --allow-root.
USER_ID ?= $(shell id -u)
LAB_FLAGS := $(if $(filter 0,$(USER_ID)),--allow-root)
# The notebook `make lab` opens: the student's copy of workbook 00 in my-work/ (made and kept up
# to date by scripts/editions.py open, which never overwrites a copy the student changed). The
# solved edition: make lab NOTEBOOK=notebooks/00_start_here.ipynb
NOTEBOOK ?= my-work/00_start_here.ipynb
# The website's launch links: the repository's public address and the ref Binder builds.
# Default: repository.url in book/_config.yml, else the clone's origin remote if it is https.
REPO_URL ?=
REPO_REF ?=
FORMATTED := gptlib tests scripts benchmarks book

.PHONY: setup lab test test-portable check notebooks lint bench site lock gpu-check

setup: $(STAMP)

# torch first, from its own index if asked; then everything else pinned by $(LOCK), which also
# moves what torch pulled in (jinja2, typing-extensions) to the pinned versions.
$(STAMP): pyproject.toml $(LOCK)
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet "$(TORCH)" $(if $(TORCH_INDEX),--index-url $(TORCH_INDEX))
	$(BIN)/python -m pip install --quiet -c $(LOCK) -e ".[test]"
	touch $(STAMP)

# Jupyter Book 1 and an offline MathJax, beside the test tools (tests/test_site.py builds it).
$(SITE_STAMP): $(STAMP)
	$(BIN)/python -m pip install --quiet -c $(LOCK) -e ".[test,site]"
	touch $(SITE_STAMP)

lab: setup
	$(BIN)/python scripts/editions.py open
	$(BIN)/jupyter lab $(LAB_FLAGS) $(NOTEBOOK)

test: setup $(SITE_STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check $(FORMATTED)
	$(BIN)/python -m pytest --nbval --nbval-current-env \
		--nbval-sanitize-with tests/nbval_sanitize.cfg --nbval-cell-timeout=600 \
		-p no:cacheprovider --durations=15 $(PYTEST_ARGS)

# Strict nbval once more on perturbed numerics: torch's portable kernels (no AVX2/AVX-512) and one
# thread. A stored output that depends on the machine's SIMD width or thread count fails here, on
# the maintainer's machine, before it reaches a student's (CI runs it after make test).
test-portable: setup
	ATEN_CPU_CAPABILITY=default OMP_NUM_THREADS=1 $(BIN)/python -m pytest notebooks docs \
		--nbval --nbval-current-env --nbval-sanitize-with tests/nbval_sanitize.cfg \
		--nbval-cell-timeout=600 -p no:cacheprovider -q $(PYTEST_ARGS)

# The fast path (at most 3 minutes on 2 cores): lint and the unit tests not marked slow or ui.
check: setup
	$(BIN)/ruff check .
	$(BIN)/ruff format --check $(FORMATTED)
	$(BIN)/python -m pytest tests -m "not slow and not ui" -p no:cacheprovider -q \
		--durations=10 $(PYTEST_ARGS)

notebooks: setup
	$(BIN)/python scripts/run_notebooks.py

lint: setup
	$(BIN)/ruff check .
	$(BIN)/ruff format --check $(FORMATTED)

site: $(SITE_STAMP)
	$(BIN)/python -m book.build $(if $(REPO_URL),--repo-url "$(REPO_URL)") \
		$(if $(REPO_REF),--ref "$(REPO_REF)")

# A fresh temporary venv of pyproject's requirements without torch, frozen into $(LOCK); run it
# with the Python CI uses (make lock PYTHON=python3.11), then make test, then commit $(LOCK).
lock:
	$(PYTHON) scripts/lock.py --out $(LOCK)

# Every notebook (both editions), the unit tests and the throughput benchmark on a CUDA GPU, with
# what differs from the stored CPU outputs; without a GPU it says so and runs nothing.
gpu-check: setup
	$(BIN)/python scripts/gpu_check.py

bench: setup
	for script in benchmarks/[!_]*.py; do echo "== $$script"; $(BIN)/python $$script || exit 1; done
