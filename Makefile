# nodeconf: `make run` runs the suites against the reference VM and writes reports/; `make test` runs the tests.
# Both install what they need first (a virtual environment, host packages, the VM image, the report tool).
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: setup venv host test lint unit run
setup: venv host

venv: $(VENV)/.installed
$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $@

host:
	bash infra/install-host.sh

lint: venv
	$(BIN)/ruff check .
	$(BIN)/mypy

test: setup lint
	$(BIN)/pytest tests

run: setup
	$(BIN)/nodeconf run
