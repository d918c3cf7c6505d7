// The chunk of pi's bundle that defines its session code, recognised by content: a cheap
// pre-filter on a module's bytes (isCandidate), then the signature (matchSignature): the class
// declaration, an export list with every session name bound to a `var` or function, and the
// session format version the native store writes. Literal searches on the bytes as loaded (no
// decoding of the 2.6 MB chunk). Used by the load hook (register-hooks.mjs) and, for the
// known-good list, by scripts/pi-digests.mjs and scripts/pi-releases.mjs.
import { CLASS_SIGNATURE, SESSION_EXPORTS } from "./verify/locate.mjs";

/** What the native store writes (checked against the chunk's CURRENT_SESSION_VERSION before loading it). */
export const NATIVE_SESSION_VERSION = 3;
// Signature checks are literal searches of esbuild's minified-whitespace output, on the bytes as
// loaded (no decoding of the 2.6 MB chunk): Buffer#indexOf costs microseconds.
// Cheap pre-filter on the raw bytes: a module that may define pi's SessionManager mentions it in
// its last TAIL bytes (where esbuild puts the export list), and then contains one of the needles.
// pi's bundle is ~10 MB: scanning only tails keeps the hook's own cost near zero.
export const TAIL = 64 * 1024;
const CANDIDATE_NEEDLES = [
  "SessionManager=class",
  "SessionManager = class",
  "class SessionManager",
  "class _SessionManager",
];
/** `export{a,b as c}` at the end of an esbuild chunk: exported name -> local name. */
export function exportList(bytes) {
  const at = bytes.lastIndexOf("export{");
  if (at === -1) return undefined;
  const end = bytes.indexOf("}", at);
  if (end === -1) return undefined;
  const map = new Map();
  for (const item of textOf(bytes, at + 7, end).split(",")) {
    const parts = item.trim().split(/\s+as\s+/);
    if (!parts[0]) continue;
    map.set((parts[1] ?? parts[0]).trim(), parts[0].trim());
  }
  // a re-export (`export{...}from"..."`) defines nothing here
  if (/^\s*from\s*["']/.test(textOf(bytes, end + 1, end + 40))) return undefined;
  return map;
}

/** Bytes `from`..`to` of a string or Buffer as a string (latin1: a 1:1 copy, enough for ASCII code). */
function textOf(bytes, from, to) {
  return typeof bytes === "string" ? bytes.slice(from, to) : bytes.toString("latin1", from, Math.min(to, bytes.length));
}

const NAME_CHAR = /[\w$.]/;
/**
 * Where `literal` occurs in `from`..`to` at the start of a statement (not inside a longer name), or
 * -1. A Buffer is searched in a view of just that window (no copy): `indexOf` would otherwise scan
 * on to the end of the 2.6 MB chunk on every miss (~0.6 ms each, once per function export).
 */
function declaresIn(bytes, literal, from = 0, to = bytes.length) {
  const lo = Math.max(0, from);
  const hi = Math.min(bytes.length, to);
  // (a match may start before `to` and end after it, as with a plain indexOf)
  const text = typeof bytes === "string" ? bytes : bytes.subarray(lo, hi + literal.length - 1);
  const base = typeof bytes === "string" ? 0 : lo;
  for (let at = text.indexOf(literal, lo - base); at !== -1 && at + base < hi; at = text.indexOf(literal, at + 1)) {
    if (at + base === 0 || !NAME_CHAR.test(textOf(bytes, at + base - 1, at + base))) return at + base;
  }
  return -1;
}

/**
 * Checks a candidate module (a string or the Buffer as loaded) against the signature; returns the
 * assignments to append or the reason it does not match.
 */
export function matchSignature(bytes) {
  const classAt = declaresIn(bytes, CLASS_SIGNATURE);
  if (classAt === -1) return { reason: `the class declaration \`${CLASS_SIGNATURE}\` is not there` };
  // esbuild emits the session functions just before the class (8-14 KB before it in pi 1.3.0 to
  // 1.6.0): look there first, then in the whole module
  const nearFrom = Math.max(0, classAt - 64 * 1024);
  const nearTo = classAt + 4 * 1024;
  const declAt = (local) => {
    for (const [from, to] of [
      [nearFrom, nearTo],
      [0, bytes.length],
    ]) {
      const v = declaresIn(bytes, `var ${local}=`, from, to);
      if (v !== -1) return { at: v, kind: "var" };
      if (declaresIn(bytes, `function ${local}(`, from, to) !== -1) return { kind: "function" };
    }
    return undefined;
  };
  const exported = exportList(bytes);
  if (!exported) return { reason: "no export list at the end of the module" };
  const missing = SESSION_EXPORTS.filter((name) => !exported.has(name));
  if (missing.length) return { reason: `the module does not export ${missing.join(", ")}` };
  const assignments = [];
  let versionDecl;
  for (const name of SESSION_EXPORTS) {
    const local = exported.get(name);
    if (!/^[\w$]+$/.test(local)) return { reason: `unexpected local name ${local} for ${name}` };
    const decl = declAt(local);
    if (!decl) return { reason: `${name} is not a var or function binding` };
    if (name === "CURRENT_SESSION_VERSION") versionDecl = { ...decl, local };
    assignments.push([local, name]);
  }
  const version =
    versionDecl?.at === undefined
      ? null
      : /^(\d+)[;,]/.exec(
          textOf(bytes, versionDecl.at + versionDecl.local.length + 5, versionDecl.at + versionDecl.local.length + 25),
        );
  if (!version || Number(version[1]) !== NATIVE_SESSION_VERSION) {
    return {
      reason: `CURRENT_SESSION_VERSION is ${version ? version[1] : "not a number"}, the native store writes ${NATIVE_SESSION_VERSION}`,
    };
  }
  return { assignments };
}

/**
 * Whether a chunk may be listed known-good as it is (true, or why not): it matches the signature
 * with every session export bound under its own name, the match serveChunk assumes for such a chunk.
 */
export function knownChunkMatches(bytes) {
  const match = matchSignature(bytes);
  if (!match.assignments) return match.reason;
  const renamed = match.assignments.filter(([local, name]) => local !== name);
  return (
    renamed.length === 0 ||
    `session exports bound under other names: ${renamed.map(([l, n]) => `${n} as ${l}`).join(", ")}`
  );
}

/** The loaded source as a string or a Buffer view (no copy). */
export function bytesOf(source) {
  if (typeof source === "string" || Buffer.isBuffer(source)) return source;
  if (ArrayBuffer.isView(source)) return Buffer.from(source.buffer, source.byteOffset, source.byteLength);
  if (source instanceof ArrayBuffer || source instanceof SharedArrayBuffer) return Buffer.from(source);
  return undefined;
}

export function isCandidate(bytes) {
  const tail =
    bytes.length > TAIL
      ? typeof bytes === "string"
        ? bytes.slice(-TAIL)
        : bytes.subarray(bytes.length - TAIL)
      : bytes;
  if (tail.indexOf("SessionManager") === -1) return false;
  return CANDIDATE_NEEDLES.some((n) => bytes.indexOf(n) !== -1);
}
