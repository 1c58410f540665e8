// Confirmations for destructive operations, in a modal <dialog>: the browser traps focus
// inside it, Escape cancels, and focus returns to the button that opened it. A typed
// confirmation keeps the action disabled until the exact text (case-sensitive) is typed.

import { h, uid } from "./dom.js";

/** Resolve true when confirmed. ``expected`` = the text to type (null = a plain confirm). */
export function confirmAction({ title, body, expected = null, prompt, action, danger = true }) {
  const opener = document.activeElement;
  const titleId = uid("dlg");
  const input = expected === null ? null : h("input", { type: "text", autocomplete: "off", spellcheck: "false", id: uid("confirm") });
  const go = h("button", { type: "submit", class: danger ? "danger" : "primary", disabled: expected !== null }, action);
  const cancel = h("button", { type: "button", class: "secondary", value: "cancel" }, "Cancel");
  const form = h(
    "form",
    { method: "dialog" },
    h("h2", { id: titleId }, title),
    body,
    input && h("div", { class: "field" }, h("label", { for: input.id }, prompt || h("span", {}, "Type ", h("code", {}, expected), " to confirm")), input),
    h("div", { class: "actions" }, cancel, go),
  );
  const dialog = h("dialog", { "aria-labelledby": titleId, class: "confirm" }, form);
  document.body.append(dialog);
  return new Promise((resolve) => {
    let confirmed = false;
    if (input) {
      input.addEventListener("input", () => {
        go.disabled = input.value !== expected;
      });
    }
    cancel.addEventListener("click", () => dialog.close());
    form.addEventListener("submit", (ev) => {
      if (input && input.value !== expected) {
        ev.preventDefault();
        return;
      }
      confirmed = true;
    });
    dialog.addEventListener("close", () => {
      dialog.remove();
      if (opener && opener.isConnected) opener.focus();
      resolve(confirmed);
    });
    dialog.showModal();
    (input || cancel).focus();
  });
}

/** A modal form: ``fields`` are [{name, label, control, hint?}]; resolves {name: value}
 *  on submit (Enter in a field submits), null on Cancel or Escape. */
export function formDialog({ title, intro, fields, action, danger = false }) {
  const opener = document.activeElement;
  const titleId = uid("dlg");
  const rows = fields.map((f) => {
    f.control.id = f.control.id || uid("dlgf");
    return h("div", { class: "field" }, h("label", { for: f.control.id }, f.label), f.control, f.hint ? h("p", { class: "hint" }, f.hint) : null);
  });
  const go = h("button", { type: "submit", class: danger ? "danger" : "primary" }, action);
  const cancel = h("button", { type: "button", class: "secondary" }, "Cancel");
  const form = h("form", { method: "dialog" }, h("h2", { id: titleId }, title), intro || null, rows, h("div", { class: "actions" }, cancel, go));
  const dialog = h("dialog", { "aria-labelledby": titleId, class: "confirm" }, form);
  document.body.append(dialog);
  return new Promise((resolve) => {
    let values = null;
    cancel.addEventListener("click", () => dialog.close());
    form.addEventListener("submit", () => {
      values = Object.fromEntries(fields.map((f) => [f.name, f.control.value]));
    });
    dialog.addEventListener("close", () => {
      dialog.remove();
      if (opener && opener.isConnected) opener.focus();
      resolve(values);
    });
    dialog.showModal();
    (fields[0] ? fields[0].control : cancel).focus();
  });
}
