// The audit trail (docs/operations.md "Audit trail"): who changed what -- queues,
// subscriptions, purges, redrives, keys, schedules -- newest last, as ListAudit pages it.
// The filter form narrows by queue and by age; the poller appends what was recorded since
// the last row shown (a tail), so an open page follows the broker's changes.

import { fill, fillIfChanged, field, h, table } from "../dom.js";
import { dateTime } from "../format.js";
import { errorView, form, pageTitle, panel } from "../ui.js";

const PAGE = 1000;
const SHOWN = 2000; // rows kept on the page: the newest, older ones drop off the top
const SINCE = [
  ["3600000", "the last hour"],
  ["86400000", "the last 24 hours"],
  ["604800000", "the last 7 days"],
  ["0", "everything kept"],
];

export function mount(root, ctx) {
  const queue = h("input", { type: "text", autocomplete: "off", spellcheck: "false", placeholder: "every queue" });
  const since = h("select", {}, ...SINCE.map(([v, label]) => h("option", { value: v }, label)));
  since.value = "86400000";
  const body = h("div", { class: "live-data", id: "audit-table" });
  let rows = [];
  let lastId = 0;
  let first = true;
  let filter = { queue: "", since_ms: Date.now() - 86400000 };

  const columns = [{ label: "ID", cls: "num" }, { label: "When" }, { label: "Actor" }, { label: "Action" }, { label: "Queue" }, { label: "Request" }, { label: "Detail" }];
  const cells = () =>
    rows.map((e) => [
      String(e.id),
      dateTime(e.at_ms),
      h("code", {}, e.actor),
      h("span", { dataset: { action: e.action } }, e.action),
      e.queue || "—",
      e.request_id ? h("code", {}, e.request_id) : "—",
      h("code", { class: "detail" }, e.detail),
    ]);
  const render = () => {
    const key = `${JSON.stringify(filter)}:${lastId}:${rows.length}`;
    fillIfChanged(body, key, () => table("Audit trail, oldest first", columns, cells(), "No changes recorded for this filter."));
  };

  const refresh = async () => {
    try {
      for (;;) {
        const r = await ctx.api.call("AdminService/ListAudit", { after_id: lastId, limit: PAGE, ...filter });
        const got = r.entries || [];
        if (got.length) {
          rows = rows.concat(got).slice(-SHOWN);
          lastId = got[got.length - 1].id;
        }
        if (got.length < PAGE) break;
      }
      render();
      first = false;
    } catch (err) {
      if (first) fill(body, errorView(err));
      throw err;
    }
  };

  const f = form({ class: "grid-form", "aria-label": "Filter the audit trail" }, [
    field("Queue or topic", queue, "exact name; empty = every queue, keys included"),
    field("Changes from", since),
    h("div", { class: "actions" }, h("button", { type: "submit", class: "primary" }, "Show")),
  ], async () => {
    const age = Number(since.value);
    filter = { queue: queue.value.trim(), since_ms: age ? Date.now() - age : 0 };
    rows = [];
    lastId = 0;
    first = true;
    ctx.poller.refresh();
  });
  fill(root, pageTitle("Audit trail"), panel("Who changed what", h("p", { class: "hint" }, "Every change that is not a message operation, recorded with the change itself: the actor is admin:<n> (the n-th configured token), key:<id> (a managed key) or embedded (the library). Times are local to this browser."), f, body));
  ctx.poller.start(refresh);
}
