// The one sanitiser of the pi-session CLI's text sinks (stdout and stderr). Session text is
// attacker-controlled: it must never reach a terminal as control sequences (OSC title
// changes, ESC[2J, OSC 8 links, cursor moves, "\r" overwrites, 8-bit CSI U+009B, bidi
// overrides U+202E). Every C0 control except "\n" and "\t", DEL, every C1 control and the
// bidi controls are shown visibly ("\e", "\r", "\x9b", "<U+202E>"; dim when colour is on).
//
// The CLI's own colours are written as a marker that is random per process (so session
// text cannot forge one) and turned into ESC only after sanitising.
import { randomBytes } from "node:crypto";

/** Every character that is escaped (human output) / \u-escaped (JSON output). */
export const UNSAFE =
  /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;
const JSON_UNSAFE = /[\u007f-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;

/** Colour marker: private-use characters drawn at random (never in session text by chance). */
export const MARK = Array.from(randomBytes(8), (b) => String.fromCodePoint(0xf0000 + b)).join("");

const NAMED = new Map([
  [0x1b, "\\e"],
  [0x0d, "\\r"],
  [0x08, "\\b"],
  [0x07, "\\a"],
  [0x0c, "\\f"],
  [0x0b, "\\v"],
  [0x00, "\\0"],
]);
const hex = (c, w) => c.toString(16).toUpperCase().padStart(w, "0");

/** The visible form of one unsafe character. */
export function visible(ch) {
  const c = ch.codePointAt(0);
  const named = NAMED.get(c);
  if (named) return named;
  if (c <= 0xff) return `\\x${hex(c, 2).toLowerCase()}`;
  return `<U+${hex(c, 4)}>`;
}

/** Human output: unsafe characters shown visibly (dim with colour), then our colour marks. */
export function sanitize(s, color = false) {
  const t = String(s).replace(UNSAFE, (ch) => (color ? `\x1b[2m${visible(ch)}\x1b[22m` : visible(ch)));
  return t.includes(MARK) ? t.split(MARK).join(color ? "\x1b" : "") : t;
}

/** JSON text (from JSON.stringify): the controls it leaves raw (DEL, C1, bidi, U+2028/9) as \uXXXX. */
export function jsonSafe(json) {
  return json.replace(JSON_UNSAFE, (ch) => `\\u${hex(ch.charCodeAt(0), 4).toLowerCase()}`);
}

/**
 * One message on stderr, sanitised; on a terminal wrapped at spaces to its width (continuation
 * lines indented by two), so that no line is wider than the terminal and none of it is cut.
 */
export function errLine(s) {
  const text = sanitize(s, false);
  const cols = process.stderr.isTTY ? process.stderr.columns : undefined;
  process.stderr.write(`${cols && cols > 20 ? wrapWords(text, cols).join("\n") : text}\n`);
}

/**
 * `text` (one line, already visible) broken at spaces into lines of at most `width` characters;
 * a word longer than a line is broken where it must be. Lines after the first are indented by two.
 * (Counted in code points: the messages are ASCII but for quoted names.)
 * @param {string} text
 * @param {number} width
 */
export function wrapWords(text, width) {
  const lines = [];
  let line = "";
  for (const word of text.split(" ")) {
    const indent = lines.length ? "  " : "";
    const candidate = line ? `${line} ${word}` : `${indent}${word}`;
    if ([...candidate].length <= width) {
      line = candidate;
      continue;
    }
    if (line) lines.push(line);
    let rest = `${lines.length ? "  " : ""}${word}`;
    while ([...rest].length > width) {
      lines.push([...rest].slice(0, width).join(""));
      rest = `  ${[...rest].slice(width).join("")}`;
    }
    line = rest;
  }
  lines.push(line);
  return lines;
}
