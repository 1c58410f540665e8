// Publish to a topic from the Topics page, with the fields of a queue's test send. Before
// anything is sent the operator sees where the message would go: each subscription's
// filter is evaluated by TestFilter with the message as the sample (the broker decides,
// exactly as fan-out would), and Publish asks for confirmation naming the matched
// subscriptions. Publishing is QueueService/Send with the topic as the queue.

import { field, fill, h, table } from "./dom.js";
import { confirmAction } from "./dialogs.js";
import { toBase64 } from "./format.js";
import { parseProperties } from "./messages.js";
import { busy, errorView, form, panel, resultArea } from "./ui.js";

function verdictText(r) {
  if (!r.valid) return `filter does not compile: ${r.error}`;
  if (r.error) return `evaluation failed (not routed): ${r.error}`;
  return r.matched ? "matches" : "no match";
}

/** ``subsOf(topic)`` → that topic's subscriptions [{name, expr}] as last listed. */
export function publishPanel(ctx, subsOf, onPublished) {
  const topic = h("input", { type: "text", required: true, autocomplete: "off", spellcheck: "false", list: "publish-topics" });
  const topics = h("datalist", { id: "publish-topics" });
  const body = h("textarea", { rows: "4", spellcheck: "false", id: "publish-body" });
  const contentType = h("input", { type: "text", placeholder: "application/json", autocomplete: "off" });
  const subject = h("input", { type: "text", autocomplete: "off" });
  const messageId = h("input", { type: "text", autocomplete: "off" });
  const groupId = h("input", { type: "text", autocomplete: "off" });
  const props = h("textarea", { rows: "2", spellcheck: "false", id: "publish-props", placeholder: "region=eu" });
  const routing = h("div", { id: "publish-routing", "aria-live": "polite" });
  const result = resultArea();

  const message = () => {
    const m = { body: toBase64(body.value), properties: parseProperties(props.value) };
    for (const [k, el] of [["content_type", contentType], ["subject", subject], ["message_id", messageId], ["group_id", groupId]]) {
      if (el.value.trim()) m[k] = el.value.trim();
    }
    return m;
  };
  /** Evaluate every subscription of the topic on ``m``; render and return the matches. */
  const preview = async (name, m) => {
    const subs = subsOf(name);
    const verdicts = await Promise.all(subs.map((s) => ctx.api.call("AdminService/TestFilter", { expr: s.expr || "", message: m })));
    const rows = subs.map((s, i) => [s.name, s.expr ? h("code", { class: "expr" }, s.expr) : h("span", { class: "muted" }, "every message"), h("span", { class: verdicts[i].matched ? "badge match" : "muted", dataset: { matched: String(Boolean(verdicts[i].matched)) } }, verdictText(verdicts[i]))]);
    const matched = subs.filter((s, i) => verdicts[i].matched).map((s) => s.name);
    fill(
      routing,
      h("p", {}, subs.length ? `Would reach ${matched.length} of ${subs.length} subscription${subs.length === 1 ? "" : "s"} of ${name}.` : `${name} has no subscription: a message published now reaches no one.`),
      subs.length ? table(`Routing of the message to ${name}`, [{ label: "Subscription" }, { label: "Filter" }, { label: "Outcome" }], rows) : null,
    );
    return matched;
  };
  const previewButton = h("button", { type: "button", class: "secondary" }, "Preview routing");
  previewButton.addEventListener("click", () =>
    busy(previewButton, async () => {
      result.clear();
      if (!topic.value.trim()) {
        topic.reportValidity();
        return;
      }
      try {
        await preview(topic.value.trim(), message());
      } catch (err) {
        fill(routing, errorView(err));
      }
    }),
  );
  const f = form({ class: "grid-form", "aria-label": "Publish to a topic" }, [
    field("Topic", topic),
    h("div", { class: "field wide" }, h("label", { for: "publish-body" }, "Body (text)"), body),
    field("Content type", contentType),
    field("Subject", subject),
    field("Message ID", messageId, "dedup key; optional"),
    field("Group ID", groupId),
    h("div", { class: "field wide" }, h("label", { for: "publish-props" }, "Properties"), props, h("p", { class: "hint" }, "one key=value per line")),
    h("div", { class: "actions" }, previewButton, h("button", { type: "submit", class: "primary" }, "Publish…")),
  ], async () => {
    result.clear();
    const name = topic.value.trim();
    try {
      const m = message();
      const matched = await preview(name, m);
      const ok = await confirmAction({
        title: `Publish to ${name}?`,
        body: h("p", {}, matched.length ? `It will be delivered to ${matched.length} subscription${matched.length === 1 ? "" : "s"}: ${matched.join(", ")}.` : "No subscription matches it: it will reach no one."),
        action: "Publish",
        danger: false,
      });
      if (!ok) return;
      const resp = await ctx.api.call("QueueService/Send", { queue: name, messages: [m] });
      result.ok(`Published to ${name}: seq_number ${(resp.seq_numbers || [])[0]}.`);
      onPublished();
    } catch (err) {
      result.fail(err);
    }
  });
  return {
    panel: panel("Publish to a topic", h("p", { class: "hint" }, "Preview shows which subscriptions the message would reach (each filter evaluated by the broker); Publish asks before sending."), topics, f, routing, result.el),
    setTopics(names) {
      fill(topics, names.map((n) => h("option", { value: n })));
    },
  };
}
