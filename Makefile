# Two entry points (README): `make demo` runs Dynamo Lens on the bundled examples, `make test` runs every check.
# Each target does all of its own set-up on a fresh machine.

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test lint typecheck pytest clean extension test-extension demo-editor oracle oracle-newest

$(STAMP): pyproject.toml
	@echo "make: installing torch 2.13.0 (CPU) and the dev tools into $(VENV); a few minutes the first time"
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --disable-pip-version-check --progress-bar on torch==2.13.0 -e '.[dev]'
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

test: lint typecheck pytest test-extension oracle-newest

# The oracle tests (fixtures under real torch.compile, compared with what the findings claim) against another torch:
# `make oracle TORCH=2.14.1`. Its environment is made once under ~/.cache/dynamo-lens/envs/ (pinned: the Linux wheels
# are CUDA builds of about 5 GB with their dependencies).
TORCH ?= 2.13.0
ORACLE_ENV := $(HOME)/.cache/dynamo-lens/envs/torch-$(TORCH)
$(ORACLE_ENV)/.installed:
	@echo "make: installing torch $(TORCH) into $(ORACLE_ENV); a minute or two the first time"
	$(PYTHON) -m venv $(ORACLE_ENV)
	$(ORACLE_ENV)/bin/python -m pip install --disable-pip-version-check --progress-bar on torch==$(TORCH) numpy
	touch $@

oracle: $(STAMP) $(ORACLE_ENV)/.installed
	DYNAMO_LENS_ORACLE_PYTHON=$(ORACLE_ENV)/bin/python $(BIN)/pytest -m 'oracle and slow' -q tests/static tests/runtime

# `make test` runs the oracle on the newest torch the registry serves too (the pinned one runs in `pytest`).
NEWEST_TORCH := 2.14.1
oracle-newest:
	$(MAKE) oracle TORCH=$(NEWEST_TORCH)

# The VS Code extension (extension/, package.json): npm packages, then the .vsix with the bundled server, built
# again only when something it is made from changed (`make test` right after `make demo` reuses it).
NODE_STAMP := node_modules/.package-lock.json
VERSION := $(shell sed -n 's/^  "version": "\(.*\)",$$/\1/p' package.json)
VSIX := dynamo-lens-$(VERSION).vsix
VSIX_INPUTS := package.json package-lock.json pyproject.toml tsconfig.json eslint.config.mjs .prettierrc.json \
	.prettierignore .vscodeignore README.md LICENSE \
	$(shell find extension/src extension/test extension/bootstrap extension/scripts server/dynamo_lens docs/screenshots \
		-type f -not -path '*/__pycache__/*' 2>/dev/null)

$(NODE_STAMP): package.json package-lock.json
	npm ci --no-audit --no-fund

extension: $(VSIX)

$(VSIX): $(STAMP) $(NODE_STAMP) $(VSIX_INPUTS)
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
