// Differential fuzzing harness: reference SessionManager (A) vs implementation under test (B).
//
// Every sequence is driven by a seeded PRNG. Operations are generated from the state of side A
// only (entries are chosen by index, never by id value), so a seed replays the same operation
// sequence on every run even though entry ids, session ids and timestamps are random.
//
// Ids are paired A<->B by order of appearance (getEntries() order, checked after every step);
// every observable value is normalized on its own side (ids -> <id:n>, session ids -> <sid:n>,
// ISO timestamps -> <ts>, derived millisecond timestamps -> <ms>, temp paths -> <root>) and the
// normalized values are compared exactly (Object.is on primitives, own-key order, presence of
// keys whose value is undefined, prototypes).

import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);

/** The reference pi's session module in this repository's devDependency (tests' default side A). */
export const REFERENCE_MODULE_URL = new URL(
  "../../node_modules/@earendil-works/pi-coding-agent/dist/core/session-manager.js",
  import.meta.url,
).href;

export const EXPORT_NAMES = [
  "SessionManager",
  "CURRENT_SESSION_VERSION",
  "assertValidSessionId",
  "migrateSessionEntries",
  "parseSessionEntries",
  "getLatestCompactionEntry",
  "sessionEntryToContextMessages",
  "buildContextEntries",
  "projectContextEntry",
  "buildSessionProjection",
  "buildSessionContext",
  "getDefaultSessionDir",
  "loadEntriesFromFile",
  "findMostRecentSession",
];

/** Checks that can be disabled with DIFF_SKIP=name1,name2 (for known, accepted differences). */
export const SKIPPABLE = {
  argIdentity: "getEntry(id).message/data === the object passed to append*()",
  identity: "object identity agreement across getters (getEntries()[k] === getEntry(id) etc.)",
  undefinedKeys: "own keys whose value is undefined must be present on both sides",
  looseArgs: "calls with non-string ids (getChildren(null), getEntry(undefined), ...)",
  freeFns: "differential probes of the module's free functions",
  files: "session file contents compared line by line",
  proto: "prototype of returned objects (plain Object vs class instance)",
};

export function parseSkip(env = process.env) {
  const set = new Set(
    (env.DIFF_SKIP ?? "")
      .split(",")
      .map((s) => s.trim())
      .filter(Boolean),
  );
  for (const name of set) {
    if (!(name in SKIPPABLE))
      throw new Error(`DIFF_SKIP: unknown check "${name}" (known: ${Object.keys(SKIPPABLE).join(", ")})`);
  }
  return set;
}

/**
 * The project ships a loader hook (lib/register.mjs) that redirects imports of pi's session module
 * (and patches pi's bundle) to this package. Make sure side A really is the code of `moduleUrl`:
 * its class's source text must occur in that file.
 */
export function assertGenuineReference(ref, moduleUrl = REFERENCE_MODULE_URL) {
  const file = fs.readFileSync(new URL(moduleUrl), "utf8");
  const src = Function.prototype.toString.call(ref.SessionManager);
  if (!/^class _?SessionManager\b/.test(src) || !file.includes(src)) {
    throw new Error(
      `differential: the module loaded from ${moduleUrl} is not that file's own code ` +
        "(a loader hook such as pi-session-native/register redirected it?). Run without --import/NODE_OPTIONS hooks.",
    );
  }
}

/**
 * Side A (`ref`: pi's own session module, default the devDependency's dist/core/session-manager.js,
 * or one of pi's bundle chunks) and side B (`impl`: default this package's index.js; a function is
 * called with side A's module).
 * @param {{ referenceUrl?: string, impl?: any, implName?: string }} [options]
 */
export async function loadModules({ referenceUrl = REFERENCE_MODULE_URL, impl, implName } = {}) {
  const ref = await import(referenceUrl);
  assertGenuineReference(ref, referenceUrl);
  if (impl) return { ref, impl: typeof impl === "function" ? impl(ref) : impl, implName };
  let own;
  try {
    own = require("../../index.js");
  } catch (error) {
    throw new Error(`differential: failed to load this package's index.js: ${error?.stack ?? error}`);
  }
  if (!own || typeof own.SessionManager !== "function") {
    throw new Error(
      `differential: index.js does not export a SessionManager class (exports: ${Object.keys(own ?? {}).join(", ")})`,
    );
  }
  return { ref, impl: own, implName: "pi-session-native" };
}

// ---------------------------------------------------------------------------------------------
// PRNG
// ---------------------------------------------------------------------------------------------

export function makeRng(seed) {
  let s = (Math.imul(seed >>> 0, 0x9e3779b1) ^ 0x85ebca6b) >>> 0;
  const float = () => {
    s = (s + 0x6d2b79f5) | 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const rng = {
    float,
    int: (n) => Math.floor(float() * n),
    range: (lo, hi) => lo + Math.floor(float() * (hi - lo + 1)),
    bool: (p = 0.5) => float() < p,
    pick: (arr) => arr[Math.floor(float() * arr.length)],
    weighted(table) {
      let total = 0;
      for (const [w] of table) total += w;
      let x = float() * total;
      for (const [w, v] of table) {
        x -= w;
        if (x < 0) return v;
      }
      return table[table.length - 1][1];
    },
  };
  return rng;
}

// ---------------------------------------------------------------------------------------------
// Abstract arguments: references resolved per side
// ---------------------------------------------------------------------------------------------

/** An entry id as seen on side A; translated to the paired id on side B. */
export class IdRef {
  constructor(aId) {
    this.aId = aId;
  }
}
/** A path resolved per side: kind "rel" (inside the side's session dir), "known" (k-th file seen), "current". */
export class PathRef {
  constructor(kind, value) {
    this.kind = kind;
    this.value = value;
  }
}
/** A value computed per side at call time. */
export class SideFn {
  constructor(fn, label) {
    this.fn = fn;
    this.label = label;
  }
}

function defineOwn(obj, key, value) {
  if (key === "__proto__")
    Object.defineProperty(obj, key, { value, enumerable: true, writable: true, configurable: true });
  else obj[key] = value;
}

/** Deep copy of an abstract argument for one side (preserves undefined fields, key order, __proto__ keys). */
export function materialize(v, side) {
  if (v === null || typeof v !== "object") return v;
  if (v instanceof IdRef) return side.id(v.aId);
  if (v instanceof PathRef) return side.path(v);
  if (v instanceof SideFn) return v.fn(side);
  if (Array.isArray(v)) return v.map((x) => materialize(x, side));
  const out = {};
  for (const k of Object.keys(v)) defineOwn(out, k, materialize(v[k], side));
  return out;
}

// ---------------------------------------------------------------------------------------------
// Pairing of ids between the sides
// ---------------------------------------------------------------------------------------------

export class Pairing {
  constructor(prefix) {
    this.prefix = prefix;
    this.tokA = new Map();
    this.tokB = new Map();
    this.bByTok = new Map();
    this.aByTok = new Map();
    this.n = 0;
  }
  /** Returns null on success or a description of the conflict. */
  pair(a, b) {
    const ta = this.tokA.get(a);
    const tb = this.tokB.get(b);
    if (ta === undefined && tb === undefined) {
      const t = `<${this.prefix}:${++this.n}>`;
      this.tokA.set(a, t);
      this.tokB.set(b, t);
      this.aByTok.set(t, a);
      this.bByTok.set(t, b);
      return null;
    }
    if (ta === tb) return null;
    return `${this.prefix} pairing conflict: A ${JSON.stringify(a)} is ${ta ?? "new"}, B ${JSON.stringify(b)} is ${tb ?? "new"}`;
  }
  toB(a) {
    const t = this.tokA.get(a);
    return t === undefined ? a : this.bByTok.get(t);
  }
  tok(label, v) {
    return (label === "A" ? this.tokA : this.tokB).get(v);
  }
}

// ---------------------------------------------------------------------------------------------
// Normalization
// ---------------------------------------------------------------------------------------------

export const UNDEF = "<undefined>";
const ISO_RE = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const ISO_RE_G = /\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z/g;
const FTS_RE_G = /\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}-\d{3}Z/g;
const UUID_RE_G = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g;
const HEX8_RE_G = /(?<![0-9a-zA-Z])[0-9a-f]{8}(?![0-9a-zA-Z])/g;
/** Numbers >= this in a `timestamp` field are wall-clock derived (user message timestamps are generated far below). */
const MS_THRESHOLD = 1e12;

function replaceAll(s, find, repl) {
  return find && s.includes(find) ? s.split(find).join(repl) : s;
}

/** Normalize a free-form text (error message, path): temp roots, file timestamps, session ids, entry ids. */
export function normText(s, side) {
  let out = replaceAll(s, side.root, "<root>");
  out = out.replace(UUID_RE_G, (m) => side.sids.tok(side.label, m) ?? m);
  out = out.replace(FTS_RE_G, "<fts>");
  out = out.replace(ISO_RE_G, "<ts>");
  out = out.replace(HEX8_RE_G, (m) => side.ids.tok(side.label, m) ?? m);
  for (const [sid, tok] of side.label === "A" ? side.sids.tokA : side.sids.tokB) {
    if (sid.length > 3 && out.includes(sid)) out = replaceAll(out, sid, tok);
  }
  return out;
}

function normString(s, side) {
  const idTok = side.ids.tok(side.label, s);
  if (idTok !== undefined) return idTok;
  const sidTok = side.sids.tok(side.label, s);
  if (sidTok !== undefined) return sidTok;
  if (ISO_RE.test(s)) return "<ts>";
  if (side.root && s.includes(side.root)) return normText(s, side);
  return s;
}

