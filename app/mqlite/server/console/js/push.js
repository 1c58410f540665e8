// A queue's push target (docs/push.md) on the queue page: its URL, status, last status and
// error, counters and next attempt, refreshed with the page; pause and resume (CreatePush
// again with the target's own settings and paused flipped: the broker keeps its secret,
// which the console never sees) and delete after a confirmation.

import { confirmAction } from "./dialogs.js";
import { dl, fillIfChanged, h } from "./dom.js";
import { count, dateTime, duration } from "./format.js";
import { panel, resultArea } from "./ui.js";

function statusCell(p) {
  const cls = p.status === "active" ? "ok" : p.status === "paused" ? "muted" : "error";
  return h("span", { class: cls, dataset: { pushStatus: p.status } }, p.status);
}

/** The panel and its ``refresh`` (called by the queue page's poller). */
export function pushPanel(ctx, name) {
  const body = h("div", { class: "live-data", id: "push-target" });
  const status = resultArea();
  const change = async (p, paused) => {
    status.clear();
    try {
      const { queue, url, max_in_flight, timeout_ms } = p;
      await ctx.api.call("AdminService/CreatePush", { queue, url, max_in_flight, timeout_ms, paused });
      status.ok(`${paused ? "Paused" : "Resumed"} the push target.`);
      ctx.poller.refresh();
    } catch (err) {
      status.fail(err);
    }
  };
  const remove = async () => {
    status.clear();
    const ok = await confirmAction({
      title: `Delete the push target of ${name}?`,
      body: h("p", {}, "The broker stops POSTing this queue's messages; consumers can receive them again."),
      action: "Delete push target",
    });
    if (!ok) return;
    try {
      await ctx.api.call("AdminService/DeletePush", { queue: name });
      status.ok("Deleted the push target.");
      ctx.poller.refresh();
    } catch (err) {
      status.fail(err);
    }
  };
  const view = (p) => {
    if (!p) return h("p", { class: "muted" }, "No push target: consumers receive this queue's messages (mqlite push set binds one).");
    return h(
      "div",
      {},
      dl([
        ["URL", h("code", {}, p.url)],
        ["Status", statusCell(p)],
        ["Last HTTP status", p.last_status ? String(p.last_status) : "—"],
        ["Last error", p.last_error || "—"],
        ["Delivered", count(p.delivered)],
        ["Failed attempts", count(p.failed)],
        ["Next attempt", p.next_attempt_at_ms ? dateTime(p.next_attempt_at_ms) : "—"],
        ["In flight at most", String(p.max_in_flight)],
        ["Timeout", duration(p.timeout_ms)],
      ]),
      h(
        "p",
        { class: "actions" },
        h("button", { type: "button", class: "secondary", onclick: () => change(p, !p.paused) }, p.paused ? "Resume push" : "Pause push"),
        h("button", { type: "button", class: "danger", onclick: remove }, "Delete push target…"),
      ),
    );
  };
  const refresh = async () => {
    const listed = (await ctx.api.call("AdminService/ListPushes", {})).pushes || [];
    const p = listed.find((x) => x.queue === name) || null;
    fillIfChanged(body, JSON.stringify(p), () => view(p));
  };
  const el = panel("Push delivery", h("p", { class: "hint" }, "The broker POSTs each message to the target, signed; counters since the broker started."), status.el, body);
  return { el, refresh };
}
