// The console's shell: reads the open discovery card, resolves what the pasted credential
// may do, routes #/hash views (no server-side routes, and the token never enters a URL),
// and owns the one poller and its freshness display.

import { createApi, describe, discover } from "./api.js";
import { appPermissions, featuresOf, NotForConsole, resolveAccess } from "./access.js";
import { fill, h } from "./dom.js";
import { clock, duration } from "./format.js";
import { Poller } from "./poller.js";
import * as session from "./session.js";
import { errorView, needsManage } from "./ui.js";
import * as login from "./views/login.js";
import * as overview from "./views/overview.js";
import * as queues from "./views/queues.js";
import * as queue from "./views/queue.js";
import * as topics from "./views/topics.js";
import * as keys from "./views/keys.js";
import * as schedules from "./views/schedules.js";
import * as audit from "./views/audit.js";
import * as openQueue from "./views/open_queue.js";

const $ = (id) => document.getElementById(id);
const main = $("main");

const ROUTES = [
  { re: /^#?\/?$/, name: "overview", view: overview, monitor: true },
  { re: /^#\/queues$/, name: "queues", view: queues },
  { re: /^#\/queues\/(.+)$/, name: "queues", view: queue, app: true },
  { re: /^#\/open$/, name: "open", view: openQueue, app: true },
  { re: /^#\/topics$/, name: "topics", view: topics },
  { re: /^#\/keys$/, name: "keys", view: keys },
  { re: /^#\/schedules$/, name: "schedules", view: schedules },
  { re: /^#\/audit$/, name: "audit", view: audit },
];

const app = {
  card: null,
  features: null,
  access: null,
  cleanup: null,
  poller: new Poller(showFreshness),
};
app.api = createApi(session.token, (err) => {
  // While signing in, the prompt itself reports the refusal.
  if (!app.signingIn) signOut(`The broker no longer accepts this token. ${err.message} (${err.code}).`);
});

function showFreshness({ stale, lastOkMs, failedAtMs, error }) {
  const pill = $("freshness");
  const banner = $("stale-banner");
  document.body.dataset.stale = stale ? "true" : "false";
  if (stale) {
    pill.textContent = "Stale";
    pill.className = "pill stale";
    fill(
      banner,
      h("strong", {}, "Stale data. "),
      `The last refresh failed at ${clock(failedAtMs)}: ${describe(error)}. `,
      lastOkMs ? `Showing what was current at ${clock(lastOkMs)} (${duration(Date.now() - lastOkMs)} ago).` : "Nothing was loaded yet.",
    );
    banner.hidden = false;
  } else {
    pill.textContent = `Live · ${clock(lastOkMs)}`;
    pill.className = "pill live";
    banner.hidden = true;
  }
}

function setupRefreshControls() {
  const select = $("refresh-every");
  select.replaceChildren(
    ...session.INTERVALS_MS.map((ms) => h("option", { value: String(ms) }, ms ? `every ${ms / 1000} s` : "paused")),
  );
  select.value = String(session.refreshMs());
  select.addEventListener("change", () => {
    session.setRefreshMs(Number(select.value));
    app.poller.refresh();
  });
  $("refresh-now").addEventListener("click", () => app.poller.refresh());
  $("sign-out").addEventListener("click", () => signOut("Signed out. The token was removed from this tab."));
  $("skip-link").addEventListener("click", (ev) => {
    ev.preventDefault();
    main.focus();
  });
}

function showShell(signedIn) {
  $("nav").hidden = !signedIn;
  $("session").hidden = !signedIn;
  for (const li of document.querySelectorAll("[data-needs=manage]")) li.hidden = app.access === "monitor" || app.access === "app";
  for (const li of document.querySelectorAll("[data-needs=schedules]")) li.hidden = app.access === "monitor" || app.access === "app" || !app.features.schedules;
  for (const li of document.querySelectorAll("[data-needs=audit]")) li.hidden = app.access === "monitor" || app.access === "app" || !app.features.audit;
  for (const li of document.querySelectorAll("[data-needs=observe]")) li.hidden = app.access === "app";
  for (const li of document.querySelectorAll("[data-needs=app]")) li.hidden = app.access !== "app";
  const perms = app.perms ? ["send", "listen"].filter((p) => app.perms[p]).join(" + ") : "";
  const who = { manage: "manage", monitor: "monitor (read-only)", anonymous: "auth off", app: `application key (${perms})` }[app.access] || "";
  $("who").textContent = signedIn ? `Signed in: ${who}` : "";
}

function unmount() {
  app.poller.stop();
  if (app.cleanup) app.cleanup();
  app.cleanup = null;
  document.body.dataset.stale = "false";
  $("stale-banner").hidden = true;
  $("freshness").textContent = "No auto-refresh here";
  $("freshness").className = "pill";
}

function signOut(message) {
  session.clearToken();
  app.access = null;
  unmount();
  showShell(false);
  login.mount(main, { message, onToken: signIn });
}

async function signIn(token) {
  session.setToken(token);
  app.signingIn = true;
  try {
    app.access = await resolveAccess(app.api, app.features);
    app.perms = app.access === "app" ? await appPermissions(app.api) : null;
  } catch (err) {
    session.clearToken();
    app.access = null;
    if (err instanceof NotForConsole) return { refused: err.message };
    if (err.status === 401) return { refused: `The broker did not accept this token: ${err.message} (unauthenticated).` };
    return { error: err };
  } finally {
    app.signingIn = false;
  }
  showShell(true);
  route();
  return null;
}

function decodedParam(raw) {
  try {
    return decodeURIComponent(raw);
  } catch (err) {
    if (err instanceof URIError) return null;
    throw err;
  }
}

function route() {
  if (!app.access) return;
  unmount();
  const hash = location.hash || "#/";
  const match = ROUTES.map((r) => ({ r, m: r.re.exec(hash) })).find((x) => x.m);
  for (const a of document.querySelectorAll("#nav a")) {
    if (match && a.dataset.route === match.r.name) a.setAttribute("aria-current", "page");
    else a.removeAttribute("aria-current");
  }
  fill(main);
  const ctx = { api: app.api, access: app.access, perms: app.perms, features: app.features, card: app.card, poller: app.poller };
  // A malformed escape (#/queues/%E0%A4%A) names nothing: "Not found", not a blank page
  // (decodeURIComponent throws URIError on it).
  const param = match && match.m[1] ? decodedParam(match.m[1]) : undefined;
  if (!match || param === null) {
    fill(main, h("h1", { tabindex: "-1", id: "page-title" }, "Not found"), h("p", {}, h("a", { href: "#/" }, "Go to the overview")));
  } else if (app.access === "app" && match.r.name === "overview") {
    location.replace("#/open"); // an application key has no overview (Observe needs monitor or manage)
    return;
  } else if (app.access === "app" && !match.r.app) {
    fill(main, h("h1", { tabindex: "-1", id: "page-title" }, "Manage credential needed"), needsManage(app.access));
  } else if (app.access === "monitor" && !match.r.monitor) {
    fill(main, h("h1", { tabindex: "-1", id: "page-title" }, "Manage credential needed"), needsManage(app.access));
  } else {
    app.cleanup = match.r.view.mount(main, ctx, param) || null;
  }
  const title = $("page-title");
  document.title = `${title ? title.textContent : "mqlite"} · mqlite console`;
  if (title) title.focus(); // a screen reader announces the new view
}

async function boot() {
  setupRefreshControls();
  try {
    app.card = await discover();
  } catch (err) {
    fill(main, h("h1", {}, "The broker did not answer"), errorView(err), h("p", {}, h("button", { type: "button", onclick: () => location.reload() }, "Try again")));
    return;
  }
  app.features = featuresOf(app.card);
  $("broker-version").textContent = app.card.version ? `v${app.card.version}` : "";
  window.addEventListener("hashchange", route);
  if (app.features.authOff) {
    app.access = "anonymous";
    showShell(true);
    route();
    return;
  }
  const saved = session.token();
  if (saved) {
    const outcome = await signIn(saved);
    if (outcome === null) return;
    signOutWith(outcome);
    return;
  }
  showShell(false);
  login.mount(main, { onToken: signIn });
}

function signOutWith(outcome) {
  showShell(false);
  login.mount(main, { message: outcome.refused || describe(outcome.error), onToken: signIn });
}

boot();
