#!/bin/sh
# Creates the secret files compose.yaml mounts, once: existing files are never rewritten
# (rotating a token is a deliberate edit; see docs/operations.md "Key rotation").
# Usage: deploy/compose-secrets.sh [DIR]   (default ./secrets, gitignored)
#
# The directory is 0700 (no other host user can read it). The files are 0644 because a
# compose file secret is a bind mount that keeps host ownership: the broker (uid 10001)
# and Prometheus (nobody) must both read mqlite-monitor.token inside their containers.
set -eu
dir=${1:-./secrets}
mkdir -p "$dir"
chmod 0700 "$dir"
new_secret() {  # FILE PREFIX: PREFIX + 256 random bits as hex (never echoed)
  [ -s "$dir/$1" ] && return 0
  umask 022
  python3 -c 'import secrets, sys; print(sys.argv[1] + secrets.token_hex(32))' "$2" >"$dir/$1.tmp"
  chmod 0644 "$dir/$1.tmp"
  mv "$dir/$1.tmp" "$dir/$1"
  echo "created $dir/$1"
}
new_secret mqlite-admin.token mqk_
new_secret mqlite-monitor.token mqk_mon_
new_secret grafana-admin.password ""
