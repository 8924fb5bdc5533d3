# Everything bootstraps its own virtualenv: a fresh machine needs only python3 and make.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
BASE := $(VENV)/.base-installed# the package and its dependencies: all `make demo` needs
DEV := $(VENV)/.dev-installed# plus the dev, ADK and agentino extras: what tests, lint and bench need
FLOOR := .venv-floor

.PHONY: demo test dist test-floor test-pythons lint bench fuzz e2e bench-e2e clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(BASE): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install -q -e .
	touch $@

$(DEV): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[dev,adk,agentino]'
	touch $@ $(BASE)

demo: $(BASE)
	@$(BIN)/python examples/demo.py

lint: $(DEV)
	$(BIN)/ruff check sciontool_py tests benchmarks examples e2e hatch_build.py
	$(BIN)/ruff format --check sciontool_py tests benchmarks examples e2e hatch_build.py
	$(BIN)/mypy
	$(BIN)/mypy --config-file tests/mypy.ini tests

# Compiled first, as an installed wheel is: the suite starts hundreds of `sciontool`
# processes, and with PYTHONDONTWRITEBYTECODE set each would compile the package anew.
test: lint
	$(BIN)/python -m pip check
	$(BIN)/python -m compileall -q sciontool_py
	$(BIN)/pytest

# The sdist and wheel as an index would get them, built in an isolated environment from
# [build-system], and their metadata checked as the index renders it (CI runs it after `make test`).
dist: $(DEV)
	rm -rf dist
	$(BIN)/python -m build --outdir dist
	$(BIN)/twine check --strict dist/*

# The CLI smoke tests against the oldest versions pyproject.toml allows (CI runs it after `make test`).
$(FLOOR)/.installed: pyproject.toml tests/floor_constraints.py
	$(PYTHON) -m venv $(FLOOR)
	$(PYTHON) tests/floor_constraints.py > $(FLOOR)/constraints.txt
	$(FLOOR)/bin/python -m pip install -q -c $(FLOOR)/constraints.txt -e . pytest
	touch $@

test-floor: $(FLOOR)/.installed
	$(FLOOR)/bin/python -m pip list --format=freeze | grep -i -E '^(typer|pyyaml|orjson|click|opentelemetry-sdk|opentelemetry-exporter-otlp-proto-grpc|opentelemetry-exporter-otlp-proto-http)=='
	$(FLOOR)/bin/python -m pytest -q -p no:cacheprovider -o addopts="" tests/test_cli_smoke.py

# The other supported CPythons (pyproject says 3.10+): the CLI, go-golden, hook, telemetry and
# harness tests on each, in a venv of its own. An interpreter that is not installed is
# reported as skipped, never passed over in silence. Found on PATH or under pyenv.
PYTHONS ?= 3.10 3.12 3.13
PYTHON_SUBSET ?= tests/test_cli.py tests/test_cli_smoke.py tests/test_go_golden.py tests/test_hook.py \
	tests/test_hook_cli.py tests/test_fastpath.py tests/telemetry/test_cli.py tests/telemetry/test_mapping.py \
	tests/telemetry/test_session.py tests/telemetry/test_settings.py tests/harness/test_cli.py \
	tests/harness/test_edit.py tests/harness/test_merge.py tests/hostile/test_hub.py
test-pythons:
	@set -e; for v in $(PYTHONS); do \
	  py=""; \
	  for c in "$$(command -v python$$v || true)" $$HOME/.pyenv/versions/$$v.*/bin/python$$v; do \
	    if [ -x "$$c" ] && "$$c" -c 'import sys' >/dev/null 2>&1; then py="$$c"; break; fi; \
	  done; \
	  if [ -z "$$py" ]; then echo "test-pythons: SKIPPED CPython $$v: no working python$$v on PATH or under pyenv"; continue; fi; \
	  echo "test-pythons: CPython $$v ($$py)"; \
	  [ -x .venv-py$$v/bin/python ] || "$$py" -m venv .venv-py$$v; \
	  .venv-py$$v/bin/python -m pip install -q --upgrade pip; \
	  .venv-py$$v/bin/python -m pip install -q -e '.[dev]'; \
	  .venv-py$$v/bin/python -m compileall -q sciontool_py; \
	  .venv-py$$v/bin/python -m pytest -q -p no:cacheprovider $(PYTHON_SUBSET); \
	done

# The Hypothesis fuzz targets at length (make test runs them briefly).
FUZZ_EXAMPLES ?= 20000
fuzz: $(DEV)
	SCIONTOOL_FUZZ_EXAMPLES=$(FUZZ_EXAMPLES) $(BIN)/pytest -m fuzz -q

# Byte-compile first: an editable install has no .pyc files when PYTHONDONTWRITEBYTECODE is
# set, and compiling every module on every call is not what an installed wheel pays.
bench: $(DEV)
	$(BIN)/python -m compileall -q sciontool_py
	$(BIN)/python benchmarks/bench.py

# The real harnesses (npm: Claude Code, Gemini CLI, Codex, opencode, Copilot CLI, Qwen Code, Droid, Auggie;
# PyPI, each in a venv: Mistral Vibe, Hermes Agent; about 1.5 GB in .e2e-cache/, fetched once)
# wired by `sciontool harness install`, scripted scenarios (headless and in tmux) against a fake
# model on 127.0.0.1, each with a truth ratio of agent-info.json (docs/e2e.md).
# Not part of `make test`; needs node, npm and tmux. E2E_HARNESSES narrows it, e.g. "claude codex".
e2e: $(BASE)
	$(BIN)/python e2e/run.py $(E2E_HARNESSES)

# What the hooks cost a session (issue 30): make e2e's harnesses and fake model, each session with
# no hooks, with `true` as every hook, and as shipped (telemetry off, and on with a live receiver),
# alternated in one run (docs/performance.md). Reports, and fails on no target unless
# BENCH_E2E_ARGS has --check; e.g. BENCH_E2E_ARGS="--rounds 3 --only claude". 15 to 20 minutes at 7 rounds.
bench-e2e: $(DEV)
	$(BIN)/python -m compileall -q sciontool_py
	$(BIN)/python benchmarks/sessions.py $(BENCH_E2E_ARGS)

clean:
	rm -rf $(VENV) $(FLOOR) .venv-py3.* build dist *.egg-info .pytest_cache .mypy_cache .ruff_cache
