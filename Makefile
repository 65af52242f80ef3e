# edgeprint developer commands. `make help` lists them.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python

.PHONY: help install test test-fast lint bench bench-deps bench-quick dist quickstart clean deb

help:
	@echo "make install     virtual environment in $(VENV) with edgeprint and its test extras"
	@echo "make test        the whole suite: ruff, mypy --strict, pytest (what CI runs)"
	@echo "make test-fast   pytest without the slow fault-injection tests"
	@echo "make bench       every benchmark: table printed, bench/results/latest.{json,md}"
	@echo "make bench-quick the same, smaller"
	@echo "make dist        dist/edgeprint: one file that runs with Debian 12's python3"
	@echo "make deb         dist/edgeprint_<version>_<arch>.deb: the Debian package (dpkg-deb, lintian)"
	@echo "make quickstart  two local IPP printers + the appliance (see README)"

$(PY):
	$(PYTHON) -m venv $(VENV)

install: $(PY)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test,dist]'
	@# axe-core (npm, pinned by tests/axe/package-lock.json): the page tests' accessibility check
	@if command -v npm >/dev/null; then npm ci --prefix tests/axe --no-audit --no-fund --silent; \
	else echo "make install: npm not found: the page tests' axe check is skipped (apt-get install npm)"; fi

lint:
	$(PY) -m ruff check edgeprint tests testbed bench
	$(PY) -m ruff format --check edgeprint tests testbed bench
	$(PY) -m mypy edgeprint
	$(PY) -m mypy testbed bench

test: lint
	$(PY) -m pytest -q --durations=15

test-fast:
	$(PY) -m pytest -q -m "not slow"

# Each benchmark writes bench/results/<name>.json; bench.report joins them into
# bench/results/latest.{json,md}, prints the table, then rewrites README.md's Performance
# table from latest.json (tests/test_readme_figures.py). A failing benchmark fails the target.
BENCHES = api print failover cups chaos resources render fleet soak ipp pg adversary morning powercut
# printers (ippeveprinter + its dbus-daemon), the CUPS scheduler of the side-by-side run,
# PostgreSQL (bench.pg_bench runs its own throw-away cluster)
BENCH_DEBS = cups-ipp-utils dbus-daemon cups-daemon cups-client postgresql fuse3 python3-pyfuse3 faketime patroni etcd-server

bench-deps: install
	bash scripts/apt_deps.sh $(BENCH_DEBS)
	$(PY) -m pip install --quiet -e '.[test,dist,bench]'

bench: bench-deps
	@for b in $(BENCHES); do echo "== bench.$${b}_bench"; $(PY) -m bench.$${b}_bench || exit 1; done
	$(MAKE) --no-print-directory dist && $(PY) -m bench.startup_bench
	$(PY) -m bench.report --max-age-s 21600 && $(PY) -m bench.report --readme

bench-quick: bench-deps
	@for b in $(BENCHES); do echo "== bench.$${b}_bench --quick"; $(PY) -m bench.$${b}_bench --quick || exit 1; done
	$(MAKE) --no-print-directory dist && $(PY) -m bench.startup_bench --quick
	$(PY) -m bench.report --max-age-s 21600 && $(PY) -m bench.report --readme

dist: $(PY)
	PY=$(PY) bash scripts/build_dist.sh

quickstart:
	bash scripts/quickstart.sh

clean:
	rm -rf build dist *.egg-info .pytest_cache .mypy_cache .ruff_cache

deb: $(PY)
	PY=$(PY) bash scripts/build_deb.sh
