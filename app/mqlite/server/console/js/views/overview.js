// The overview: the broker's canonical observation (entity counts, collection state and
// freshness, storage, maintenance with recent failures, authentication outcomes) and
// charts of backlog and throughput over the last minutes, refreshed on the poller. The
// only view a monitor credential opens. What the broker does not report is said so —
// never drawn as a zero.

import { lineChart } from "../charts.js";
import { dl, fill, fillIfChanged, h, table } from "../dom.js";
import { bytes, count, dateTime, duration, rate } from "../format.js";
import { observe, STATES } from "../observe.js";
import * as samples from "../samples.js";
import { errorView, pageTitle, panel } from "../ui.js";

const NOT_REPORTED = "Not reported by this broker (Observe needs v0.3.2 or later).";

function sum(obs, state) {
  return obs.queues ? obs.queues.reduce((acc, q) => acc + q[state], 0) : null;
}

function brokerFacts(obs) {
  const c = obs.collection;
  const now = Date.now();
  return h(
    "div",
    { class: "columns" },
    panel(
      "Broker",
      dl([
        ["Version", obs.version || "—"],
        ["Backend", obs.backend || "—"],
        ["Your access", obs.access || "—"],
        ["Up for", obs.startedAtMs ? duration(obs.sampledAtMs - obs.startedAtMs) : "—"],
        ["Schema", obs.runtime.schemaVersion || "—"],
      ]),
    ),
    panel(
      "Collection",
      dl([
        ["State", h("span", { class: `badge collection-${c.state}` }, c.state)],
        ["Sampled", `${dateTime(obs.sampledAtMs)} (${duration(Math.max(0, now - obs.sampledAtMs))} ago)`],
        ["Last success", c.lastSuccessAtMs ? dateTime(c.lastSuccessAtMs) : "never"],
        ["Took", c.durationSeconds === undefined ? "—" : duration(c.durationSeconds * 1000)],
        c.errorCode && ["Error", h("code", {}, c.errorCode)],
      ].filter(Boolean)),
    ),
    panel(
      "Entities",
      obs.queues === null
        ? h("p", { class: "notice" }, "Queue collection is unavailable: counts are unknown, not zero.")
        : dl([
            ["Queues", count(obs.queueCount)],
            ["Subscriptions", count(obs.subscriptionCount)],
            ...STATES.map((s) => [s.replace("_", "-"), count(sum(obs, s))]),
            ["unexpected", count(obs.queues.reduce((a, q) => a + q.unexpected, 0))],
          ]),
    ),
  );
}

function charts(obs) {
  const backlog = lineChart({
    title: "Backlog (messages)",
    format: (v) => count(Math.round(v)),
    series: [
      { label: "waiting (active+scheduled+deferred)", cls: "s1", points: samples.backlogSeries((b) => (b.active === null ? null : b.active + b.scheduled + b.deferred)) },
      { label: "locked", cls: "s2", points: samples.backlogSeries((b) => b.locked) },
      { label: "dead-lettered", cls: "s3", points: samples.backlogSeries((b) => b.dead_lettered) },
    ],
    empty: obs.queues === null ? "Queue collection is unavailable." : undefined,
  });
  const throughput = obs.events
    ? lineChart({
        title: "Throughput (per second)",
        format: (v) => rate(v),
        series: [
          { label: "enqueued", cls: "s1", points: samples.rateSeries("enqueued") },
          { label: "completed", cls: "s2", points: samples.rateSeries("completed") },
          { label: "dead-lettered", cls: "s3", points: samples.rateSeries("dead_lettered") },
        ],
      })
    : h("figure", { class: "chart" }, h("figcaption", {}, "Throughput (per second)"), h("p", { class: "empty" }, NOT_REPORTED));
  return panel("Last minutes", h("p", { class: "hint" }, "Sampled by this page at each refresh; kept in memory for 10 minutes."), h("div", { class: "charts" }, backlog, throughput));
}

