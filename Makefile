# Two commands for a newcomer: `make serve` and `make test`. Both build .venv from pyproject.toml when it changes.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-$(shell cksum pyproject.toml | cut -d' ' -f1)

.PHONY: serve test test-fast lint unit bench openapi migrate clean

# pip is quiet (its per-package lines would bury the rest), so say what it installs and how long it takes.
# PYTHONWARNINGS: setuptools' editable builds print an 8-line "Editable installation" notice that asks nothing of us.
$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "worthit needs Python >= 3.11")'
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	@echo "Installing worthit into $(VENV)/ with the server, profiles and dev extras (about 80 packages: Litestar,"
	@echo "SQLAlchemy, polars, pytest, mypy, ...). The first time this takes about 2 minutes; later, after a change to"
	@echo "pyproject.toml, seconds."
	@$(BIN)/python -m pip install --quiet --disable-pip-version-check --upgrade pip
	@start=$$(date +%s); PYTHONWARNINGS="ignore:Editable installation" \
		$(BIN)/python -m pip install --quiet --disable-pip-version-check -e '.[server,profiles,dev]' && \
		echo "Installed in $$(( $$(date +%s) - start )) s; the command is $(BIN)/worthit."
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
	@# The peers the profile readers are measured against and the engine (pandas, HTA, zen-engine): bench-time only.
	@echo "Installing the bench extra (pandas, numpy, HolisticTraceAnalysis, zen-engine: the peers measured against)..."
	@PYTHONWARNINGS="ignore:Editable installation" \
		$(BIN)/python -m pip install --quiet --disable-pip-version-check -e '.[server,profiles,dev,bench]'
	@command -v wrk >/dev/null || { test "$$(id -u)" = 0 && { apt-get install -y -qq wrk >/dev/null 2>&1 || \
		{ apt-get update -qq && apt-get install -y -qq wrk >/dev/null; }; }; } || \
		echo "wrk is missing (apt-get install wrk): the HTTP cases will be skipped"
	$(BIN)/python benchmarks/run.py

openapi: $(STAMP)
	$(BIN)/worthit openapi -o openapi/openapi.json

migrate: $(STAMP)
	$(BIN)/worthit migrate

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis .mypy_cache .ruff_cache worthit.db worthit.db-wal worthit.db-shm
