// The broker's JSON-over-HTTP API as the console uses it: one POST per RPC carrying the
// operator's token as a Bearer header, errors rebuilt from the {"code","message"} envelope.
// URLs are resolved against the page (…/ui/ → …/mqlite.v1.X), so a console behind a
// reverse proxy under a sub-path talks to the same broker that served it.

const TIMEOUT_MS = 15000;

// Each wire code in words (api-reference "Errors"): what the operator reads first.
const WORDS = {
  invalid_argument: "The broker rejected the request as invalid",
  group_required: "This queue needs a group ID on every message",
  unauthenticated: "The broker did not accept the token",
  permission_denied: "This credential lacks the permission for that",
  not_found: "Not found",
  already_exists: "A message with that message ID but a different body is in the dedup window",
  name_conflict: "That name is already taken by another queue, topic or subscription",
  key_conflict: "An access key with that ID already exists",
  lock_lost: "The lock was lost or the message already settled",
  queue_changed: "The name now identifies a replacement queue: nothing was deleted",
  queue_not_empty: "The queue still holds messages (in some state): nothing was deleted",
  message_too_large: "The message is over the broker's size limit",
  canceled: "The request was canceled",
  unavailable: "The broker is temporarily unable to store this (for example, its disk is full); retry later",
  outcome_unknown: "The outcome is unknown: the change may or may not have been applied. Check before retrying",
  unimplemented: "This broker does not support that operation",
  internal: "The broker hit an internal error",
};

/** An answer from the broker that is not a success: ``code`` is the wire code. */
export class BrokerError extends Error {
  constructor(status, code, message) {
    super(message || `HTTP ${status}`);
    this.status = status;
    this.code = code || "unknown";
  }

  get words() {
    return WORDS[this.code] || `The broker answered HTTP ${this.status}`;
  }
}

/** No answer at all: the broker is down, unreachable, or too slow. */
export class NetworkError extends Error {
  get words() {
    return "Could not reach the broker";
  }
}

export function describe(err) {
  if (err instanceof BrokerError) return `${err.words}: ${err.message} (${err.code})`;
  if (err instanceof NetworkError) return `${err.words}: ${err.message}`;
  return String(err && err.message ? err.message : err);
}

async function request(url, init) {
  const ctrl = new AbortController();
  const timer = setTimeout(() => ctrl.abort(), TIMEOUT_MS);
  try {
    return await fetch(url, { ...init, signal: ctrl.signal, cache: "no-store", credentials: "omit" });
  } catch (err) {
    throw new NetworkError(err.name === "AbortError" ? `no answer within ${TIMEOUT_MS / 1000} s` : "the connection failed");
  } finally {
    clearTimeout(timer);
  }
}

async function errorOf(resp) {
  let code = "";
  let message = "";
  try {
    const body = await resp.json();
    if (body && typeof body.code === "string") code = body.code;
    if (body && typeof body.message === "string") message = body.message;
  } catch {
    // not an envelope (a proxy's page): the status speaks
  }
  return new BrokerError(resp.status, code, message);
}

/** The discovery card (open: no token). */
export async function discover() {
  const resp = await request(new URL("../", document.baseURI), { method: "GET" });
  if (!resp.ok) throw await errorOf(resp);
  return resp.json();
}

/** An API bound to a token source; ``onUnauthenticated`` runs on every 401. */
export function createApi(getToken, onUnauthenticated) {
  return {
    async call(method, body = {}) {
      const headers = { "Content-Type": "application/json" };
      const token = getToken();
      if (token) headers.Authorization = `Bearer ${token}`;
      const url = new URL(`../mqlite.v1.${method}`, document.baseURI);
      const resp = await request(url, { method: "POST", headers, body: JSON.stringify(body) });
      if (resp.ok) return resp.json();
      const err = await errorOf(resp);
      if (err.status === 401) onUnauthenticated(err);
      throw err;
    },
  };
}
