# Two commands do all the set-up on a fresh machine: `make run` and `make test`.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: run test lint format venv bench-import bench-sampling bench-sampling-1m

$(STAMP): requirements.txt requirements-dev.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -r requirements-dev.txt
	touch $(STAMP)

venv: $(STAMP)

# The app on its embedded default: SQLite under var/, tasks in-process, demo dataset
# loaded on first start, demo accounts printed.
run: $(STAMP)
	env -u DATABASE_URL RUN_MODE=embedded $(PY) manage.py migrate --no-input -v 0
	env -u DATABASE_URL RUN_MODE=embedded $(PY) manage.py load_demo
	env -u DATABASE_URL RUN_MODE=embedded $(PY) manage.py runserver $${PORT:-8000}

test: $(STAMP)
	scripts/test

lint: $(STAMP)
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .

format: $(STAMP)
	$(PY) -m ruff check --fix .
	$(PY) -m ruff format .

bench-import: $(STAMP)
	eval "$$($(PY) scripts/probe_services.py)" && $(PY) benchmarks/bench_import.py

# Sampling benchmarks: each prints one JSON object on its last line (see the README).
bench-sampling: $(STAMP)
	eval "$$($(PY) scripts/probe_services.py)" && $(PY) benchmarks/bench_sampling.py

bench-sampling-1m: $(STAMP)
	eval "$$($(PY) scripts/probe_services.py)" && $(PY) benchmarks/bench_sampling_1m.py
