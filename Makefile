# Two commands for a newcomer: `make serve` and `make test`. Both build .venv from pyproject.toml when it changes.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-$(shell cksum pyproject.toml | cut -d' ' -f1)

.PHONY: serve test test-fast lint unit bench openapi migrate clean

$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "worthit needs Python >= 3.11")'
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --upgrade pip
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e '.[dev]'
	@# mypy cannot see through the editable install's import hook: it reads `worthit.*` from these links.
	@mkdir -p $(VENV)/src/worthit && for d in rules service migrations; do ln -sfn "$(CURDIR)/$$d" $(VENV)/src/worthit/$$d; done
	@rm -f $(VENV)/.installed-* && touch $@

serve: $(STAMP)
	$(BIN)/worthit serve

test: $(STAMP) lint
	$(BIN)/python -m pytest

lint: $(STAMP)
	$(BIN)/ruff check rules service migrations tests benchmarks
	$(BIN)/ruff format --check --quiet rules service migrations tests benchmarks
	$(BIN)/mypy

# The unit and property tests alone (no server, no database): under a minute.
test-fast: $(STAMP)
	$(BIN)/python -m pytest tests/unit tests/property -q

unit: test-fast

bench: $(STAMP)
	@# The peers the profile readers and the engine are measured against (pandas, HTA, zen-engine): bench-time only.
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e '.[dev,bench]'
	@command -v wrk >/dev/null || { test "$$(id -u)" = 0 && { apt-get install -y -qq wrk >/dev/null 2>&1 || \
		{ apt-get update -qq && apt-get install -y -qq wrk >/dev/null; }; }; } || \
		echo "wrk is missing (apt-get install wrk): the HTTP cases will be skipped"
	$(BIN)/python benchmarks/run.py

openapi: $(STAMP)
	$(BIN)/worthit openapi

migrate: $(STAMP)
	$(BIN)/worthit migrate

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis .mypy_cache .ruff_cache worthit.db worthit.db-wal worthit.db-shm
