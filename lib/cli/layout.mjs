// Fitting text to a terminal's columns: display width (wide CJK and emoji count two columns,
// combining marks none), cutting at either end with an ellipsis. Text is made visible first
// (sanitize: control characters as `\e`, `<U+202E>`), so what is measured is what is drawn.
import { MARK, sanitize } from "./sanitize.mjs";

// East Asian Wide/Fullwidth blocks and emoji presentation: two columns each. A hand-kept list
// (no dependency for one regular expression); rare ambiguous-width characters count as one.
const WIDE =
  /[\u1100-\u115f\u2e80-\u303e\u3041-\u33ff\u3400-\u4dbf\u4e00-\u9fff\ua000-\ua4cf\uac00-\ud7a3\uf900-\ufaff\ufe30-\ufe4f\uff00-\uff60\uffe0-\uffe6\u{1f300}-\u{1f64f}\u{1f900}-\u{1f9ff}\u{20000}-\u{3fffd}]/u;
const ZERO = /^(?:\p{Mn}|\p{Me}|[\u200b-\u200d]|\ufe0f)$/u;

/** Columns taken by one code point. */
function cpWidth(ch) {
  if (ZERO.test(ch)) return 0;
  return WIDE.test(ch) ? 2 : 1;
}

/** Columns taken by `s` as drawn (after sanitising). */
export function displayWidth(s) {
  let w = 0;
  for (const ch of sanitize(String(s ?? ""))) w += cpWidth(ch);
  return w;
}

/** `s` on one line (line breaks and tabs as spaces) cut to `width` columns at the end, `…` where cut. */
export function fitEnd(s, width) {
  const t = sanitize(String(s ?? "").replace(/[\t\n\r\v\f\u2028\u2029]/g, " "));
  if (!(width >= 1)) return "";
  let w = 0;
  let out = "";
  const cps = Array.from(t);
  for (let i = 0; i < cps.length; i++) {
    const cw = cpWidth(cps[i]);
    if (w + cw > width) {
      // Room for the ellipsis: drop code points until it fits.
      while (out && w + 1 > width) {
        const last = Array.from(out).pop() ?? "";
        out = out.slice(0, out.length - last.length);
        w -= cpWidth(last);
      }
      return `${out}…`;
    }
    out += cps[i];
    w += cw;
  }
  return out;
}

/** `s` cut to `width` columns at the start (`…` then its tail): for paths, whose end says most. */
export function fitStart(s, width) {
  const t = sanitize(String(s ?? "").replace(/[\t\n\r\v\f\u2028\u2029]/g, " "));
  if (displayWidth(t) <= width) return t;
  if (!(width >= 1)) return "";
  const cps = Array.from(t);
  let w = 1;
  let out = "";
  for (let i = cps.length - 1; i >= 0; i--) {
    const cw = cpWidth(cps[i]);
    if (w + cw > width) break;
    out = cps[i] + out;
    w += cw;
  }
  return `…${out}`;
}

/** Pad `s` with spaces to `width` columns. */
export function padTo(s, width) {
  const w = displayWidth(s);
  return w >= width ? s : s + " ".repeat(width - w);
}

/**
 * An engine snippet (matches marked `«…»`) cut to `width` visible columns at the end;
 * returns its pieces `[text, isMatch][]` so the caller can highlight the matches.
 * @param {string} snippet
 * @param {number} width  Infinity: no cut
 * @returns {[string, boolean][]}
 */
export function fitMarked(snippet, width) {
  /** @type {[string, boolean][]} */
  const pieces = [];
  const re = /«([^«»]*)»/g;
  let last = 0;
  const raw = String(snippet ?? "").replace(/\s+/g, " ");
  for (const m of raw.matchAll(re)) {
    if (m.index > last) pieces.push([raw.slice(last, m.index), false]);
    pieces.push([m[1], true]);
    last = m.index + m[0].length;
  }
  if (last < raw.length) pieces.push([raw.slice(last), false]);
  return fitPieces(pieces, width).map(([t, hit]) => [t, Boolean(hit)]);
}

/**
 * Runs of text (`[text, tag]`, a tag such as a style or a match flag) cut together to `width`
 * visible columns at the end, `…` (untagged) where cut; each text made visible (sanitize) first.
 * @template T
 * @param {[string, T][]} pieces
 * @param {number} width  Infinity: no cut
 * @returns {[string, T | undefined][]}
 */
export function fitPieces(pieces, width) {
  /** @type {[string, T][]} */
  const clean = pieces.map(([t, tag]) => [sanitize(t), tag]);
  const total = clean.reduce((n, [t]) => n + displayWidth(t), 0);
  if (!Number.isFinite(width) || total <= width) return clean;
  // Keep code points up to width - 1 columns, then the ellipsis.
  /** @type {[string, T | undefined][]} */
  const out = [];
  let left = Math.max(0, width - 1);
  for (const [t, tag] of clean) {
    let kept = "";
    for (const ch of t) {
      const cw = cpWidth(ch);
      if (cw > left) break;
      kept += ch;
      left -= cw;
    }
    if (kept) out.push([kept, tag]);
    if (kept.length < t.length) break;
  }
  out.push(["…", undefined]);
  return out;
}

/** The CLI's colour marks (sanitize.mjs MARK + `[…m`), which take no columns. */
const COLOUR = new RegExp(`(${MARK}\\[[0-9;]*m)`);

/**
 * A line that may hold the CLI's colour marks cut to `width` columns at the end (`…` where cut,
 * colours reset after it); the marks are kept and count no columns. Text is made visible first.
 * @param {string} s
 * @param {number} width  Infinity or undefined: no cut
 */
export function fitLine(s, width) {
  if (!(width >= 1) || !Number.isFinite(width)) return s;
  const parts = String(s).split(COLOUR);
  const plain = parts.filter((p) => !p.startsWith(MARK)).join("");
  if (displayWidth(plain.replace(/[\t\n\r]/g, " ")) <= width) return s;
  let left = width - 1;
  let out = "";
  let coloured = false;
  for (const part of parts) {
    if (part.startsWith(MARK)) {
      out += part;
      coloured = true;
      continue;
    }
    for (const ch of sanitize(part.replace(/[\t\n\r]/g, " "))) {
      const cw = cpWidth(ch);
      if (cw > left) return `${out}…${coloured ? `${MARK}[0m` : ""}`;
      out += ch;
      left -= cw;
    }
  }
  return out;
}
