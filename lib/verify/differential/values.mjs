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

export function defineOwn(obj, key, value) {
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
export const ISO_RE = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
export const ISO_RE_G = /\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z/g;
export const FTS_RE_G = /\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}-\d{3}Z/g;
export const UUID_RE_G = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g;
export const HEX8_RE_G = /(?<![0-9a-zA-Z])[0-9a-f]{8}(?![0-9a-zA-Z])/g;
/** Numbers >= this in a `timestamp` field are wall-clock derived (user message timestamps are generated far below). */
export const MS_THRESHOLD = 1e12;

export function replaceAll(s, find, repl) {
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

export function normString(s, side) {
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

export function canonObject(v, side, depth) {
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

export function show(v) {
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
