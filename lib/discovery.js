"use strict";
// Session discovery with the reference's exact results (pi-coding-agent 1.6.0
// session-manager.js: readSessionHeader, findMostRecentSession, buildSessionInfo,
// listSessionsFromDir, SessionManager.list / listAll / findById / continueRecent).
//
// Division of work:
// - JS keeps everything whose exact semantics live in the JS engine or in Node's fs:
//   directory listing, stat, `localeCompare` sorts, Date construction, `String#trim`,
//   progress callbacks, AbortSignal handling.
// - Rust does the per-file work (bounded header scan; the streamed line-by-line pass of
//   buildSessionInfo) on worker threads, and returns one compact JSON record per file
//   in a single call. Raw JSON values (header id/cwd/parentSession/timestamp, the name
//   literal, text as escaped string bodies) are embedded verbatim, so JSON.parse here
//   reproduces the reference's values exactly (lone surrogates included).
// - An optional per-directory sidecar index (`<dir>/.pi-session-index`) caches records
//   keyed by (size, mtime ns, ctime ns, inode), CRC-checked per record, opened O_NOFOLLOW,
//   written 0600 (docs/durability.md); PI_SESSION_NATIVE_NO_INDEX=1 disables it. Records
//   hold no texts: `firstMessage` / `allMessagesText` are read when a caller reads them
//   (see "lazily produced texts" below).
//
// Progress: as in the reference, onProgress runs as files complete (completion order),
// with the same counts and publish points (list: loaded 1, every 10th, last; listAll: file
// 0 loaded, every 100th, last) and sorted partial lists, but at most every ~50 ms between
// the first and the last call (`throttledProgress`; PI_SESSION_NATIVE_PROGRESS_MS=0 calls
// for every file, as the reference does). The workers hand each finished
// record to JS through a thread-safe function (queued, never blocking a worker); which
// files a partial list holds depends on completion order, as in the reference.
// Abort: the signal is checked before starting, and an abort during the native pass stops
// the workers between files (and between chunks of a file); the promise rejects with
// signal.reason, as throwIfAborted does. No progress calls are made after the abort.

const { closeSync, existsSync, openSync, readSync, readdirSync, statSync } = require("node:fs");
const { readdir } = require("node:fs/promises");
const { basename, join } = require("node:path");
const { StringDecoder } = require("node:string_decoder");
const native = require("./native.js");
const {
  normalizePath,
  pathsEqual,
  resolvePath,
  getDefaultSessionDir,
  getDefaultSessionDirPath,
  getSessionsDir,
} = require("./paths.js");

const SESSION_HEADER_READ_BUFFER_SIZE = 4096;
const MAX_SESSION_HEADER_SCAN_BYTES = 1024 * 1024;
const MAX_CONCURRENT_SESSION_DISCOVERY_LOADS = 64;
const CURRENT_SESSION_LIST_PUBLISH_INTERVAL = 10;
const ALL_SESSION_LIST_PUBLISH_INTERVAL = 100;

class SessionHeaderScanLimitError extends Error {
  constructor(filePath) {
    super(`Session header exceeds ${MAX_SESSION_HEADER_SCAN_BYTES}-byte scan limit: ${filePath}`);
    this.name = "SessionHeaderScanLimitError";
  }
}

const PROFILE = process.env.PI_SESSION_NATIVE_PROFILE !== undefined;

function useIndex() {
  return process.env.PI_SESSION_NATIVE_NO_INDEX !== "1";
}

/** Least time between two progress calls (`PI_SESSION_NATIVE_PROGRESS_MS`; 0: every file). */
function progressInterval() {
  const v = Number(process.env.PI_SESSION_NATIVE_PROGRESS_MS ?? 50);
  return Number.isFinite(v) && v >= 0 ? v : 50;
}