export function normalize(v, side, key, depth = 0) {
  if (v === undefined) return UNDEF;
  if (v === null) return null;
  switch (typeof v) {
    case "string":
      return normString(v, side);
    case "number":
      return key === "timestamp" && v >= MS_THRESHOLD ? "<ms>" : v;
    case "boolean":
      return v;
    case "bigint":
      return { "<bigint>": String(v) };
    case "function":
      return "<function>";
    case "symbol":
      return "<symbol>";
  }
  if (depth > 20000) return "<too deep>";
  if (Array.isArray(v)) {
    const out = new Array(v.length);
    for (let i = 0; i < v.length; i++) out[i] = i in v ? normalize(v[i], side, undefined, depth + 1) : "<hole>";
    return out;
  }
  const out = {};
  if (!side.skip.has("proto")) {
    const proto = Object.getPrototypeOf(v);
    if (proto !== Object.prototype) out["<proto>"] = proto === null ? "null" : (proto.constructor?.name ?? "?");
  }
  if (v instanceof Map) out["<map>"] = normalize([...v.entries()], side, undefined, depth + 1);
  const dropUndef = side.skip.has("undefinedKeys");
  for (const k of Object.keys(v)) {
    const value = v[k];
    if (dropUndef && value === undefined) continue;
    defineOwn(out, k, normalize(value, side, k, depth + 1));
  }
  return out;
}

/**
 * Canonical string of normalize(v) computed in one pass (fast path for comparisons). Distinguishes
 * -0/0, NaN/null, undefined/missing keys, key order and prototypes exactly like normalize + firstDiff.
 */
export function canon(v, side, key, depth = 0) {
  if (v === undefined) return "u";
  if (v === null) return "null";
  switch (typeof v) {
    case "string":
      return JSON.stringify(normString(v, side));
    case "number":
      if (key === "timestamp" && v >= MS_THRESHOLD) return '"<ms>"';
      return Object.is(v, -0) ? "-0" : String(v);
    case "boolean":
      return v ? "true" : "false";
    case "bigint":
      return `${v}n`;
    case "function":
      return "<function>";
    case "symbol":
      return "<symbol>";
  }
  if (depth > 20000) return "<too deep>";
  const refs = side.refs;
  if (refs) {
    // Inside a snapshot: session entries and their messages are written as references to the
    // getEntries() list ("<E k>" = canonically equal to entries[k]); identity is a fast path only.
    const t = refs.byObj.get(v);
    if (t !== undefined) return t;
    if (typeof v.role === "string" || (typeof v.type === "string" && "id" in v)) {
      // Not the same object as an entry (or its message): compare by content, written without refs.
      side.refs = null;
      let plain;
      try {
        plain = canonObject(v, side, depth);
      } finally {
        side.refs = refs;
      }
      const byContent = refs.byCanon.get(plain);
      if (byContent !== undefined) return byContent;
    }
    return canonObject(v, side, depth);
  }
  return canonObject(v, side, depth);
}

function canonObject(v, side, depth) {
  if (Array.isArray(v)) {
    let out = "[";
    for (let i = 0; i < v.length; i++) {
      if (i) out += ",";
      out += i in v ? canon(v[i], side, undefined, depth + 1) : "<hole>";
    }
    return `${out}]`;
  }
  let out = "{";
  if (!side.skip.has("proto")) {
    const proto = Object.getPrototypeOf(v);
    if (proto !== Object.prototype) out += `<proto ${proto === null ? "null" : (proto.constructor?.name ?? "?")}>`;
  }
  if (v instanceof Map) out += `<map ${canon([...v.entries()], side, undefined, depth + 1)}>`;
  const dropUndef = side.skip.has("undefinedKeys");
  let first = true;
  for (const k of Object.keys(v)) {
    const value = v[k];
    if (dropUndef && value === undefined) continue;
    if (!first) out += ",";
    first = false;
    out += `${JSON.stringify(k)}:${canon(value, side, k, depth + 1)}`;
  }
  return `${out}}`;
}

/** Canonical string of a snapshot (see snapshot()); `fresh` bypasses the per-entry memo. */
export function canonSnapshot(snap, side, fresh = false) {
  const entries = snap.entries?.ok && Array.isArray(snap.entries.value) ? snap.entries.value : null;
  if (!entries) return canon(snap, side);
  const byObj = new Map();
  const byCanon = new Map();
  const strs = new Array(entries.length);
  for (let k = 0; k < entries.length; k++) {
    const e = entries[k];
    let memo = fresh || e === null || typeof e !== "object" ? undefined : side.entryCache.get(e);
    if (!memo) {
      const msg = e && typeof e === "object" ? e.message : undefined;
      memo = { e: canon(e, side), m: msg && typeof msg === "object" ? canon(msg, side) : undefined };
      if (!fresh && e && typeof e === "object") side.entryCache.set(e, memo);
    }
    strs[k] = memo.e;
    if (!byCanon.has(memo.e)) byCanon.set(memo.e, `"<E${k}>"`);
    if (memo.m !== undefined && !byCanon.has(memo.m)) byCanon.set(memo.m, `"<M${k}>"`);
  }
  for (let k = 0; k < entries.length; k++) {
    const e = entries[k];
    if (e && typeof e === "object") {
      byObj.set(e, byCanon.get(strs[k]));
      const msg = e.message;
      if (msg && typeof msg === "object" && !byObj.has(msg)) {
        const m = side.entryCache.get(e)?.m ?? canon(msg, side);
        byObj.set(msg, byCanon.get(m));
      }
    }
  }
  const { entries: _omit, ...rest } = snap;
  side.refs = { byObj, byCanon };
  try {
    return `entries:[${strs.join(",")}]\n${canon(rest, side)}`;
  } finally {
    side.refs = null;
  }
}

export function normalizeOutcome(o, side) {
  if (o.ok) return { ok: true, value: normalize(o.value, side) };
  const e = o.error;
  const err = { ok: false, name: e?.name ?? typeof e, message: normText(String(e?.message ?? e), side) };
  if (e && typeof e === "object" && e.code !== undefined) err.code = e.code;
  return err;
}

/** Normalize one raw JSONL line of a session file, textually (formatting and escapes are compared too). */
export function normLine(line, side) {
  let out = line.replace(/"([0-9a-f]{8})"/g, (m, id) => {
    const t = side.ids.tok(side.label, id);
    return t === undefined ? m : `"${t}"`;
  });
  const rootJson = JSON.stringify(side.root).slice(1, -1);
  out = replaceAll(out, rootJson, "<root>");
  out = out.replace(UUID_RE_G, (m) => side.sids.tok(side.label, m) ?? m);
  out = out.replace(FTS_RE_G, "<fts>");
  out = out.replace(ISO_RE_G, "<ts>");
  out = out.replace(/"timestamp":(\d{13,})(?=[,}\]])/g, (m, n) =>
    Number(n) >= MS_THRESHOLD ? '"timestamp":"<ms>"' : m,
  );
  return out;
}

// ---------------------------------------------------------------------------------------------
// Comparison
// ---------------------------------------------------------------------------------------------

function show(v) {
  let s;
  try {
    s = JSON.stringify(v, (_k, x) =>
      typeof x === "number" && !Number.isFinite(x) ? `<${x}>` : Object.is(x, -0) ? "<-0>" : x,
    );
  } catch {
    s = String(v);
  }
  if (s === undefined) s = String(v);
  return s.length > 400 ? `${s.slice(0, 400)}…(${s.length} chars)` : s;
}

/** First difference between two normalized values, or null. */
export function firstDiff(a, b, p = "") {
  if (Object.is(a, b)) return null;
  if (typeof a !== "object" || typeof b !== "object" || a === null || b === null) {
    return { path: p || "(root)", a, b };
  }
  const aa = Array.isArray(a);
  if (aa !== Array.isArray(b)) return { path: p || "(root)", a, b, note: "array vs non-array" };
  if (aa) {
    const n = Math.min(a.length, b.length);
    for (let i = 0; i < n; i++) {
      const d = firstDiff(a[i], b[i], `${p}[${i}]`);
      if (d) return d;
    }
    if (a.length !== b.length)
      return {
        path: `${p}.length`,
        a: a.length,
        b: b.length,
        note: `extra: ${show(a.length > b.length ? a.slice(n) : b.slice(n))}`,
      };
    return null;
  }
  const ka = Object.keys(a);
  const kb = Object.keys(b);
  const sa = new Set(ka);
  const sb = new Set(kb);
  const missing = ka.filter((k) => !sb.has(k));
  const extra = kb.filter((k) => !sa.has(k));
  if (missing.length || extra.length) {
    return { path: p || "(root)", a: ka, b: kb, note: `keys only in A: ${show(missing)}, only in B: ${show(extra)}` };
  }
  for (const k of ka) {
    const d = firstDiff(a[k], b[k], `${p}.${k}`);
    if (d) return d;
  }
  if (ka.join("\u0000") !== kb.join("\u0000")) return { path: p || "(root)", a: ka, b: kb, note: "key order differs" };
  return null;
}

export class DiffError extends Error {}

// ---------------------------------------------------------------------------------------------
// Sides
// ---------------------------------------------------------------------------------------------

