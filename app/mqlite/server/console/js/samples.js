// The last minutes of observations, kept in this page's memory only: the charts' data
// and the queues' rates. Rates are deltas of Observe's event counters between two
// samples; a counter that went down (a broker restart resets them) yields no rate rather
// than a negative or invented one.

import { STATES } from "./observe.js";

export const WINDOW_MS = 10 * 60 * 1000;
const MAX_SAMPLES = 600;
const samples = [];

function totalsByEvent(events) {
  if (!events) return null;
  const out = {};
  for (const [key, n] of Object.entries(events)) {
    const event = key.split("\u0000")[1];
    out[event] = (out[event] || 0) + n;
  }
  return out;
}

/** Record an observation (ignored when its sample instant did not move). */
export function record(obs) {
  const last = samples[samples.length - 1];
  if (last && last.atMs === obs.sampledAtMs) return;
  const backlog = {};
  for (const s of STATES) backlog[s] = obs.queues ? obs.queues.reduce((acc, q) => acc + q[s], 0) : null;
  // Per queue as observed (null: the sample has no queue data — "no data", never 0).
  const queues = obs.queues ? Object.fromEntries(obs.queues.map((q) => [q.name, q])) : null;
  samples.push({ atMs: obs.sampledAtMs, backlog, totals: totalsByEvent(obs.events), events: obs.events, queues });
  const cutoff = obs.sampledAtMs - WINDOW_MS;
  while (samples.length > MAX_SAMPLES || (samples.length && samples[0].atMs < cutoff)) samples.shift();
}

export function all() {
  return samples.slice();
}

export function clear() {
  samples.length = 0;
}

/** Per-second rate of ``event`` between the last two samples (one queue, or all); null if unknown. */
export function rateOf(event, queue) {
  if (samples.length < 2) return null;
  const [a, b] = samples.slice(-2);
  const dt = (b.atMs - a.atMs) / 1000;
  if (!a.events || !b.events || dt <= 0) return null;
  const read = (s) => (queue === undefined ? (s.totals[event] || 0) : s.events[`${queue}\u0000${event}`] || 0);
  const delta = read(b) - read(a);
  return delta < 0 ? null : delta / dt;
}

/** Series of per-second event rates over the window: [{atMs, value}] (null gaps kept). */
export function rateSeries(event) {
  const out = [];
  for (let i = 1; i < samples.length; i += 1) {
    const a = samples[i - 1];
    const b = samples[i];
    const dt = (b.atMs - a.atMs) / 1000;
    if (!a.totals || !b.totals || dt <= 0) continue;
    const delta = (b.totals[event] || 0) - (a.totals[event] || 0);
    out.push({ atMs: b.atMs, value: delta < 0 ? null : delta / dt });
  }
  return out;
}

export function backlogSeries(pickValue) {
  return samples.map((s) => ({ atMs: s.atMs, value: pickValue(s.backlog) }));
}

/** One queue's gauge over the window: [{atMs, value}], null where a sample has no data
 *  for it (collection unavailable, or the queue absent) — a gap, never a zero. */
export function queueSeries(name, pick) {
  return samples.map((s) => ({ atMs: s.atMs, value: s.queues && s.queues[name] ? pick(s.queues[name]) : null }));
}

/** One queue's per-second rate of ``event`` between successive samples (null = no data). */
export function queueRateSeries(name, event) {
  const out = [];
  for (let i = 1; i < samples.length; i += 1) {
    const a = samples[i - 1];
    const b = samples[i];
    const dt = (b.atMs - a.atMs) / 1000;
    if (dt <= 0) continue;
    if (!a.events || !b.events || !a.queues || !b.queues) {
      out.push({ atMs: b.atMs, value: null });
      continue;
    }
    const key = `${name}\u0000${event}`;
    const delta = (b.events[key] || 0) - (a.events[key] || 0);
    out.push({ atMs: b.atMs, value: delta < 0 ? null : delta / dt });
  }
  return out;
}
