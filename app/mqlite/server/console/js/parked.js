// Messages parked out of the receive path: deferred ones (set aside by a consumer, fetched
// only by seq_number with ReceiveDeferred, then settled like any received message) and
// scheduled ones (listed with their due time; Cancel deletes one before it is due).

import { field, fill, h, table } from "./dom.js";
import { confirmAction } from "./dialogs.js";
import { dateTime, duration } from "./format.js";
import { settleRow, tickCountdowns } from "./receive.js";
import { busy, form, panel, resultArea } from "./ui.js";

const LISTED = 1000;

async function peekState(ctx, queue, state) {
  const resp = await ctx.api.call("QueueService/Peek", { queue, state, max: LISTED });
  return resp.messages || [];
}

/** "12, 15 17" → [12, 15, 17]; throws on anything that is not a positive integer. */
export function parseSeqs(text) {
  const parts = text.split(/[\s,]+/).filter(Boolean);
  if (!parts.length) throw new Error("give at least one seq_number");
  return parts.map((p) => {
    if (!/^\d+$/.test(p) || Number(p) <= 0) throw new Error(`"${p}" is not a seq_number`);
    return Number(p);
  });
}

export function deferredPanel(ctx, queue, onChange) {
  const listBox = h("div", { id: "deferred-list" });
  const received = h("div", { class: "messages", id: "deferred-received" });
  const seqs = h("input", { type: "text", inputmode: "numeric", autocomplete: "off", spellcheck: "false", placeholder: "12, 15" });
  const result = resultArea();
  const fetchSeqs = async (numbers) => {
    result.clear();
    try {
      const resp = await ctx.api.call("QueueService/ReceiveDeferred", { queue, seq_numbers: numbers });
      const msgs = resp.messages || [];
      received.prepend(...msgs.map((m) => settleRow(ctx, queue, m, onChange)));
      tickCountdowns(received);
      const missing = numbers.filter((n) => !msgs.some((m) => m.seq_number === n));
      result.ok(`Received ${msgs.length} deferred message${msgs.length === 1 ? "" : "s"} under lock.`, missing.length ? ` Not deferred (skipped): ${missing.join(", ")}.` : "");
      onChange();
      await list();
    } catch (err) {
      result.fail(err);
    }
  };
  const list = async () => {
    const msgs = await peekState(ctx, queue, "deferred");
    fill(
      listBox,
      table(
        `Deferred messages of ${queue}`,
        [{ label: "Seq" }, { label: "Subject" }, { label: "Enqueued" }, { label: "Actions" }],
        msgs.map((m) => {
          const b = h("button", { type: "button", class: "secondary", "aria-label": `Receive deferred message ${m.seq_number}` }, "Receive");
          b.addEventListener("click", () => busy(b, () => fetchSeqs([m.seq_number])));
          return [String(m.seq_number), m.subject || "—", dateTime(m.enqueued_at_ms), b];
        }),
        "No deferred messages.",
      ),
    );
  };
  const listButton = h("button", { type: "button", class: "secondary" }, "List deferred");
  listButton.addEventListener("click", () =>
    busy(listButton, async () => {
      result.clear();
      try {
        await list();
      } catch (err) {
        result.fail(err);
      }
    }),
  );
  const f = form({ class: "grid-form", "aria-label": "Receive deferred messages" }, [
    field("Seq numbers", seqs, "comma- or space-separated"),
    h("div", { class: "actions" }, h("button", { type: "submit", class: "primary" }, "Receive deferred")),
  ], async () => {
    let numbers;
    try {
      numbers = parseSeqs(seqs.value);
    } catch (err) {
      result.fail(err);
      return;
    }
    await fetchSeqs(numbers);
  });
  return panel(
    "Deferred messages",
    h("p", { class: "hint" }, "A deferred message is received only by its seq_number (ReceiveDeferred), then settled like any other."),
    h("div", { class: "actions" }, listButton),
    listBox,
    f,
    result.el,
    received,
  );
}

export function scheduledPanel(ctx, queue, onChange) {
  const listBox = h("div", { id: "scheduled-list" });
  const result = resultArea();
  const list = async () => {
    const msgs = await peekState(ctx, queue, "scheduled");
    fill(
      listBox,
      table(
        `Scheduled messages of ${queue}`,
        [{ label: "Seq" }, { label: "Due" }, { label: "In" }, { label: "Subject" }, { label: "Actions" }],
        msgs.map((m) => {
          const b = h("button", { type: "button", class: "danger", "aria-label": `Cancel scheduled message ${m.seq_number}` }, "Cancel…");
          b.addEventListener("click", async () => {
            const ok = await confirmAction({
              title: `Cancel scheduled message ${m.seq_number}?`,
              body: h("p", {}, `It was due at ${dateTime(m.visible_at_ms)}. Cancelling deletes it; it cannot be undone.`),
              action: "Cancel message",
            });
            if (!ok) return;
            await busy(b, async () => {
              result.clear();
              try {
                await ctx.api.call("QueueService/Cancel", { queue, seq_number: m.seq_number });
                result.ok(`Cancelled scheduled message ${m.seq_number}.`);
                onChange();
                await list();
              } catch (err) {
                result.fail(err);
              }
            });
          });
          return [String(m.seq_number), dateTime(m.visible_at_ms), duration(Math.max(0, m.visible_at_ms - Date.now())), m.subject || "—", b];
        }),
        "No scheduled messages.",
      ),
    );
  };
  const listButton = h("button", { type: "button", class: "secondary" }, "List scheduled");
  listButton.addEventListener("click", () =>
    busy(listButton, async () => {
      result.clear();
      try {
        await list();
      } catch (err) {
        result.fail(err);
      }
    }),
  );
  return panel("Scheduled messages", h("p", { class: "hint" }, "Messages sent for later: each becomes active at its due time."), h("div", { class: "actions" }, listButton), listBox, result.el);
}