class Side {
  constructor(label, mod, root, ids, sids, skip, persisted) {
    this.label = label;
    this.mod = mod;
    this.root = root;
    this.dir = path.join(root, "sessions");
    this.agentDir = path.join(root, "agent");
    this.ids = ids;
    this.sids = sids;
    this.skip = skip;
    this.persisted = persisted;
    this.sm = undefined;
    this.files = [];
    this.fileCache = { path: undefined, content: undefined, lines: undefined };
    /** Memo of canon(entry) and canon(entry.message) keyed by entry object (entries are immutable once appended). */
    this.entryCache = new WeakMap();
    this.dirCache = new Map();
    this.refs = null;
  }
  id(aId) {
    return this.label === "A" ? aId : this.ids.toB(aId);
  }
  path(ref) {
    switch (ref.kind) {
      case "rel":
        return path.join(this.dir, ref.value);
      case "known":
        return this.files[ref.value];
      case "current":
        return this.sm.getSessionFile();
      case "abs":
        return ref.value;
    }
    throw new Error(`bad PathRef ${ref.kind}`);
  }
  mat(v) {
    return materialize(v, this);
  }
  exec(fn) {
    process.env.PI_CODING_AGENT_DIR = this.agentDir;
    try {
      return { ok: true, value: fn(this) };
    } catch (error) {
      return { ok: false, error };
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Value generators
// ---------------------------------------------------------------------------------------------

const STRINGS = [
  "",
  "hello",
  "Hello, world!",
  "héllo wörld ñ",
  "日本語のテキスト",
  "emoji 😀👍🏽👨‍👩‍👧",
  "\ud83d",
  "lone \ud83d high",
  "lone \udc00 low",
  "\udc00\ud83d",
  "line1\nline2",
  "crlf\r\nline",
  "tab\tsep",
  "nul\u0000byte",
  "\u2028\u2029",
  'quote " and \\ backslash',
  "  padded  ",
  "<script>&amp;</script>",
  "\u007f\u0080\u00ff",
  "🏳️‍🌈",
  "Ωmega",
  "a".repeat(300),
  "x\ny\r\nz\rw",
];
const KEYS = [
  "a",
  "b",
  "z",
  "10",
  "2",
  "0",
  "-1",
  "01",
  "1.5",
  "4294967294",
  "4294967295",
  "9007199254740993",
  "constructor",
  "toString",
  "",
  "ключ",
  "😀",
  "type",
  "id",
  "timestamp",
];
// biome-ignore-start lint/suspicious/noApproximativeNumericConstant: 3.14159 is number text to round-trip, not an approximation of π.
const NUMBERS = [
  0,
  1,
  -1,
  42,
  123456,
  0.1 + 0.2,
  1e21,
  1e-7,
  5e-324,
  -0,
  2 ** 53,
  2 ** 53 + 2,
  -(2 ** 31),
  1.5,
  3.14159,
  1e300,
  100,
];
// biome-ignore-end lint/suspicious/noApproximativeNumericConstant: end of NUMBERS

function genString(rng) {
  if (rng.bool(0.15)) {
    const n = rng.range(1, 40);
    let s = "";
    for (let i = 0; i < n; i++) s += String.fromCharCode(rng.pick([32, 48, 65, 97, 0x3b1, 0x4e00]) + rng.int(26));
    return s;
  }
  if (rng.bool(0.01)) return "long ".repeat(rng.range(500, 3000));
  return rng.pick(STRINGS);
}

function genNumber(rng) {
  if (rng.bool(0.02)) return rng.pick([NaN, Infinity, -Infinity]);
  if (rng.bool(0.5)) return rng.int(1000);
  return rng.pick(NUMBERS);
}

function genValue(rng, depth = 0) {
  const k = rng.weighted([
    [2, "null"],
    [2, "bool"],
    [4, "num"],
    [5, "str"],
    [depth < 3 ? 3 : 0, "arr"],
    [depth < 3 ? 4 : 0, "obj"],
    [0.5, "undef"],
  ]);
  switch (k) {
    case "null":
      return null;
    case "bool":
      return rng.bool();
    case "num":
      return genNumber(rng);
    case "str":
      return genString(rng);
    case "undef":
      return undefined;
    case "arr": {
      const n = rng.int(4);
      const a = [];
      for (let i = 0; i < n; i++) a.push(genValue(rng, depth + 1));
      return a;
    }
    default:
      return genObject(rng, depth + 1);
  }
}

function genObject(rng, depth = 0) {
  const o = {};
  if (rng.bool(0.15)) {
    // integer-like keys inserted out of numeric order
    o["10"] = 1;
    o["2"] = 2;
    o.b = 3;
  }
  const n = rng.int(4);
  for (let i = 0; i < n; i++) defineOwn(o, rng.bool(0.01) ? "__proto__" : rng.pick(KEYS), genValue(rng, depth + 1));
  return o;
}

function genTs(rng, ctx) {
  // Always far below MS_THRESHOLD so user supplied timestamps are compared by value.
  return rng.bool(0.9) ? 1_000_000 + ctx.tsCounter++ * 1000 : rng.pick([0, 1, 999_999_999_999]);
}

function genTextBlock(rng) {
  const b = { type: "text", text: genString(rng) };
  if (rng.bool(0.05)) b.textSignature = genString(rng);
  if (rng.bool(0.03)) b.extra = undefined;
  return b;
}
function genImageBlock(rng) {
  return {
    type: "image",
    data: rng.pick(["iVBORw0KGgo=", "", "R0lGODlh"]),
    mimeType: rng.pick(["image/png", "image/gif"]),
  };
}

function genUserContent(rng) {
  const k = rng.weighted([
    [6, "str"],
    [4, "blocks"],
    [0.4, "null"],
    [0.4, "empty"],
    [0.2, "nested"],
  ]);
  if (k === "str") return genString(rng);
  if (k === "null") return null;
  if (k === "empty") return [];
  if (k === "nested") return [[genTextBlock(rng)], [[1, [2, [3]]]]];
  const n = rng.range(1, 3);
  const out = [];
  for (let i = 0; i < n; i++) out.push(rng.bool(0.8) ? genTextBlock(rng) : genImageBlock(rng));
  return out;
}

function genAssistantContent(rng) {
  if (rng.bool(0.05)) return null;
  if (rng.bool(0.05)) return genString(rng);
  const n = rng.range(0, 3);
  const out = [];
  for (let i = 0; i < n; i++) {
    const t = rng.weighted([
      [5, "text"],
      [2, "thinking"],
      [2, "toolCall"],
    ]);
    if (t === "text") out.push(genTextBlock(rng));
    else if (t === "thinking")
      out.push({ type: "thinking", thinking: genString(rng), thinkingSignature: rng.bool() ? "sig" : undefined });
    else
      out.push({
        type: "toolCall",
        id: `call_${rng.int(100)}`,
        name: rng.pick(["read", "bash", "edit"]),
        arguments: genObject(rng, 1),
      });
  }
  return out;
}

function genUsage(rng) {
  if (rng.bool(0.05)) return genObject(rng, 1);
  return {
    input: genNumber(rng),
    output: genNumber(rng),
    cacheRead: rng.int(100),
    cacheWrite: rng.int(100),
    totalTokens: genNumber(rng),
    cost: { input: genNumber(rng), output: 0.001, cacheRead: 0, cacheWrite: 0, total: genNumber(rng) },
  };
}

const PROVIDERS = ["anthropic", "openai", "google", "", "prövider"];
const MODELS = ["claude-sonnet-4", "gpt-5", "gemini-2.5-pro", "", "model\nwith newline"];

function genTool(rng) {
  return {
    name: rng.pick(["read", "bash", "edit", "write", "grep"]),
    description: genString(rng),
    parameters: {
      type: "object",
      properties: rng.bool() ? { path: { type: "string" } } : {},
      required: rng.bool() ? ["path"] : undefined,
    },
  };
}

function genMessage(rng, ctx) {
  const role = rng.weighted([
    [30, "user"],
    [24, "assistant"],
    [12, "toolResult"],
    [5, "bashExecution"],
    [6, "custom"],
    [10, "system"],
    [1, "weird"],
  ]);
  /** @type {Record<string, any>} */
  let m;
  switch (role) {
    case "user":
      m = { role, content: genUserContent(rng), timestamp: genTs(rng, ctx) };
      break;
    case "assistant":
      m = {
        role,
        content: genAssistantContent(rng),
        api: rng.pick(["anthropic-messages", "openai-responses"]),
        provider: rng.bool(0.95) ? rng.pick(PROVIDERS) : undefined,
        model: rng.bool(0.95) ? rng.pick(MODELS) : undefined,
        usage: genUsage(rng),
        stopReason: rng.pick(["stop", "toolUse", "length", "error", "aborted"]),
        timestamp: genTs(rng, ctx),
      };
      if (rng.bool(0.1)) m.errorMessage = genString(rng);
      break;
    case "toolResult":
      m = {
        role,
        toolCallId: `call_${rng.int(100)}`,
        toolName: rng.pick(["read", "bash", "edit"]),
        content: rng.bool(0.9) ? genUserContent(rng) : undefined,
        details: rng.bool(0.3) ? genValue(rng) : undefined,
        isError: rng.bool(0.2),
        timestamp: genTs(rng, ctx),
      };
      break;
    case "bashExecution":
      m = {
        role,
        command: rng.pick(["ls -la", "echo 😀", "cat \ud83d", ""]),
        output: genString(rng),
        exitCode: rng.pick([0, 1, 127, null, undefined]),
        cancelled: rng.bool(0.1),
        truncated: rng.bool(0.1),
        fullOutputPath: rng.bool(0.1) ? "/tmp/out.txt" : undefined,
        timestamp: genTs(rng, ctx),
      };
      if (rng.bool(0.2)) m.excludeFromContext = rng.bool();
      break;
    case "custom":
      m = {
        role,
        customType: rng.pick(["ext-a", "ext-b", ""]),
        content: genUserContent(rng),
        display: rng.bool(),
        details: rng.bool(0.4) ? genValue(rng) : undefined,
        timestamp: genTs(rng, ctx),
      };
      break;
    case "system": {
      m = {
        role,
        content: rng.weighted([
          [6, genString(rng)],
          [2, [genTextBlock(rng), genImageBlock(rng)]],
          [0.5, null],
        ]),
      };
      if (rng.bool(0.4)) {
        const sections = {};
        const n = rng.range(1, 3);
        for (let i = 0; i < n; i++)
          sections[rng.pick(["env", "tools", "10", "2", "skills", "agents"])] = rng.bool(0.75) ? genString(rng) : null;
        m.sections = sections;
      }
      if (rng.bool(0.3)) m.toolsAdded = [genTool(rng), ...(rng.bool() ? [genTool(rng)] : [])];
      if (rng.bool(0.15)) m.toolsRemoved = [{ name: rng.pick(["read", "bash", "edit"]) }];
      if (rng.bool(0.9)) m.timestamp = genTs(rng, ctx);
      break;
    }
    default: {
      const r = rng.pick(["compactionSummary", "branchSummary", "hookMessage", "mystery"]);
      m = {
        role: r,
        summary: genString(rng),
        content: rng.bool() ? genString(rng) : undefined,
        timestamp: genTs(rng, ctx),
      };
    }
  }
  if (rng.bool(0.08)) m.extra = genObject(rng, 1);
  if (rng.bool(0.04)) m.undefinedField = undefined;
  return m;
}

function genContentForEdit(rng) {
  return rng.bool(0.5) ? genString(rng) : [genTextBlock(rng), ...(rng.bool(0.3) ? [genImageBlock(rng)] : [])];
}

const MISSING_IDS = ["missing-id", "deadbeef", "", "root", "00000000", "ROOT", "nope nope"];
const SESSION_NAMES = [
  "My session",
  "  spaced name  ",
  "multi\nline",
  "crlf\r\nname",
  "\r\n",
  "",
  "   ",
  "😀 emoji name",
  "tab\tname",
  "\ud83d lone",
  "a\n\n\nb",
];
const LABELS = ["bookmark", "⭐ star", "", undefined, "multi\nline label", "\ud83d", "  x  "];
const THINKING = ["off", "minimal", "low", "medium", "high", "xhigh", "", "ünï"];

// ---------------------------------------------------------------------------------------------
// Fixture session files (written identically on both sides, with literal ids)
// ---------------------------------------------------------------------------------------------

const FIX_TS = "2024-01-02T03:04:05.678Z";
export function fixtureContent(kind, cwd) {
  const L = (o) => JSON.stringify(o);
  const header = (extra = {}) => ({
    type: "session",
    version: 3,
    id: "fixture-session",
    timestamp: FIX_TS,
    cwd,
    ...extra,
  });
  const user = (id, parentId, text) => ({
    type: "message",
    id,
    parentId,
    timestamp: FIX_TS,
    message: { role: "user", content: text, timestamp: 1234 },
  });
  switch (kind) {
    case "empty":
      return "";
    case "garbage":
      return 'this is not json\n{"also": "not a session"}\n';
    case "headerOnly":
      return `${L(header())}\n`;
    case "noTrailingNewline":
      return `${L(header())}\n${L(user("f0000001", null, "first"))}\n${L(user("f0000002", "f0000001", "second"))}`;
    case "malformedLines":
      return `\n${L(header())}\n{bad json\n\n   \n${L(user("f0000001", null, "kept"))}\n[1,2\n${L({ type: "label", id: "f0000002", parentId: "f0000001", timestamp: FIX_TS, targetId: "f0000001", label: "fx" })}\n`;
    case "crlf":
      return `${L(header())}\r\n${L(user("f0000001", null, "crlf"))}\r\n`;
    case "bom":
      return `\ufeff${L(header())}\n${L(user("f0000001", null, "bom"))}\n`;
    case "orphans":
      return `${L(header())}\n${L(user("f0000001", "ffffffff", "orphan"))}\n${L(user("f0000002", "f0000001", "child"))}\n${L(user("f0000003", null, "root2"))}\n`;
    case "v1":
      return `${L({ type: "session", id: "fixture-v1", timestamp: FIX_TS, cwd })}\n${L({ type: "message", timestamp: FIX_TS, message: { role: "user", content: "v1 hello", timestamp: 1 } })}\n${L({ type: "message", timestamp: FIX_TS, message: { role: "hookMessage", customType: "x", content: "hook", display: true, timestamp: 2 } })}\n${L({ type: "compaction", timestamp: FIX_TS, summary: "sum", firstKeptEntryIndex: 2, tokensBefore: 10 })}\n${L({ type: "message", timestamp: FIX_TS, message: { role: "assistant", content: [{ type: "text", text: "ok" }], provider: "p", model: "m", timestamp: 3 } })}\n`;
    case "v2":
      return `${L({ type: "session", version: 2, id: "fixture-v2", timestamp: FIX_TS, cwd })}\n${L(user("f0000001", null, "v2"))}\n${L({ type: "message", id: "f0000002", parentId: "f0000001", timestamp: FIX_TS, message: { role: "hookMessage", customType: "x", content: "hook", display: false, timestamp: 2 } })}\n`;
    case "notHeaderFirst":
      return `${L(user("f0000001", null, "no header"))}\n${L(header())}\n`;
    case "noCwd":
      return `${L({ type: "session", version: 3, id: "fixture-nocwd", timestamp: FIX_TS })}\n${L(user("f0000001", null, "x"))}\n`;
    case "labelsAndEdits":
      return [
        L(header({ parentSession: "/somewhere/parent.jsonl" })),
        L(user("f0000001", null, "target")),
        L({
          type: "label",
          id: "f0000002",
          parentId: "f0000001",
          timestamp: FIX_TS,
          targetId: "f0000001",
          label: "L1",
        }),
        L({
          type: "context_edit",
          id: "f0000003",
          parentId: "f0000002",
          timestamp: FIX_TS,
          targetId: "f0000001",
          replacement: { content: "edited" },
        }),
        L({ type: "label", id: "f0000004", parentId: "f0000003", timestamp: FIX_TS, targetId: "f0000001" }),
        L({ type: "session_info", id: "f0000005", parentId: "f0000004", timestamp: FIX_TS, name: "  fixture name " }),
        L({
          type: "message",
          id: "f0000006",
          parentId: "f0000005",
          timestamp: FIX_TS,
          message: { role: "system", content: null },
        }),
        L({ type: "message", id: "f0000007", parentId: "f0000006", timestamp: FIX_TS, message: { role: "assistant" } }),
        "",
      ].join("\n");
  }
  throw new Error(`unknown fixture ${kind}`);
}
export const FIXTURES = [
  "empty",
  "garbage",
  "headerOnly",
  "noTrailingNewline",
  "malformedLines",
  "crlf",
  "bom",
  "orphans",
  "v1",
  "v2",
  "notHeaderFirst",
  "noCwd",
  "labelsAndEdits",
];

// ---------------------------------------------------------------------------------------------
// Operations
// ---------------------------------------------------------------------------------------------

function entryInfo(A) {
  const entries = A.sm.getEntries();
  const branch = new Set(A.sm.getBranch().map((e) => e.id));
  return { entries, branch };
}

function pickId(rng, A, mode = "any") {
  const { entries, branch } = entryInfo(A);
  let pool;
  if (mode === "onBranch") pool = entries.filter((e) => branch.has(e.id));
  else if (mode === "offBranch") pool = entries.filter((e) => !branch.has(e.id));
  else if (mode === "editable")
    pool = entries.filter(
      (e) =>
        branch.has(e.id) &&
        (e.type === "custom_message" ||
          (e.type === "message" && ["user", "assistant", "toolResult"].includes(e.message?.role))),
    );
  else if (mode === "nonEditable")
    pool = entries.filter(
      (e) =>
        branch.has(e.id) &&
        !(
          e.type === "custom_message" ||
          (e.type === "message" && ["user", "assistant", "toolResult"].includes(e.message?.role))
        ),
    );
  else pool = entries;
  if (mode === "missing" || pool.length === 0) return rng.pick(MISSING_IDS);
  // Bias towards recent entries.
  const idx = rng.bool(0.5) ? pool.length - 1 - rng.int(Math.min(pool.length, 5)) : rng.int(pool.length);
  return new IdRef(pool[idx].id);
}

function idArg(rng, A, weights) {
  return pickId(rng, A, rng.weighted(weights));
}

let uniqueCounter = 0;

function genOp(rng, ctx) {
  const { persisted, skip } = ctx;
  const table = [
    [30, "appendMessage"],
    [3, "appendThinkingLevelChange"],
    [3, "appendModelChange"],
    [3, "appendUsage"],
    [5, "appendCompaction"],
    [3, "appendCustomEntry"],
    [3, "appendSessionInfo"],
    [5, "appendCustomMessageEntry"],
    [8, "appendContextEdit"],
    [6, "appendLabelChange"],
    [6, "branch"],
    [1, "resetLeaf"],
    [4, "branchWithSummary"],
    [1.5, "createBranchedSession"],
    [1.2, "newSession"],
    [persisted ? 2 : 0, "reopen"],
    [persisted ? 0 : 1.5, "reloadInMemory"],
    [persisted ? 1.5 : 0.3, "setSessionFile"],
    [persisted ? 1 : 0, "fixture"],
    [persisted ? 0.3 : 0, "continueRecent"],
    [12, "probe"],
    [skip.has("freeFns") ? 0 : 4, "freeFn"],
  ];
  const name = rng.weighted(table);
  return OPS[name](rng, ctx);
}

const call = (name, args, extra = {}) => ({
  name,
  args,
  run: (side) => side.sm[name](...side.mat(args)),
  ...extra,
});

const OPS = {
  appendMessage(rng, ctx) {
    const msg = genMessage(rng, ctx);
    return {
      name: "appendMessage",
      args: [msg],
      run(side) {
        const m = side.mat(msg);
        const id = side.sm.appendMessage(m);
        if (side.skip.has("argIdentity")) return { id };
        return { id, argIdentity: side.sm.getEntry(id)?.message === m };
      },
    };
  },
  appendThinkingLevelChange: (rng) => call("appendThinkingLevelChange", [rng.pick(THINKING)]),
  appendModelChange: (rng) => call("appendModelChange", [rng.pick(PROVIDERS), rng.pick(MODELS)]),
  appendUsage(rng) {
    const args = [rng.pick(["cache_warm", "subagent", ""]), rng.pick(PROVIDERS), rng.pick(MODELS), genUsage(rng)];
    const note = rng.weighted([
      [3, "omit"],
      [1, undefined],
      [1, ""],
      [3, "note ✓"],
    ]);
    if (note !== "omit") args.push(note);
    return {
      name: "appendUsage",
      args,
      run(side) {
        const a = side.mat(args);
        const ret = side.sm.appendUsage(...a);
        if (side.skip.has("identity")) return { ret };
        return { ret, sameAsGetEntry: ret === side.sm.getEntry(ret?.id), usageIdentity: ret?.usage === a[3] };
      },
    };
  },
  appendCompaction(rng, ctx) {
    const first = rng.weighted([
      [5, () => pickId(rng, ctx.A, "onBranch")],
      [1, () => pickId(rng, ctx.A, "offBranch")],
      [1, () => pickId(rng, ctx.A, "missing")],
      [2, () => null],
      [0.5, () => undefined],
    ])();
    const args = [genString(rng), first, rng.pick([0, 1000, 12345, 1.5, -1])];
    const n = rng.range(0, 3);
    if (n >= 1) args.push(rng.bool(0.6) ? genValue(rng) : undefined);
    if (n >= 2) args.push(rng.pick([true, false, undefined]));
    if (n >= 3) args.push(rng.bool(0.7) ? genUsage(rng) : undefined);
    return call("appendCompaction", args);
  },
  appendCustomEntry(rng) {
    const args = [rng.pick(["ext-state", "", "ext/ü"])];
    const k = rng.int(3);
    if (k === 1) args.push(genValue(rng));
    if (k === 2) args.push(undefined);
    return {
      name: "appendCustomEntry",
      args,
      run(side) {
        const a = side.mat(args);
        const id = side.sm.appendCustomEntry(...a);
        if (side.skip.has("argIdentity") || a[1] === null || typeof a[1] !== "object") return { id };
        return { id, argIdentity: side.sm.getEntry(id)?.data === a[1] };
      },
    };
  },
  appendSessionInfo: (rng) => call("appendSessionInfo", [rng.pick(SESSION_NAMES)]),
  appendCustomMessageEntry(rng) {
    const args = [rng.pick(["ext-msg", "", "ëxt"]), genUserContent(rng), rng.bool(0.95) ? rng.bool() : undefined];
    if (rng.bool(0.6)) args.push(rng.bool(0.7) ? genValue(rng) : undefined);
    return call("appendCustomMessageEntry", args);
  },
  appendContextEdit(rng, ctx) {
    const target = rng.weighted([
      [8, () => pickId(rng, ctx.A, "editable")],
      [1.5, () => pickId(rng, ctx.A, "offBranch")],
      [1, () => pickId(rng, ctx.A, "missing")],
      [1.5, () => pickId(rng, ctx.A, "nonEditable")],
    ])();
    const replacement = rng.weighted([
      [3, () => null],
      [4, () => ({ content: genString(rng) })],
      [4, () => ({ content: genContentForEdit(rng) })],
      [0.4, () => undefined],
      [0.4, () => "just a string"],
      [0.4, () => ({})],
      [0.4, () => ({ content: 5 })],
      [0.4, () => ({ content: null })],
      [0.3, () => []],
      [0.3, () => ({ content: "x", extra: 1 })],
    ])();
    return call("appendContextEdit", [target, replacement]);
  },
  appendLabelChange(rng, ctx) {
    const target = rng.bool(0.9) ? pickId(rng, ctx.A, "any") : pickId(rng, ctx.A, "missing");
    return call("appendLabelChange", [target, rng.pick(LABELS)]);
  },
  branch(rng, ctx) {
    return call("branch", [rng.bool(0.9) ? pickId(rng, ctx.A, "any") : pickId(rng, ctx.A, "missing")]);
  },
  resetLeaf: () => call("resetLeaf", []),
  branchWithSummary(rng, ctx) {
    const from = rng.weighted([
      [6, () => pickId(rng, ctx.A, "any")],
      [1, () => null],
      [1, () => pickId(rng, ctx.A, "missing")],
    ])();
    const args = [from, rng.bool(0.15) ? "" : genString(rng)];
    const n = rng.range(0, 3);
    if (n >= 1) args.push(rng.bool(0.6) ? genValue(rng) : undefined);
    if (n >= 2) args.push(rng.pick([true, false, undefined]));
    if (n >= 3) args.push(rng.bool(0.7) ? genUsage(rng) : undefined);
    return call("branchWithSummary", args);
  },
  createBranchedSession(rng, ctx) {
    const leaf = rng.weighted([
      [6, () => pickId(rng, ctx.A, "any")],
      [1, () => pickId(rng, ctx.A, "missing")],
      [0.5, () => undefined],
    ])();
    return call("createBranchedSession", [leaf], { fsChange: true });
  },
  newSession(rng, ctx) {
    const opt = rng.weighted([
      [3, () => "none"],
      [1, () => ({})],
      [2, () => ({ id: `sess-${ctx.seed}-${++uniqueCounter}.v${rng.int(9)}` })],
      [1, () => ({ id: rng.pick(["bad id", "", "-leading", "trailing-", "a/b", "ü", "..", "a..b", "x\n"]) })],
      [1, () => ({ parentSession: rng.pick(["/some/parent.jsonl", "", "relative.jsonl"]) })],
      [1, () => ({ parentSession: new PathRef("current") })],
      [0.5, () => ({ id: undefined, parentSession: undefined })],
    ])();
    return call("newSession", opt === "none" ? [] : [opt], { fsChange: true });
  },
  reopen(rng, _ctx) {
    /** @type {unknown[]} */
    const args = [new PathRef("current")];
    const k = rng.int(4);
    if (k >= 1) args.push(rng.bool(0.7) ? new SideFn((s) => s.dir, "<dir>") : undefined);
    if (k >= 2) args.push(rng.pick(["/tmp/override-cwd", undefined, "rel/cwd"]));
    return {
      name: "SessionManager.open",
      args,
      fsChange: true,
      run(side) {
        const sm = side.mod.SessionManager.open(...side.mat(args));
        side.sm = sm;
        return null;
      },
    };
  },
  reloadInMemory(rng) {
    const mode = rng.weighted([
      [3, "withHeader"],
      [1, "noHeader"],
      [1, "v1"],
      [0.5, "empty"],
    ]);
    const opts = rng.bool(0.3) ? { id: rng.pick(["mem-id-1", "bad id"]) } : undefined;
    const cwd = rng.pick([undefined, "/tmp/diff-mem-cwd"]);
    return {
      name: "SessionManager.inMemory",
      args: [cwd ?? "(default)", opts, `<${mode} JSON copy of own entries>`],
      run(side) {
        const header = side.sm.getHeader();
        const entries = JSON.parse(JSON.stringify(side.sm.getEntries()));
        let fileEntries;
        if (mode === "withHeader") fileEntries = [JSON.parse(JSON.stringify(header)), ...entries];
        else if (mode === "noHeader") fileEntries = entries;
        else if (mode === "empty") fileEntries = [];
        else {
          const h = JSON.parse(JSON.stringify(header));
          delete h.version;
          fileEntries = [
            h,
            ...entries
              .filter((e) => e.type !== "compaction" && e.type !== "context_edit" && e.type !== "label")
              .map(({ id, parentId, ...rest }) => rest),
          ];
        }
        const sm = side.mod.SessionManager.inMemory(cwd ?? "/tmp/diff-seq-cwd", side.mat(opts), fileEntries);
        side.sm = sm;
        if (side.skip.has("identity") || fileEntries.length === 0) return null;
        return {
          headerIdentity: sm.getHeader() === fileEntries[0],
          firstEntryIdentity: sm.getEntries()[0] === fileEntries[mode === "noHeader" ? 0 : 1],
        };
      },
    };
  },
  setSessionFile(rng, ctx) {
    let target;
    if (!ctx.persisted) target = new PathRef("abs", rng.pick(["/nonexistent-diff-dir/x.jsonl", "relative-diff.jsonl"]));
    else
      target = rng.weighted([
        [3, () => (ctx.A.files.length ? new PathRef("known", rng.int(ctx.A.files.length)) : new PathRef("current"))],
        [2, () => new PathRef("rel", `custom-${rng.int(3)}.jsonl`)],
        [1, () => new PathRef("current")],
      ])();
    return call("setSessionFile", [target], { fsChange: true });
  },
  fixture(rng, ctx) {
    const kind = rng.pick(FIXTURES);
    const name = `fixture-${kind}-${++uniqueCounter}.jsonl`;
    // loadEntriesFromFile is not among the exports of pi's bundle chunk
    const hows = ["open", "setSessionFile"];
    if (typeof ctx.A.mod.loadEntriesFromFile === "function") hows.push("loadEntriesFromFile");
    const how = rng.pick(hows);
    const content = fixtureContent(kind, ctx.cwd);
    return {
      name: `fixture:${kind}:${how}`,
      args: [name],
      fsChange: true,
      run(side) {
        const p = path.join(side.dir, name);
        fs.mkdirSync(side.dir, { recursive: true });
        fs.writeFileSync(p, content);
        if (how === "open") side.sm = side.mod.SessionManager.open(p);
        else if (how === "setSessionFile") side.sm.setSessionFile(p);
        else return { loaded: side.mod.loadEntriesFromFile(p), after: fs.readFileSync(p, "utf8") };
        return null;
      },
    };
  },
  continueRecent(_rng, ctx) {
    return {
      name: "SessionManager.continueRecent",
      args: [ctx.cwd, "<dir>"],
      fsChange: true,
      guard: (side) => {
        // With several candidate files the choice depends on mtime ties and readdir order: skip.
        if (!fs.existsSync(side.dir)) return true;
        return fs.readdirSync(side.dir).filter((f) => f.endsWith(".jsonl")).length <= 1;
      },
      run(side) {
        side.sm = side.mod.SessionManager.continueRecent(ctx.cwd, side.dir);
        return null;
      },
    };
  },
  probe(rng, ctx) {
    const A = ctx.A;
    const idW = [
      [5, "any"],
      [1, "missing"],
    ];
    const kind = rng.weighted([
      [4, "getEntry"],
      [3, "getChildren"],
      [3, "getLabel"],
      [3, "getBranch"],
      [1, "getBranchNoArg"],
      [ctx.skip.has("looseArgs") ? 0 : 0.5, "loose"],
      [1, "misc"],
    ]);
    if (kind === "getBranchNoArg") return call("getBranch", []);
    if (kind === "loose") {
      const m = rng.pick(["getChildren", "getEntry", "getLabel", "getBranch"]);
      return call(m, [rng.pick([null, undefined])]);
    }
    if (kind === "misc") {
      const m = rng.pick([
        "getLeafId",
        "getLeafEntry",
        "getEntryCount",
        "getHeader",
        "getSessionName",
        "getCwd",
        "getSessionDir",
        "isPersisted",
        "getSessionFile",
        "getSessionId",
        "usesDefaultSessionDir",
        "buildContextEntries",
        "buildSessionProjection",
        "buildSessionContext",
        "getTree",
        "getEntries",
      ]);
      return call(m, []);
    }
    return call(kind, [idArg(rng, A, idW)]);
  },
  freeFn(rng, ctx) {
    const A = ctx.A;
    // pi's bundle chunk exports only some of the free functions: the others get no weight
    const has = (name) => typeof A.mod[name] !== "undefined";
    const fn = rng.weighted([
      [has("buildSessionContext") ? 3 : 0, "buildSessionContext"],
      [has("buildContextEntries") ? 2 : 0, "buildContextEntries"],
      [has("buildSessionProjection") ? 2 : 0, "buildSessionProjection"],
      [has("getLatestCompactionEntry") ? 1 : 0, "getLatestCompactionEntry"],
      [has("sessionEntryToContextMessages") ? 2 : 0, "sessionEntryToContextMessages"],
      [has("projectContextEntry") ? 2 : 0, "projectContextEntry"],
      [has("parseSessionEntries") ? 1 : 0, "parseSessionEntries"],
      [has("assertValidSessionId") ? 1 : 0, "assertValidSessionId"],
      [has("migrateSessionEntries") ? 0.5 : 0, "migrateSessionEntries"],
      [has("loadEntriesFromFile") && ctx.persisted ? 1 : 0, "loadEntriesFromFile"],
      [has("findMostRecentSession") && ctx.persisted ? 0.3 : 0, "findMostRecentSession"],
      [has("getDefaultSessionDir") && ctx.persisted ? 0.3 : 0, "getDefaultSessionDir"],
      [has("CURRENT_SESSION_VERSION") ? 0.2 : 0, "CURRENT_SESSION_VERSION"],
    ]);
    const n = A.sm.getEntryCount();
    switch (fn) {
      case "buildSessionContext":
      case "buildContextEntries":
      case "buildSessionProjection": {
        const leaf = rng.weighted([
          [2, () => "omit"],
          [1, () => undefined],
          [1, () => null],
          [4, () => pickId(rng, A, "any")],
          [1, () => pickId(rng, A, "missing")],
        ])();
        const withMap = rng.bool(0.3);
        const entriesMode = rng.bool(0.8) ? "own" : "json";
        return {
          name: fn,
          args: [`<${entriesMode} entries>`, leaf, withMap ? "<byId map>" : "omit"],
          run(side) {
            let entries = side.sm.getEntries();
            if (entriesMode === "json") entries = JSON.parse(JSON.stringify(entries));
            const args = [entries];
            if (leaf !== "omit" || withMap) args.push(leaf === "omit" ? undefined : side.mat(leaf));
            if (withMap) args.push(new Map(entries.map((e) => [e.id, e])));
            const out = side.mod[fn](...args);
            if (side.skip.has("identity") || entriesMode === "json") return out;
            const byId = new Map(entries.map((e) => [e.id, e]));
            const list =
              fn === "buildContextEntries"
                ? out
                : fn === "buildSessionProjection"
                  ? out.entries.map((x) => x.sourceEntry)
                  : [];
            return { out, identity: list.map((e) => (byId.get(e?.id) === e ? 1 : 0)).join("") };
          },
        };
      }
      case "getLatestCompactionEntry":
        return {
          name: fn,
          args: ["<own entries>"],
          run: (side) => side.mod.getLatestCompactionEntry(side.sm.getEntries()),
        };
      case "sessionEntryToContextMessages": {
        const k = n ? rng.int(n) : -1;
        const synthetic = k < 0 || rng.bool(0.3) ? syntheticEntry(rng, ctx) : null;
        return {
          name: fn,
          args: [synthetic ?? `<entries[${k}]>`],
          run: (side) =>
            side.mod.sessionEntryToContextMessages(synthetic ? side.mat(synthetic) : side.sm.getEntries()[k]),
        };
      }
      case "projectContextEntry": {
        const k = n ? rng.int(n) : -1;
        const synthetic = k < 0 || rng.bool(0.3) ? syntheticEntry(rng, ctx) : null;
        const edit = rng.weighted([
          [1, () => undefined],
          [
            2,
            () => ({
              type: "context_edit",
              id: "e0000001",
              parentId: null,
              timestamp: FIX_TS,
              targetId: "x",
              replacement: rng.bool(0.3) ? null : { content: genContentForEdit(rng) },
            }),
          ],
        ])();
        return {
          name: fn,
          args: [synthetic ?? `<entries[${k}]>`, edit],
          run: (side) =>
            side.mod.projectContextEntry(synthetic ? side.mat(synthetic) : side.sm.getEntries()[k], side.mat(edit)),
        };
      }
      case "parseSessionEntries": {
        const decor = rng.pick(["plain", "crlf", "garbage", "padded", "empty", "bom"]);
        return {
          name: fn,
          args: [`<own JSONL, ${decor}>`],
          run(side) {
            const lines = [side.sm.getHeader(), ...side.sm.getEntries()].map((e) => JSON.stringify(e));
            let text;
            if (decor === "plain") text = lines.join("\n");
            else if (decor === "crlf") text = lines.join("\r\n");
            else if (decor === "garbage") text = ["{oops", ...lines, "", "[", "42", "null", '"str"'].join("\n");
            else if (decor === "padded") text = `\n\n  ${lines.join("\n  \n")}  \n\n`;
            else if (decor === "bom") text = `\ufeff${lines.join("\n")}`;
            else text = "";
            return side.mod.parseSessionEntries(text);
          },
        };
      }
      case "assertValidSessionId": {
        const id = rng.pick([
          "abc",
          "a",
          "a.b-c_d",
          "bad id",
          "",
          "-a",
          "a-",
          "ü",
          "A1",
          "0",
          "a/b",
          "..",
          "a\n",
          "x".repeat(300),
        ]);
        return { name: fn, args: [id], run: (side) => side.mod.assertValidSessionId(id) ?? "<returned undefined>" };
      }
      case "migrateSessionEntries": {
        const version = rng.pick([undefined, 1, 2, 3, 4]);
        return {
          name: fn,
          args: [`<own entries as v${version}>`],
          pairResult: true,
          run(side) {
            const header = { type: "session", id: "mig", timestamp: FIX_TS, cwd: "/x" };
            if (version !== undefined) header.version = version;
            const entries = JSON.parse(JSON.stringify(side.sm.getEntries())).map((e, i) => {
              if (version === undefined || version < 2) {
                delete e.id;
                delete e.parentId;
              }
              if (e.type === "compaction" && i % 2 === 0) e.firstKeptEntryIndex = i;
              if (e.type === "message" && e.message && i % 3 === 0) e.message.role = "hookMessage";
              return e;
            });
            const arr = [header, ...entries];
            const ret = side.mod.migrateSessionEntries(arr);
            return { ret: ret ?? "<returned undefined>", arr };
          },
        };
      }
      case "loadEntriesFromFile": {
        const which = rng.weighted([
          [4, () => new PathRef("current")],
          [1, () => new PathRef("rel", "does-not-exist.jsonl")],
          [1, () => (A.files.length ? new PathRef("known", rng.int(A.files.length)) : new PathRef("current"))],
        ])();
        return { name: fn, args: [which], run: (side) => side.mod.loadEntriesFromFile(side.mat(which)) };
      }
      case "findMostRecentSession": {
        const withCwd = rng.pick([undefined, ctx.cwd, "/tmp/other-cwd"]);
        return {
          name: fn,
          args: ["<dir>", withCwd],
          guard: (side) =>
            !fs.existsSync(side.dir) || fs.readdirSync(side.dir).filter((f) => f.endsWith(".jsonl")).length <= 1,
          run: (side) => side.mod.findMostRecentSession(side.dir, withCwd),
        };
      }
      case "getDefaultSessionDir": {
        const cwd = rng.pick([ctx.cwd, "/tmp/a:b\\c", "rel/dir"]);
        const withAgent = rng.bool();
        return {
          name: fn,
          args: [cwd, withAgent ? "<root>/agent2" : "omit"],
          run: (side) =>
            withAgent
              ? side.mod.getDefaultSessionDir(cwd, path.join(side.root, "agent2"))
              : side.mod.getDefaultSessionDir(cwd),
        };
      }
      default:
        return { name: fn, args: [], run: (side) => side.mod.CURRENT_SESSION_VERSION };
    }
  },
};

function syntheticEntry(rng, ctx) {
  const base = { id: "s0000001", parentId: null, timestamp: FIX_TS };
  return rng.pick([
    () => ({ type: "message", ...base, message: { role: "system", content: null, timestamp: 5 } }),
    () => ({ type: "message", ...base, message: { role: "assistant", content: undefined, provider: "p", model: "m" } }),
    () => ({ type: "message", ...base, message: { role: "toolResult", toolCallId: "c", content: null } }),
    () => ({ type: "message", ...base, message: genMessage(rng, ctx) }),
    () => ({ type: "custom_message", ...base, customType: "t", content: undefined, display: true }),
    () => ({
      type: "custom_message",
      ...base,
      customType: "t",
      content: genUserContent(rng),
      display: false,
      details: genValue(rng),
    }),
    () => ({ type: "branch_summary", ...base, fromId: "root", summary: rng.pick(["", "sum"]) }),
    () => ({ type: "compaction", ...base, summary: "s", firstKeptEntryId: "x", tokensBefore: 3 }),
    () => ({
      type: "compaction",
      ...base,
      summary: "s",
      firstKeptEntryId: "x",
      tokensBefore: 3,
      systemMessage: { role: "system", content: "sys", timestamp: 7 },
    }),
    () => ({ type: "custom", ...base, customType: "c", data: 1 }),
    () => ({ type: "label", ...base, targetId: "x", label: "l" }),
    () => ({ type: "mystery", ...base }),
  ])();
}

function genConstructor(rng, ctx) {
  const { persisted, cwd } = ctx;
  const opts = rng.weighted([
    [5, () => "omit"],
    [1, () => undefined],
    [1, () => ({ id: `init-${ctx.seed}.x` })],
    [0.5, () => ({ parentSession: "/parent/session.jsonl" })],
  ])();
  if (!persisted) {
    const c = rng.weighted([
      [5, cwd],
      [1, "omit"],
    ]);
    const args = c === "omit" ? [] : opts === "omit" ? [c] : [c, opts];
    return {
      name: "SessionManager.inMemory",
      args,
      run: (side) => {
        side.sm = side.mod.SessionManager.inMemory(...side.mat(args));
        return null;
      },
    };
  }
  const how = rng.weighted([
    [6, "create"],
    [1, "createDefaultDir"],
    [1, "openMissing"],
  ]);
  if (how === "openMissing") {
    const args = [new PathRef("rel", "opened-missing.jsonl")];
    return {
      name: "SessionManager.open",
      args,
      fsChange: true,
      run: (side) => {
        side.sm = side.mod.SessionManager.open(...side.mat(args));
        return null;
      },
    };
  }
  const dir = how === "create" ? new SideFn((s) => s.dir, "<dir>") : undefined;
  const args = opts === "omit" ? [cwd, dir] : [cwd, dir, opts];
  return {
    name: "SessionManager.create",
    args,
    fsChange: true,
    run(side) {
      side.sm = side.mod.SessionManager.create(...side.mat(args));
      if (how === "createDefaultDir") side.dir = side.sm.getSessionDir();
      return null;
    },
  };
}

// ---------------------------------------------------------------------------------------------
// State snapshots
// ---------------------------------------------------------------------------------------------

function grab(fn) {
  try {
    return { ok: true, value: fn() };
  } catch (error) {
    return { ok: false, error: { name: error?.name, message: String(error?.message ?? error) } };
  }
}

function snapshot(side, full, withIdentity = true) {
  const sm = side.sm;
  // Getters that read the agent dir (usesDefaultSessionDir) must see this side's env.
  process.env.PI_CODING_AGENT_DIR = side.agentDir;
  const s = {};
  s.leafId = grab(() => sm.getLeafId());
  s.entryCount = grab(() => sm.getEntryCount());
  s.header = grab(() => sm.getHeader());
  s.sessionName = grab(() => sm.getSessionName());
  s.sessionId = grab(() => sm.getSessionId());
  s.sessionFile = grab(() => sm.getSessionFile());
  s.leafEntry = grab(() => sm.getLeafEntry());
  if (!full) {
    s.lastEntry = grab(() => sm.getEntries().at(-1));
    return s;
  }
  s.cwd = grab(() => sm.getCwd());
  s.sessionDir = grab(() => sm.getSessionDir());
  s.isPersisted = grab(() => sm.isPersisted());
  s.usesDefaultSessionDir = grab(() => sm.usesDefaultSessionDir());
  const entriesR = grab(() => sm.getEntries());
  s.entries = entriesR;
  s.tree = grab(() => sm.getTree());
  s.projection = grab(() => sm.buildSessionProjection());
  s.context = grab(() => sm.buildSessionContext());
  s.contextEntries = grab(() => sm.buildContextEntries());
  s.branch = grab(() => sm.getBranch());
  if (entriesR.ok) {
    const entries = entriesR.value;
    s.labels = grab(() => entries.map((e) => sm.getLabel(e.id)));
    // getChildren() is O(n) in the reference: probe the leaf, the last entries and every 16th entry only.
    s.children = grab(() =>
      entries.filter((_e, k) => k >= entries.length - 4 || k % 16 === 0).map((e) => sm.getChildren(e.id)),
    );
    if (!side.skip.has("identity") && withIdentity) s.identity = grab(() => identitySignature(sm, entries));
  }
  return s;
}

/** Whether two calls of `f` give the very same object (identity, not equality). */
function sameTwice(f) {
  const first = f();
  return first === f();
}

function bits(arr) {
  return arr.map((b) => (b ? "1" : "0")).join("");
}

function identitySignature(sm, e1) {
  const e2 = sm.getEntries();
  const out = {};
  out.entriesArraySame = e1 === e2;
  out.entriesElemSame = bits(e1.map((e, k) => e === e2[k]));
  out.getEntrySame = bits(e1.map((e) => sm.getEntry(e.id) === e));
  out.getEntryTwice = bits(e1.map((e) => sameTwice(() => sm.getEntry(e.id))));
  out.headerSame = sameTwice(() => sm.getHeader());
  const leafId = sm.getLeafId();
  out.leafEntrySame = leafId ? sm.getLeafEntry() === sm.getEntry(leafId) : "no leaf";
  out.branchSame = bits(sm.getBranch().map((e) => e === sm.getEntry(e.id)));
  const tree = [];
  const stack = [...sm.getTree()];
  while (stack.length) {
    const node = stack.pop();
    tree.push(node.entry === sm.getEntry(node.entry.id));
    stack.push(...node.children);
  }
  out.treeEntrySame = bits(tree);
  out.treeTwiceSame = sameTwice(() => sm.getTree());
  const proj = sm.buildSessionProjection();
  out.projSourceSame = bits(proj.entries.map((p) => p.sourceEntry === sm.getEntry(p.sourceEntry.id)));
  out.projMsgSame = bits(
    proj.entries.map(
      (p) => p.messages.length === 1 && p.sourceEntry.type === "message" && p.messages[0] === p.sourceEntry.message,
    ),
  );
  const flat = proj.entries.flatMap((p) => p.messages);
  out.projMessagesFlat = bits(proj.messages.map((m, i) => m === flat[i]));
  const ctx = sm.buildSessionContext();
  out.contextMsgSame = bits(ctx.messages.map((m, i) => m === proj.messages[i]));
  out.contextEntriesSame = bits(sm.buildContextEntries().map((e) => e === sm.getEntry(e.id)));
  out.childrenSame = bits(e1.slice(-5).flatMap((e) => sm.getChildren(e.id).map((c) => c === sm.getEntry(c.id))));
  return out;
}

// ---------------------------------------------------------------------------------------------
// Files
// ---------------------------------------------------------------------------------------------

function readFileLines(side, p) {
  if (typeof p !== "string") return { exists: "<no path>" };
  let content;
  try {
    content = fs.readFileSync(p, "utf8");
  } catch (e) {
    return { exists: false, code: e.code };
  }
  const c = side.fileCache;
  let lines;
  if (c.path === p && c.content !== undefined && content.startsWith(c.content) && c.content.endsWith("\n")) {
    const add = content.slice(c.content.length).split("\n");
    lines = c.lines.slice(0, -1).concat(add.map((l) => normLine(l, side)));
    // c.lines ends with the "" after the last newline; it is replaced by the first added fragment
  } else {
    lines = content.split("\n").map((l) => normLine(l, side));
  }
  side.fileCache = { path: p, content, lines };
  return { exists: true, lines };
}

function dirListing(side) {
  const dirs = [...new Set([side.dir, path.join(side.root, "sessions")])];
  const out = {};
  for (const d of dirs) {
    if (!fs.existsSync(d)) continue;
    for (const f of fs.readdirSync(d).sort()) {
      const p = path.join(d, f);
      const key = normText(p, side);
      let content;
      try {
        content = fs.readFileSync(p, "utf8");
      } catch (e) {
        content = `<unreadable ${e.code}>`;
      }
      const cached = side.dirCache.get(p);
      if (cached && cached.content === content) {
        out[key] = cached.lines;
        continue;
      }
      out[key] = content.split("\n").map((l) => normLine(l, side));
      side.dirCache.set(p, { content, lines: out[key] });
    }
  }
  const sorted = {};
  for (const k of Object.keys(out).sort()) sorted[k] = out[k];
  return sorted;
}

// ---------------------------------------------------------------------------------------------
// Sequence runner
// ---------------------------------------------------------------------------------------------

function describeArg(v, ids) {
  try {
    const s = JSON.stringify(v, (_k, x) => {
      if (x instanceof IdRef) return `@${ids.tok("A", x.aId) ?? x.aId}`;
      if (x instanceof PathRef) return `<path ${x.kind}:${x.value ?? ""}>`;
      if (x instanceof SideFn) return x.label;
      if (x === undefined) return "<undefined>";
      if (typeof x === "number" && !Number.isFinite(x)) return `<${x}>`;
      return x;
    });
    return s.length > 220 ? `${s.slice(0, 220)}…` : s;
  } catch (e) {
    return `<unprintable ${e.message}>`;
  }
}

/** @returns {{ sequences: number, persistEvery: number, fullEvery: number, minOps: number, maxOps: number, keep: boolean, verbose: boolean, reproduce?: string }} */
export function defaultConfig(env = process.env) {
  return {
    sequences: Number(env.FUZZ_SEQUENCES ?? 500),
    persistEvery: Number(env.FUZZ_PERSIST_EVERY ?? 10),
    fullEvery: Number(env.FUZZ_FULL_EVERY ?? 6),
    minOps: Number(env.FUZZ_MIN_OPS ?? 100),
    maxOps: Number(env.FUZZ_MAX_OPS ?? 300),
    keep: env.DIFF_KEEP === "1",
    verbose: env.DIFF_VERBOSE === "1",
  };
}

export function isPersistedSeed(seed, config) {
  return config.persistEvery > 0 && seed % config.persistEvery === 0;
}

const CWDS = ["/tmp/diff-seq-cwd", "/tmp/with space/ünï", "relative/sub-dir", "~/diff-home-cwd", "/tmp/trailing/"];

export function runSequence(seed, mods, config = defaultConfig(), skip = parseSkip()) {
  const rng = makeRng(seed);
  const persisted = isPersistedSeed(seed, config);
  const nOps = rng.range(config.minOps, config.maxOps);
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), `pi-diff-${seed}-`));
  const ids = new Pairing("id");
  const sids = new Pairing("sid");
  const A = new Side("A", mods.ref, path.join(tmp, "a"), ids, sids, skip, persisted);
  const B = new Side("B", mods.impl, path.join(tmp, "b"), ids, sids, skip, persisted);
  const cwd = rng.pick(CWDS);
  const ctx = { rng, A, B, persisted, skip, seed, cwd, tsCounter: 0 };
  const log = [];
  const savedEnv = process.env.PI_CODING_AGENT_DIR;
  let stepNo = 0;
  let fullCount = 0;
  let sinceFull = 0;
  let lastCount = 0;

