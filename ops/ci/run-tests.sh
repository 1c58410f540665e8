#!/usr/bin/env bash
# `make test`: the whole suite as three pytest processes side by side, the core one on two
# pytest-xdist workers (below).
#
# Why two: the service tiers (the image build and containers, Prometheus/Alertmanager,
# Chromium, Litestream on moto, the drills' brokers) spend most of their time waiting on
# real processes, while the core tiers are CPU-bound in this one. One process left a core
# idle for most of the run (CI had grown past 17 of its 20 minutes). The split is by
# directory, never inside a tier: each tier keeps its session fixtures (one image, one
# Chromium, one Prometheus), and only the service process builds or runs containers.
#
# Why a third (issue 16): the remote store's second runs -- the e2e tier with every broker
# on its own real sqld (MQLITE_E2E_STORE=libsql) and the conformance suite's libSQL half
# (MQLITE_CONFORMANCE_REMOTE=only; the file half runs in the core process) -- wait on
# sqld round trips most of the time. Appended to the service process they made it the
# longest by minutes; beside the other two they cost less wall time (measured in
# docs/contributing.md, "make test").
#
# Why the core process has two workers (issue 25, pytest-xdist, whole modules per worker:
# --dist loadfile keeps each module's fixtures to one worker): on a loaded two-core CI
# machine the wall time follows the CPU each process gets, and CFS shares the CPU per
# runnable thread. As one process the core tiers -- the most CPU of the three -- ended
# minutes after the others (1,364 s against 1,017 s and 756 s in the loaded fresh check);
# two workers that take the next module when they are free end together with the other
# two processes. CORE_WORKERS=1 runs them in one process as before.
#
# Arguments are passed to every pytest process (e.g. -x, -k EXPR). Each process prints its
# 25 slowest tests (--durations=25): the CI log shows where the time goes.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2
PY=${PY:-.venv/bin/python}
# Bytecode is cached (issue 25): with PYTHONDONTWRITEBYTECODE set (many CI images and
# agent shells set it) every broker, CLI call, Celery worker and child script compiled
# mqlite from source again (+0.15 s CPU each, over a thousand of them a run), and each
# pytest process rewrote every test module again (+8 s). __pycache__ is ignored by git
# and by the image build (.dockerignore).
unset PYTHONDONTWRITEBYTECODE
# tests/mcp and tests/docs (real brokers and agent servers, no containers) ran here to
# balance a one-process core (core 792 s against 381 s for the service tiers then). Since
# the core runs on two xdist workers the service process was the longest of the fresh
# loaded run (1,484 s against 1,145 s: the image build alone 532 s): they are back in the
# core pool, which spreads them over its workers (issue 25).
SERVICE_TIERS=(tests/appliance tests/ops tests/replication tests/browser tests/drills)
# The remote process: tiers run again on sqld. The e2e modules that start their own sqld
# (test_remote_*.py) are the same on either store and run once, in the core process.
REMOTE_TIERS=(tests/e2e tests/conformance)
REMOTE_SKIP=(--ignore=tests/e2e/test_remote_faults.py --ignore=tests/e2e/test_remote_lease_serve.py)
# So do the e2e modules whose subject is the HTTP front, the process or a client of the
# broker, never the store behind it (issue 25: their second run on sqld cost CPU -- a
# broker and a sqld each, Celery's six worker processes -- and checked nothing new): the
# console's static files, each credential's share of the connection cap, the OpenAPI
# reference page, the lean gunicorn master, token files, `make run`'s dev token, and
# Celery's transport and workers (the store under a broker is the conformance suite's and
# the other e2e modules' subject, on sqld below).
for module in test_console_routes test_connection_shares test_http_reference test_lean_master \
  test_secret_files test_dev_run test_celery_worker test_celery_poison; do
  REMOTE_SKIP+=("--ignore=tests/e2e/$module.py")
done
# The same, test by test, in modules that also test the store (issue 25): refusals of
# hostile HTTP before any RPC runs, CORS, bind and startup-configuration checks, marked
# @pytest.mark.same_on_any_store (pyproject.toml). Measured: 19 s of the remote process's
# CPU.
REMOTE_SKIP+=(-m "not same_on_any_store")

ignores=()
for tier in "${SERVICE_TIERS[@]}"; do ignores+=("--ignore=$tier"); done
CORE_WORKERS=${CORE_WORKERS:-2}
core_split=()
# --no-loadscope-reorder: xdist would order modules by their number of tests, which put
# the two-test, two-minute cost gate last; the collection order is tests/conftest.py's
# LONGEST_FIRST, measured.
if [ "$CORE_WORKERS" -gt 1 ]; then
  core_split=(-n "$CORE_WORKERS" --dist loadfile --no-loadscope-reorder)
fi

service_log=$(mktemp)
remote_log=$(mktemp)
trap 'rm -f "$service_log" "$remote_log"' EXIT
started=$SECONDS
# A background process's log ends with its own duration (its `wait` returns later).
logged() {
  local log=$1
  shift
  "$@" >"$log" 2>&1
  local rc=$?
  echo "== (its own time: $((SECONDS - started)) s)" >>"$log"
  return "$rc"
}
logged "$service_log" "$PY" -m pytest -q -p no:cacheprovider --durations=25 "$@" "${SERVICE_TIERS[@]}" &
service_pid=$!
logged "$remote_log" env MQLITE_E2E_STORE=libsql MQLITE_CONFORMANCE_REMOTE=only \
  "$PY" -m pytest -q -p no:cacheprovider --durations=25 "$@" "${REMOTE_SKIP[@]}" "${REMOTE_TIERS[@]}" &
remote_pid=$!
"$PY" -m pytest -q -p no:cacheprovider --durations=25 "${core_split[@]}" "$@" "${ignores[@]}"
core=$?
echo "== core tiers: exit $core after $((SECONDS - started)) s"
wait "$service_pid"
service=$?
echo "== service tiers (${SERVICE_TIERS[*]}): exit $service after $((SECONDS - started)) s"
cat "$service_log"
wait "$remote_pid"
remote=$?
echo "== remote store (${REMOTE_TIERS[*]} on sqld): exit $remote after $((SECONDS - started)) s"
cat "$remote_log"
if [ "$core" -ne 0 ] || [ "$service" -ne 0 ] || [ "$remote" -ne 0 ]; then exit 1; fi
