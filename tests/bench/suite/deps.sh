#!/usr/bin/env bash
# Installs what `make bench` (tests/bench/suite) drives, and ONLY what is missing: the
# peer brokers from Debian and the Python clients of every peer into the venv given as
# $1 (default .venv). Never on `make test`'s path: the test tiers need none of this.
# No daemon starts: policy-rc.d forbids it, and the bench starts each broker itself on a
# free loopback port in a temporary directory and stops it afterwards.
set -euo pipefail

VENV=${1:-.venv}

APT_PACKAGES=(
# --- bench apt packages: begin (one per line) ---
# Peers: RabbitMQ (AMQP 0-9-1, durable queues), Redis Streams (AOF), NATS JetStream.
rabbitmq-server
redis-server
nats-server
# The fixed-body HTTP load client (http_bench.py's Loader; the suite falls back to its
# asyncio raw-socket client without it).
wrk
# instructions per message (extras.py, full run or --instructions): callgrind.
valgrind
# --- bench apt packages: end ---
)

missing=()
for pkg in "${APT_PACKAGES[@]}"; do
    status=$(dpkg-query -W -f='${db:Status-Status}' "$pkg" 2>/dev/null || true)
    [[ "$status" == "installed" ]] || missing+=("$pkg")
done
if ((${#missing[@]} > 0)); then
    if ((EUID != 0)); then
        echo "bench-deps: missing ${missing[*]}; run as root (or: sudo $0)" >&2
        exit 1
    fi
    echo "bench-deps: installing ${missing[*]}" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt_get() { apt-get -o DPkg::Lock::Timeout=600 -o Acquire::Retries=3 -qq "$@"; }
    apt_get update
    apt_get install -y --no-install-recommends "${missing[@]}" >/dev/null
fi

# The Python side: pyproject's `bench` extra (the peers' usual clients and matplotlib).
"$VENV/bin/python" -m pip install -q --disable-pip-version-check -e '.[bench]'
