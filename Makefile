# Two entry points (README): `make demo` runs Dynamo Lens on the bundled examples, `make test` runs every check.
# Each target does all of its own set-up on a fresh machine.

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test lint typecheck pytest clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check torch==2.13.0 -e '.[dev]'
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/dynamo-lens check examples/ --exit-zero

lint: $(STAMP)
	$(BIN)/ruff check server tests benchmarks
	$(BIN)/ruff format --check server tests benchmarks

typecheck: $(STAMP)
	$(BIN)/mypy

pytest: $(STAMP)
	$(BIN)/pytest

test: lint typecheck pytest

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache
