// Managed access keys: create (the secret is shown once, with a copy button, and never
// kept after it is dismissed), list newest first with pagination, revoke. Each creation
// gets a public ID generated here BEFORE the request and shown, so an ambiguous outcome
// can be reconciled by that ID instead of blindly retried (access-keys "Rotate, revoke
// and recover").

import { confirmAction } from "../dialogs.js";
import { fill, field, h, table, uid } from "../dom.js";
import { dateTime, parseLocal } from "../format.js";
import { errorView, form, pageTitle, panel, resultArea } from "../ui.js";

const PAGE_SIZE = 20;

function newKeyId() {
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

function status(k, now) {
  if (k.revoked_at_ms) return `revoked ${dateTime(k.revoked_at_ms)}`;
  if (k.expires_at_ms && k.expires_at_ms <= now) return "expired";
  return "active";
}

async function copy(text) {
  if (navigator.clipboard && window.isSecureContext) {
    await navigator.clipboard.writeText(text);
    return;
  }
  throw new Error("the clipboard is not available on this page; select the secret and copy it");
}

function secretPanel(created, onDismiss) {
  const input = h("input", { type: "text", readonly: true, value: created.token, id: "new-secret", spellcheck: "false", autocomplete: "off" });
  const copied = h("span", { "aria-live": "polite", class: "muted", id: "copy-status" });
  const copyButton = h("button", { type: "button", class: "primary" }, "Copy secret");
  copyButton.addEventListener("click", async () => {
    try {
      await copy(input.value);
      copied.textContent = "Copied to the clipboard.";
    } catch (err) {
      input.select();
      copied.textContent = `Could not copy: ${err.message}.`;
    }
  });
  const done = h("button", { type: "button", class: "secondary" }, "I have saved it");
  const el = h(
    "section",
    { class: "panel secret", "aria-labelledby": "secret-title", id: "secret-panel" },
    h("h2", { id: "secret-title", tabindex: "-1" }, `Secret of ${created.key.name}: shown once`),
    h("p", {}, "Store it in your secret manager now. No later operation can show it again; the broker keeps only its digest."),
    h("div", { class: "field" }, h("label", { for: "new-secret" }, "Secret"), input),
    h("div", { class: "actions" }, copyButton, done, copied),
  );
  done.addEventListener("click", () => {
    input.value = "";
    onDismiss();
  });
  return el;
}

function createPanel(ctx, onCreated) {
  let keyId = newKeyId();
  const idLine = h("code", { id: "next-key-id" }, keyId);
  const name = h("input", { type: "text", required: true, maxlength: "128", autocomplete: "off" });
  const perms = ["send", "listen", "manage"].map((p) => ({ p, box: h("input", { type: "checkbox", id: uid("perm"), value: p }) }));
  const expiry = h("input", { type: "text", autocomplete: "off", placeholder: "yyyy-MM-dd HH:mm", pattern: "\\d{4}-\\d{2}-\\d{2} \\d{2}:\\d{2}" });
  const result = resultArea();
  const f = form({ class: "grid-form", "aria-label": "Create an access key" }, [
    field("Name", name, "a label; names need not be unique"),
    h(
      "fieldset",
      { class: "field" },
      h("legend", {}, "Permissions"),
      perms.map(({ p, box }) => h("div", { class: "check" }, box, h("label", { for: box.id }, p))),
    ),
    field("Expires (local time)", expiry, "yyyy-MM-dd HH:mm; blank = never"),
    h("div", { class: "actions" }, h("button", { type: "submit", class: "primary" }, "Create key")),
  ], async () => {
    result.clear();
    const permissions = perms.filter((x) => x.box.checked).map((x) => x.p);
    if (!permissions.length) {
      result.fail(new Error("Choose at least one permission."));
      return;
    }
    let expiresAt = 0;
    if (expiry.value.trim()) {
      expiresAt = parseLocal(expiry.value);
      if (Number.isNaN(expiresAt)) {
        result.fail(new Error("The expiry must be a real local time written yyyy-MM-dd HH:mm."));
        return;
      }
    }
    try {
      const created = await ctx.api.call("AuthService/CreateKey", { id: keyId, name: name.value.trim(), permissions, expires_at_ms: expiresAt });
      keyId = newKeyId();
      idLine.textContent = keyId;
      name.value = "";
      expiry.value = "";
      for (const x of perms) x.box.checked = false;
      onCreated(created);
    } catch (err) {
      result.fail(err);
      if (!err.status || err.code === "outcome_unknown" || err.status >= 500) {
        result.el.append(h("p", { class: "notice" }, `The outcome is uncertain. Key ID ${keyId} is kept: look for it in the list before trying again, and revoke it if it exists without a saved secret.`));
      }
    }
  });
  return panel("Create an access key", h("p", { class: "hint" }, "Public ID of this creation, generated before the request: ", idLine), f, result.el);
}

export function mount(root, ctx) {
  if (ctx.features.authOff) {
    fill(root, pageTitle("Access keys"), panel("Not available", h("p", {}, "Authentication is off on this broker (MQLITE_TOKENS=off), and key management requires it.")));
    return;
  }
  if (!ctx.features.keys) {
    fill(root, pageTitle("Access keys"), panel("Not available", h("p", {}, "This broker does not support managed access keys (v0.3.1 or later).")));
    return;
  }
  const secretSlot = h("div");
  const listBox = h("div", { id: "keys-list" });
  const pager = h("div", { class: "actions pager" });
  const listStatus = resultArea();
  const cursors = [""]; // cursors[i] = after_id of page i
  let page = 0;
  const load = async () => {
    try {
      const resp = await ctx.api.call("AuthService/ListKeys", { sort: "created_desc", limit: PAGE_SIZE, after_id: cursors[page] });
      const now = Date.now();
      const keys = resp.keys || [];
      fill(
        listBox,
        table(
          "Managed access keys, newest first",
          [{ label: "Name" }, { label: "ID" }, { label: "Permissions" }, { label: "Created" }, { label: "Expires" }, { label: "Status" }, { label: "Action" }],
          keys.map((k) => [
            k.name,
            h("code", {}, k.id),
            k.permissions.join(", "),
            dateTime(k.created_at_ms),
            k.expires_at_ms ? dateTime(k.expires_at_ms) : "never",
            status(k, now),
            k.revoked_at_ms
              ? h("span", { class: "muted" }, "—")
              : h("button", { type: "button", class: "danger", "aria-label": `Revoke key ${k.name} (${k.id})`, onclick: () => revoke(k) }, "Revoke…"),
          ]),
          page ? "No more keys." : "No managed keys yet.",
        ),
      );
      if (resp.next_after_id) cursors[page + 1] = resp.next_after_id;
      else cursors.length = page + 1;
      fill(
        pager,
        h("button", { type: "button", class: "secondary", disabled: page === 0, onclick: () => { page -= 1; load(); } }, "Newer"),
        h("span", { class: "muted" }, `Page ${page + 1}`),
        h("button", { type: "button", class: "secondary", disabled: !resp.next_after_id, onclick: () => { page += 1; load(); } }, "Older"),
      );
    } catch (err) {
      fill(listBox, errorView(err));
    }
  };
  const revoke = async (k) => {
    listStatus.clear();
    const ok = await confirmAction({ title: `Revoke the key ${k.name}?`, body: h("p", {}, `Key `, h("code", {}, k.id), ` stops authenticating immediately. Revocation is permanent.`), action: "Revoke key" });
    if (!ok) return;
    try {
      await ctx.api.call("AuthService/RevokeKey", { id: k.id });
      listStatus.ok(`Revoked ${k.name} (${k.id}).`);
      await load();
    } catch (err) {
      listStatus.fail(err);
    }
  };
  const onCreated = (created) => {
    fill(secretSlot, secretPanel(created, () => fill(secretSlot)));
    secretSlot.querySelector("#secret-title").focus();
    page = 0; // a creation returns to the first page, where the new key is
    cursors.length = 1;
    load();
  };
  fill(
    root,
    pageTitle("Access keys"),
    secretSlot,
    createPanel(ctx, onCreated),
    panel("Managed keys", h("p", { class: "hint" }, "Newest first. Configured MQLITE_TOKENS administrators and monitor tokens are not listed: they change through configuration."), listStatus.el, listBox, pager),
  );
  load();
}
