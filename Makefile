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

.PHONY: venv demo test test-fast lint typecheck bench clean help

help:
	@echo "make demo   run ragpulse on embedded defaults (broker, SQLite, sample traffic, /metrics)"
	@echo "make test   run the whole test suite (real Kafka-compatible broker, PostgreSQL, Prometheus)"
	@echo "make test-fast  the edit loop: the same on parallel workers without the tests marked slow"
	@echo "make lint   ruff and the layers contract (lint-imports);  make typecheck  mypy --strict;  make bench  the benchmarks"

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet $(TORCH_SOURCE) $(TORCH)
	$(BIN)/pip install --quiet $(FIND_LINKS) -e '.[dev,embedded]'
	touch $(STAMP)

venv: $(STAMP)

demo: $(STAMP)
	$(BIN)/ragpulse demo

test: $(STAMP)
	HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 $(BIN)/python -m pytest $(XDIST) $(PYTEST_ARGS)

test-fast: $(STAMP)
	HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 $(BIN)/python -m pytest $(XDIST) -m "not slow" $(PYTEST_ARGS)

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports --no-logo

typecheck: $(STAMP)
	$(BIN)/mypy ragpulse collector evaluators exporters migrations dashboards

bench: $(STAMP)
	$(BIN)/python -m benchmarks.metrics
	$(BIN)/python -m benchmarks.judge
	$(BIN)/python -m benchmarks.ingest
	$(BIN)/python -m benchmarks.decode_floor
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
	rm -rf $(VENV) build *.egg-info .pytest_cache .mypy_cache .ruff_cache ragpulse.db*
