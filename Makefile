# edgeprint developer commands. `make help` lists them.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python

.PHONY: help install test test-fast lint bench bench-quick dist quickstart clean

help:
	@echo "make install     virtual environment in $(VENV) with edgeprint and its test extras"
	@echo "make test        the whole suite: ruff, mypy --strict, pytest (what CI runs)"
	@echo "make test-fast   pytest without the slow fault-injection tests"
	@echo "make bench       benchmarks (API, printing, failover; ~7 min): bench/results/*.json"
	@echo "make bench-quick the same, smaller (~1.5 min)"
	@echo "make dist        dist/edgeprint: one file that runs with Debian 12's python3"
	@echo "make quickstart  two local IPP printers + the appliance (see README)"

$(PY):
	$(PYTHON) -m venv $(VENV)

install: $(PY)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test,dist]'

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
	$(PY) -m bench.print_bench
	$(PY) -m bench.failover_bench
	$(MAKE) dist && $(PY) -m bench.startup_bench

bench-quick:
	$(PY) -m bench.api_bench --quick
	$(PY) -m bench.print_bench --quick
	$(PY) -m bench.failover_bench --quick

dist:
	PY=$(PY) bash scripts/build_dist.sh

quickstart:
	bash scripts/quickstart.sh

clean:
	rm -rf build dist *.egg-info .pytest_cache .mypy_cache .ruff_cache
