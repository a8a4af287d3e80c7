# The two commands: `make run` and `make test`. Both set up what they need first.
# `make run ARGS="--config room.toml --without camera"` passes ARGS to `humaine-env run`.
VENV := .venv
PY := $(VENV)/bin/python
ARGS ?=

.PHONY: setup run test bench lint

setup:
	@bash scripts/setup.sh

run: setup
	$(VENV)/bin/humaine-env run $(ARGS)

test: setup
	$(PY) -m pytest

bench: setup
	@for b in bench/*.py; do echo "== $$b" >&2; $(PY) $$b || exit 1; done

lint: setup
	$(VENV)/bin/ruff check .
	$(VENV)/bin/lint-imports --no-cache
