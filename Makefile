# The two commands: `make run` and `make test`. Both set up what they need first.
# `make run ARGS="--config room.toml --without camera"` passes ARGS to `humaine-env run`.
VENV := .venv
PY := $(VENV)/bin/python
ARGS ?=

.PHONY: setup run test test-fast bench measurements lint

setup:
	@bash scripts/setup.sh

run: setup
	$(VENV)/bin/humaine-env run $(ARGS)

# All three tiers (tests/unit, tests/integration, tests/e2e) on four workers: each starts with its
# share of the tests in order (the long e2e scenarios first) and takes over the rest of a busier
# one's when it runs out; the 15 slowest tests are listed. Four on two cores, because many tests
# wait (for the EO's round, a browser, a restarted process): three left a fifth of the CPU idle.
test: setup
	$(PY) -m pytest -n 4 --dist worksteal --durations=15

# The unit tier alone, for the development loop (seconds; no broker, no browser, no model).
test-fast: setup
	$(PY) -m pytest tests/unit

# Every benchmark with its defaults, one at a time (two at once measure each other), each through
# bench/record.py, which keeps its JSON lines with the command and the machine in the store of
# record; `make measurements` then shows them. Not benchmarks: the package, the recorder, the
# page's generator, bench/noisy.py (bench/stt.py --snr's scoring) and bench/stats.py (percentiles).
BENCH_TOOLS := bench/__init__.py bench/record.py bench/report.py bench/noisy.py bench/stats.py
BENCHMARKS := $(filter-out $(BENCH_TOOLS),$(wildcard bench/*.py))

bench: setup
	@for b in $(BENCHMARKS); do echo "== $$b" >&2; $(PY) bench/record.py $$b || exit 1; done

# The measurements page from the store of record (bench/report.py names both).
measurements: setup
	$(PY) bench/report.py

# The style, the floors and the types (mypy, strict on the package code: pyproject.toml's [tool.mypy]);
# tests/integration/humaine_env/test_house.py runs the last two in `make test` too.
lint: setup
	$(VENV)/bin/ruff check .
	$(VENV)/bin/lint-imports --no-cache
	$(VENV)/bin/mypy
