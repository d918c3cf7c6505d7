// Shared helpers for the JS tests: the reference module, temp dirs, id/timestamp normalizing.
import { mkdtempSync, existsSync, rmSync } from "node:fs";
import { afterAll } from "vitest";
import { tmpdir } from "node:os";
import { join, dirname } from "node:path";
import { fileURLToPath } from "node:url";

export const root = join(dirname(fileURLToPath(import.meta.url)), "..");
// pi's package index needs Node 22; its session-manager module itself loads on Node 20.
export const ref = await import(
  join(root, "node_modules/@earendil-works/pi-coding-agent/dist/core/session-manager.js")
);
export const nat = await import(join(root, "index.mjs"));

export const FIXTURES = process.env.PI_SESSION_FIXTURES ?? join(root, "..", "shared", "fixtures", "pi-real");
export const haveFixtures = existsSync(FIXTURES);
if (!haveFixtures) console.warn(`[skip] real pi sessions not found at ${FIXTURES}: fixture tests are skipped`);

/** Temp dirs made by `tmp()` in this test file; removed when the file's tests are done. */
const made = [];
afterAll(() => {
  for (const d of made.splice(0)) rmSync(d, { recursive: true, force: true });
});

export function tmp(prefix = "psn-") {
  const d = mkdtempSync(join(tmpdir(), prefix));
  made.push(d);
  return d;
}

/**
 * Replace generated ids (8 hex chars, uuids) by tokens in order of first appearance, and ISO
 * timestamps by <ts>, so two independently generated sessions compare structurally.
 */
export function normalizer() {
  const map = new Map();
  const tok = (s) => {
    if (!map.has(s)) map.set(s, `<id${map.size}>`);
    return map.get(s);
  };
  const norm = (text) =>
    text
      .replace(/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g, tok)
      .replace(/"([0-9a-f]{8})"/g, (_m, id) => `"${tok(id)}"`)
      .replace(/\d{4}-\d\d-\d\dT\d\d[-:]\d\d[-:]\d\d[.-]\d{3}Z/g, "<ts>")
      // Message timestamps derived from "now" (compaction/custom messages): compare by shape.
      .replace(/"timestamp":1[78]\d{11}\b/g, '"timestamp":"<ms>"');
  return norm;
}

const shown = (_k, x) => (x === undefined ? "<undefined>" : x);

/**
 * `JSON.stringify(v, shown)`. A structure nested deeper than the engine's stack allows (a tree
 * of 1,000 chained entries under node.exe on Windows, where the reference's `getTree()`
 * overflows `JSON.stringify` as ours does) is serialized by `jsonDeep` to the same text.
 */
export const j = (v) => {
  try {
    return JSON.stringify(v, shown);
  } catch (e) {
    if (e instanceof RangeError) return jsonDeep(v, shown);
    throw e;
  }
};

/**
 * `JSON.stringify(value, replacer)` without recursion (an explicit stack of open objects and
 * arrays), for structures deeper than the call stack: the same text (`toJSON`, the replacer
 * with its holder, wrapper objects unwrapped, functions, symbols and `undefined` left out of
 * objects and `null` in arrays, non-finite numbers `null`, a cycle a `TypeError`).
 */
export function jsonDeep(value, replacer) {
  const prepared = (holder, key) => {
    let x = holder[key];
    if ((typeof x === "object" && x !== null) || typeof x === "bigint") {
      const toJSON = x.toJSON;
      if (typeof toJSON === "function") x = toJSON.call(x, key);
    }
    x = replacer.call(holder, key, x);
    if (x instanceof Number) x = Number(x);
    else if (x instanceof String) x = String(x);
    else if (x instanceof Boolean || x instanceof BigInt) x = x.valueOf();
    return x;
  };
  // The text of a value that is not an object or array; undefined where JSON has none.
  const leaf = (x) => {
    if (x === null) return "null";
    if (typeof x === "string" || typeof x === "boolean") return JSON.stringify(x);
    if (typeof x === "number") return Number.isFinite(x) ? String(x) : "null";
    if (typeof x === "bigint") throw new TypeError("Do not know how to serialize a BigInt");
    return undefined;
  };
  const isContainer = (x) => typeof x === "object" && x !== null;
  const open = new Set();
  const frame = (x) => {
    if (open.has(x)) throw new TypeError("Converting circular structure to JSON");
    open.add(x);
    const array = Array.isArray(x);
    return { x, array, keys: array ? null : Object.keys(x), i: 0, parts: [], prefix: "" };
  };
  const top = prepared({ "": value }, "");
  if (!isContainer(top)) return leaf(top);
  const stack = [frame(top)];
  for (;;) {
    const f = stack[stack.length - 1];
    if (f.i < (f.array ? f.x.length : f.keys.length)) {
      const key = f.array ? String(f.i) : f.keys[f.i];
      f.i++;
      const x = prepared(f.x, key);
      const prefix = f.array ? "" : `${JSON.stringify(key)}:`;
      if (isContainer(x)) {
        f.prefix = prefix;
        stack.push(frame(x));
        continue;
      }
      const text = leaf(x);
      if (text !== undefined) f.parts.push(prefix + text);
      else if (f.array) f.parts.push("null");
      continue;
    }
    stack.pop();
    open.delete(f.x);
    const text = f.array ? `[${f.parts.join(",")}]` : `{${f.parts.join(",")}}`;
    if (stack.length === 0) return text;
    const parent = stack[stack.length - 1];
    parent.parts.push(parent.prefix + text);
  }
}
