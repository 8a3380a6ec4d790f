# Two entry points: `make demo` runs the workbench, `make test` runs the whole test suite.
# Both create (or reuse) the virtualenv in .venv and install the pinned requirements.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
RUNTIME_STAMP := $(VENV)/.runtime-$(shell cat requirements.txt | sha1sum | cut -c1-10)
TEST_STAMP := $(VENV)/.test-$(shell cat requirements.txt requirements-test.txt | sha1sum | cut -c1-10)

# Nothing may download weights or data at run time: make an accidental download fail loudly.
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export HF_HUB_DISABLE_TELEMETRY := 1
export GRADIO_ANALYTICS_ENABLED := False

.PHONY: demo test lint venv clean-venv

demo: $(RUNTIME_STAMP)
	$(BIN)/python app.py $(ARGS)

test: $(TEST_STAMP)
	@bash scripts/ensure_chromium.sh
	$(BIN)/python -m pytest $(PYTEST_ARGS)

lint: $(TEST_STAMP)
	$(BIN)/ruff check .

venv: $(RUNTIME_STAMP)

$(VENV)/bin/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

$(RUNTIME_STAMP): requirements.txt | $(VENV)/bin/python
	$(BIN)/python -m pip install -q -r requirements.txt
	$(BIN)/python -m pip install -q --no-deps -e .
	rm -f $(VENV)/.runtime-*
	touch $@

$(TEST_STAMP): requirements.txt requirements-test.txt $(RUNTIME_STAMP)
	$(BIN)/python -m pip install -q -r requirements-test.txt
	rm -f $(VENV)/.test-*
	touch $@

clean-venv:
	rm -rf $(VENV)