  const fail = (what, d) => {
    if (typeof d.a === "string" && typeof d.b === "string" && (d.a.length > 200 || d.b.length > 200)) {
      // Long strings (file lines, canonical forms): show a window around the first difference.
      let i = 0;
      while (i < d.a.length && d.a[i] === d.b[i]) i++;
      const from = Math.max(0, i - 60);
      d = {
        ...d,
        a: `${from ? "…" : ""}${d.a.slice(from, i + 140)}`,
        b: `${from ? "…" : ""}${d.b.slice(from, i + 140)}`,
        note: `${d.note ? `${d.note}; ` : ""}strings differ at char ${i}`,
      };
    }
    const lines = [
      `Differential mismatch: seed=${seed} (${persisted ? "persisted" : "in-memory"}, cwd=${JSON.stringify(cwd)}) step=${stepNo} op=${log.at(-1)?.name}`,
      `${what}: at ${d.path}${d.note ? ` (${d.note})` : ""}`,
      `  A (reference): ${show(d.a)}`,
      `  B (${mods.implName}): ${show(d.b)}`,
      `Reproduce: ${config.reproduce ?? `DIFF_SEED=${seed} npx vitest run __test__/differential.test.mjs`}${config.keep ? "" : "   (DIFF_KEEP=1 keeps the temp dir)"}`,
      `Temp dir: ${tmp}`,
      `Last ${Math.min(20, log.length)} ops (ids as A-side tokens):`,
      ...log.slice(-20).map((l) => `  #${l.step} ${l.name}(${l.args})${l.outcome ? ` -> ${l.outcome}` : ""}`),
    ];
    throw new DiffError(lines.join("\n"));
  };
  const compare = (what, a, b) => {
    const d = firstDiff(a, b);
    if (d) fail(what, d);
  };
  /** Compare raw values of both sides: fast canonical strings first, structural diff for the report. */
  const compareRaw = (what, rawA, rawB, fresh = false) => {
    const ca = canonSnapshot(rawA, A);
    const cb = canonSnapshot(rawB, B, fresh);
    if (ca === cb) return;
    const d = firstDiff(normalize(rawA, A), normalize(rawB, B));
    if (d) fail(what, d);
    let i = 0;
    while (i < ca.length && ca[i] === cb[i]) i++;
    fail(what, {
      path: `(canonical form, offset ${i})`,
      a: ca.slice(Math.max(0, i - 80), i + 200),
      b: cb.slice(Math.max(0, i - 80), i + 200),
    });
  };

