# `make test`, `make lint` and `make demo` set themselves up: a virtual environment in .venv, reused
# while setup.py, constraints.txt and this Makefile are unchanged (fairseq compiles C++ for minutes).
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
PIP := $(BIN)/python -m pip
PIP_INSTALL := $(PIP) install --quiet --constraint constraints.txt
FAIRSEQ_STAMP := $(VENV)/.fairseq-installed
PROJECT_STAMP := $(VENV)/.project-installed
DEMO_OUT ?= demo-out
PYTEST_ARGS ?=

.PHONY: venv test lint demo clean-venv

venv: $(PROJECT_STAMP)

# torch first (the CPU wheel), then fairseq without build isolation or deps: isolation would
# download another torch, and its torchaudio requirement would replace ours.
$(FAIRSEQ_STAMP): constraints.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(PIP_INSTALL) --upgrade pip 'setuptools<81' wheel
	$(PIP_INSTALL) torch==2.13.0 cython numpy
	$(PIP_INSTALL) --no-build-isolation --no-deps fairseq-fixed==0.12.3.1
	touch $@

# seqeval (a reference scorer for the tests) builds only with an older setuptools_scm.
$(PROJECT_STAMP): $(FAIRSEQ_STAMP) setup.py constraints.txt Makefile
	$(PIP_INSTALL) 'setuptools_scm<9'
	$(PIP_INSTALL) --no-build-isolation -e '.[hf,tensorboard,test]'
	$(PIP_INSTALL) --no-build-isolation seqeval==1.2.2
	$(BIN)/python -c "import torch, fairseq, bio_roberta, user_dir; assert torch.__version__.startswith('2.13.0'), torch.__version__"
	touch $@

test: $(PROJECT_STAMP)
	$(BIN)/python -m pytest tests $(PYTEST_ARGS)

# ruff (pinned in setup.py's test extra, configured in ruff.toml): lint rules, then the formatting.
lint: $(PROJECT_STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

demo: $(PROJECT_STAMP)
	PATH="$(abspath $(BIN)):$$PATH" bash scripts/demo.sh $(DEMO_OUT)

clean-venv:
	rm -rf $(VENV)