function storagePanel(obs) {
  const r = obs.runtime;
  const facts = dl([
    ["Read probe", r.readAvailable === undefined ? "—" : r.readAvailable ? "ok" : "failed"],
    ["Read latency", r.pingSeconds === undefined || r.readAvailable === false ? "—" : duration(r.pingSeconds * 1000)],
    ["Local size", r.sizeAvailable === false ? "not available for this backend" : bytes(r.sizeBytes)],
  ]);
  if (!obs.storage) return panel("Storage", facts, h("p", { class: "hint" }, "Operation outcomes: " + NOT_REPORTED));
  const failing = obs.storage.filter((s) => s.outcome !== "ok" && s.count > 0);
  return panel(
    "Storage",
    facts,
    table(
      "Storage operations that did not succeed",
      [{ label: "Operation" }, { label: "Outcome" }, { label: "Error" }, { label: "Count", cls: "num" }, { label: "Latest error" }],
      failing.map((s) => [s.operation, s.outcome, s.errorCode || "—", count(s.count), s.lastError ? `${dateTime(s.lastError.at_ms || s.lastError.timestamp_ms)} ${s.lastError.explanation || s.lastError.category || ""}` : "—"]),
      "Every storage operation succeeded since the broker started.",
    ),
  );
}

function maintenancePanel(obs) {
  if (!obs.maintenance) return panel("Maintenance", h("p", { class: "hint" }, NOT_REPORTED));
  const failures = obs.maintenance.flatMap((m) => m.failures.map((f) => ({ task: m.task, ...f }))).sort((a, b) => b.atMs - a.atMs);
  return panel(
    "Maintenance",
    table(
      "Maintenance tasks",
      [{ label: "Task" }, { label: "Enabled" }, { label: "Latest" }, { label: "Last run" }, { label: "Last success" }, { label: "Runs" }, { label: "Failing streak", cls: "num" }],
      obs.maintenance.map((m) => [
        m.task,
        m.enabled ? "yes" : "no",
        h("span", { class: `badge outcome-${m.lastOutcome}` }, m.lastOutcome),
        dateTime(m.lastRunAtMs),
        dateTime(m.lastSuccessAtMs),
        m.runs ? `${count(m.runs.success)} ok, ${count(m.runs.error)} failed, ${count(m.runs.interrupted)} interrupted` : "—",
        count(m.consecutiveFailures),
      ]),
    ),
    h("h3", {}, "Recent failures"),
    table(
      "Recent maintenance failures, newest first",
      [{ label: "When" }, { label: "Task" }, { label: "Step" }, { label: "Category" }, { label: "Explanation" }, { label: "Fingerprint" }],
      failures.slice(0, 16).map((f) => [dateTime(f.atMs), f.task, f.step || "—", f.category || "—", f.explanation || "—", f.fingerprint ? h("code", {}, f.fingerprint) : "—"]),
      "No maintenance failures since the broker started.",
    ),
  );
}

function authPanel(obs) {
  const rows = obs.auth ? Object.entries(obs.auth).map(([k, v]) => [k, count(v)]) : [];
  return panel(
    "Authentication",
    obs.auth ? table("Authentication outcomes since start", [{ label: "Outcome" }, { label: "Count", cls: "num" }], rows, "No requests yet.") : h("p", { class: "hint" }, obs.httpState === "not_applicable" ? "Not applicable." : NOT_REPORTED),
    obs.filterFailures && dl(Object.entries(obs.filterFailures).map(([stage, n]) => [`filter ${stage} failures`, count(n)])),
  );
}

function busiest(obs) {
  if (!obs.queues || !obs.queues.length) return null;
  const top = [...obs.queues].sort((a, b) => b.retained - a.retained || a.name.localeCompare(b.name)).slice(0, 8);
  return panel(
    "Largest queues",
    table("Largest queues by retained messages", [{ label: "Queue" }, { label: "Retained", cls: "num" }, { label: "Dead-lettered", cls: "num" }, { label: "Oldest", cls: "num" }], top.map((q) => [q.name, count(q.retained), count(q.dead_lettered), duration(q.oldestAgeMs)])),
  );
}

export function mount(root, ctx) {
  const live = h("div", { class: "live-data", id: "overview-data" });
  let first = true;
  fill(root, pageTitle("Overview"), live);
  ctx.poller.start(async () => {
    try {
      const obs = await observe(ctx.api, ctx.features);
      samples.record(obs);
      const key = JSON.stringify([obs.sampledAtMs, Math.floor(Date.now() / 1000)]);
      fillIfChanged(live, key, () => [brokerFacts(obs), charts(obs), busiest(obs), h("div", { class: "columns" }, storagePanel(obs), authPanel(obs)), maintenancePanel(obs)]);
      first = false;
    } catch (err) {
      if (first) fill(live, errorView(err));
      throw err;
    }
  });
}