  const pairAll = () => {
    const sa = grab(() => A.sm.getSessionId());
    const sb = grab(() => B.sm.getSessionId());
    if (sa.ok && sb.ok && typeof sa.value === "string" && typeof sb.value === "string") {
      const c = sids.pair(sa.value, sb.value);
      if (c) fail("session id pairing", { path: "getSessionId()", a: sa.value, b: sb.value, note: c });
    }
    const ea = grab(() => A.sm.getEntries());
    const eb = grab(() => B.sm.getEntries());
    if (ea.ok && eb.ok && Array.isArray(eb.value)) {
      const n = Math.min(ea.value.length, eb.value.length);
      for (let k = 0; k < n; k++) {
        const c = ids.pair(ea.value[k]?.id, eb.value[k]?.id);
        if (c)
          fail("entry id pairing (getEntries() order)", {
            path: `getEntries()[${k}].id`,
            a: ea.value[k]?.id,
            b: eb.value[k]?.id,
            note: c,
          });
      }
    }
    if (persisted) {
      const fa = grab(() => A.sm.getSessionFile());
      const fb = grab(() => B.sm.getSessionFile());
      if (fa.ok && typeof fa.value === "string" && !A.files.includes(fa.value)) {
        A.files.push(fa.value);
        B.files.push(fb.ok ? fb.value : undefined);
      }
    }
  };

