// Auto-refresh with an honest freshness state (observability "Availability and
// freshness": a failed poll makes the previous data stale). The data on screen stays, but
// the page says — in the header, in a live region and on every live panel — that it is
// no longer current, and since when.

import { refreshMs } from "./session.js";

export class Poller {
  /** ``onState({stale, lastOkMs, failedAtMs, error, running})`` after every poll. */
  constructor(onState) {
    this.onState = onState;
    this.fn = null;
    this.timer = null;
    this.generation = 0;
    this.lastOkMs = 0;
  }

  /** Poll ``fn`` now and then every refresh period until ``stop``/another ``start``. */
  start(fn) {
    this.stop();
    this.fn = fn;
    this.generation += 1;
    return this.tick(this.generation);
  }

  stop() {
    clearTimeout(this.timer);
    this.timer = null;
    this.fn = null;
    this.generation += 1;
  }

  /** Poll at once (the "Refresh" button, a changed period) and re-arm the timer. */
  refresh() {
    if (!this.fn) return Promise.resolve();
    clearTimeout(this.timer);
    this.generation += 1;
    return this.tick(this.generation);
  }

  async tick(generation) {
    const fn = this.fn;
    if (!fn) return;
    try {
      await fn();
      if (generation !== this.generation) return;
      this.lastOkMs = Date.now();
      this.onState({ stale: false, lastOkMs: this.lastOkMs, running: true });
    } catch (error) {
      if (generation !== this.generation) return;
      if (error && error.status === 401) return; // signed out: the app shows the prompt
      this.onState({ stale: true, lastOkMs: this.lastOkMs, failedAtMs: Date.now(), error, running: true });
    }
    const period = refreshMs();
    if (period > 0 && generation === this.generation) {
      this.timer = setTimeout(() => this.tick(generation), period);
    }
  }
}
