// Topics and their subscriptions with filters; publish (with a routing preview),
// subscribe (create or re-filter), remove a subscription, and a filter tester that evaluates an expression against a sample message
// exactly as publish-time fan-out would (TestFilter: nothing is enqueued).

import { confirmAction } from "../dialogs.js";
import { fill, field, h, table } from "../dom.js";
import { toBase64 } from "../format.js";
import { parseProperties } from "../messages.js";
import { errorView, form, pageTitle, panel, resultArea } from "../ui.js";
import { queueHref } from "./queues.js";
import { publishPanel } from "../publish.js";

function subscribePanel(ctx, onDone) {
  const topic = h("input", { type: "text", required: true, autocomplete: "off", spellcheck: "false" });
  const name = h("input", { type: "text", required: true, autocomplete: "off", spellcheck: "false" });
  const expr = h("textarea", { rows: "2", spellcheck: "false", placeholder: 'subject == "orders.eu"' });
  const result = resultArea();
  const f = form({ class: "grid-form", "aria-label": "Subscribe" }, [
    field("Topic", topic),
    field("Subscription name", name),
    h("div", { class: "field wide" }, h("label", { for: "sub-expr" }, "Filter"), Object.assign(expr, { id: "sub-expr", "aria-describedby": "sub-expr-hint" }), h("p", { class: "hint", id: "sub-expr-hint" }, "An expr boolean over the message; empty matches every message.")),
    h("div", { class: "actions" }, h("button", { type: "submit", class: "primary" }, "Subscribe")),
  ], async () => {
    result.clear();
    try {
      await ctx.api.call("AdminService/Subscribe", { topic: topic.value.trim(), name: name.value.trim(), filter: { expr: expr.value.trim() } });
      result.ok(`Subscribed ${name.value.trim()} to ${topic.value.trim()}.`);
      onDone();
    } catch (err) {
      result.fail(err);
    }
  });
  return panel("Subscribe", h("p", { class: "hint" }, "Subscribing an existing (topic, name) again replaces its filter."), f, result.el);
}

function testerPanel(ctx) {
  const expr = h("textarea", { rows: "2", spellcheck: "false", id: "test-expr" });
  const body = h("textarea", { rows: "3", spellcheck: "false", id: "test-body" });
  const contentType = h("input", { type: "text", autocomplete: "off" });
  const subject = h("input", { type: "text", autocomplete: "off" });
  const messageId = h("input", { type: "text", autocomplete: "off" });
  const props = h("textarea", { rows: "2", spellcheck: "false", id: "test-props", placeholder: "region=eu" });
  const outcome = h("div", { id: "filter-outcome", "aria-live": "polite" });
  const f = form({ class: "grid-form", "aria-label": "Test a filter" }, [
    h("div", { class: "field wide" }, h("label", { for: "test-expr" }, "Filter expression"), expr),
    h("div", { class: "field wide" }, h("label", { for: "test-body" }, "Sample body (text)"), body),
    field("Content type", contentType),
    field("Subject", subject),
    field("Message ID", messageId),
    h("div", { class: "field wide" }, h("label", { for: "test-props" }, "Sample properties (key=value per line)"), props),
    h("div", { class: "actions" }, h("button", { type: "submit", class: "primary" }, "Test filter")),
  ], async () => {
    fill(outcome);
    try {
      const message = { body: toBase64(body.value), properties: parseProperties(props.value) };
      if (contentType.value.trim()) message.content_type = contentType.value.trim();
      if (subject.value.trim()) message.subject = subject.value.trim();
      if (messageId.value.trim()) message.message_id = messageId.value.trim();
      const r = await ctx.api.call("AdminService/TestFilter", { expr: expr.value, message });
      let text;
      let cls = "ok";
      if (!r.valid) {
        text = `The expression does not compile: ${r.error}`;
        cls = "error";
      } else if (r.error) {
        text = `The expression compiles, but evaluating it on the sample failed: ${r.error}. Such a message would not be routed (fail closed).`;
        cls = "error";
      } else {
        text = r.matched ? "Matched: the sample would be routed to a subscription with this filter." : "Not matched: the sample would not be routed there.";
        cls = r.matched ? "ok" : "notice";
      }
      fill(outcome, h("p", { class: cls, dataset: { matched: String(Boolean(r.matched)), valid: String(Boolean(r.valid)) } }, text));
    } catch (err) {
      fill(outcome, errorView(err));
    }
  });
  return { panel: panel("Filter tester", h("p", { class: "hint" }, "Evaluates the filter against a sample exactly as fan-out would; nothing is enqueued."), f, outcome), setExpr: (e) => { expr.value = e; expr.focus(); } };
}

function topicTables(ctx, subs, tester, onChange) {
  const byTopic = new Map();
  for (const s of subs) {
    if (!byTopic.has(s.topic)) byTopic.set(s.topic, []);
    byTopic.get(s.topic).push(s);
  }
  if (!byTopic.size) return h("p", { class: "empty" }, "No topics yet: a topic exists once it has a subscription.");
  return [...byTopic].map(([topic, list]) =>
    h(
      "section",
      { class: "topic", "aria-label": `Topic ${topic}` },
      h("h3", {}, `Topic ${topic}`),
      table(
        `Subscriptions of ${topic}`,
        [{ label: "Subscription" }, { label: "Filter" }, { label: "Actions" }],
        list.map((s) => [
          h("a", { href: queueHref(s.name) }, s.name),
          s.expr ? h("code", { class: "expr" }, s.expr) : h("span", { class: "muted" }, "matches every message"),
          h(
            "span",
            { class: "row-actions" },
            h("button", { type: "button", class: "secondary", onclick: () => tester.setExpr(s.expr), "aria-label": `Test the filter of ${s.name}` }, "Test"),
            ctx.features.unsubscribe &&
              h("button", {
                type: "button",
                class: "danger",
                "aria-label": `Remove subscription ${s.name}`,
                onclick: async () => {
                  const ok = await confirmAction({ title: `Remove the subscription ${s.name}?`, body: h("p", {}, `It stops receiving messages published to ${topic}. A subscription whose queue still holds messages cannot be removed.`), action: "Remove" });
                  if (!ok) return;
                  try {
                    await ctx.api.call("AdminService/Unsubscribe", { topic, name: s.name });
                    onChange(`Removed the subscription ${s.name}.`);
                  } catch (err) {
                    onChange(null, err);
                  }
                },
              }, "Remove…"),
          ),
        ]),
      ),
    ),
  );
}

export function mount(root, ctx) {
  const listBox = h("div", { id: "topics-list" });
  const status = h("div", { "aria-live": "polite" });
  const tester = testerPanel(ctx);
  let subs = [];
  const publisher = publishPanel(ctx, (topic) => subs.filter((s) => s.topic === topic), () => {});
  const load = async (message, err) => {
    fill(status, message && h("p", { class: "ok" }, message), err && errorView(err));
    try {
      const resp = await ctx.api.call("AdminService/ListSubscriptions", {});
      subs = resp.subscriptions || [];
      publisher.setTopics([...new Set(subs.map((s) => s.topic))]);
      fill(listBox, topicTables(ctx, subs, tester, load));
    } catch (e) {
      fill(listBox, errorView(e));
    }
  };
  fill(root, pageTitle("Topics"), panel("Topics and subscriptions", status, listBox), publisher.panel, subscribePanel(ctx, () => load()), tester.panel);
  load();
}