/**
 * Progress as the reference reports it, at most every ~50 ms in between (issue 23): the
 * first file's call and the last file's call are always made; a call in between is made
 * only when the last one is at least `progressInterval()` old (pi redraws its picker on
 * every call: 1,000 calls cost it seconds). `loaded` and `total` mean what they mean in the
 * reference; a partial list due at a skipped publish point goes with the next call made,
 * holding every session loaded by then. `partial()` builds that list.
 */
function throttledProgress(onProgress) {
  const interval = progressInterval();
  let lastCall = -Infinity;
  let partialDue = false;
  return (loaded, total, publish, partial) => {
    partialDue ||= publish;
    const now = interval > 0 ? performance.now() : 0;
    if (loaded !== 1 && loaded !== total && now - lastCall < interval) return;
    const due = partialDue;
    partialDue = false;
    onProgress(loaded, total, due ? partial() : undefined);
    // The interval runs from the end of this call: a consumer that takes long to redraw
    // (and the partial list it was given) is not called again at once.
    if (interval > 0) lastCall = performance.now();
  };
}

// --- headers -------------------------------------------------------------------------

function parseSessionEntryLine(line) {
  if (!line.trim()) return null;
  try {
    return JSON.parse(line);
  } catch {
    return null;
  }
}

function parseSessionHeaderCandidate(line) {
  if (!line.trim()) return undefined;
  const entry = parseSessionEntryLine(line);
  if (!entry) return undefined;
  if (entry.type !== "session" || typeof entry.id !== "string") return null;
  return entry;
}

/** The reference's JS implementation; used to raise Node's exact fs errors. */
function readSessionHeaderJs(filePath) {
  const fd = openSync(filePath, "r");
  try {
    const decoder = new StringDecoder("utf8");
    const buffer = Buffer.allocUnsafe(SESSION_HEADER_READ_BUFFER_SIZE);
    const lineChunks = [];
    let scannedBytes = 0;
    while (scannedBytes < MAX_SESSION_HEADER_SCAN_BYTES) {
      const readLength = Math.min(buffer.length, MAX_SESSION_HEADER_SCAN_BYTES - scannedBytes);
      const bytesRead = readSync(fd, buffer, 0, readLength, null);
      if (bytesRead === 0) {
        lineChunks.push(decoder.end());
        return parseSessionHeaderCandidate(lineChunks.join("")) ?? null;
      }
      scannedBytes += bytesRead;
      const chunk = decoder.write(buffer.subarray(0, bytesRead));
      let lineStart = 0;
      let newlineIndex = chunk.indexOf("\n", lineStart);
      while (newlineIndex !== -1) {
        lineChunks.push(chunk.slice(lineStart, newlineIndex));
        const header = parseSessionHeaderCandidate(lineChunks.join(""));
        if (header !== undefined) return header;
        lineChunks.length = 0;
        lineStart = newlineIndex + 1;
        newlineIndex = chunk.indexOf("\n", lineStart);
      }
      lineChunks.push(chunk.slice(lineStart));
    }
    const probe = Buffer.allocUnsafe(1);
    if (readSync(fd, probe, 0, probe.length, null) === 0) {
      lineChunks.push(decoder.end());
      return parseSessionHeaderCandidate(lineChunks.join("")) ?? null;
    }
    throw new SessionHeaderScanLimitError(filePath);
  } finally {
    closeSync(fd);
  }
}

/** 1 = native says I/O error (caller decides), otherwise the header / null / throws. */
function nativeHeader(filePath) {
  if (typeof filePath !== "string" || filePath.includes("\0")) return 1;
  const r = native.discoveryReadHeader(filePath);
  switch (r.kind) {
    case "found":
      return JSON.parse(/** @type {string} */ (r.header));
    case "none":
      return null;
    case "limit":
      throw new SessionHeaderScanLimitError(filePath);
    default:
      return 1;
  }
}

/** `readSessionHeader(path)`: the first parsed entry if it is a header, else null. */
function readSessionHeader(filePath) {
  const h = nativeHeader(filePath);
  return h === 1 ? readSessionHeaderJs(filePath) : h;
}

