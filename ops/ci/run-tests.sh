#!/usr/bin/env bash
# `make test`: the whole suite as two pytest processes side by side.
#
# Why two: the service tiers (the image build and containers, Prometheus/Alertmanager,
# Chromium, Litestream on moto, the drills' brokers) spend most of their time waiting on
# real processes, while the core tiers are CPU-bound in this one. One process left a core
# idle for most of the run (CI had grown past 17 of its 20 minutes). The split is by
# directory, never inside a tier: each tier keeps its session fixtures (one image, one
# Chromium, one Prometheus), and only the service process builds or runs containers.
#
# Arguments are passed to both pytest processes (e.g. -x, -k EXPR).
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2
PY=${PY:-.venv/bin/python}
# tests/mcp and tests/docs start real brokers and agent servers too, and balance the two
# (measured in CI: core 792 s against 381 s for the service tiers before they moved).
SERVICE_TIERS=(tests/appliance tests/ops tests/replication tests/browser tests/drills tests/mcp tests/docs)

ignores=()
for tier in "${SERVICE_TIERS[@]}"; do ignores+=("--ignore=$tier"); done

service_log=$(mktemp)
trap 'rm -f "$service_log"' EXIT
started=$SECONDS
"$PY" -m pytest -q -p no:cacheprovider "$@" "${SERVICE_TIERS[@]}" >"$service_log" 2>&1 &
service_pid=$!
"$PY" -m pytest -q -p no:cacheprovider "$@" "${ignores[@]}"
core=$?
echo "== core tiers: exit $core after $((SECONDS - started)) s"
wait "$service_pid"
service=$?
echo "== service tiers (${SERVICE_TIERS[*]}): exit $service after $((SECONDS - started)) s"
cat "$service_log"
if [ "$core" -ne 0 ] || [ "$service" -ne 0 ]; then exit 1; fi
