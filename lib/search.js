"use strict";
// searchSessions / readSessionWindow: the JS face of the search engine (crates/core/src/search, binding
// src/search.rs). Options are checked and defaulted here; the work (index refresh,
// query, reading hits back from the files) runs on libuv's pool, never on the JS thread.
const native = require("./native.js");
const paths = require("./paths.js");
const { withAbortFlag } = require("./abort.js");

const DEFAULT_LIMIT = 20;
const MAX_LIMIT = 1000;
const U32 = 0xffffffff;

function abortError(signal) {
  if (signal && signal.reason !== undefined) return signal.reason;
  return Object.assign(new Error("The operation was aborted"), { name: "AbortError", code: "ABORT_ERR" });
}

function toMs(v, name) {
  if (v === undefined || v === null) return undefined;
  const t = v instanceof Date ? v.getTime() : typeof v === "number" ? v : typeof v === "string" ? Date.parse(v) : NaN;
  if (!Number.isFinite(t)) throw new TypeError(`searchSessions: ${name} must be a Date, a time in ms or a date string`);
  return t;
}

function strings(v, name) {
  if (v === undefined || v === null) return undefined;
  const list = typeof v === "string" ? [v] : v;
  if (!Array.isArray(list) || list.some((x) => typeof x !== "string"))
    throw new TypeError(`searchSessions: ${name} must be a string or an array of strings`);
  return list.slice(0, 64);
}

function count(v, name, dflt, max) {
  if (v === undefined || v === null) return dflt;
  const n = Math.floor(Number(v));
  if (!Number.isFinite(n) || n < 0) throw new RangeError(`searchSessions: ${name} must be a non-negative number`);
  return Math.min(n, max);
}

/** Run an async native task with an AbortSignal wired to a native abort flag. */
async function withSignal(signal, start) {
  if (signal?.aborted) throw abortError(signal);
  try {
    return await withAbortFlag(signal, start);
  } catch (err) {
    if (signal?.aborted) throw abortError(signal);
    throw err;
  }
}

/**
 * Ranked full-text search over sessions (see index.d.ts `searchSessions`).
 * @returns {Promise<import("../index").SearchHit[]>}
 */
async function searchSessions(query, options = {}) {
  if (typeof query !== "string") throw new TypeError("searchSessions: query must be a string");
  const o = options ?? {};
  const sessionDir = o.sessionDir ? paths.resolvePath(o.sessionDir) : paths.getSessionsDir();
  const branch = o.branch ?? "active";
  if (branch !== "active" && branch !== "all") throw new TypeError('searchSessions: branch must be "active" or "all"');
  const opts = {
    cwd: o.cwd ? paths.resolvePath(o.cwd) : undefined,
    roles: strings(o.roles, "roles"),
    tools: strings(o.tools, "tools"),
    sinceMs: toMs(o.since, "since"),
    untilMs: toMs(o.until, "until"),
    allBranches: branch === "all",
    limit: count(o.limit, "limit", DEFAULT_LIMIT, MAX_LIMIT),
    offset: count(o.offset, "offset", 0, U32),
    perSession: count(o.perSession, "perSession", 0, U32),
    exclude: strings(o.exclude, "exclude"),
    snippetChars: count(o.snippetChars, "snippetChars", 160, 4096),
  };
  if (opts.limit === 0) return [];
  const json = await withSignal(o.signal, (h) => native.searchSessionsNative(sessionDir, query, opts, h));
  return JSON.parse(json);
}

/**
 * The entries around `entryId` on its branch (see index.d.ts `readSessionWindow`).
 * @returns {Promise<import("../index").SessionWindowEntry[]>}
 */
async function readSessionWindow(sessionPath, entryId, options = {}) {
  if (typeof sessionPath !== "string" || !sessionPath)
    throw new TypeError("readSessionWindow: sessionPath must be a path");
  if (typeof entryId !== "string" || !entryId) throw new TypeError("readSessionWindow: entryId must be a string");
  const o = options ?? {};
  const before = count(o.before, "before", 3, 200);
  const after = count(o.after, "after", 3, 200);
  const maxChars = count(o.maxChars, "maxChars", 8000, 1_000_000);
  const maxEntryChars = count(o.maxEntryChars, "maxEntryChars", 2000, 1_000_000);
  const json = await withSignal(o.signal, () =>
    native.readSessionWindowNative(paths.resolvePath(sessionPath), entryId, before, after, maxChars, maxEntryChars),
  );
  return json == null ? [] : JSON.parse(json);
}

/** Path of the search index of a sessions directory (default: pi's sessions root). */
function searchIndexPath(sessionDir) {
  const dir = sessionDir ? paths.resolvePath(sessionDir) : paths.getSessionsDir();
  return require("node:path").join(dir, ".pi-session-search.sqlite");
}

module.exports = { searchSessions, readSessionWindow, searchIndexPath };