function readSessionHeaderForDiscovery(filePath) {
  try {
    const h = nativeHeader(filePath);
    return h === 1 ? null : h;
  } catch {
    return null;
  }
}

function getSessionHeaderCwd(header) {
  const cwd = header.cwd;
  return typeof cwd === "string" ? cwd : undefined;
}

function sessionCwdMatches(cwd, resolvedCwd) {
  return cwd !== undefined && cwd !== "" && pathsEqual(resolvePath(cwd), resolvedCwd);
}

/** `findMostRecentSession(sessionDir, cwd?)`. */
function findMostRecentSession(sessionDir, cwd) {
  const resolvedSessionDir = normalizePath(sessionDir);
  const resolvedCwd = cwd ? resolvePath(cwd) : undefined;
  try {
    const prefix = dirPrefix(resolvedSessionDir);
    const paths = readdirSync(resolvedSessionDir)
      .filter((file) => file.endsWith(".jsonl"))
      .map((file) => prefix + file);
    // One native batch of stats (on two threads for a large directory); a failed stat is
    // the reference's thrown statSync: no session.
    const mtimes = new native.DiscoveryStats(paths).mtimes();
    if (mtimes.some(Number.isNaN)) return null;
    const files = paths.map((path, i) => ({ path, mtime: mtimes[i] })).sort((a, b) => b.mtime - a.mtime);
    for (const { path } of files) {
      const header = readSessionHeaderForDiscovery(path);
      if (header && (!resolvedCwd || sessionCwdMatches(getSessionHeaderCwd(header), resolvedCwd))) return path;
    }
    return null;
  } catch {
    return null;
  }
}

/** What `SessionManager.continueRecent(cwd, sessionDir)` opens: `{ dir, path }` (path null: new). */
function continueRecentPath(cwd, sessionDir) {
  const dir = sessionDir ? normalizePath(sessionDir) : getDefaultSessionDir(cwd);
  const filterCwd = sessionDir !== undefined && !pathsEqual(dir, getDefaultSessionDirPath(cwd));
  return { dir, path: findMostRecentSession(dir, filterCwd ? cwd : undefined) };
}

/** `SessionManager.findById(cwd, id, sessionDir?)`. */
function findById(cwd, id, sessionDir) {
  const dir = sessionDir ? normalizePath(sessionDir) : getDefaultSessionDir(cwd);
  const filterCwd = sessionDir !== undefined && !pathsEqual(dir, getDefaultSessionDirPath(cwd));
  const resolvedCwd = resolvePath(cwd);
  try {
    if (typeof id === "string") {
      // The headers are read natively in one call (files in directory order, the first
      // match wins); a match whose cwd is filtered out continues the scan after it.
      const prefix = dirPrefix(dir);
      let paths = readdirSync(dir)
        .filter((file) => file.endsWith(".jsonl"))
        .map((file) => prefix + file);
      for (;;) {
        const found = native.discoveryFindHeader(paths, id);
        if (!found) return undefined;
        const header = JSON.parse(found.header);
        const path = paths[found.index];
        if (!filterCwd || sessionCwdMatches(getSessionHeaderCwd(header), resolvedCwd)) return path;
        paths = paths.slice(found.index + 1);
      }
    }
    // Any other id: the reference's loop as is (`undefined` matches a file without header).
    for (const file of readdirSync(dir)) {
      if (!file.endsWith(".jsonl")) continue;
      const path = join(dir, file);
      const header = readSessionHeaderForDiscovery(path);
      if (header?.id !== id) continue;
      if (filterCwd && !sessionCwdMatches(getSessionHeaderCwd(header), resolvedCwd)) continue;
      return path;
    }
  } catch {
    // best-effort, like the reference
  }
  return undefined;
}

// --- session infos -------------------------------------------------------------------

