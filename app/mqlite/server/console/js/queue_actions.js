// The queue page's operations: send a test message, redrive dead letters (with a rate),
// purge them (typed confirmation) and delete the queue (exact-name confirmation, fenced on
// the generation ListQueues reported: a replacement queue of the same name is never hit).

import { h, field } from "./dom.js";
import { toBase64 } from "./format.js";
import { confirmAction } from "./dialogs.js";
import { parseProperties } from "./messages.js";
import { form, intValue, panel, resultArea } from "./ui.js";

export function sendPanel(ctx, queue, onSent) {
  const body = h("textarea", { rows: "4", spellcheck: "false" });
  const contentType = h("input", { type: "text", placeholder: "application/json", autocomplete: "off" });
  const subject = h("input", { type: "text", autocomplete: "off" });
  const messageId = h("input", { type: "text", autocomplete: "off" });
  const groupId = h("input", { type: "text", autocomplete: "off" });
  const props = h("textarea", { rows: "2", spellcheck: "false", placeholder: "region=eu" });
  const result = resultArea();
  const f = form({ class: "grid-form", "aria-label": "Send a test message" }, [
    h("div", { class: "field wide" }, h("label", { for: "send-body" }, "Body (text)"), Object.assign(body, { id: "send-body" })),
    field("Content type", contentType),
    field("Subject", subject),
    field("Message ID", messageId, "dedup key; optional"),
    field("Group ID", groupId, "required on group_fifo queues"),
    h("div", { class: "field wide" }, h("label", { for: "send-props" }, "Properties"), Object.assign(props, { id: "send-props", "aria-describedby": "send-props-hint" }), h("p", { class: "hint", id: "send-props-hint" }, "one key=value per line")),
    h("div", { class: "actions" }, h("button", { type: "submit", class: "primary" }, "Send message")),
  ], async () => {
    result.clear();
    try {
      const message = { body: toBase64(body.value), properties: parseProperties(props.value) };
      for (const [k, el] of [["content_type", contentType], ["subject", subject], ["message_id", messageId], ["group_id", groupId]]) {
        if (el.value.trim()) message[k] = el.value.trim();
      }
      const resp = await ctx.api.call("QueueService/Send", { queue, messages: [message] });
      result.ok(`Sent: seq_number ${resp.seq_numbers[0]}.`);
      // What belongs to one message goes with it: the next send starts without the last
      // one's subject, properties and dedup key (body, content type and group stay).
      for (const el of [subject, props, messageId]) el.value = "";
      onSent();
    } catch (err) {
      result.fail(err);
    }
  });
  return panel("Send a test message", f, result.el);
}

export function deadLetterPanel(ctx, queue, deadCount, onChange) {
  const max = h("input", { type: "number", min: "0", step: "1", inputmode: "numeric", placeholder: "0" });
  const ratePerSec = h("input", { type: "number", min: "0", step: "1", inputmode: "numeric", value: "50" });
  const target = h("input", { type: "text", autocomplete: "off", spellcheck: "false" });
  const redriveResult = resultArea();
  const redrive = form({ class: "grid-form", "aria-label": "Redrive dead letters" }, [
    field("At most", max, "0 = all"),
    field("Rate per second", ratePerSec, "0 = all at once"),
    field("Into queue", target, `blank = back into ${queue}`),
    h("div", { class: "actions" }, h("button", { type: "submit", class: "primary" }, "Redrive")),
  ], async () => {
    redriveResult.clear();
    try {
      const resp = await ctx.api.call("AdminService/Redrive", { queue, target: target.value.trim(), max: intValue(max), rate_per_sec: intValue(ratePerSec) });
      redriveResult.ok(`Redrove ${resp.moved} dead letter${resp.moved === 1 ? "" : "s"}.`);
      onChange();
    } catch (err) {
      redriveResult.fail(err);
    }
  });
  const purgeResult = resultArea();
  const purgeButton = h("button", { type: "button", class: "danger" }, "Purge dead letters…");
  purgeButton.addEventListener("click", async () => {
    purgeResult.clear();
    const ok = await confirmAction({
      title: `Purge the dead letters of ${queue}?`,
      body: h("p", {}, `This permanently deletes ${deadCount() === null ? "every" : `all ${deadCount()}`} dead-lettered message${deadCount() === 1 ? "" : "s"} of `, h("strong", {}, queue), ". It cannot be undone."),
      expected: "purge",
      action: "Purge",
    });
    if (!ok) return;
    try {
      const resp = await ctx.api.call("AdminService/Purge", { queue });
      purgeResult.ok(`Purged ${resp.purged} dead letter${resp.purged === 1 ? "" : "s"}.`);
      onChange();
    } catch (err) {
      purgeResult.fail(err);
    }
  });
  return panel(
    "Dead letters",
    h("h3", {}, "Redrive"),
    h("p", { class: "hint" }, "Move dead letters back to active, paced at the rate given. Fix the cause first."),
    redrive,
    redriveResult.el,
    h("h3", {}, "Purge"),
    h("p", { class: "hint" }, "Permanently delete every dead letter of this queue."),
    h("div", { class: "actions" }, purgeButton),
    purgeResult.el,
  );
}

export function deletePanel(ctx, info, onDeleted) {
  const result = resultArea();
  if (!ctx.features.deleteQueue) {
    return panel("Delete queue", h("p", {}, "This broker does not support deleting queues (DeleteQueue needs v0.3.3 or later)."));
  }
  if (info.kind !== "queue") {
    return panel("Delete queue", h("p", {}, "This is a subscription's backing queue: remove the subscription on the Topics page instead."));
  }
  const button = h("button", { type: "button", class: "danger" }, "Delete queue…");
  button.addEventListener("click", async () => {
    result.clear();
    const ok = await confirmAction({
      title: `Delete the queue ${info.name}?`,
      body: [
        h("p", {}, "Only an empty queue can be deleted: messages in any state (including scheduled, deferred and dead-lettered) block it. Its configuration and dedup records go with it."),
        h("p", {}, "Stop producers and consumers first."),
      ],
      expected: info.name,
      prompt: h("span", {}, "Type the queue name ", h("code", {}, info.name), " to confirm"),
      action: "Delete queue",
    });
    if (!ok) return;
    try {
      await ctx.api.call("AdminService/DeleteQueue", { name: info.name, generation: info.generation });
      onDeleted();
    } catch (err) {
      result.fail(err);
    }
  });
  return panel("Delete queue", h("p", { class: "hint" }, `Generation ${info.generation || "(legacy)"}: the deletion applies to this queue only, not to a replacement created under the same name.`), h("div", { class: "actions" }, button), result.el);
}