  const compareFiles = (fullDir) => {
    if (skip.has("files") || !persisted) return;
    const pa = grab(() => A.sm.getSessionFile());
    const pb = grab(() => B.sm.getSessionFile());
    compare("current session file contents", readFileLines(A, pa.value), readFileLines(B, pb.value));
    if (fullDir) compare("session directory contents", dirListing(A), dirListing(B));
  };

  const step = (op) => {
    stepNo++;
    const entry = { step: stepNo, name: op.name, args: describeArg(op.args, ids) };
    log.push(entry);
    if (op.guard && !(op.guard(A) && op.guard(B))) {
      entry.outcome = "skipped (guard)";
      return;
    }
    const ra = A.exec(op.run);
    const rb = B.exec(op.run);
    process.env.PI_CODING_AGENT_DIR = A.agentDir;
    entry.outcome = ra.ok ? "ok" : `throws ${JSON.stringify(String(ra.error?.message ?? ra.error).slice(0, 80))}`;
    if (op.pairResult && ra.ok && rb.ok) {
      const xa = ra.value?.arr;
      const xb = rb.value?.arr;
      if (Array.isArray(xa) && Array.isArray(xb)) {
        for (let k = 1; k < Math.min(xa.length, xb.length); k++) {
          if (typeof xa[k]?.id === "string" && typeof xb[k]?.id === "string" && !ids.tokA.has(xa[k].id))
            ids.pair(xa[k].id, xb[k].id);
        }
      }
    }
    if (A.sm && B.sm) pairAll();
    compare("operation outcome", normalizeOutcome(ra, A), normalizeOutcome(rb, B));
    if (!A.sm || !B.sm) return;
    // Full snapshot every fullEvery steps and after file-level operations;
    // otherwise the cheap core (leaf, count, header, last/leaf entry, session id/file/dir...).
    // The full snapshot costs O(entries): its interval grows with the session so the cost per step stays flat.
    const interval = Math.max(config.fullEvery, Math.ceil(lastCount / 15));
    const full = config.fullEvery <= 1 || ++sinceFull >= interval || !!op.fsChange || ra.ok !== rb.ok;
    if (full) sinceFull = 0;
    // Every 10th full snapshot bypasses B's canon memo so later in-place mutations of returned objects are caught.
    const fresh = full && ++fullCount % 10 === 0;
    const withIdentity = full && fullCount % 2 === 0;
    const snapA = snapshot(A, full, withIdentity);
    compareRaw("state after operation", snapA, snapshot(B, full, withIdentity), fresh);
    if (snapA.entryCount.ok) lastCount = snapA.entryCount.value;
    compareFiles(!!op.fsChange);
  };

