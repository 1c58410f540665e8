// What the pasted credential may do, found with one harmless read, and what this broker
// offers, read from the open discovery card's route list (an older broker without Observe,
// DeleteQueue or the key API is told apart from a forbidden call).

import { BrokerError } from "./api.js";

const RPC = "/mqlite.v1.";

export function featuresOf(card) {
  const routes = new Set(card.endpoints || []);
  const has = (m) => routes.has(RPC + m);
  return {
    observe: has("AdminService/Observe"),
    deleteQueue: has("AdminService/DeleteQueue"),
    unsubscribe: has("AdminService/Unsubscribe"),
    keys: has("AuthService/CreateKey"),
    schedules: has("AdminService/ListSchedules"),
    audit: has("AdminService/ListAudit"),
    authOff: card.auth === "none",
  };
}

/** The credential is valid but not one the console can use (send/listen keys). */
export class NotForConsole extends Error {}

/** What an application key may do. Stats and Send are called with an empty body: the
 *  broker checks the permission (403) before it decodes the body (400), so the probe
 *  reads and sends nothing. Both 4xx appear in the browser's log: they are the probe. */
export async function appPermissions(api) {
  const may = async (method) => {
    try {
      await api.call(method, {});
      return true;
    } catch (err) {
      if (err instanceof BrokerError && err.status === 403) return false;
      if (err instanceof BrokerError && err.status === 400) return true;
      throw err;
    }
  };
  return { listen: await may("QueueService/Stats"), send: await may("QueueService/Send") };
}

/** "manage" | "monitor" | "anonymous" (auth off) | "app" (a send/listen key: see
 *  ``appPermissions``); throws BrokerError 401, NotForConsole. */
export async function resolveAccess(api, features) {
  if (features.authOff) return "anonymous";
  try {
    if (features.observe) {
      const obs = await api.call("AdminService/Observe", {});
      return obs.access === "monitor" ? "monitor" : "manage";
    }
    await api.call("AdminService/Status", {});
    return "manage";
  } catch (err) {
    if (err instanceof BrokerError && err.status === 403 && !features.observe) {
      throw new NotForConsole(
        "The console needs manage, and this credential lacks it: use a configured administrator token " +
          "or a managed key with the manage permission. (This broker has no Observe, so monitor tokens " +
          "open no console views here; application send/listen keys belong in clients.)",
      );
    }
    if (err instanceof BrokerError && err.status === 403) {
      const perms = await appPermissions(api);
      if (perms.send || perms.listen) return "app";
      throw new NotForConsole(
        "This credential is an application key (send and/or listen). The console needs manage: " +
          "a configured administrator token or a managed key with the manage permission" +
          (features.observe ? ", or a configured monitor token for the overview." : ".") +
          " Application keys belong in clients.",
      );
    }
    throw err;
  }
}
