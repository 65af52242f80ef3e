# edgeprint developer commands. `make help` lists them.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python

.PHONY: help install test test-fast lint bench quickstart clean

help:
	@echo "make install     virtual environment in $(VENV) with edgeprint and its test extras"
	@echo "make test        the whole suite: ruff, mypy --strict, pytest (what CI runs)"
	@echo "make test-fast   pytest without the slow fault-injection tests"
	@echo "make bench       benchmarks; figures printed and written to bench/results/"
	@echo "make quickstart  two local IPP printers + the appliance (see README)"

$(PY):
	$(PYTHON) -m venv $(VENV)

install: $(PY)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test]'

lint:
	$(PY) -m ruff check edgeprint tests bench
	$(PY) -m ruff format --check edgeprint tests bench
	$(PY) -m mypy edgeprint

test: lint
	$(PY) -m pytest -q

test-fast:
	$(PY) -m pytest -q -m "not slow"

bench:
	$(PY) -m bench.api_bench

quickstart:
	bash scripts/quickstart.sh

clean:
	rm -rf build dist *.egg-info .pytest_cache .mypy_cache .ruff_cache