  try {
    // Construction (retry with a plain constructor if the generated one is rejected on both sides).
    step(genConstructor(rng, ctx));
    if (!A.sm) {
      const plain = persisted
        ? {
            name: "SessionManager.create",
            args: [cwd, "<dir>"],
            run: (s) => {
              s.sm = s.mod.SessionManager.create(cwd, s.dir);
              return null;
            },
          }
        : {
            name: "SessionManager.inMemory",
            args: [cwd],
            run: (s) => {
              s.sm = s.mod.SessionManager.inMemory(cwd);
              return null;
            },
          };
      step(plain);
    }
    for (let i = 0; i < nOps; i++) step(genOp(rng, ctx));
    // Final deep comparison.
    compareRaw("final state", snapshot(A, true), snapshot(B, true), true);
    compareFiles(true);
    const stats = {};
    for (const l of log) {
      stats[l.name] ??= { ok: 0, threw: 0, skipped: 0 };
      const st = stats[l.name];
      if (l.outcome === "ok") st.ok++;
      else if (l.outcome?.startsWith("skipped")) st.skipped++;
      else st.threw++;
    }
    const systemCheckpoints = A.sm.getEntries().filter((e) => e.type === "compaction" && e.systemMessage).length;
    return { seed, persisted, ops: stepNo, entries: A.sm.getEntryCount(), systemCheckpoints, stats };
  } finally {
    if (savedEnv === undefined) delete process.env.PI_CODING_AGENT_DIR;
    else process.env.PI_CODING_AGENT_DIR = savedEnv;
    if (!config.keep) fs.rmSync(tmp, { recursive: true, force: true });
  }
}
