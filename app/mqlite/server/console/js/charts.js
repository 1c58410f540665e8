// Small line charts drawn locally as SVG (no chart library, no network): a time axis over
// the sampled window, one polyline per series, a legend in text, and the latest values as
// a sentence for screen readers. Colours come from CSS classes, so light/dark follow the
// page's theme; a gap (null) breaks the line instead of drawing a false zero.

import { h, uid } from "./dom.js";
import { clock } from "./format.js";

const NS = "http://www.w3.org/2000/svg";
const H = 180;
const PAD = { l: 48, r: 12, t: 12, b: 26 };

function s(tag, attrs = {}, ...children) {
  const el = document.createElementNS(NS, tag);
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, String(v));
  for (const c of children) el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  return el;
}

function niceMax(v) {
  if (v <= 0) return 1;
  const p = 10 ** Math.floor(Math.log10(v));
  const n = v / p;
  return (n <= 1 ? 1 : n <= 2 ? 2 : n <= 5 ? 5 : 10) * p;
}

/** series: [{label, cls, points: [{atMs, value|null}]}]; format(v) labels values. */
export function lineChart({ title, series, format, empty }) {
  // The drawing's width follows the screen, so axis text keeps its size on a phone.
  const W = Math.round(Math.min(600, Math.max(300, window.innerWidth - 64)));
  const titleId = uid("chart");
  const points = series.flatMap((se) => se.points.filter((p) => p.value !== null));
  const wrap = h("figure", { class: "chart" }, h("figcaption", { id: titleId }, title));
  if (points.length < 2) {
    wrap.append(h("p", { class: "empty" }, empty || "Collecting samples… the chart draws after two refreshes."));
    return wrap;
  }
  const t0 = Math.min(...points.map((p) => p.atMs));
  const t1 = Math.max(...points.map((p) => p.atMs));
  const vmax = niceMax(Math.max(...points.map((p) => p.value)));
  const x = (t) => PAD.l + ((t - t0) / Math.max(1, t1 - t0)) * (W - PAD.l - PAD.r);
  const y = (v) => H - PAD.b - (v / vmax) * (H - PAD.t - PAD.b);
  const latest = series.map((se) => {
    const last = [...se.points].reverse().find((p) => p.value !== null);
    return `${se.label} ${last ? format(last.value) : "unknown"}`;
  });
  const svg = s("svg", { viewBox: `0 0 ${W} ${H}`, role: "img", "aria-labelledby": titleId, class: "chart-svg", preserveAspectRatio: "none" });
  svg.append(s("desc", {}, `From ${clock(t0)} to ${clock(t1)}. Latest: ${latest.join(", ")}.`));
  for (const frac of [0, 0.5, 1]) {
    const yy = y(vmax * frac);
    svg.append(s("line", { x1: PAD.l, x2: W - PAD.r, y1: yy, y2: yy, class: "grid" }));
    svg.append(s("text", { x: PAD.l - 6, y: yy + 4, class: "axis", "text-anchor": "end" }, format(vmax * frac)));
  }
  svg.append(s("text", { x: PAD.l, y: H - 6, class: "axis" }, clock(t0)));
  svg.append(s("text", { x: W - PAD.r, y: H - 6, class: "axis", "text-anchor": "end" }, clock(t1)));
  for (const se of series) {
    let run = [];
    const flush = () => {
      if (run.length > 1) svg.append(s("polyline", { points: run.join(" "), class: `line ${se.cls}` }));
      else if (run.length === 1) svg.append(s("circle", { cx: run[0].split(",")[0], cy: run[0].split(",")[1], r: 2.5, class: `dot ${se.cls}` }));
      run = [];
    };
    for (const p of se.points) {
      if (p.value === null) flush();
      else run.push(`${x(p.atMs).toFixed(1)},${y(p.value).toFixed(1)}`);
    }
    flush();
  }
  wrap.append(svg);
  wrap.append(h("ul", { class: "legend" }, series.map((se, i) => h("li", {}, h("span", { class: `swatch ${se.cls}`, "aria-hidden": "true" }), latest[i]))));
  return wrap;
}
