// One queue's last minutes, from the same in-tab sample store as the overview (so the
// history survives moving between pages of this tab): throughput (enqueued, completed,
// dead-lettered per second), backlog (waiting, locked, dead-lettered) and the age of the
// oldest active or locked message. A sample without queue data is a gap and is named
// "no data"; it is never drawn as zero.

import { lineChart } from "./charts.js";
import { count, duration, rate } from "./format.js";
import { h } from "./dom.js";
import * as samples from "./samples.js";

const NO_DATA = "No data: the samples so far carry no counts for this queue (collection unavailable).";

function emptyText(series) {
  const taken = samples.all().length;
  if (taken < 2) return "Collecting samples… the chart draws after two refreshes.";
  const known = series.flatMap((se) => se.points).filter((p) => p.value !== null).length;
  return known ? "Collecting samples… the chart draws after two refreshes with data." : NO_DATA;
}

function chart(title, series, format) {
  const fig = lineChart({ title, series, format, empty: emptyText(series) });
  const gaps = series[0].points.filter((p) => p.value === null).length;
  if (gaps && series[0].points.length) fig.append(h("p", { class: "hint gap-note" }, `${gaps} sample${gaps === 1 ? "" : "s"} with no data (gaps in the line).`));
  return fig;
}

export function queueCharts(name) {
  const waiting = (q) => q.active + q.scheduled + q.deferred;
  return h(
    "div",
    { class: "charts", id: "queue-charts" },
    chart(
      "Throughput (per second)",
      [
        { label: "enqueued", cls: "s1", points: samples.queueRateSeries(name, "enqueued") },
        { label: "completed", cls: "s2", points: samples.queueRateSeries(name, "completed") },
        { label: "dead-lettered", cls: "s3", points: samples.queueRateSeries(name, "dead_lettered") },
      ],
      rate,
    ),
    chart(
      "Backlog (messages)",
      [
        { label: "waiting (active+scheduled+deferred)", cls: "s1", points: samples.queueSeries(name, waiting) },
        { label: "locked", cls: "s2", points: samples.queueSeries(name, (q) => q.locked) },
        { label: "dead-lettered", cls: "s3", points: samples.queueSeries(name, (q) => q.dead_lettered) },
      ],
      count,
    ),
    chart("Oldest active or locked message (age)", [{ label: "oldest", cls: "s1", points: samples.queueSeries(name, (q) => q.oldestAgeMs) }], duration),
  );
}

export function chartsKey() {
  const all = samples.all();
  return `${all.length}:${all.length ? all[all.length - 1].atMs : 0}:${window.innerWidth}`;
}
