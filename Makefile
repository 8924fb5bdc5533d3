# Everything bootstraps its own virtualenv: a fresh machine needs only python3 and make.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test lint bench fuzz clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[dev,adk]'
	touch $(STAMP)

demo: $(STAMP)
	@$(BIN)/python examples/demo.py

lint: $(STAMP)
	$(BIN)/ruff check sciontool_py tests benchmarks examples
	$(BIN)/ruff format --check sciontool_py tests benchmarks examples
	$(BIN)/mypy

# Compiled first, as an installed wheel is: the suite starts hundreds of `sciontool`
# processes, and with PYTHONDONTWRITEBYTECODE set each would compile the package anew.
test: lint
	$(BIN)/python -m compileall -q sciontool_py
	$(BIN)/pytest

# The Hypothesis fuzz targets at length (make test runs them briefly).
FUZZ_EXAMPLES ?= 20000
fuzz: $(STAMP)
	SCIONTOOL_FUZZ_EXAMPLES=$(FUZZ_EXAMPLES) $(BIN)/pytest -m fuzz -q

# Byte-compile first: an editable install has no .pyc files when PYTHONDONTWRITEBYTECODE is
# set, and compiling every module on every call is not what an installed wheel pays.
bench: $(STAMP)
	$(BIN)/python -m compileall -q sciontool_py
	$(BIN)/python benchmarks/bench.py

clean:
	rm -rf $(VENV) build dist *.egg-info .pytest_cache .mypy_cache .ruff_cache
