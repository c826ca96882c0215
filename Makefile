# nodeconf: `make run` runs the suites against the reference VM and writes reports/; `make test` runs the tests.
# Both install what they need first: a virtual environment, the host packages, the VM image, the report tool
# (Allure's HTML: `make run` skips it when npm is missing).
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
ALLURE := nodeconf/report/npm/node_modules/.bin/allure

.PHONY: setup venv host image report-tool report-tool-if-npm lint test run
setup: venv host image report-tool

venv: $(VENV)/.installed
$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $@

host:
	bash nodeconf/infra/install-host.sh

image: venv host
	$(BIN)/python -m nodeconf.infra.vm.image

report-tool: $(ALLURE)
$(ALLURE): nodeconf/report/npm/package-lock.json
	sh nodeconf/report/install-tool.sh
	touch $@

# Allure's own HTML is optional for a run: without npm the nodeconf HTML report, JUnit and summary.json are written.
report-tool-if-npm:
	@if command -v npm >/dev/null 2>&1; then $(MAKE) --no-print-directory report-tool; \
	else echo "make: npm not found: no Allure HTML (optional; nodeconf's own HTML report is written)"; fi

lint: venv
	$(BIN)/ruff check .
	$(BIN)/mypy

test: setup lint
	$(BIN)/pytest -n 2 --dist loadgroup --no-loadscope-reorder --durations=25 tests

run: venv host image report-tool-if-npm
	$(BIN)/nodeconf run
