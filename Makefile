# The two commands: `make run` and `make test`. Both set up what they need first.
# `make run ARGS="--config room.toml --without camera"` passes ARGS to `humaine-env run`.
VENV := .venv
PY := $(VENV)/bin/python
ARGS ?=

.PHONY: setup run test test-fast bench lint

setup:
	@bash scripts/setup.sh

run: setup
	$(VENV)/bin/humaine-env run $(ARGS)

# All three tiers (tests/unit, tests/integration, tests/e2e) on three workers: each starts with its
# share of the tests in order (the long e2e scenarios first) and takes over the rest of a busier
# one's when it runs out; the 15 slowest tests are listed.
test: setup
	$(PY) -m pytest -n 3 --dist worksteal --durations=15

# The unit tier alone, for the development loop (seconds; no broker, no browser, no model).
test-fast: setup
	$(PY) -m pytest tests/unit

bench: setup
	@for b in bench/*.py; do echo "== $$b" >&2; $(PY) $$b || exit 1; done

lint: setup
	$(VENV)/bin/ruff check .
	$(VENV)/bin/lint-imports --no-cache
