#!/usr/bin/env bash
# Installs the Debian packages that `make test` needs, only those still missing (idempotent:
# a second run with everything present does nothing, not even `apt-get update`).
# Runs as root (CI and the dev machines are root; no daemon starts: policy-rc.d forbids it).
#
# Packages: ONE PER LINE inside the list below, so that merging branches that each add
# their own packages is a plain union of lines. Keep the markers.
set -euo pipefail

APT_PACKAGES=(
# --- apt packages: begin (one per line) ---
prometheus
prometheus-alertmanager
# --- apt packages: end ---
)

missing=()
for pkg in "${APT_PACKAGES[@]}"; do
    status=$(dpkg-query -W -f='${db:Status-Status}' "$pkg" 2>/dev/null || true)
    [[ "$status" == "installed" ]] || missing+=("$pkg")
done

if ((${#missing[@]} == 0)); then
    exit 0
fi

echo "install-deps: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -o DPkg::Lock::Timeout=600 -qq
# --no-install-recommends: Debian's prometheus recommends node-exporter, smartmontools, ...
apt-get install -y -qq -o DPkg::Lock::Timeout=600 --no-install-recommends "${missing[@]}"
