// Search a queue: Peek a page of messages and mark those a filter expression matches.
// The expression is the subscriptions' language and is compiled first by TestFilter (no
// message): an invalid one shows the broker's error with a caret at its line:column and
// nothing is peeked. Each peeked message is then evaluated by TestFilter with the message
// as the sample — the broker decides, exactly as fan-out would; the page never
// re-implements the language. Paged by seq_number like Peek.

import { field, fill, h } from "./dom.js";
import { messageCard } from "./messages.js";
import { form, intValue, panel, resultArea } from "./ui.js";

const PAGE = 20;
const PARALLEL = 4; // TestFilter calls in flight at once

/** The sample TestFilter evaluates: the message as it was enqueued. */
function sampleOf(m) {
  const s = { body: m.body || "", properties: m.properties || {}, enqueued_at_ms: m.enqueued_at_ms || 0 };
  for (const k of ["message_id", "correlation_id", "reply_to", "group_id", "content_type", "subject"]) if (m[k]) s[k] = m[k];
  return s;
}

async function mapLimited(items, limit, fn) {
  const out = new Array(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      out[i] = await fn(items[i]);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return out;
}

/** The compile error with a caret under the column the broker names ("(1:9)"). */
function compileError(expr, error) {
  const m = /\((\d+):(\d+)\)\s*$/.exec(error);
  const children = [h("p", {}, h("strong", {}, "The expression does not compile: "), error)];
  if (m) {
    const line = expr.split("\n")[Number(m[1]) - 1] ?? "";
    children.push(h("pre", { class: "caret", "aria-label": `Error at line ${m[1]}, column ${m[2]}` }, `${line}\n${" ".repeat(Math.max(0, Number(m[2]) - 1))}^`));
  }
  return h("div", { class: "error", role: "alert", id: "search-error" }, children);
}

export function searchPanel(ctx, queue) {
  const expr = h("textarea", { rows: "2", spellcheck: "false", id: "search-expr", placeholder: 'properties["region"] == "eu" && subject startsWith "orders."' });
  const state = h("select", {}, [["", "All states"], ["active", "Active"], ["locked", "Locked"], ["deferred", "Deferred"], ["scheduled", "Scheduled"], ["dead_lettered", "Dead-lettered"]].map(([v, l]) => h("option", { value: v }, l)));
  const fromSeq = h("input", { type: "number", min: "0", step: "1", inputmode: "numeric", placeholder: "0" });
  const onlyMatches = h("input", { type: "checkbox" });
  const list = h("div", { class: "messages", id: "search-results" });
  const problem = h("div", {});
  const result = resultArea();
  const next = h("button", { type: "button", class: "secondary", hidden: true }, "Next page");
  const run = async () => {
    result.clear();
    fill(problem);
    try {
      const compiled = await ctx.api.call("AdminService/TestFilter", { expr: expr.value });
      if (!compiled.valid) {
        fill(list);
        next.hidden = true;
        fill(problem, compileError(expr.value, compiled.error));
        return;
      }
      const resp = await ctx.api.call("QueueService/Peek", { queue, state: state.value, from_seq: intValue(fromSeq), max: PAGE });
      const msgs = resp.messages || [];
      const verdicts = await mapLimited(msgs, PARALLEL, (m) => ctx.api.call("AdminService/TestFilter", { expr: expr.value, message: sampleOf(m) }));
      const cards = msgs.map((m, i) => {
        const matched = Boolean(verdicts[i].matched);
        if (onlyMatches.checked && !matched) return null;
        const card = messageCard(m);
        card.classList.toggle("match", matched);
        card.dataset.matched = String(matched);
        if (matched) card.querySelector("h3").append(h("span", { class: "badge match" }, "match"));
        if (verdicts[i].error) card.append(h("p", { class: "notice" }, `Evaluation failed (not a match): ${verdicts[i].error}`));
        return card;
      });
      const hits = verdicts.filter((v) => v.matched).length;
      fill(list, cards.some(Boolean) ? cards : h("p", { class: "empty" }, msgs.length ? "No match on this page." : "No messages from this seq_number."));
      const last = msgs.length ? msgs[msgs.length - 1].seq_number : null;
      result.ok(`${hits} of ${msgs.length} message${msgs.length === 1 ? "" : "s"} match${last === null ? "" : ` (seq ${msgs[0].seq_number} to ${last})`}.`);
      next.hidden = msgs.length < PAGE;
      if (last !== null) next.dataset.from = String(last + 1);
    } catch (err) {
      result.fail(err);
    }
  };
  next.addEventListener("click", () => {
    fromSeq.value = next.dataset.from;
    f.requestSubmit();
  });
  const f = form({ class: "grid-form", "aria-label": "Search messages" }, [
    h("div", { class: "field wide" }, h("label", { for: "search-expr" }, "Filter expression"), expr),
    field("State", state),
    field("From seq", fromSeq, "blank = the first"),
    h("div", { class: "field" }, h("label", {}, onlyMatches, " Only matches")),
    h("div", { class: "actions" }, h("button", { type: "submit", class: "primary" }, "Search")),
  ], run);
  return panel(
    "Search messages",
    h("p", { class: "hint" }, `Peeks ${PAGE} messages at a time and marks those the expression matches (the subscription filter language; the broker evaluates it).`),
    f,
    problem,
    result.el,
    list,
    next,
  );
}
