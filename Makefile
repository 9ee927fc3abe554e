# `make test`, `make lint` and `make demo` set themselves up: a virtual environment in .venv, reused
# while setup.py, constraints.txt and this Makefile are unchanged (fairseq compiles C++ for minutes).
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
PIP := $(BIN)/python -m pip
# pip's resolver would report fairseq's torchaudio, left out on purpose, after every install:
# scripts/install.sh checks the environment once, with that one explained.
PIP_INSTALL := $(PIP) install --quiet --no-warn-conflicts --constraint constraints.txt
FAIRSEQ_STAMP := $(VENV)/.fairseq-installed
PROJECT_STAMP := $(VENV)/.project-installed
# wandb (setup.py's wandb extra) for tests/test_wandb.py only, beside .venv rather than in it:
# fairseq imports it in every process that can (~0.45 s each).
WANDB_SITE := .wandb-site
# hydra-submitit-launcher (setup.py's slurm extra) for tests/test_packing.py alone, which composes
# the SLURM launcher's config of a packed sweep without submitting: beside .venv as wandb is.
SLURM_SITE := .slurm-site
DEMO_OUT ?= demo-out
PYTEST_ARGS ?=
EXTRAS ?= hf

.PHONY: venv install test lint demo clean-venv

venv: $(PROJECT_STAMP)

# The CPU torch first, then scripts/install.sh (the route for any environment with its torch):
# fairseq built against that torch, then the package, torch kept as it is.
$(FAIRSEQ_STAMP): constraints.txt scripts/install.sh
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(PIP_INSTALL) --upgrade pip 'setuptools<81' wheel
	$(PIP_INSTALL) torch==2.13.0
	bash scripts/install.sh --python $(BIN)/python --only fairseq
	touch $@

# seqeval (a reference scorer for the tests) builds only with an older setuptools_scm. wandb and
# its requirements go to $(WANDB_SITE) (torch is none of them; constraints.txt holds it anyway),
# the SLURM launcher and submitit to $(SLURM_SITE) (their other requirements are in .venv).
$(PROJECT_STAMP): $(FAIRSEQ_STAMP) setup.py constraints.txt Makefile
	bash scripts/install.sh --python $(BIN)/python --editable --extras hf,parquet,tensorboard,test
	$(PIP_INSTALL) 'setuptools_scm<9'
	$(PIP_INSTALL) --no-build-isolation seqeval==1.2.2
	rm -rf $(WANDB_SITE)
	$(PIP_INSTALL) --target $(WANDB_SITE) 'wandb==0.31.*'
	rm -rf $(SLURM_SITE)
	$(PIP_INSTALL) --no-deps --target $(SLURM_SITE) 'hydra-submitit-launcher==1.2.0' 'submitit==1.5.4'
	$(BIN)/python -c "import torch; assert torch.__version__.startswith('2.13.0'), torch.__version__"
	touch $@

# Into another environment with its own torch (CUDA or CPU), which stays:
#   make install PYTHON=/path/to/env/bin/python EXTRAS=hf,slurm
install:
	bash scripts/install.sh --python $(PYTHON) --extras '$(EXTRAS)'

test: $(PROJECT_STAMP)
	$(BIN)/python -m pytest tests $(PYTEST_ARGS)

# ruff (pinned in setup.py's test extra, configured in ruff.toml): lint rules, then the formatting.
lint: $(PROJECT_STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

demo: $(PROJECT_STAMP)
	PATH="$(abspath $(BIN)):$$PATH" bash scripts/demo.sh $(DEMO_OUT)

clean-venv:
	rm -rf $(VENV) $(WANDB_SITE) $(SLURM_SITE)
