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
 * The caller's `onProgress` fed by the native index refresh: `(done, total, bytesDone,
 * bytesTotal)` from worker threads becomes `{ phase: "indexing", done, total, bytesDone,
 * bytesTotal }`. `total` is the first one seen: a call that waited for another one's build,
 * which was aborted, then indexes the rest itself, and those reports (another total) are
 * dropped. `done` and `bytesDone` only grow (a report that grows neither, or arrives after
 * the task ended or after `signal` aborted, is dropped). Reports travel to JS separately
 * from the task's result and may still be queued when it resolves: `finish` makes the final
 * `done === total` call then if it has not arrived. A throwing `onProgress` aborts the work
 * and its error is the task's.
 */
function progressRelay(onProgress, name, signal) {
  if (onProgress === undefined || onProgress === null) return undefined;
  if (typeof onProgress !== "function") throw new TypeError(`${name}: onProgress must be a function`);
  let last = -1;
  let lastBytes = -1;
  let total;
  let bytesTotal = 0;
  let closed = false;
  let handle;
  const relay = {
    error: undefined,
    bind(h) {
      handle = h;
    },
    report(done, of, bytesDone = 0, bytesOf = 0) {
      if (closed || relay.error !== undefined || signal?.aborted) return;
      if (total === undefined) {
        total = of;
        bytesTotal = bytesOf;
      }
      if (of !== total || done < last || bytesDone < lastBytes) return;
      if (done === last && bytesDone === lastBytes) return;
      last = done;
      lastBytes = bytesDone;
      try {
        onProgress({ phase: "indexing", done, total, bytesDone, bytesTotal });
      } catch (err) {
        relay.error = err;
        handle?.abort();
      }
    },
    /** The task ended after indexing `indexed` files (0: none). */
    finish(indexed) {
      const t = total ?? indexed;
      if (t > 0) relay.report(t, t, bytesTotal, bytesTotal);
      closed = true;
      if (relay.error !== undefined) throw relay.error;
    },
    close() {
      closed = true;
      if (relay.error !== undefined) throw relay.error;
    },
  };
  return relay;
}

/** Run a native index task with `signal` and an `onProgress` relay (see progressRelay). */
async function withProgress(signal, relay, start) {
  let out;
  try {
    out = await withSignal(signal, (h) => {
      relay?.bind(h);
      return start(
        h,
        relay ? (done, total, bytesDone, bytesTotal) => relay.report(done, total, bytesDone, bytesTotal) : undefined,
      );
    });
  } catch (err) {
    relay?.close();
    throw err;
  }
  return out;
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
  const relay = progressRelay(o.onProgress, "searchSessions", o.signal);
  if (opts.limit === 0) return [];
  const out = await withProgress(o.signal, relay, (h, report) =>
    native.searchSessionsNative(sessionDir, query, opts, h, report),
  );
  relay?.finish(out.indexed);
  return JSON.parse(out.hits);
}

/**
 * Bring the search index up to date without a query (see index.d.ts `warmSearchIndex`).
 * @returns {Promise<void>}
 */
async function warmSearchIndex(options = {}) {
  const o = options ?? {};
  const sessionDir = o.sessionDir ? paths.resolvePath(o.sessionDir) : paths.getSessionsDir();
  const relay = progressRelay(o.onProgress, "warmSearchIndex", o.signal);
  const indexed = await withProgress(o.signal, relay, (h, report) =>
    native.warmSearchIndexNative(sessionDir, h, report),
  );
  relay?.finish(indexed);
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

/**
 * The session file an index build in this process has been reading the longest, or null
 * (see index.d.ts `searchIndexReading`).
 */
function searchIndexReading() {
  const fn = native.searchIndexReadingNative;
  return typeof fn === "function" ? (fn() ?? null) : null;
}

/** Path of the search index of a sessions directory (default: pi's sessions root). */
function searchIndexPath(sessionDir) {
  const dir = sessionDir ? paths.resolvePath(sessionDir) : paths.getSessionsDir();
  return require("node:path").join(dir, ".pi-session-search.sqlite");
}

module.exports = { searchSessions, warmSearchIndex, readSessionWindow, searchIndexReading, searchIndexPath };
