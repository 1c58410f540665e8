// One queue: its configuration, live counts by state, Receive and settle, Peek, a test send, dead-letter
// redrive/purge and deletion.

import { dl, fill, fillIfChanged, h } from "../dom.js";
import { count, duration } from "../format.js";
import { peekPanel } from "../messages.js";
import { observe, STATES } from "../observe.js";
import { chartsKey, queueCharts } from "../queue_charts.js";
import * as samples from "../samples.js";
import { deadLetterPanel, deletePanel, sendPanel } from "../queue_actions.js";
import { pushPanel } from "../push.js";
import { receivePanel } from "../receive.js";
import { deadLetterBrowser } from "../dlq.js";
import { deferredPanel, scheduledPanel } from "../parked.js";
import { searchPanel } from "../search.js";
import { errorView, pageTitle, panel, setFlash } from "../ui.js";

const ms = (v) => (v ? `${v} ms (${duration(v)})` : "0");
const dlqBound = (v, unit) => (v === 0 ? "inherit broker default" : v < 0 ? "unbounded" : `${v}${unit}`);

// Absent fields are at their defaults (the wire omits them): multiplier 2, cap 15 min.
function retryText(info) {
  const first = info.retry_initial_delay_ms || 0;
  if (!first) return "off (a failed delivery comes back at once)";
  const mult = info.retry_multiplier ?? 2;
  const cap = info.retry_max_delay_ms ?? 900000;
  const jitter = info.retry_jitter || 0;
  return `${ms(first)} × ${mult} per failure, at most ${ms(cap)}${jitter ? `, jitter ${jitter}` : ""}`;
}

function configView(info) {
  return dl([
    ["Kind", info.kind],
    ["Ordering", info.ordering_mode || "standard"],
    ["Lock duration", ms(info.lock_duration_ms)],
    ["Max deliveries", String(info.max_delivery_count)],
    ["Default TTL", info.default_ttl_ms ? ms(info.default_ttl_ms) : "unlimited"],
    ["On expiry", info.dead_letter_on_expire === false ? "discard" : "dead-letter"],
    ["Dedup window", info.dedup_window_ms ? ms(info.dedup_window_ms) : "off"],
    ["DLQ max age", dlqBound(info.dlq_max_age_ms || 0, " ms")],
    ["DLQ max count", dlqBound(info.dlq_max_count || 0, "")],
    ["DLQ max bytes", dlqBound(info.dlq_max_bytes || 0, " B")],
    ["Retry policy", retryText(info)],
    ["Generation", info.generation || "(legacy)"],
  ]);
}

function statsView(s) {
  return dl(
    [
      ...STATES.map((st) => [st.replace("_", "-"), count(s[st])]),
      ["total", count(s.total)],
      ["oldest active/locked", duration((s.active || 0) + (s.locked || 0) ? s.oldest_message_age_ms : null)],
    ],
    "facts stats",
  );
}

/** An application key's view of a queue: only the panels its permissions allow (no
 *  ListQueues, so no configuration; no Observe, so no charts; no manage actions). */
function mountForKey(root, ctx, name) {
  const listen = Boolean(ctx.perms && ctx.perms.listen);
  const send = Boolean(ctx.perms && ctx.perms.send);
  const statsBox = h("div", { class: "live-data", id: "queue-stats" });
  const refreshNow = () => (listen ? ctx.poller.refresh() : undefined);
  fill(
    root,
    pageTitle(name, h("p", {}, h("a", { href: "#/open" }, "← Open another queue"))),
    listen ? panel("Messages by state", statsBox) : null,
    listen ? receivePanel(ctx, name, refreshNow) : null,
    listen ? deferredPanel(ctx, name, refreshNow) : null,
    listen && send ? scheduledPanel(ctx, name, refreshNow) : null,
    listen ? peekPanel(ctx, name) : null,
    send ? sendPanel(ctx, name, refreshNow) : null,
  );
  root.querySelector("#page-title").focus();
  if (listen) {
    ctx.poller.start(async () => {
      const s = await ctx.api.call("QueueService/Stats", { queue: name });
      fillIfChanged(statsBox, JSON.stringify(s), () => statsView(s));
    });
  }
}

export function mount(root, ctx, name) {
  if (ctx.access === "app") {
    mountForKey(root, ctx, name);
    return null;
  }
  let alive = true; // false once the operator navigated away (the loads below are async)
  let dead = null;
  const statsBox = h("div", { class: "live-data", id: "queue-stats" });
  fill(root, pageTitle(name), h("p", { class: "muted" }, "Loading…"));
  let info = null;
  const chartsBox = h("div", { class: "live-data" });
  const push = pushPanel(ctx, name);
  const refreshStats = async () => {
    const s = await ctx.api.call("QueueService/Stats", { queue: name });
    await push.refresh();
    dead = s.dead_lettered;
    fillIfChanged(statsBox, JSON.stringify(s), () => statsView(s));
    if (ctx.features.observe) {
      // One Observe per refresh feeds the tab's sample store (shared with the overview).
      samples.record(await observe(ctx.api, ctx.features));
      if (alive) fillIfChanged(chartsBox, chartsKey(), () => queueCharts(name));
    }
  };
  (async () => {
    try {
      const listed = await ctx.api.call("AdminService/ListQueues", {});
      info = (listed.queues || []).find((q) => q.name === name);
    } catch (err) {
      if (alive) fill(root, pageTitle(name), errorView(err));
      return;
    }
    if (!alive) return;
    if (!info) {
      fill(root, pageTitle(name), panel("No such queue", h("p", {}, `There is no queue named ${name}.`), h("p", {}, h("a", { href: "#/queues" }, "All queues"))));
      root.querySelector("#page-title").focus();
      return;
    }
    const refreshNow = () => ctx.poller.refresh();
    const onDeleted = () => {
      setFlash(`Deleted the queue ${name}.`);
      location.hash = "#/queues";
    };
    fill(
      root,
      pageTitle(name, h("p", {}, h("a", { href: "#/queues" }, "← All queues"))),
      h(
        "div",
        { class: "columns" },
        panel("Messages by state", statsBox),
        panel("Configuration", configView(info)),
      ),
      push.el,
      ctx.features.observe ? panel("Last minutes", h("p", { class: "hint" }, "Sampled at each refresh from Observe; kept in this tab for 10 minutes, across pages."), chartsBox) : null,
      receivePanel(ctx, name, refreshNow),
      deferredPanel(ctx, name, refreshNow),
      scheduledPanel(ctx, name, refreshNow),
      peekPanel(ctx, name),
      searchPanel(ctx, name),
      sendPanel(ctx, name, refreshNow),
      deadLetterBrowser(ctx, name, refreshNow),
      deadLetterPanel(ctx, name, () => dead, refreshNow),
      deletePanel(ctx, info, onDeleted),
    );
    root.querySelector("#page-title").focus();
    ctx.poller.start(refreshStats);
  })();
  return () => {
    alive = false;
  };
}
