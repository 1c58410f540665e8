# mqlite-py: `make run` starts the broker, `make test` runs every test tier.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
PIP    := $(PY) -m pip install -q --disable-pip-version-check

# One stamp per set of tools, so each target installs only what it needs: `make run`
# gets mqlite and its runtime dependencies (no pip upgrade, no test or lint tools: its
# first start is the fastest), `make test` adds the test tools, `make lint` the linters.
RUNTIME := $(VENV)/.runtime-installed
TESTS   := $(VENV)/.test-installed
LINTERS := $(VENV)/.lint-installed

.PHONY: run test lint bench venv clean console-screenshots image image-test stack-up stack-down secrets \
        drill-restore drill-crash soak

$(PY):
	$(PYTHON) -m venv $(VENV)

$(RUNTIME): pyproject.toml | $(PY)
	$(PIP) -e .
	touch $@

$(TESTS): $(RUNTIME)
	$(PIP) -e '.[test]'
	touch $@

$(LINTERS): $(RUNTIME)
	$(PIP) -e '.[lint]'
	touch $@

# Everything a developer uses (the tests and the linters).
venv: $(TESTS) $(LINTERS)

# The broker on ./data/mq.db, loopback only; prints a generated admin token unless
# MQLITE_TOKENS is set. MQLITE_ADDR=:6754 make run listens on every interface.
run: $(RUNTIME)
	mkdir -p data
	MQLITE_DB=file:./data/mq.db MQLITE_ADDR=$${MQLITE_ADDR:-127.0.0.1:6754} \
	  $(PY) scripts/dev_run.py data/dev-token $(VENV)/bin/mqlite serve

# Every tier, the container one included (ops/ci/install-deps.sh installs the system
# tools it drives: prometheus, podman, debootstrap, caddy, ...; only what is missing).
test: $(TESTS)
	ops/ci/install-deps.sh
	PY=$(PY) ops/ci/run-tests.sh

# ---- the appliance (Dockerfile, compose.yaml; docs/deployment.md) ------------------------
IMAGE   ?= localhost/mqlite:latest
# docker where a daemon answers, else podman; podman needs --format docker to keep the
# HEALTHCHECK. IMAGE_FLAGS=--pull=never builds on cached (or stand-in) base images only.
ENGINE  ?= $(shell docker info >/dev/null 2>&1 && echo docker || echo podman)
COMPOSE ?= $(shell docker compose version >/dev/null 2>&1 && echo "docker compose" || echo $(CURDIR)/$(VENV)/bin/podman-compose)
PROFILES ?=
IMAGE_FLAGS ?=

# Labels set here, not in the Dockerfile (a layer cache would keep old values): the package
# version (its single source, app/mqlite/version.py), the commit, the build time (RFC 3339
# UTC). EXTRAS= leaves litestream out.
# The SBOM (CycloneDX of the image's Python venv, made inside the build) is copied to SBOM.
VERSION  = $(shell sed -n 's/^VERSION = "\(.*\)"/\1/p' app/mqlite/version.py)
REVISION = $(shell git rev-parse HEAD 2>/dev/null || echo unknown)
CREATED  = $(shell date -u +%Y-%m-%dT%H:%M:%SZ)
EXTRAS  ?= replica
SBOM    ?= build/sbom.cdx.json

image:
	$(ENGINE) build $(if $(filter podman,$(ENGINE)),--format docker) $(IMAGE_FLAGS) \
	  --label org.opencontainers.image.version=$(VERSION) \
	  --label org.opencontainers.image.revision=$(REVISION) \
	  --label org.opencontainers.image.created=$(CREATED) --build-arg EXTRAS=$(EXTRAS) -t $(IMAGE) .
	mkdir -p $(dir $(SBOM))
	$(ENGINE) run --rm --network none --entrypoint cat $(IMAGE) \
	  /opt/mqlite/share/doc/mqlite/sbom.cdx.json > $(SBOM)
	@echo "image: $(IMAGE) $(VERSION) ($(REVISION)); SBOM: $(SBOM)"

# The container tier alone: the real image, compose stack and systemd unit under podman
# with stand-in base images (ops/ci/standin-images.sh, cached between runs).
image-test: $(TESTS)
	ops/ci/install-deps.sh
	$(PY) -m pytest -q -p no:cacheprovider tests/appliance

secrets:
	deploy/compose-secrets.sh ./secrets

stack-up: secrets
	MQLITE_IMAGE=$(IMAGE) $(COMPOSE) $(foreach p,$(PROFILES),--profile $(p)) up -d

stack-down:
	MQLITE_IMAGE=$(IMAGE) $(COMPOSE) down

lint: $(LINTERS)
	$(VENV)/bin/ruff format --no-cache --check app tests ops/drills
	$(VENV)/bin/ruff check --no-cache app tests ops/drills
	$(VENV)/bin/mypy
	$(VENV)/bin/lint-imports
	$(PY) scripts/gen_sdk.py --check
	$(PY) scripts/gen_docs_tables.py --check

# The side-by-side suite (issue 17; docs/benchmarks.md): installs the peers it lacks
# (tests/bench/suite/deps.sh), starts and stops them itself, regenerates the report.
# BENCH_ARGS=--quick for a run under 2 minutes; --compare OLD.json prints every change.
BENCH_ARGS ?=
bench: $(RUNTIME)
	tests/bench/suite/deps.sh $(VENV)
	$(PY) tests/bench/suite/run.py $(BENCH_ARGS)
	$(PY) tests/bench/suite/focused.py

# ---- drills (ops/drills; docs/operations.md "Drills"): PASS/FAIL reports, exit 1 on FAIL --
# The full variants; `make test` runs each with --quick. Each writes its report (time,
# broker version, host, parameters, checks, figures) to build/drills/ and prints the path
# ("<drill> drill report: build/drills/...json"). DRILL_ARGS passes flags through,
# e.g. make drill-restore DRILL_ARGS="--db /var/lib/mqlite/mq.db --json".
DRILL_ARGS ?=

drill-restore: $(RUNTIME)
	$(PY) ops/drills/restore $(DRILL_ARGS)

drill-crash: $(RUNTIME)
	$(PY) ops/drills/crash $(DRILL_ARGS)

soak: $(RUNTIME)
	$(PY) ops/drills/soak $(DRILL_ARGS)

# The screenshots in docs/console.md, retaken from a real broker's console (Chromium).
console-screenshots: $(TESTS)
	MQLITE_DOC_SCREENSHOTS=1 $(PY) -m pytest -q -p no:cacheprovider tests/browser/test_console_screenshots.py -k take

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .mypy_cache .ruff_cache
