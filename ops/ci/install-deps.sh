#!/usr/bin/env bash
# Installs the system packages the test tiers drive for real, and ONLY the missing ones,
# so `make test` on a warm machine pays one dpkg-query (CI machines start from a bare
# image; a developer's machine keeps what it got). Debian packages only: the package
# index is the one registry this machine reaches for system tools.
#
# Other tiers append their packages to PACKAGES (one line each, with why).
set -euo pipefail

PACKAGES=(
  # The appliance tier (tests/appliance): build the real Dockerfile and run its image,
  # compose stack and systemd unit without a Docker engine. runc, not crun: crun fails on
  # this machine's hybrid cgroups (see shared OPS-TOOLING §3). debootstrap builds the
  # stand-in base images (registries for images are unreachable).
  podman
  buildah
  runc
  debootstrap
  # deploy/Caddyfile: `caddy validate` plus a real proxy run blocking /metrics.
  caddy
)

missing=()
for pkg in "${PACKAGES[@]}"; do
  status=$(dpkg-query -W -f='${db:Status-Status}' "$pkg" 2>/dev/null || true)
  [[ "$status" == installed ]] || missing+=("$pkg")
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
# Another process (a parallel engineer, unattended upgrades) may hold the dpkg lock.
apt_get() { apt-get -o DPkg::Lock::Timeout=600 -o Acquire::Retries=3 -q "$@"; }
apt_get update >/dev/null
apt_get install -y "${missing[@]}" >/dev/null
# caddy's package ships an enabled caddy.service; with no systemd as PID 1 nothing starts
# (policy-rc.d), and on a host with systemd we do not want a stray proxy on :80 either.
if [[ " ${missing[*]} " == *" caddy "* ]] && [[ -d /run/systemd/system ]]; then
  systemctl disable --now caddy.service >/dev/null 2>&1 || true
fi
