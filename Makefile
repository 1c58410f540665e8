# mqlite-py: `make run` starts a broker (or the embedded demo), `make test` runs every test tier.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
PIP    := $(VENV)/bin/pip
STAMP  := $(VENV)/.installed

.PHONY: run test lint bench venv clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PIP) install -q --upgrade pip
	$(PIP) install -q -e '.[test,lint]'
	touch $(STAMP)

venv: $(STAMP)

# The broker on ./data/mq.db, loopback only; prints a generated admin token unless
# MQLITE_TOKENS is set. MQLITE_ADDR=:6754 make run listens on every interface.
run: $(STAMP)
	mkdir -p data
	MQLITE_DB=file:./data/mq.db MQLITE_ADDR=$${MQLITE_ADDR:-127.0.0.1:6754} $(VENV)/bin/mqlite serve

test: $(STAMP)
	$(PY) -m pytest -q -p no:cacheprovider

lint: $(STAMP)
	$(VENV)/bin/ruff format --no-cache --check app tests
	$(VENV)/bin/ruff check --no-cache app tests
	$(VENV)/bin/mypy
	$(VENV)/bin/lint-imports
	$(PY) scripts/gen_sdk.py --check

bench: $(STAMP)
	$(PY) tests/bench/engine_bench.py
	$(PY) tests/bench/topic_bench.py
	$(PY) tests/bench/http_bench.py

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .mypy_cache .ruff_cache
