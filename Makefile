# mqlite-py: `make run` starts a broker (or the embedded demo), `make test` runs every test tier.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
PIP    := $(VENV)/bin/pip
STAMP  := $(VENV)/.installed

.PHONY: run test lint bench venv clean image image-test stack-up stack-down secrets

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

# Every tier, the container one included (ops/ci/install-deps.sh installs the system
# tools it drives: podman, debootstrap, caddy, ...; only what is missing).
test: $(STAMP)
	ops/ci/install-deps.sh
	$(PY) -m pytest -q -p no:cacheprovider

# ---- the appliance (Dockerfile, compose.yaml; docs/deployment.md) ------------------------
IMAGE   ?= localhost/mqlite:latest
# docker where a daemon answers, else podman; podman needs --format docker to keep the
# HEALTHCHECK. IMAGE_FLAGS=--pull=never builds on cached (or stand-in) base images only.
ENGINE  ?= $(shell docker info >/dev/null 2>&1 && echo docker || echo podman)
COMPOSE ?= $(shell docker compose version >/dev/null 2>&1 && echo "docker compose" || echo $(CURDIR)/$(VENV)/bin/podman-compose)
PROFILES ?=
IMAGE_FLAGS ?=

image:
	$(ENGINE) build $(if $(filter podman,$(ENGINE)),--format docker) $(IMAGE_FLAGS) -t $(IMAGE) .

# The container tier alone: the real image, compose stack and systemd unit under podman
# with stand-in base images (ops/ci/standin-images.sh, cached between runs).
image-test: $(STAMP)
	ops/ci/install-deps.sh
	$(PY) -m pytest -q -p no:cacheprovider tests/appliance

secrets:
	deploy/compose-secrets.sh ./secrets

stack-up: secrets
	MQLITE_IMAGE=$(IMAGE) $(COMPOSE) $(foreach p,$(PROFILES),--profile $(p)) up -d

stack-down:
	MQLITE_IMAGE=$(IMAGE) $(COMPOSE) down

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
