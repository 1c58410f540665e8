// THE one place the console reads broker observations. Every view that shows counts,
// freshness or rates (overview, queues list, charts) goes through ``observe()``, which
// answers one normalized shape from either source:
//
// - ``AdminService/Observe`` (v0.3.2+; manage or monitor): the canonical observation
//   (api-reference "Observe"). Field names are read tolerantly (``pick``), because the
//   observation is additive across versions; an absent domain is ``null`` = "not
//   reported", never zero (observability "Availability and freshness").
// - A broker without Observe, manage only: ``Status`` + ``ListQueues`` + one ``Stats`` per
//   queue. Counts and ages, no event counters (so no rates) and no maintenance/auth domains.

import { BrokerError } from "./api.js";

export const STATES = ["active", "locked", "deferred", "scheduled", "dead_lettered"];
const STATS_CONCURRENCY = 4;

/** The first present (not undefined/null) value among ``names`` of ``obj``. */
function pick(obj, ...names) {
  if (!obj || typeof obj !== "object") return undefined;
  for (const n of names) if (obj[n] !== undefined && obj[n] !== null) return obj[n];
  return undefined;
}

const secondsToMs = (s) => (typeof s === "number" ? s * 1000 : undefined);
const list = (v) => (Array.isArray(v) ? v : null);

function normalizeQueue(q) {
  const states = pick(q, "states", "messages", "counts") || q;
  const out = { name: pick(q, "queue", "name") };
  for (const s of STATES) out[s] = Number(pick(states, s) || 0);
  const stateSum = STATES.reduce((acc, s) => acc + out[s], 0);
  out.retained = Number(pick(q, "retained", "retained_messages", "total") ?? stateSum);
  out.unexpected = Number(pick(q, "unexpected", "unexpected_messages") || 0);
  out.oldestAgeMs = pick(q, "oldest_message_age_ms") ?? secondsToMs(pick(q, "oldest_message_age_seconds", "oldest_age_seconds")) ?? 0;
  return out;
}

function normalizeMaintenance(m) {
  const diag = list(pick(m, "diagnostics", "failures", "recent_failures")) || [];
  return {
    task: pick(m, "task", "name"),
    enabled: pick(m, "enabled") !== false,
    lastOutcome: pick(m, "last_outcome", "outcome", "state") || "never",
    lastRunAtMs: pick(m, "last_run_at_ms", "last_run_ms") || 0,
    lastSuccessAtMs: pick(m, "last_success_at_ms", "last_success_ms") || 0,
    consecutiveFailures: Number(pick(m, "consecutive_failures", "consecutive_failed_passes") || 0),
    recoveredAtMs: pick(m, "recovered_at_ms") || 0,
    failures: diag.map((d) => ({
      atMs: pick(d, "at_ms", "timestamp_ms", "failed_at_ms") || 0,
      step: pick(d, "step") || "",
      category: pick(d, "category") || "",
      explanation: pick(d, "explanation", "message") || "",
      fingerprint: pick(d, "fingerprint") || "",
    })),
  };
}

/** Sum of ``count`` over a list of labelled counters (the shape Observe uses throughout). */
function counters(items, key) {
  const out = {};
  for (const it of items || []) {
    const k = pick(it, key);
    out[k] = (out[k] || 0) + Number(pick(it, "count", "value") || 0);
  }
  return out;
}

export function normalizeObservation(o) {
  const collection = pick(o, "collection") || {};
  const runtime = pick(o, "runtime") || {};
  const http = pick(o, "http") || {};
  const storage = pick(o, "storage") || {};
  const readProbe = pick(runtime, "read_probe", "read") || runtime;
  const footprint = pick(runtime, "footprint", "size", "local_footprint") || runtime;
  const queues = list(pick(o, "queues"));
  const messages = list(pick(o, "messages"));
  const events = {};
  for (const m of messages || []) {
    const key = `${pick(m, "queue")}\u0000${pick(m, "event")}`;
    events[key] = (events[key] || 0) + Number(pick(m, "count") || 0);
  }
  const auth = list(pick(http, "authentication", "auth", "authentication_outcomes"));
  const storageOps = list(pick(storage, "operations")) || list(storage);
  const filters = pick(o, "filters");
  return {
    source: "observe",
    access: pick(o, "access") || "",
    version: pick(o, "version") || "",
    backend: pick(o, "backend") || "",
    sampledAtMs: pick(o, "sampled_at_ms") || Date.now(),
    startedAtMs: pick(o, "started_at_ms") || 0,
    collection: {
      state: pick(collection, "state") || "unknown",
      lastSuccessAtMs: pick(collection, "last_success_at_ms") || 0,
      durationSeconds: pick(collection, "duration_seconds"),
      errorCode: pick(collection, "error_code") || "",
    },
    queueCount: pick(o, "queue_count"),
    subscriptionCount: pick(o, "subscription_count"),
    queues: queues ? queues.map(normalizeQueue) : null,
    events: messages ? events : null,
    runtime: {
      schemaVersion: pick(runtime, "schema_version") || "",
      readAvailable: pick(readProbe, "read_available", "available"),
      pingSeconds: pick(readProbe, "ping_seconds", "latency_seconds"),
      sizeAvailable: pick(footprint, "size_available", "available"),
      sizeBytes: pick(footprint, "size_bytes", "bytes"),
    },
    storage: storageOps
      ? storageOps.map((s) => ({
          operation: pick(s, "operation") || "",
          outcome: pick(s, "outcome") || "",
          errorCode: pick(s, "error_code") || "",
          count: Number(pick(s, "count") || 0),
          lastError: pick(s, "last_error") || null,
        }))
      : null,
    maintenance: list(pick(o, "maintenance")) ? pick(o, "maintenance").map(normalizeMaintenance) : null,
    filterFailures: filters ? counters(list(pick(filters, "failures")) || list(filters), "stage") : null,
    auth: auth ? counters(auth, "outcome") : null,
    httpState: pick(http, "state") || (auth ? "available" : "not_reported"),
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
