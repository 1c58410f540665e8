// The token prompt: shown first, after "Sign out", and whenever the broker answers 401.

import { fill, h } from "../dom.js";
import { errorView, form } from "../ui.js";

export function mount(root, { message, onToken }) {
  const input = h("input", {
    id: "token",
    name: "token",
    type: "password",
    required: true,
    autocomplete: "off",
    spellcheck: "false",
    "aria-describedby": "token-hint",
  });
  const outcome = h("div", { id: "login-outcome", "aria-live": "assertive" });
  if (message) fill(outcome, h("p", { class: "notice", role: "alert" }, message));
  const f = form({ class: "login", "aria-labelledby": "page-title" }, [
    h("div", { class: "field" }, h("label", { for: "token" }, "Access token"), input),
    h(
      "p",
      { class: "hint", id: "token-hint" },
      "A configured administrator token, a managed key with the manage permission, or a configured monitor token (overview only). " +
        "It is kept in this tab's session storage only and sent to this broker as a Bearer header.",
    ),
    h("div", { class: "actions" }, h("button", { type: "submit", class: "primary" }, "Sign in")),
  ], async () => {
    fill(outcome);
    const result = await onToken(input.value.trim());
    if (result === null) return;
    input.value = "";
    fill(outcome, result.refused ? h("p", { class: "notice", role: "alert" }, result.refused) : errorView(result.error));
    input.focus();
  });
  fill(root, h("div", { class: "page-head" }, h("h1", { tabindex: "-1", id: "page-title" }, "Sign in")), h("section", { class: "panel narrow" }, f, outcome));
  input.focus();
}
