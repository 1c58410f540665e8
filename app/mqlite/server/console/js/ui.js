// Shared view pieces: page headings (focus lands there after navigation, so a screen
// reader announces the new view), broker errors in words with their wire code, result
// lines announced through live regions.

import { BrokerError, NetworkError } from "./api.js";
import { fill, h } from "./dom.js";

/** The view's <h1>, focusable so navigation can move focus to it. */
export function pageTitle(text, ...extra) {
  return h("div", { class: "page-head" }, h("h1", { tabindex: "-1", id: "page-title" }, text), ...extra);
}

export function panel(title, ...children) {
  const id = `p-${title.toLowerCase().replace(/[^a-z0-9]+/g, "-")}`;
  return h("section", { class: "panel", "aria-labelledby": id }, h("h2", { id }, title), ...children);
}

/** An error as a sentence: what happened in words, the broker's message, the wire code. */
export function errorView(err) {
  if (err instanceof BrokerError) {
    return h(
      "div",
      { class: "error", role: "alert" },
      h("strong", {}, `${err.words}.`),
      " ",
      err.message,
      " ",
      h("span", { class: "code" }, "code ", h("code", {}, err.code), ` · HTTP ${err.status}`),
    );
  }
  if (err instanceof NetworkError) {
    return h("div", { class: "error", role: "alert" }, h("strong", {}, `${err.words}.`), " ", err.message);
  }
  return h("div", { class: "error", role: "alert" }, String(err && err.message ? err.message : err));
}

/** A result area (polite live region) for a form: ``ok(text)`` / ``fail(err)`` / ``clear``. */
export function resultArea() {
  const el = h("div", { class: "result", "aria-live": "polite" });
  return {
    el,
    ok(...children) {
      fill(el, h("p", { class: "ok" }, ...children));
    },
    fail(err) {
      fill(el, errorView(err));
    },
    clear() {
      fill(el);
    },
  };
}

/** Run ``fn`` with ``button`` disabled (a double click never sends twice). */
export async function busy(button, fn) {
  button.disabled = true;
  button.setAttribute("aria-busy", "true");
  try {
    return await fn();
  } finally {
    button.disabled = false;
    button.removeAttribute("aria-busy");
  }
}

/** A form whose submit runs ``onSubmit(form, submitter)`` instead of navigating. */
export function form(attrs, children, onSubmit) {
  const el = h("form", { novalidate: true, ...attrs }, children);
  el.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const submitter = ev.submitter || el.querySelector("button[type=submit]");
    if (!el.checkValidity()) {
      el.reportValidity();
      return;
    }
    await busy(submitter, () => onSubmit(el, submitter));
  });
  return el;
}

/** Put a positive integer field's value (blank = 0). */
export function intValue(input) {
  const v = input.value.trim();
  return v === "" ? 0 : Math.max(0, Math.floor(Number(v)));
}

export function needsManage(access) {
  return panel(
    "Not available with this credential",
    h(
      "p",
      {},
      access === "monitor"
        ? "You are signed in with a monitor credential: it opens the overview and its charts only. Queue, topic and key administration needs a manage credential."
        : "This view needs a manage credential.",
    ),
    h("p", {}, h("a", { href: "#/" }, "Back to the overview")),
  );
}

// A one-shot message carried across a navigation ("Deleted the queue q" on the list).
let flashText = null;
export function setFlash(text) {
  flashText = text;
}
export function takeFlash() {
  const t = flashText;
  flashText = null;
  return t ? h("p", { class: "ok", role: "status" }, t) : null;
}
