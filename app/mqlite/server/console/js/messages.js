// Browsing a queue with Peek: pick a state, page by seq_number, and read each message —
// every field the wire carries, its properties and its body decoded as JSON
// (pretty-printed), text, or a hex dump, switchable per message, or downloaded as bytes.
// Peek locks nothing and changes nothing.

import { fill, field, h, table, uid } from "./dom.js";
import { bytes, dateTime, decodeBody, fromBase64 } from "./format.js";
import { form, intValue, panel, resultArea } from "./ui.js";

const VIEWS = [
  ["auto", "Automatic"],
  ["json", "JSON"],
  ["text", "Text"],
  ["hex", "Hex"],
];

// Bodies over this size are not decoded or drawn until the operator asks: a page of big
// messages stays responsive (the bytes are in memory either way; rendering is the cost).
export const LAZY_BODY_BYTES = 256 * 1024;

function downloadButton(data, seq, contentType) {
  const button = h("button", { type: "button", class: "secondary" }, "Download body");
  button.addEventListener("click", () => {
    // A blob: URL made on click and revoked right after: nothing lingers, no data: URL.
    const url = URL.createObjectURL(new Blob([data], { type: contentType || "application/octet-stream" }));
    h("a", { href: url, download: `message-${seq}.bin` }).click();
    setTimeout(() => URL.revokeObjectURL(url), 0);
  });
  return button;
}

function bodyView(b64, seq, contentType) {
  const select = h("select", {}, VIEWS.map(([v, label]) => h("option", { value: v }, label)));
  const pre = h("pre", { class: "body", tabindex: "0" });
  const kind = h("span", { class: "muted" });
  const show = () => {
    const { kind: k, shown } = decodeBody(b64, select.value);
    pre.textContent = shown === null ? `(not valid ${k === "json" ? "JSON" : "UTF-8 text"}; choose Hex)` : shown || "(empty body)";
    pre.dataset.kind = k;
    kind.textContent = select.value === "auto" ? `shown as ${k}` : "";
  };
  select.addEventListener("change", show);
  const data = fromBase64(b64);
  const size = data.length;
  const controls = h("div", { class: "inline-field" }, field("Show body as", select), kind, h("span", { class: "muted" }, bytes(size)), downloadButton(data, seq, contentType));
  if (size <= LAZY_BODY_BYTES) {
    show();
    return h("div", { class: "body-view" }, controls, pre);
  }
  pre.hidden = true;
  select.disabled = true;
  const load = h("button", { type: "button", class: "secondary" }, `Load the ${bytes(size)} body`);
  load.addEventListener("click", () => {
    load.remove();
    select.disabled = false;
    pre.hidden = false;
    show();
    pre.focus();
  });
  return h("div", { class: "body-view", dataset: { lazy: "true" } }, controls, h("p", { class: "hint" }, `Over ${LAZY_BODY_BYTES / 1024} KiB: shown on request.`), load, pre);
}

export function messageCard(m) {
  const id = uid("msg");
  const facts = [
    ["Seq number", String(m.seq_number)],
    m.state && ["State", m.state.replace("_", "-")],
    ["Delivery count", String(m.delivery_count || 0)],
    ["Enqueued", dateTime(m.enqueued_at_ms)],
    m.visible_at_ms && ["Visible at", dateTime(m.visible_at_ms)],
    m.expires_at_ms && ["Expires", dateTime(m.expires_at_ms)],
    m.locked_until_ms && ["Locked until", dateTime(m.locked_until_ms)],
    m.lock_token && ["Lock token", m.lock_token],
    m.message_id && ["Message ID", m.message_id],
    m.group_id && ["Group ID", m.group_id],
    m.subject && ["Subject", m.subject],
    m.correlation_id && ["Correlation ID", m.correlation_id],
    m.reply_to && ["Reply to", m.reply_to],
    m.content_type && ["Content type", m.content_type],
    m.dead_letter_reason && ["Dead-letter reason", m.dead_letter_reason],
    m.dead_letter_description && ["Dead-letter description", m.dead_letter_description],
    m.last_error && ["Last error", m.last_error],
    m.last_error_at_ms && ["Last error at", dateTime(m.last_error_at_ms)],
  ].filter(Boolean);
  const props = Object.entries(m.properties || {});
  return h(
    "article",
    { class: "message", "aria-labelledby": id, dataset: { seq: String(m.seq_number), state: m.state || "" } },
    h(
      "h3",
      { id },
      `#${m.seq_number} `,
      m.state ? h("span", { class: `badge state-${m.state}` }, m.state.replace("_", "-")) : null,
      h("span", { class: "muted" }, ` delivered ${m.delivery_count || 0}×`),
    ),
    h("dl", { class: "facts compact" }, facts.map(([k, v]) => [h("dt", {}, k), h("dd", {}, v)])),
    props.length ? table(`Properties of message ${m.seq_number}`, [{ label: "Property" }, { label: "Value" }], props.map(([k, v]) => [k, v])) : null,
    bodyView(m.body || "", m.seq_number, m.content_type),
  );
}

/** The Peek panel for ``queue``. */
export function peekPanel(ctx, queue) {
  const state = h("select", {}, [["", "All states"], ["active", "Active"], ["locked", "Locked"], ["deferred", "Deferred"], ["scheduled", "Scheduled"], ["dead_lettered", "Dead-lettered"]].map(([v, l]) => h("option", { value: v }, l)));
  const fromSeq = h("input", { type: "number", min: "0", step: "1", inputmode: "numeric", placeholder: "0" });
  const max = h("input", { type: "number", min: "1", max: "1000", step: "1", inputmode: "numeric", value: "20" });
  const list = h("div", { class: "messages", id: "peek-results" });
  const result = resultArea();
  const nextButton = h("button", { type: "button", class: "secondary", hidden: true }, "Next page");
  const run = async () => {
    result.clear();
    try {
      const resp = await ctx.api.call("QueueService/Peek", { queue, state: state.value, from_seq: intValue(fromSeq), max: intValue(max) || 20 });
      const msgs = resp.messages || [];
      fill(list, msgs.length ? msgs.map(messageCard) : h("p", { class: "empty" }, "No messages in that state."));
      result.ok(`${msgs.length} message${msgs.length === 1 ? "" : "s"} from seq ${intValue(fromSeq)}.`);
      nextButton.hidden = msgs.length < (intValue(max) || 20);
      if (msgs.length) nextButton.dataset.from = String(msgs[msgs.length - 1].seq_number + 1);
    } catch (err) {
      result.fail(err);
    }
  };
  nextButton.addEventListener("click", () => {
    fromSeq.value = nextButton.dataset.from;
    run();
  });
  const f = form({ class: "grid-form", "aria-label": "Peek messages" }, [
    field("State", state),
    field("From seq", fromSeq, "blank = the first"),
    field("At most", max, "1 to 1000"),
    h("div", { class: "actions" }, h("button", { type: "submit", class: "primary" }, "Peek")),
  ], run);
  return panel("Peek messages", h("p", { class: "hint" }, "Browse without locking: nothing is received or settled."), f, result.el, list, nextButton);
}

/** "key=value" lines → properties object (blank lines ignored). */
export function parseProperties(text) {
  const out = {};
  for (const line of text.split("\n")) {
    if (!line.trim()) continue;
    const i = line.indexOf("=");
    if (i <= 0) throw new Error(`property line "${line.trim()}" is not key=value`);
    out[line.slice(0, i).trim()] = line.slice(i + 1).trim();
  }
  return out;
}
