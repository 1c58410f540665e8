// THE one place the console reads broker observations. Every view that shows counts,
// freshness or rates (overview, queues list, charts) goes through ``observe()``, which
// answers one normalized shape from either source:
//
// - ``AdminService/Observe`` (manage or monitor): the canonical observation
//   (api-reference "Observe"; ``mqlite.wire.observability.ObserveResponse``, the
//   original's shape: spec/observe-wire.md). Unknown stays unknown here, never zero:
//   ``queues`` is ``null`` while the collection is unavailable (and so are the counts
//   then), and a failed probe's ``ping_seconds`` / an unmeasurable ``db_size_bytes``
//   (0 on the wire beside ``read_available`` / ``db_size_available`` false) are
//   ``undefined``.
// - A broker without Observe (older), manage only: ``Status`` + ``ListQueues`` + one
//   ``Stats`` per queue. Counts and ages, no event counters (so no rates) and no
//   storage/maintenance/auth domains, each shown as "not reported".

import { BrokerError } from "./api.js";

export const STATES = ["active", "locked", "deferred", "scheduled", "dead_lettered"];
const STATS_CONCURRENCY = 4;

const num = (v) => (typeof v === "number" ? v : 0);
const orNull = (v) => (v === undefined ? null : v);

function normalizeQueue(q) {
  const out = { name: q.queue ?? q.name, kind: q.kind || "" };
  for (const s of STATES) out[s] = num(q[s]);
  out.unexpected = num(q.unexpected);
  out.retained = typeof q.total === "number" ? q.total : STATES.reduce((a, s) => a + out[s], out.unexpected);
  out.oldestAgeMs = num(q.oldest_message_age_ms);
  // The age is of the oldest active/locked message: with none (only scheduled, deferred
  // or dead-lettered ones), there is no age to show, not "0 ms".
  if (out.active + out.locked === 0) out.oldestAgeMs = null;
  return out;
}

function normalizeMaintenance(m) {
  return {
    task: m.task || "",
    enabled: Boolean(m.enabled),
    // Passes: ``runs`` counts them all, ``failures`` and ``interrupted`` are parts of it.
    runs: typeof m.runs === "number" ? { success: m.runs - num(m.failures) - num(m.interrupted), error: num(m.failures), interrupted: num(m.interrupted) } : null,
    lastOutcome: m.last_outcome || "never",
    lastRunAtMs: num(m.last_run_at_ms),
    lastSuccessAtMs: num(m.last_success_at_ms),
    consecutiveFailures: num(m.consecutive_failures),
    recoveredAtMs: num(m.recovered_at_ms),
    failures: (m.diagnostics || []).map((d) => ({
      atMs: num(d.at_ms),
      step: d.step || "",
      category: d.category || "",
      explanation: d.explanation || "",
      fingerprint: d.fingerprint || "",
    })),
  };
}

/** Sum ``count`` by ``key`` over a list of labelled counters. */
function counters(items, key) {
  const out = {};
  for (const it of items || []) out[it[key]] = (out[it[key]] || 0) + num(it.count);
  return out;
}

export function normalizeObservation(o) {
  const collection = o.collection || {};
  const runtime = o.runtime || {};
  const http = o.http || {};
  const queues = Array.isArray(o.queues) ? o.queues : null;
  const events = {};
  for (const m of o.messages || []) {
    const key = `${m.queue}\u0000${m.event}`;
    events[key] = (events[key] || 0) + num(m.count);
  }
  const httpState = http.state || "not_applicable";
  return {
    source: "observe",
    access: o.access || "",
    version: o.version || "",
    backend: o.backend || "",
    sampledAtMs: o.sampled_at_ms || Date.now(),
    startedAtMs: num(o.started_at_ms),
    collection: {
      state: collection.state || "unavailable",
      lastSuccessAtMs: num(collection.last_success_at_ms),
      durationSeconds: collection.duration_seconds,
      errorCode: collection.error_code || "",
    },
    queueCount: queues ? orNull(o.queue_count) : null,
    subscriptionCount: queues ? orNull(o.subscription_count) : null,
    queues: queues ? queues.map(normalizeQueue) : null,
    events,
    runtime: {
      schemaVersion: runtime.schema_version || "",
      readAvailable: runtime.read_available,
      pingSeconds: runtime.read_available ? runtime.ping_seconds : undefined,
      sizeAvailable: runtime.db_size_available,
      sizeBytes: runtime.db_size_available ? runtime.db_size_bytes : undefined,
    },
    storage: ((o.storage || {}).operations || []).map((s) => ({
      operation: s.operation || "",
      outcome: s.outcome || "",
      errorCode: s.error_code || "",
      count: num(s.count),
      lastError: s.last_error || null,
    })),
    maintenance: (o.maintenance || []).map(normalizeMaintenance),
    filterFailures: counters(o.filters, "stage"),
    auth: httpState === "available" ? counters(http.authentication, "outcome") : null,
    httpState,
  };
}

async function statsOf(api, names) {
  const out = new Map();
  let next = 0;
  async function worker() {
    while (next < names.length) {
      const name = names[next];
      next += 1;
      try {
        out.set(name, await api.call("QueueService/Stats", { queue: name }));
      } catch (err) {
        if (!(err instanceof BrokerError && err.code === "not_found")) throw err; // deleted meanwhile
      }
    }
  }
  await Promise.all(Array.from({ length: Math.min(STATS_CONCURRENCY, names.length) }, worker));
  return out;
}

/** The fallback observation of a broker without Observe (manage credentials only). */
async function fromStatus(api) {
  const [status, listed] = await Promise.all([api.call("AdminService/Status", {}), api.call("AdminService/ListQueues", {})]);
  const names = (listed.queues || []).map((q) => q.name);
  const stats = await statsOf(api, names);
  const queues = names.filter((n) => stats.has(n)).map((n) => {
    const s = stats.get(n);
    return normalizeQueue({ name: n, ...s, total: s.total });
  });
  const now = Date.now();
  return {
    source: "status",
    access: "manage",
    version: status.version || "",
    backend: status.backend || "",
    sampledAtMs: now,
    startedAtMs: status.uptime_ms ? now - status.uptime_ms : 0,
    collection: { state: "available", lastSuccessAtMs: now, durationSeconds: undefined, errorCode: "" },
    queueCount: status.queues ?? 0,
    subscriptionCount: status.subscriptions ?? 0,
    queues,
    events: null,
    runtime: {
      schemaVersion: status.schema_version || "",
      readAvailable: status.ping_ms >= 0,
      pingSeconds: status.ping_ms >= 0 ? status.ping_ms / 1000 : undefined,
      sizeAvailable: !status.remote && status.backend === "local file",
      sizeBytes: status.db_size_bytes,
    },
    storage: null,
    maintenance: null,
    filterFailures: null,
    auth: null,
    httpState: "not_reported",
    listed: listed.queues || [],
  };
}

/** The current observation, normalized; throws BrokerError/NetworkError like any call. */
export async function observe(api, features) {
  if (features.observe) return normalizeObservation(await api.call("AdminService/Observe", {}));
  return fromStatus(api);
}
