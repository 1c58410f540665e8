// Building DOM without HTML strings: every value reaches the page as text (queue names,
// message bodies and broker errors are data, never markup), so no view can inject script.

/** h("button", {class: "primary", onclick: fn}, "Send"): an element with attributes,
 *  event handlers (on*), and children (strings become text nodes; null/false are skipped). */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (key.startsWith("on") && typeof value === "function") {
      el.addEventListener(key.slice(2), value);
    } else if (key === "dataset") {
      Object.assign(el.dataset, value);
    } else if (value === true) {
      el.setAttribute(key, "");
    } else {
      el.setAttribute(key, String(value));
    }
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
}

/** Replace an element's children. */
export function fill(el, ...children) {
  el.replaceChildren();
  append(el, children);
  return el;
}

/** Re-render ``el`` only when ``key`` (the data it shows) changed: a poll that brings the
 *  same numbers leaves the DOM, and so the keyboard focus inside it, untouched. */
export function fillIfChanged(el, key, render) {
  if (el.dataset.renderKey === key) return;
  el.dataset.renderKey = key;
  const active = document.activeElement;
  const focusId = active && el.contains(active) ? active.dataset.focusId : undefined;
  fill(el, render());
  if (focusId) el.querySelector(`[data-focus-id="${CSS.escape(focusId)}"]`)?.focus();
}

let ids = 0;
/** A unique id for label/aria wiring. */
export function uid(prefix = "id") {
  ids += 1;
  return `${prefix}-${ids}`;
}

/** A labelled form field: <div class=field><label for>..</label><control id>..</div>. */
export function field(label, control, hint) {
  const id = control.id || uid("f");
  control.id = id;
  let hintEl = null;
  if (hint) {
    hintEl = h("p", { class: "hint", id: `${id}-hint` }, hint);
    control.setAttribute("aria-describedby", hintEl.id);
  }
  return h("div", { class: "field" }, h("label", { for: id }, label), control, hintEl);
}

/** A definition list from [term, value] pairs. */
export function dl(pairs, cls = "facts") {
  return h("dl", { class: cls }, pairs.map(([k, v]) => [h("dt", {}, k), h("dd", {}, v)]));
}

/** A table: columns [{label, cls?}], rows of cell arrays; an empty-state line otherwise. */
export function table(caption, columns, rows, empty = "Nothing to show.") {
  if (!rows.length) return h("p", { class: "empty" }, empty);
  return h(
    "div",
    { class: "table-wrap", tabindex: "0", role: "region", "aria-label": caption, "data-focus-id": `table:${caption}` },
    h(
      "table",
      {},
      h("caption", { class: "visually-hidden" }, caption),
      h("thead", {}, h("tr", {}, columns.map((c) => h("th", { scope: "col", class: c.cls }, c.label)))),
      h(
        "tbody",
        {},
        rows.map((cells) =>
          h("tr", {}, cells.map((cell, i) => h(i === 0 ? "th" : "td", i === 0 ? { scope: "row" } : { class: columns[i].cls }, cell))),
        ),
      ),
    ),
  );
}
