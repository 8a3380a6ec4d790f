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

.PHONY: demo test lint venv clean-venv loop loop-quick

demo: $(RUNTIME_STAMP)
	$(BIN)/python app.py $(ARGS)

test: $(TEST_STAMP)
	@bash scripts/ensure_chromium.sh
	$(BIN)/python -m pytest $(PYTEST_ARGS)

# The examiner loop measured on real data (docs/loop.md): the simulated examiner labels through the app, then
# every point of the drawing and text learning curves, then the page. About 1.5 h on 2 cores.
SHARED := ../shared/data
loop: $(TEST_STAMP)
	$(BIN)/patent-demo corpus build --source images $(SHARED)/design_patents_2007_uspc_macaulay --out runs/uspc2007 \
		--splits splits/uspc2007.json --quiet
	$(BIN)/python -m train.loop.curves --corpus runs/uspc2007 --labels-dir runs/loop --simulate --out docs/loop.json
	$(BIN)/patent-demo corpus build --source text $(SHARED)/cs3245_patsnap_corpus_qrels --out runs/cs3245 \
		--splits splits/cs3245_text.json --quiet
	$(BIN)/python scripts/examiner_sim.py --serve --labels runs/loop/text_labels.sqlite --corpus runs/cs3245 \
		--split-file splits/cs3245_text.json --modality text --model dssdnet-minilm-ipc --queries 118 \
		--annotator sim-text-topk --out runs/loop/text_sim.json
	$(BIN)/python -m train.loop.text --corpus runs/cs3245 --labels runs/loop/text_labels.sqlite \
		--split-file splits/cs3245_text.json --out docs/loop_text.json
	$(BIN)/python scripts/figures.py

# Three points of the drawing curve, one seed (what tests/test_loop_curves.py runs in CI).
loop-quick: $(TEST_STAMP)
	$(BIN)/patent-demo corpus build --source images $(SHARED)/design_patents_2007_uspc_macaulay --out runs/uspc2007 \
		--splits splits/uspc2007.json --quiet
	$(BIN)/python -m train.loop.curves --corpus runs/uspc2007 --labels-dir runs/loop-quick --simulate --quick \
		--out runs/loop-quick/loop.json

lint: $(TEST_STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

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
