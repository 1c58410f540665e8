// Queues: every queue and subscription backing queue with its per-state counts, the age of
// its oldest active/locked message and its in/out rates, plus "create a queue".

import { fill, fillIfChanged, field, h, table } from "../dom.js";
import { count, duration, rate } from "../format.js";
import { observe, STATES } from "../observe.js";
import * as samples from "../samples.js";
import { errorView, form, intValue, pageTitle, panel, resultArea, takeFlash } from "../ui.js";

const STATE_LABELS = { active: "Active", locked: "Locked", deferred: "Deferred", scheduled: "Scheduled", dead_lettered: "Dead-lettered" };

export const queueHref = (name) => `#/queues/${encodeURIComponent(name)}`;

function createForm(ctx, onCreated) {
  const name = h("input", { type: "text", required: true, autocomplete: "off", spellcheck: "false" });
  const ordering = h("select", {}, ["standard", "group_fifo", "strict_fifo"].map((m) => h("option", { value: m }, m)));
  const lock = h("input", { type: "number", min: "0", step: "1", inputmode: "numeric", placeholder: "30000" });
  const maxDelivery = h("input", { type: "number", min: "0", step: "1", inputmode: "numeric", placeholder: "10" });
  const ttl = h("input", { type: "number", min: "0", step: "1", inputmode: "numeric", placeholder: "0" });
  const dedup = h("input", { type: "number", min: "0", step: "1", inputmode: "numeric", placeholder: "0" });
  const retryInitial = h("input", { type: "number", min: "0", step: "1", inputmode: "numeric", placeholder: "0" });
  const retryMultiplier = h("input", { type: "number", min: "1", max: "1000", step: "any", inputmode: "decimal", placeholder: "2" });
  const retryMax = h("input", { type: "number", min: "0", step: "1", inputmode: "numeric", placeholder: "900000" });
  const retryJitter = h("input", { type: "number", min: "0", max: "1", step: "any", inputmode: "decimal", placeholder: "0" });
  const result = resultArea();
  const f = form({ class: "grid-form", "aria-label": "Create a queue" }, [
    field("Name", name),
    field("Ordering", ordering),
    field("Lock duration (ms)", lock, "blank or 0 = 30000"),
    field("Max deliveries", maxDelivery, "blank or 0 = 10"),
    field("Default TTL (ms)", ttl, "0 = unlimited"),
    field("Dedup window (ms)", dedup, "0 = off"),
    field("Retry: first delay (ms)", retryInitial, "wait after a failed delivery; 0 = off (at once)"),
    field("Retry: multiplier", retryMultiplier, "1..1000, blank = 2; 1 = a constant delay"),
    field("Retry: max delay (ms)", retryMax, "the cap, blank = 900000 (15 min)"),
    field("Retry: jitter", retryJitter, "0..1: each delay drawn from [d·(1−jitter), d]"),
    h("div", { class: "actions" }, h("button", { type: "submit", class: "primary" }, "Create queue")),
  ], async () => {
    result.clear();
    const config = {
      ordering_mode: ordering.value,
      lock_duration_ms: intValue(lock),
      max_delivery_count: intValue(maxDelivery),
      default_ttl_ms: intValue(ttl),
      dedup_window_ms: intValue(dedup),
      retry_initial_delay_ms: intValue(retryInitial),
    };
    // Blank keeps the broker's default (the field is left out of the request).
    if (retryMultiplier.value.trim() !== "") config.retry_multiplier = Number(retryMultiplier.value);
    if (retryMax.value.trim() !== "") config.retry_max_delay_ms = intValue(retryMax);
    if (retryJitter.value.trim() !== "") config.retry_jitter = Number(retryJitter.value);
    try {
      await ctx.api.call("AdminService/CreateQueue", { name: name.value.trim(), config });
      result.ok("Created ", h("a", { href: queueHref(name.value.trim()) }, name.value.trim()), ".");
      name.value = "";
      onCreated();
    } catch (err) {
      result.fail(err);
    }
  });
  return panel("Create a queue", h("p", { class: "hint" }, "Creating an existing queue again updates its configuration; its messages are kept."), f, result.el);
}

function rows(obs, listed) {
  const byName = new Map((obs.queues || []).map((q) => [q.name, q]));
  return listed.map((info) => {
    const q = byName.get(info.name);
    const cells = [h("a", { href: queueHref(info.name), "data-focus-id": `q:${info.name}` }, info.name), info.kind];
    for (const s of STATES) cells.push(q ? count(q[s]) : "—");
    cells.push(q ? duration(q.oldestAgeMs) : "—");
    cells.push(rate(samples.rateOf("enqueued", info.name)), rate(samples.rateOf("completed", info.name)));
    return cells;
  });
}

export function mount(root, ctx) {
  const body = h("div", { class: "live-data", id: "queues-table" });
  const note = h("div", { id: "queues-note" });
  let first = true;
  const refresh = async () => {
    try {
      const obs = await observe(ctx.api, ctx.features);
      samples.record(obs);
      const listed = obs.listed || (await ctx.api.call("AdminService/ListQueues", {})).queues || [];
      listed.sort((a, b) => a.name.localeCompare(b.name));
      const columns = [{ label: "Queue" }, { label: "Kind" }, ...STATES.map((s) => ({ label: STATE_LABELS[s], cls: "num" })), { label: "Oldest", cls: "num" }, { label: "In", cls: "num" }, { label: "Out", cls: "num" }];
      const data = rows(obs, listed);
      fillIfChanged(body, JSON.stringify(data.map((r) => r.map((c) => (c instanceof Node ? c.textContent : c)))), () =>
        table("Queues with message counts by state", columns, data, "No queues yet: create one below."),
      );
      const unavailable = obs.collection.state !== "available";
      fill(
        note,
        unavailable && h("p", { class: "notice" }, `Queue collection is ${obs.collection.state}${obs.collection.errorCode ? ` (${obs.collection.errorCode})` : ""}: counts are not available, which is not the same as zero.`),
        !obs.events && h("p", { class: "hint" }, "Rates need Observe (v0.3.2+); this broker reports counts only."),
        obs.events && h("p", { class: "hint" }, "Oldest = age of the oldest active or locked message. In/Out = enqueued/completed per second between the last two refreshes."),
      );
      first = false;
    } catch (err) {
      if (first) fill(body, errorView(err));
      throw err;
    }
  };
  fill(root, pageTitle("Queues"), takeFlash(), panel("All queues", note, body), createForm(ctx, () => ctx.poller.refresh()));
  ctx.poller.start(refresh);
}
