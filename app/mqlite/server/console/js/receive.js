// Receive and settle from the console: "Receive" peek-locks 1–32 messages (Receive, mode 0)
// and lists each with a live lock countdown and the five settlements a consumer has —
// Complete, Abandon (optional delay), Defer, Reject (reason + description) and Renew.
// Every action is the documented RPC with the signed-in token; a failure shows the
// broker's answer in words and its wire code (an expired lock reads as lock_lost, the
// server's verdict, never a guess made in the page).
//
// The countdown runs on this browser's clock against the broker's locked_until_ms: on
// one machine (or synchronized clocks) it is exact; the broker's answer is what counts.

import { field, fill, h } from "./dom.js";
import { formDialog } from "./dialogs.js";
import { duration } from "./format.js";
import { messageCard } from "./messages.js";
import { busy, errorView, form, intValue, panel, resultArea } from "./ui.js";

export const MAX_RECEIVE = 32;

function countdownText(untilMs) {
  const left = untilMs - Date.now();
  return left > 0 ? `Lock expires in ${duration(left)}` : "Lock expired";
}

/** Refresh every countdown under ``root`` each second until ``root`` leaves the page. */
export function tickCountdowns(root) {
  if (root.dataset.ticking) return;
  root.dataset.ticking = "true";
  const timer = setInterval(() => {
    if (!root.isConnected) {
      clearInterval(timer);
      return;
    }
    for (const el of root.querySelectorAll("[data-locked-until]")) {
      const until = Number(el.dataset.lockedUntil);
      el.textContent = countdownText(until);
      el.classList.toggle("expired", until <= Date.now());
    }
  }, 1000);
}

async function abandonArgs() {
  const delay = h("input", { type: "number", min: "0", step: "1", inputmode: "numeric", value: "0" });
  // The failure kept with the message as its last error (the retry policy, issue 30); the
  // broker refuses more than 4 KiB of UTF-8 and says so.
  const error = h("input", { type: "text", autocomplete: "off", maxlength: "4096", value: "" });
  const values = await formDialog({
    title: "Abandon the message?",
    intro: h("p", {}, "Its lock is released and it can be received again (its delivery count stays)."),
    fields: [
      { name: "delay", label: "Delay (ms)", control: delay, hint: "0 = at once, or the queue's retry policy" },
      { name: "error", label: "Error", control: error, hint: "optional: kept as the message's last error" },
    ],
    action: "Abandon",
  });
  if (!values) return values;
  const args = { delay_ms: intValue(delay) };
  if (error.value) args.error = error.value;
  return args;
}

async function rejectArgs() {
  const reason = h("input", { type: "text", autocomplete: "off", value: "console-reject" });
  const description = h("textarea", { rows: "3", spellcheck: "false" });
  const values = await formDialog({
    title: "Reject (dead-letter) the message?",
    intro: h("p", {}, "It moves to this queue's dead letters with the reason and description below."),
    fields: [
      { name: "reason", label: "Reason", control: reason, hint: "short; shown in the dead-letter list" },
      { name: "description", label: "Description", control: description },
    ],
    action: "Reject",
    danger: true,
  });
  return values && { dead_letter_reason: values.reason.trim(), dead_letter_description: values.description.trim() };
}

export function settleRow(ctx, queue, m, onChange) {
  const card = messageCard(m);
  const lock = h("p", { class: "lock", dataset: { lockedUntil: String(m.locked_until_ms || 0) } }, countdownText(m.locked_until_ms || 0));
  const status = h("div", { class: "result", "aria-live": "polite" });
  const buttons = [];
  const done = (text) => {
    delete lock.dataset.lockedUntil;
    lock.textContent = text;
    lock.classList.remove("expired");
    for (const b of buttons) b.remove();
    onChange();
  };
  const key = { queue, seq_number: m.seq_number, lock_token: m.lock_token };
  // ``ask`` (a dialog) runs before the button turns busy, so focus can return to it.
  const action = (label, cls, run, ask = async () => ({})) => {
    const b = h("button", { type: "button", class: cls, "aria-label": `${label} message ${m.seq_number}` }, label);
    b.addEventListener("click", async () => {
      const args = await ask();
      if (!args) return;
      await busy(b, async () => {
        fill(status);
        try {
          await run(args);
        } catch (err) {
          fill(status, errorView(err));
        }
      });
    });
    buttons.push(b);
    return b;
  };
  const settle = (method, text) => async (args) => {
    await ctx.api.call(`QueueService/${method}`, { ...key, ...args });
    done(typeof text === "function" ? text(args) : text);
  };
  const toolbar = h(
    "div",
    { class: "actions settle" },
    action("Complete", "primary", settle("Complete", "Completed: deleted from the queue.")),
    action(
      "Abandon…",
      "secondary",
      settle("Abandon", (a) => (a.delay_ms ? `Abandoned: receivable again in ${duration(a.delay_ms)}.` : "Abandoned: receivable again.")),
      abandonArgs,
    ),
    action("Defer", "secondary", settle("Defer", `Deferred: fetch it by seq_number ${m.seq_number}.`)),
    action("Reject…", "danger", settle("Reject", "Rejected: moved to the dead letters."), rejectArgs),
    action("Renew", "secondary", async () => {
      // Renew answers ok or lock_lost; the new deadline is read back with a Peek of the message.
      await ctx.api.call("QueueService/Renew", key);
      const peeked = await ctx.api.call("QueueService/Peek", { queue, from_seq: m.seq_number, max: 1 });
      const p = (peeked.messages || [])[0];
      if (p && p.seq_number === m.seq_number && p.locked_until_ms) {
        lock.dataset.lockedUntil = String(p.locked_until_ms);
        lock.textContent = countdownText(p.locked_until_ms);
        lock.classList.remove("expired");
      }
      fill(status, h("p", { class: "ok" }, "Lock renewed."));
    }),
  );
  card.append(lock, toolbar, status);
  return card;
}

/** The Receive panel of ``queue`` (a plain queue or a subscription). */
export function receivePanel(ctx, queue, onChange) {
  const max = h("input", { type: "number", min: "1", max: String(MAX_RECEIVE), step: "1", inputmode: "numeric", value: "1", required: true });
  const list = h("div", { class: "messages", id: "received" });
  const result = resultArea();
  const f = form({ class: "grid-form", "aria-label": "Receive messages" }, [
    field("How many", max, `1 to ${MAX_RECEIVE}`),
    h("div", { class: "actions" }, h("button", { type: "submit", class: "primary" }, "Receive")),
  ], async () => {
    result.clear();
    try {
      const n = Math.min(MAX_RECEIVE, Math.max(1, intValue(max)));
      const resp = await ctx.api.call("QueueService/Receive", { queue, max_messages: n, wait_time_ms: 0, receive_mode: 0 });
      const msgs = resp.messages || [];
      list.prepend(...msgs.map((m) => settleRow(ctx, queue, m, onChange)));
      tickCountdowns(list);
      result.ok(msgs.length ? `Received ${msgs.length} message${msgs.length === 1 ? "" : "s"} under lock.` : "Nothing to receive: no active message.");
      onChange();
    } catch (err) {
      result.fail(err);
    }
  });
  return panel(
    "Receive and settle",
    h("p", { class: "hint" }, "Peek-locks messages as a consumer would: settle each before its lock expires, or it is redelivered."),
    f,
    result.el,
    list,
  );
}
