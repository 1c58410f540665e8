// The dead-letter browser: list a queue's dead letters (Peek, state dead_lettered), filter
// them by reason and age in the page, select rows, and redrive the selection (back to the
// source or into another queue) or purge it — AdminService/Redrive and Purge with the
// selected seq_numbers, so only those rows move, whatever else arrived meanwhile.
// "Resubmit" on a row is the redrive of that one message back to its queue.

import { field, fill, h } from "./dom.js";
import { confirmAction } from "./dialogs.js";
import { duration } from "./format.js";
import { messageCard } from "./messages.js";
import { busy, panel, resultArea } from "./ui.js";

export const MAX_LISTED = 1000; // Peek's page bound and the Redrive/Purge selection bound

const AGES = [
  ["0", "any age"],
  ["60000", "older than 1 min"],
  ["600000", "older than 10 min"],
  ["3600000", "older than 1 h"],
  ["86400000", "older than 1 day"],
];

export function deadLetterBrowser(ctx, queue, onChange) {
  const reason = h("select", {}, h("option", { value: "" }, "any reason"));
  const age = h("select", {}, AGES.map(([v, l]) => h("option", { value: v }, l)));
  const target = h("input", { type: "text", autocomplete: "off", spellcheck: "false" });
  const list = h("div", { id: "dlq-rows" });
  const summary = h("p", { class: "muted", "aria-live": "polite" });
  const result = resultArea();
  let rows = [];
  const selected = new Set();
  const redriveButton = h("button", { type: "button", class: "primary", disabled: true }, "Redrive selected");
  const purgeButton = h("button", { type: "button", class: "danger", disabled: true }, "Purge selected…");

  const shown = () => {
    const minAge = Number(age.value);
    const now = Date.now();
    return rows.filter((m) => (!reason.value || m.dead_letter_reason === reason.value) && (!minAge || now - m.enqueued_at_ms > minAge));
  };
  const syncButtons = () => {
    redriveButton.disabled = purgeButton.disabled = selected.size === 0;
    summary.textContent = `${shown().length} of ${rows.length} dead letter${rows.length === 1 ? "" : "s"} shown · ${selected.size} selected`;
  };
  const render = () => {
    const visible = shown();
    for (const seq of [...selected]) if (!visible.some((m) => m.seq_number === seq)) selected.delete(seq);
    if (!visible.length) {
      fill(list, h("p", { class: "empty" }, rows.length ? "No dead letter matches the filter." : "No dead letters."));
      syncButtons();
      return;
    }
    const all = h("input", { type: "checkbox", "aria-label": "Select every dead letter shown" });
    all.checked = visible.every((m) => selected.has(m.seq_number));
    const boxes = [];
    all.addEventListener("change", () => {
      for (const [m, box] of boxes) {
        box.checked = all.checked;
        if (all.checked) selected.add(m.seq_number);
        else selected.delete(m.seq_number);
      }
      syncButtons();
    });
    const body = visible.map((m) => {
      const box = h("input", { type: "checkbox", "aria-label": `Select dead letter ${m.seq_number}` });
      box.checked = selected.has(m.seq_number);
      box.addEventListener("change", () => {
        if (box.checked) selected.add(m.seq_number);
        else selected.delete(m.seq_number);
        all.checked = boxes.every(([, b]) => b.checked);
        syncButtons();
      });
      boxes.push([m, box]);
      const resubmit = h("button", { type: "button", class: "secondary", "aria-label": `Resubmit dead letter ${m.seq_number}` }, "Resubmit");
      resubmit.addEventListener("click", () => busy(resubmit, () => act("Redrive", [m.seq_number], "")));
      return h(
        "tr",
        { dataset: { seq: String(m.seq_number) } },
        h("td", {}, box),
        h("th", { scope: "row" }, String(m.seq_number)),
        h("td", {}, m.dead_letter_reason || "—"),
        h("td", { class: "wrap" }, m.dead_letter_description || ""),
        h("td", {}, duration(Date.now() - m.enqueued_at_ms)),
        h("td", {}, resubmit),
      );
    });
    fill(
      list,
      h(
        "div",
        { class: "table-wrap", role: "region", "aria-label": `Dead-letter list of ${queue}`, tabindex: "0" },
        h(
          "table",
          { id: "dlq-table" },
          h("caption", { class: "visually-hidden" }, `Dead-letter list of ${queue}`),
          h("thead", {}, h("tr", {}, h("th", { scope: "col" }, all), ["Seq", "Reason", "Description", "Age", "Actions"].map((c) => h("th", { scope: "col" }, c)))),
          h("tbody", {}, body),
        ),
      ),
      h(
        "details",
        { class: "dlq-details" },
        h("summary", {}, "Inspect the dead letters shown"),
        h("div", { class: "messages" }, visible.map(messageCard)),
      ),
    );
    syncButtons();
  };
  const load = async () => {
    const resp = await ctx.api.call("QueueService/Peek", { queue, state: "dead_lettered", max: MAX_LISTED });
    rows = resp.messages || [];
    const reasons = [...new Set(rows.map((m) => m.dead_letter_reason || ""))].filter(Boolean).sort();
    const keep = reason.value;
    fill(reason, h("option", { value: "" }, "any reason"), reasons.map((r) => h("option", { value: r }, r)));
    reason.value = reasons.includes(keep) ? keep : "";
    render();
  };
  async function act(method, seqs, into) {
    result.clear();
    try {
      const body = { queue, seq_numbers: seqs };
      if (method === "Redrive" && into) body.target = into;
      const resp = await ctx.api.call(`AdminService/${method}`, body);
      const n = method === "Redrive" ? resp.moved : resp.purged;
      const verb = method === "Redrive" ? `Redrove${into ? ` into ${into}` : ""}` : "Purged";
      result.ok(`${verb} ${n} dead letter${n === 1 ? "" : "s"}.`);
      for (const s of seqs) selected.delete(s);
      onChange();
      await load();
    } catch (err) {
      result.fail(err);
    }
  }
  redriveButton.addEventListener("click", () => busy(redriveButton, () => act("Redrive", [...selected], target.value.trim())));
  purgeButton.addEventListener("click", async () => {
    const n = selected.size;
    const ok = await confirmAction({
      title: `Purge ${n} dead letter${n === 1 ? "" : "s"}?`,
      body: h("p", {}, `This permanently deletes the ${n} selected dead letter${n === 1 ? "" : "s"} of `, h("strong", {}, queue), ". It cannot be undone."),
      action: "Purge selected",
    });
    if (ok) await busy(purgeButton, () => act("Purge", [...selected], ""));
  });
  reason.addEventListener("change", render);
  age.addEventListener("change", render);
  const reload = h("button", { type: "button", class: "secondary" }, "Load dead letters");
  reload.addEventListener("click", () =>
    busy(reload, async () => {
      result.clear();
      try {
        await load();
      } catch (err) {
        result.fail(err);
      }
    }),
  );
  return panel(
    "Dead-letter browser",
    h("p", { class: "hint" }, `Lists up to ${MAX_LISTED} dead letters, oldest first. Select rows, then redrive or purge exactly those.`),
    h("div", { class: "inline-field" }, field("Reason", reason), field("Age", age), h("div", { class: "actions" }, reload)),
    summary,
    list,
    h("div", { class: "inline-field" }, field("Redrive into", target, `blank = back into ${queue}`), h("div", { class: "actions" }, redriveButton, purgeButton)),
    result.el,
  );
}