// --- lazily produced texts --------------------------------------------------------------
//
// A SessionInfo's `firstMessage` and `allMessagesText` are the only large values of a
// listing (issue 23: 101 million characters for 10,000 sessions, built whether or not the
// caller reads them). They are produced when first read: each is an enumerable accessor,
// defined in the reference's key order, whose getter reads the text (Rust, a pass over the
// session file that keeps the text: `discoveryText`) and replaces itself with a data
// property holding it. Every use that reads values sees the reference's object:
// `JSON.stringify`, spread, `Object.assign`, `structuredClone`, `Object.keys` / `entries`
// (order included), `for...in`, deep equality; `util.inspect` too, through a
// non-enumerable `util.inspect.custom` that makes the texts data properties, removes
// itself and lets inspect print the now plain object. What can tell: a descriptor read
// (`Object.getOwnPropertyDescriptor`) before the first read, `Reflect.ownKeys` /
// `Object.getOwnPropertySymbols` (the inspect symbol, until the first inspect), and an
// assignment to a text of a frozen SessionInfo, which throws TypeError as in strict mode
// (an accessor cannot know the caller's mode). __test__/store-scale.test.mjs holds the
// objects against the reference's.
//
// Which text: the bytes the listing saw (same size, mtime, ctime and inode; or, for a file
// that has only grown since, its first listed bytes, checked by a fingerprint: pi appends
// to the session it works in), so the text is exactly what the reference built at list
// time. A file rewritten or replaced since gives the text it holds when read (what a new
// listing would show); a deleted, unreadable or no-longer-session file gives no text
// (`firstMessage` "(no messages)", `allMessagesText` ""), as a session without messages.

const INSPECT = Symbol.for("nodejs.util.inspect.custom");
/** `discoveryText`'s `which` (src/discovery.rs `ListedText`); also the index of a kept text. */
const FIRST = native.ListedText.FirstMessage;
const ALL = native.ListedText.AllMessagesText;

function readText(path, key, which) {
  const t = native.discoveryText(path, key, which);
  if (which === FIRST) return t || "(no messages)";
  return t ?? "";
}

const dataProp = (value) => ({ value, writable: true, enumerable: true, configurable: true });

class Identity {
  constructor(o) {
    return o;
  }
}

/**
 * Where a SessionInfo's lazy texts come from, kept in private fields of the SessionInfo
 * itself (through the return-override of `Identity`): no property, symbol or descriptor
 * shows them, and the accessors stay shared functions (one object shape for every
 * SessionInfo, where a closure per object made each its own shape: 3x the cost).
 */
class LazySource extends Identity {
  /** [path, text key, firstMessage kept, allMessagesText kept] (one field: one shape step). */
  #src;

  constructor(info, path, key) {
    super(info);
    this.#src = [path, key, undefined, undefined];
  }

