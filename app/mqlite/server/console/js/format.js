// Numbers, times and message bodies as the operator reads them. Times are local and always
// yyyy-MM-dd HH:mm:ss (access-keys "HTTP, console and MCP": an English calendar independent
// of the browser's language), so a screenshot reads the same everywhere.

const pad = (n, w = 2) => String(n).padStart(w, "0");

export function dateTime(ms, { seconds = true } = {}) {
  if (!ms) return "—";
  const d = new Date(ms);
  const date = `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}`;
  const time = `${pad(d.getHours())}:${pad(d.getMinutes())}${seconds ? `:${pad(d.getSeconds())}` : ""}`;
  return `${date} ${time}`;
}

export function clock(ms) {
  return dateTime(ms).slice(11);
}

/** "yyyy-MM-dd HH:mm" in local time → epoch ms, or NaN. */
export function parseLocal(text) {
  const m = /^(\d{4})-(\d{2})-(\d{2}) (\d{2}):(\d{2})$/.exec(text.trim());
  if (!m) return NaN;
  const [y, mo, d, hh, mm] = m.slice(1).map(Number);
  const date = new Date(y, mo - 1, d, hh, mm);
  if (date.getMonth() !== mo - 1 || date.getDate() !== d || hh > 23 || mm > 59) return NaN;
  return date.getTime();
}

export function duration(ms) {
  if (ms === null || ms === undefined || Number.isNaN(ms)) return "—";
  if (ms < 1000) return `${Math.round(ms)} ms`;
  const s = ms / 1000;
  if (s < 60) return `${s < 10 ? s.toFixed(1) : Math.round(s)} s`;
  const m = s / 60;
  if (m < 60) return `${Math.floor(m)} min ${pad(Math.round(s % 60))} s`;
  const hours = m / 60;
  if (hours < 48) return `${Math.floor(hours)} h ${pad(Math.round(m % 60))} min`;
  return `${Math.floor(hours / 24)} d ${Math.round(hours % 24)} h`;
}

export function bytes(n) {
  if (n === null || n === undefined) return "—";
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let v = n;
  let i = 0;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i += 1;
  }
  return `${i ? v.toFixed(1) : v} ${units[i]}`;
}

export function count(n) {
  return n === null || n === undefined ? "—" : Number(n).toLocaleString("en-US");
}

export function rate(perSec) {
  if (perSec === null || perSec === undefined || Number.isNaN(perSec)) return "—";
  return `${perSec < 10 ? perSec.toFixed(1) : Math.round(perSec)}/s`;
}

// -- bodies: base64 on the wire ----------------------------------------------------------

export function fromBase64(b64) {
  const bin = atob(b64 || "");
  const out = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i += 1) out[i] = bin.charCodeAt(i);
  return out;
}

export function toBase64(text) {
  const data = new TextEncoder().encode(text);
  let bin = "";
  for (const b of data) bin += String.fromCharCode(b);
  return btoa(bin);
}

export function hex(data) {
  const lines = [];
  for (let off = 0; off < data.length; off += 16) {
    const row = Array.from(data.slice(off, off + 16));
    const hexes = row.map((b) => pad(b.toString(16), 2)).join(" ");
    const ascii = row.map((b) => (b >= 0x20 && b < 0x7f ? String.fromCharCode(b) : ".")).join("");
    lines.push(`${pad(off.toString(16), 8)}  ${hexes.padEnd(47)}  ${ascii}`);
  }
  return lines.join("\n");
}

/** The text of ``data`` if it is UTF-8 without control characters (tabs/newlines aside). */
export function text(data) {
  try {
    const s = new TextDecoder("utf-8", { fatal: true }).decode(data);
    // eslint-disable-next-line no-control-regex
    return /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f]/.test(s) ? null : s;
  } catch {
    return null;
  }
}

/** {kind: "json"|"text"|"hex", shown}: JSON pretty-printed, else text, else hex. */
export function decodeBody(b64, want = "auto") {
  const data = fromBase64(b64);
  const asText = text(data);
  if (want === "hex" || (want === "auto" && asText === null)) return { kind: "hex", shown: hex(data) };
  if (want === "json" || want === "auto") {
    try {
      if (asText !== null && asText.trim()) return { kind: "json", shown: JSON.stringify(JSON.parse(asText), null, 2) };
    } catch {
      if (want === "json") return { kind: "json", shown: null };
    }
    if (want === "json") return { kind: "json", shown: null };
  }
  if (asText === null) return { kind: "text", shown: null };
  return { kind: "text", shown: asText };
}
