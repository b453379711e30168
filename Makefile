# Two entry points (README): `make demo` runs Dynamo Lens on the bundled examples, `make test` runs every check.
# Each target does all of its own set-up on a fresh machine.

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test lint typecheck pytest clean extension test-extension demo-editor

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check torch==2.13.0 -e '.[dev]'
	touch $(STAMP)

demo: $(STAMP) extension
	$(BIN)/dynamo-lens check examples/ --exit-zero
	$(BIN)/dynamo-lens run examples/training_project/train.py

lint: $(STAMP)
	$(BIN)/ruff check server tests benchmarks
	$(BIN)/ruff format --check server tests benchmarks

typecheck: $(STAMP)
	$(BIN)/mypy

pytest: $(STAMP)
	$(BIN)/pytest

test: lint typecheck pytest test-extension

# The VS Code extension (extension/, package.json): npm packages, then the .vsix with the bundled server.
NODE_STAMP := node_modules/.package-lock.json

$(NODE_STAMP): package.json package-lock.json
	npm ci --no-audit --no-fund

extension: $(STAMP) $(NODE_STAMP)
	npm run check
	PYTHON=$(BIN)/python npm run bundle:server
	npm run package

# Unit tests of the client and its bootstrap, then the end-to-end test in code-server (installs it, cached).
test-extension: extension
	npm run test:unit
	$(BIN)/pytest -q extension/test/bootstrap
	npm run test:e2e

# The bundled examples in a real VS Code in the browser, with the extension installed; prints the URL.
demo-editor: extension
	bash extension/scripts/demo-editor.sh

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache
