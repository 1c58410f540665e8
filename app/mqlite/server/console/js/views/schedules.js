// Cron schedules (docs/cron.md): every schedule with its status and its next and last
// firing, refreshed by the poller; add (or replace) one, pause and resume it (a replace
// with paused flipped, the rest as listed), delete it after a confirmation.

import { confirmAction } from "../dialogs.js";
import { fill, fillIfChanged, field, h, table } from "../dom.js";
import { dateTime, decodeBody, toBase64 } from "../format.js";
import { parseProperties } from "../messages.js";
import { errorView, form, pageTitle, panel, resultArea } from "../ui.js";

function addPanel(ctx, onDone) {
  const name = h("input", { type: "text", required: true, maxlength: "128", pattern: "[A-Za-z0-9._\\-]+", autocomplete: "off", spellcheck: "false" });
  const cron = h("input", { type: "text", required: true, autocomplete: "off", spellcheck: "false", placeholder: "30 2 * * *" });
  const tz = h("input", { type: "text", value: "UTC", autocomplete: "off", spellcheck: "false" });
  const queue = h("input", { type: "text", required: true, autocomplete: "off", spellcheck: "false" });
  const body = h("textarea", { rows: "2", spellcheck: "false", id: "cron-body" });
  const subject = h("input", { type: "text", autocomplete: "off" });
  const props = h("textarea", { rows: "2", spellcheck: "false", id: "cron-props", placeholder: "team=ops" });
  const catchUp = h("select", {}, h("option", { value: "latest" }, "latest: send the most recent missed slot once"), h("option", { value: "skip" }, "skip: send no missed slot"));
  const result = resultArea();
  const f = form({ class: "grid-form", "aria-label": "Add a schedule" }, [
    field("Name", name, "A-Z a-z 0-9 . _ -; an existing name is replaced"),
    field("Cron", cron, "minute hour day-of-month month day-of-week, or @hourly, @daily, @weekly, @monthly, @yearly"),
    field("Time zone", tz, "IANA name, e.g. Europe/Berlin"),
    field("Queue or topic", queue),
    h("div", { class: "field wide" }, h("label", { for: "cron-body" }, "Body (text)"), body),
    field("Subject", subject),
    h("div", { class: "field wide" }, h("label", { for: "cron-props" }, "Properties (key=value per line)"), props),
    field("After downtime", catchUp),
    h("div", { class: "actions" }, h("button", { type: "submit", class: "primary" }, "Add schedule")),
  ], async () => {
    result.clear();
    try {
      const message = { body: toBase64(body.value), properties: parseProperties(props.value) };
      if (subject.value.trim()) message.subject = subject.value.trim();
      const r = await ctx.api.call("AdminService/CreateSchedule", {
        name: name.value.trim(), cron: cron.value.trim(), timezone: tz.value.trim() || "UTC",
        queue: queue.value.trim(), message, catch_up: catchUp.value,
      });
      const s = r.schedule;
      result.ok(`Schedule ${s.name} saved: next slot ${s.next_fire_at_ms ? dateTime(s.next_fire_at_ms) : "none"}.`);
      onDone();
    } catch (err) {
      result.fail(err);
    }
  });
  return panel("Add a schedule", h("p", { class: "hint" }, "Each slot sends the message once, as a Send (a topic fans out), with message_id cron:<name>:<slot>."), f, result.el);
}

function statusCell(s) {
  const cls = s.status === "active" ? "ok" : s.status === "paused" ? "muted" : "error";
  return h("span", { class: cls, dataset: { status: s.status } }, s.status);
}

export function mount(root, ctx) {
  const body = h("div", { class: "live-data", id: "schedules-table" });
  const status = resultArea();
  let first = true;
  const change = async (s, paused) => {
    status.clear();
    try {
      const { name, cron, timezone, queue, message, catch_up } = s;
      await ctx.api.call("AdminService/CreateSchedule", { name, cron, timezone, queue, message, catch_up, paused });
      status.ok(`${paused ? "Paused" : "Resumed"} ${s.name}.`);
      ctx.poller.refresh();
    } catch (err) {
      status.fail(err);
    }
  };
  const remove = async (s) => {
    status.clear();
    const ok = await confirmAction({ title: `Delete the schedule ${s.name}?`, body: h("p", {}, "It fires no more slots. Messages it already sent stay in their queues."), action: "Delete schedule" });
    if (!ok) return;
    try {
      await ctx.api.call("AdminService/DeleteSchedule", { name: s.name });
      status.ok(`Deleted ${s.name}.`);
      ctx.poller.refresh();
    } catch (err) {
      status.fail(err);
    }
  };
  const refresh = async () => {
    try {
      const list = (await ctx.api.call("AdminService/ListSchedules", {})).schedules || [];
      const columns = [{ label: "Name" }, { label: "Cron" }, { label: "Time zone" }, { label: "Target" }, { label: "Status" }, { label: "Next fire" }, { label: "Last fire" }, { label: "Fired", cls: "num" }, { label: "Body" }, { label: "Actions" }];
      const rows = list.map((s) => [
        s.name,
        h("code", {}, s.cron),
        s.timezone,
        s.queue,
        statusCell(s),
        s.next_fire_at_ms ? dateTime(s.next_fire_at_ms) : "—",
        s.last_fired_at_ms ? dateTime(s.last_fired_at_ms) : "never",
        String(s.fired),
        (decodeBody(s.message.body || "", "text").shown ?? "(binary)").slice(0, 40),
        h(
          "span",
          { class: "actions" },
          h("button", { type: "button", class: "secondary", "aria-label": `${s.paused ? "Resume" : "Pause"} schedule ${s.name}`, onclick: () => change(s, !s.paused) }, s.paused ? "Resume" : "Pause"),
          h("button", { type: "button", class: "danger", "aria-label": `Delete schedule ${s.name}`, onclick: () => remove(s) }, "Delete…"),
        ),
      ]);
      fillIfChanged(body, JSON.stringify(list), () => table("Cron schedules by name", columns, rows, "No schedules yet: add one below."));
      first = false;
    } catch (err) {
      if (first) fill(body, errorView(err));
      throw err;
    }
  };
  fill(root, pageTitle("Schedules"), panel("All schedules", h("p", { class: "hint" }, "Times are local to this browser. A target missing schedule fires nothing until its queue or topic exists again."), status.el, body), addPanel(ctx, () => ctx.poller.refresh()));
  ctx.poller.start(refresh);
}
