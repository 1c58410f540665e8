// The landing view of an application key (send and/or listen): it cannot list queues
// (ListQueues needs manage), so the operator names the queue to open.

import { field, fill, h } from "../dom.js";
import { form, pageTitle, panel } from "../ui.js";
import { queueHref } from "./queues.js";

export function mount(root, ctx) {
  const name = h("input", { type: "text", required: true, autocomplete: "off", spellcheck: "false" });
  const may = ["send", "listen"].filter((p) => ctx.perms && ctx.perms[p]);
  const f = form({ class: "grid-form", "aria-label": "Open a queue" }, [
    field("Queue or subscription name", name),
    h("div", { class: "actions" }, h("button", { type: "submit", class: "primary" }, "Open")),
  ], async () => {
    location.hash = queueHref(name.value.trim());
  });
  fill(
    root,
    pageTitle("Open a queue"),
    panel(
      "Application key",
      h("p", {}, `Signed in with an application key that may ${may.join(" and ")}. The console shows only what it may do: `, may.includes("listen") ? "receive, settle, peek and fetch deferred messages" : "", may.length === 2 ? "; " : "", may.includes("send") ? "send test messages" : "", ". Listing queues, topics and keys needs a manage credential."),
      f,
    ),
  );
}
