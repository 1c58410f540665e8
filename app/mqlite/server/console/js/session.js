// The operator's token lives in this tab's sessionStorage and nowhere else: never
// localStorage (it would outlive the tab), never a cookie (the browser would attach it to
// requests by itself), never the URL (history, logs, referrers). Closing the tab forgets it.

const TOKEN_KEY = "mqlite.console.token";
const INTERVAL_KEY = "mqlite.console.refresh_ms";
export const INTERVALS_MS = [2000, 5000, 15000, 60000, 0];
const DEFAULT_INTERVAL_MS = 5000;

export function token() {
  return sessionStorage.getItem(TOKEN_KEY) || "";
}

export function setToken(value) {
  sessionStorage.setItem(TOKEN_KEY, value);
}

export function clearToken() {
  sessionStorage.removeItem(TOKEN_KEY);
}

/** The auto-refresh period in ms; 0 = paused. */
export function refreshMs() {
  const raw = Number(sessionStorage.getItem(INTERVAL_KEY));
  return INTERVALS_MS.includes(raw) && sessionStorage.getItem(INTERVAL_KEY) !== null ? raw : DEFAULT_INTERVAL_MS;
}

export function setRefreshMs(ms) {
  sessionStorage.setItem(INTERVAL_KEY, String(ms));
}