  /** The SessionInfo a read of `obj` reaches: itself or the object it inherits from. */
  static holder(obj) {
    for (let o = obj; o !== null && typeof o === "object"; o = Object.getPrototypeOf(o)) {
      if (#src in o) return o;
    }
    return undefined;
  }

  static get(self, prop, which) {
    const h = LazySource.holder(self);
    if (h === undefined) return undefined;
    const src = h.#src;
    const kept = src[2 + which];
    if (kept !== undefined) return kept;
    const v = readText(src[0], src[1], which);
    // From now on a plain data property, as the reference's; a frozen or sealed object
    // keeps the accessor and the value is kept here.
    if (!Reflect.defineProperty(h, prop, dataProp(v))) src[2 + which] = v;
    return v;
  }

  static set(self, prop, v) {
    // As an assignment to a data property: on the object itself, or an own property of an
    // object that inherits from it; a frozen object refuses it (strict mode's TypeError).
    if (!Reflect.defineProperty(self, prop, dataProp(v))) {
      throw new TypeError(`Cannot assign to read only property '${prop}' of object '#<Object>'`);
    }
  }
}

/** The accessor every SessionInfo with a lazy text shares for `prop` (`which`: FIRST / ALL). */
function lazyText(prop, which) {
  return {
    get() {
      return LazySource.get(this, prop, which);
    },
    set(v) {
      LazySource.set(this, prop, v);
    },
    enumerable: true,
    configurable: true,
  };
}
const LAZY_FIRST = lazyText("firstMessage", FIRST);
const LAZY_ALL = lazyText("allMessagesText", ALL);

/** `util.inspect.custom` of a SessionInfo with lazy texts: read them, then print it plainly. */
function inspectPlain() {
  void this.firstMessage;
  void this.allMessagesText;
  Reflect.deleteProperty(this, INSPECT);
  return this;
}
const INSPECT_PLAIN = { value: inspectPlain, writable: true, enumerable: false, configurable: true };

/** A value of a remembered header, as a fresh `JSON.parse` would give it (not shared). */
const fresh = (v) => (typeof v === "object" && v !== null ? structuredClone(v) : v);

// A native record's slots (src/discovery.rs `RecordSlot`), read once.
const S_HEADER = native.RecordSlot.Header;
const S_NAME = native.RecordSlot.Name;
const S_COUNT = native.RecordSlot.Count;
const S_ACTIVITY = native.RecordSlot.Activity;
const S_DEFERRED = native.RecordSlot.Deferred;
const S_FIRST_LENGTH = native.RecordSlot.FirstLength;
const S_ALL_LENGTH = native.RecordSlot.AllLength;
const S_KEEP = native.RecordSlot.Keep;
const S_TEXT_KEY = native.RecordSlot.TextKey;

/**
 * A native record -> the reference's SessionInfo (or null), same keys in the same order.
 * Record (parsed from the native JSON): an array of `RecordSlot`s (header object, name | 0,
 * count, activity, deferred timestamps | 0, firstMessage length, allMessagesText length,
 * keep 1 | 0, text key). `shared`: the record was remembered from an earlier listing.
 */
function toSessionInfo(filePath, r, stats, shared) {
  if (!r) return null;
  try {
    const header = r[S_HEADER];
    let lastActivityTime = r[S_ACTIVITY];
    if (r[S_DEFERRED] !== 0) {
      for (const ts of r[S_DEFERRED]) {
        const t = new Date(ts).getTime();
        if (!Number.isNaN(t)) lastActivityTime = Math.max(lastActivityTime, t);
      }
    }
    const name = r[S_NAME] === 0 ? undefined : r[S_NAME].trim() || undefined;
    const cwd = typeof header.cwd === "string" ? header.cwd : "";
    const id = shared ? fresh(header.id) : header.id;
    const parentSessionPath = shared ? fresh(header.parentSession) : header.parentSession;
    const headerTime = typeof header.timestamp === "string" ? new Date(header.timestamp).getTime() : NaN;
    const modified =
      lastActivityTime > 0
        ? new Date(lastActivityTime)
        : !Number.isNaN(headerTime)
          ? new Date(headerTime)
          : (stats ?? statSync(filePath)).mtime;
    const created = new Date(header.timestamp);
    // An empty text is a plain value; a text is lazy (any first user text is in all texts).
    if (r[S_ALL_LENGTH] === 0) {
      return {
        path: filePath,
        id,
        cwd,
        name,
        parentSessionPath,
        created,
        modified,
        messageCount: r[S_COUNT],
        firstMessage: "(no messages)",
        allMessagesText: "",
      };
    }
    let info;
    if (r[S_FIRST_LENGTH] === 0) {
      info = {
        path: filePath,
        id,
        cwd,
        name,
        parentSessionPath,
        created,
        modified,
        messageCount: r[S_COUNT],
        firstMessage: "(no messages)",
      };
    } else {
      info = { path: filePath, id, cwd, name, parentSessionPath, created, modified, messageCount: r[S_COUNT] };
      Object.defineProperty(info, "firstMessage", LAZY_FIRST);
    }
    Object.defineProperty(info, "allMessagesText", LAZY_ALL);
    Object.defineProperty(info, INSPECT, INSPECT_PLAIN);
    new LazySource(info, filePath, r[S_TEXT_KEY]);
    return info;
  } catch {
    return null;
  }
}

// In-process memo of the last records per path, keyed by the native stamp (size, mtime ns,
// inode; only files older than a second get one): an unchanged file is answered by the
// native side with `true` and its record is reused. Records hold no texts (a few hundred
// bytes each); bounded by count. Disabled with the index (PI_SESSION_NATIVE_NO_INDEX=1).
const memo = new Map();
const MEMO_MAX = 200_000;

function remember(path, r) {
  memo.delete(path);
  if (r?.[S_KEEP] !== 1) return;
  if (memo.size >= MEMO_MAX) memo.clear();
  memo.set(path, { key: r[S_TEXT_KEY], rec: r });
}

/**
 * Per-file SessionInfo (or null) for `files` ({ path, stats? }), in order.
 *
 * With `onInfo(info, index)`, each file is reported as it completes, in completion order,
 * like the reference's buildSessionInfosWithConcurrency callback: the workers hand finished
 * records to a thread-safe function in batches (whatever finished since the last batch), so
 * conversion and progress run on this thread while the workers go on. Records the native
 * pass still holds at the end are reported then, in file order. If `onInfo` throws, the
 * pass is aborted and the error is rethrown (the callers turn it into `[]`, as the
 * reference's rejected Promise.all does).
 */
async function buildSessionInfos(files, signal, onInfo, pre) {
  if (files.length === 0) return [];
  signal?.throwIfAborted();
  const memoOn = useIndex();
  const abort = new native.AbortFlag();
  const onAbort = () => abort.abort();
  const listen = signal && typeof signal.addEventListener === "function";
  if (listen) signal.addEventListener("abort", onAbort);
  const prof = PROFILE ? performance.now() : 0;
  const out = new Array(files.length).fill(null);
  let stopped = false;
  /** @type {{ error: unknown } | null} */
  let failure = null;
  const take = (i, r) => {
    const path = files[i].path;
    if (r === true) return toSessionInfo(path, memo.get(path).rec, files[i].stats, true);
    if (!memoOn) return toSessionInfo(path, r, files[i].stats, false);
    remember(path, r);
    return toSessionInfo(path, r, files[i].stats, r?.[S_KEEP] === 1);
  };
  const report = (i) => {
    try {
      onInfo(out[i], i);
    } catch (error) {
      stopped = true;
      failure = { error };
      abort.abort();
    }
  };
  const onRecord = onInfo
    ? (json) => {
        // Called from the native side's thread-safe function: must not throw.
        let batch;
        try {
          batch = JSON.parse(json);
        } catch (error) {
          // Only a native bug could write JSON that does not parse: the listing fails.
          stopped = true;
          failure ??= { error };
          abort.abort();
          return;
        }
        for (let k = 0; k + 1 < batch.length; k += 2) {
          const i = batch[k];
          out[i] = take(i, batch[k + 1]);
          if (!stopped && !signal?.aborted) report(i);
        }
      }
    : undefined;
  let res;
  try {
    res = await native.discoveryExtract(
      files.map((f) => f.path),
      files.map((f) => (memoOn ? (memo.get(f.path)?.key ?? "") : "")),
      memoOn,
      abort,
      onRecord,
      pre?.stats,
      pre?.order,
    );
  } finally {
    stopped = true;
    if (listen) signal.removeEventListener("abort", onAbort);
  }
  if (failure) throw failure.error;
  if (res.aborted || signal?.aborted) signal?.throwIfAborted();
  const prof2 = PROFILE ? performance.now() : 0;
  const records = JSON.parse(res.records);
  const late = [];
  for (let i = 0; i < files.length; i++) {
    const r = records[i];
    if (r === false) continue; // handed to onRecord
    out[i] = take(i, r);
    late.push(i);
  }
  if (onInfo) {
    stopped = false;
    for (const i of late) {
      report(i);
      if (failure) throw failure.error;
    }
  }
  if (PROFILE) {
    const t = performance.now();
    process.stderr.write(
      `discovery: ${files.length} files native ${(prof2 - prof).toFixed(1)} ms, records ${(t - prof2).toFixed(1)} ms\n`,
    );
  }
  return out;
}

/**
 * `join(dir, name)` is `dirPrefix(dir) + name` for a directory entry's name (no separator,
 * never "." or ".."): `join` normalizes `dir` and adds one separator (none after a root).
 * Computed once per directory: `join` per file was a tenth of a warm 10,000-file listing.
 */
function dirPrefix(dir) {
  return join(dir, "a").slice(0, -1);
}

async function mapWithConcurrency(items, limit, map, signal) {
  const results = new Array(items.length);
  let nextIndex = 0;
  const worker = async () => {
    while (nextIndex < items.length) {
      signal?.throwIfAborted();
      const index = nextIndex++;
      results[index] = await map(items[index], index);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, () => worker()));
  return results;
}

function sortSessionInfos(sessions) {
  return sessions.sort((a, b) => b.modified.getTime() - a.modified.getTime());
}

/** The sessions of `dir`, in an order whose stable sort by `modified` is the reference's. */
async function listSessionsFromDir(dir, onProgress, signal) {
  signal?.throwIfAborted();
  if (!existsSync(dir)) return [];
  try {
    const dirEntries = await readdir(dir);
    const names = dirEntries.filter((file) => file.endsWith(".jsonl"));
    const prefix = dirPrefix(dir);
    const files = names.map((file) => ({ path: prefix + file }));
    const total = files.length;
    const partialSessions = [];
    let loaded = 0;
    const progress = onProgress ? throttledProgress(onProgress) : undefined;
    const partial = () => sortSessionInfos([...partialSessions]);
    const onInfo = (info) => {
      loaded++;
      if (info) partialSessions.push(info);
      const publishPartial =
        loaded === 1 || loaded % CURRENT_SESSION_LIST_PUBLISH_INTERVAL === 0 || loaded === files.length;
      progress(loaded, total, publishPartial, partial);
    };
    // The reference returns the sessions in descending localeCompare order of their names,
    // and both callers then sort them by `modified` (a stable sort): so the names decide
    // only between sessions modified at the same millisecond. Sorting by (modified, name)
    // gives the same final order with a localeCompare only for such ties (sorting 5,000
    // names was a fifth of a warm listing); names that compare equal keep directory order
    // in both.
    const results = await buildSessionInfos(files, signal, onProgress ? onInfo : undefined);
    const order = [];
    let invalid = false;
    for (let i = 0; i < results.length; i++) {
      if (results[i] === null) continue;
      order.push(i);
      if (Number.isNaN(results[i].modified.getTime())) invalid = true;
    }
    // An Invalid Date `modified` (e.g. a message timestamp of 1e400) makes the callers' sort
    // comparator answer NaN, so the final order depends on the order sorted: give exactly the
    // reference's, the names in descending localeCompare order.
    if (invalid) {
      const byName = names.map((_, i) => i).sort((a, b) => names[b].localeCompare(names[a]));
      return byName.filter((i) => results[i] !== null).map((i) => results[i]);
    }
    order.sort(
      (a, b) => results[b].modified.getTime() - results[a].modified.getTime() || names[b].localeCompare(names[a]),
    );
    return order.map((i) => results[i]);
  } catch {
    signal?.throwIfAborted();
    return [];
  }
}

/** `SessionManager.list(cwd, sessionDir?, onProgress?, signal?)`. */
async function list(cwd, sessionDir, onProgress, signal) {
  const dir = sessionDir ? normalizePath(sessionDir) : getDefaultSessionDir(cwd);
  const filterCwd = sessionDir !== undefined && !pathsEqual(dir, getDefaultSessionDirPath(cwd));
  const resolvedCwd = resolvePath(cwd);
  const includeSession = (session) => !filterCwd || sessionCwdMatches(session.cwd, resolvedCwd);
  const progress = onProgress
    ? (loaded, total, partialSessions) => onProgress(loaded, total, partialSessions?.filter(includeSession))
    : undefined;
  const sessions = (await listSessionsFromDir(dir, progress, signal)).filter(includeSession);
  return sortSessionInfos(sessions);
}

/** `SessionManager.listAll(sessionDirOrOnProgress?, onProgressOrSignal?, signal?)`. */
async function listAll(sessionDirOrOnProgress, onProgressOrSignal, signal) {
  const customSessionDir =
    typeof sessionDirOrOnProgress === "string" ? normalizePath(sessionDirOrOnProgress) : undefined;
  const progress =
    typeof sessionDirOrOnProgress === "function"
      ? sessionDirOrOnProgress
      : typeof onProgressOrSignal === "function"
        ? onProgressOrSignal
        : undefined;
  const abortSignal =
    typeof sessionDirOrOnProgress === "string" || typeof onProgressOrSignal === "function"
      ? signal
      : (onProgressOrSignal ?? signal);
  abortSignal?.throwIfAborted();
  if (customSessionDir) {
    return sortSessionInfos(await listSessionsFromDir(customSessionDir, progress, abortSignal));
  }
  const sessionsDir = getSessionsDir();
  try {
    if (!existsSync(sessionsDir)) return [];
    const entries = await readdir(sessionsDir, { withFileTypes: true });
    const dirs = entries
      .filter((entry) => entry.isDirectory() || entry.isSymbolicLink())
      .map((entry) => join(sessionsDir, entry.name));
    const dirFiles = await mapWithConcurrency(
      dirs,
      MAX_CONCURRENT_SESSION_DISCOVERY_LOADS,
      async (dir) => {
        try {
          const prefix = dirPrefix(dir);
          return (await readdir(dir)).filter((file) => file.endsWith(".jsonl")).map((file) => prefix + file);
        } catch {
          return [];
        }
      },
      abortSignal,
    );
    const allFiles = dirFiles.flat();
    const profT0 = PROFILE ? performance.now() : 0;
    // One native batch of stats; mtimeMs as Node computes it (NaN: stat failed, sorted last).
    // A failed stat leaves `stats` unset, as in the reference; the modified-time fallback
    // then stats the file itself.
    abortSignal?.throwIfAborted();
    // The native listing below reuses these stats (one stat per file in all).
    const stats = new native.DiscoveryStats(allFiles);
    const mtimes = stats.mtimes();
    const candidates = allFiles.map((path, i) => ({
      path,
      mtimeMs: Number.isNaN(mtimes[i]) ? Number.NEGATIVE_INFINITY : mtimes[i],
      i,
    }));
    candidates.sort((a, b) => b.mtimeMs - a.mtimeMs || basename(b.path).localeCompare(basename(a.path)));
    const order = candidates.map((c) => c.i);
    if (PROFILE)
      process.stderr.write(
        `listAll: ${allFiles.length} files, stat + sort ${(performance.now() - profT0).toFixed(1)} ms\n`,
      );
    const totalFiles = candidates.length;
    let loaded = 0;
    let firstCandidateLoaded = false;
    const partialSessions = [];
    const report = progress ? throttledProgress(progress) : undefined;
    const partial = () => sortSessionInfos([...partialSessions]);
    const onInfo = (info, index) => {
      loaded++;
      if (index === 0) firstCandidateLoaded = true;
      if (info) partialSessions.push(info);
      const publishPartial =
        firstCandidateLoaded &&
        (index === 0 || loaded % ALL_SESSION_LIST_PUBLISH_INTERVAL === 0 || loaded === totalFiles);
      report(loaded, totalFiles, publishPartial, partial);
    };
    const results = await buildSessionInfos(candidates, abortSignal, progress ? onInfo : undefined, { stats, order });
    return sortSessionInfos(results.filter((info) => info !== null));
  } catch {
    abortSignal?.throwIfAborted();
    return [];
  }
}

module.exports = {
  SessionHeaderScanLimitError,
  readSessionHeader,
  findMostRecentSession,
  continueRecentPath,
  findById,
  list,
  listAll,
};
