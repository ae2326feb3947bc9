# ragpulse — the two commands a newcomer needs: `make demo` and `make test`.
# Both create .venv and install everything on a fresh machine.

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# The CPU build of torch (a plain `torch` from PyPI is the multi-gigabyte CUDA build on
# Linux). Its source: a local wheel folder when one holds a torch wheel (WHEELS, e.g. a
# machine without access to download.pytorch.org), else PyTorch's CPU wheel index.
TORCH := torch==2.13.0
WHEELS ?= /opt/wheels
TORCH_INDEX ?= https://download.pytorch.org/whl/cpu
FIND_LINKS := $(if $(wildcard $(WHEELS)),--find-links $(WHEELS),)
TORCH_SOURCE := $(if $(wildcard $(WHEELS)/torch-*.whl),--find-links $(WHEELS),--index-url $(TORCH_INDEX))
PYTEST_ARGS ?=
# Parallel test workers (pytest-xdist): one per core, at most 4. Each worker takes the next
# test when it is free, slow tests first (tests/fixtures/parallel.py; CONTRIBUTING "Tests").
TEST_WORKERS ?= $(shell n=$$(nproc 2>/dev/null || echo 2); [ $$n -gt 4 ] && n=4; echo $$n)
XDIST := -n $(TEST_WORKERS) --dist load --maxschedchunk 1

.PHONY: venv demo test test-fast test-instrumentation lint typecheck docs bench clean help

help:
	@echo "make demo   run ragpulse on embedded defaults (broker, SQLite, sample traffic, /metrics);"
	@echo "            make demo JUDGE=local adds a small local LLM judge (built once)"
	@echo "make test   run the whole test suite (real Kafka-compatible broker, PostgreSQL, Prometheus)"
	@echo "make test-fast  the edit loop: the same on parallel workers without the tests marked slow"
	@echo "make test-instrumentation [UPGRADE=1]  the real instrumentation libraries' tests (on their newest releases)"
	@echo "make lint   ruff and the layers contract (lint-imports);  make typecheck  mypy --strict;  make bench  the benchmarks"
	@echo "make docs   regenerate the reference pages and runbooks (docs/) and build the site strictly (site/)"

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet $(TORCH_SOURCE) $(TORCH)
	$(BIN)/pip install --quiet $(FIND_LINKS) -e '.[dev,embedded,instrumentation]'
	touch $(STAMP)

venv: $(STAMP)

# JUDGE=local: also a small LLM judge on this machine (llama.cpp + SmolLM2-135M, built once
# by .ci/install_llama, ~10-20 min the first time), so the judge metrics show in the demo.
demo: $(STAMP)
ifeq ($(JUDGE),local)
	bash .ci/install_llama
	$(BIN)/ragpulse demo --judge local
else
	$(BIN)/ragpulse demo
endif

test: $(STAMP)
	HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 $(BIN)/python -m pytest $(XDIST) $(PYTEST_ARGS)

test-fast: $(STAMP)
	HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 $(BIN)/python -m pytest $(XDIST) -m "not slow" $(PYTEST_ARGS)

# The real instrumentation libraries' tests; UPGRADE=1 first installs each library's newest
# release (the pins in pyproject.toml's `instrumentation` extra are what CI tests).
INSTRUMENTATION = $(shell $(PYTHON) -c "import tomllib; print(' '.join(p.split('==')[0] for p in tomllib.load(open('pyproject.toml', 'rb'))['project']['optional-dependencies']['instrumentation']))")
test-instrumentation: $(STAMP)
ifdef UPGRADE
	$(BIN)/pip install --quiet --upgrade $(INSTRUMENTATION)
endif
	@$(BIN)/pip list 2>/dev/null | grep -i -E "$(shell echo $(INSTRUMENTATION) | tr ' ' '|')"
	HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 $(BIN)/python -m pytest tests/instrumentation $(PYTEST_ARGS)

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports --no-logo

typecheck: $(STAMP)
	$(BIN)/mypy ragpulse collector evaluators exporters migrations dashboards

# The documentation site: the generated references and runbooks, then a strict build
# (offline; `$(BIN)/mkdocs serve` serves it at http://127.0.0.1:8000/).
docs: $(STAMP)
	HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 $(BIN)/python -m ragpulse.docs
	$(BIN)/mkdocs build --strict

bench: $(STAMP)
	$(BIN)/python -m benchmarks.metrics
	$(BIN)/python -m benchmarks.judge
	$(BIN)/python -m benchmarks.ingest
	$(BIN)/python -m benchmarks.decode_floor
	$(BIN)/python -m benchmarks.otlp_decode
	$(BIN)/python -m benchmarks.monitor
	OMP_NUM_THREADS=1 $(BIN)/python -m benchmarks.embeddings_choice
	$(BIN)/python -m benchmarks.cardinality
	$(BIN)/python -m benchmarks.worst_traces
	$(BIN)/python -m benchmarks.partitions
	$(BIN)/python -m benchmarks.score_histograms
	$(BIN)/python -m benchmarks.alerting --baseline 938c36a
	$(BIN)/python -m benchmarks.evaluation_events
	$(BIN)/python -m benchmarks.comparison

clean:
	rm -rf $(VENV) build site *.egg-info .pytest_cache .mypy_cache .ruff_cache ragpulse.db*
