"use strict";
// The public SessionManager: the reference's API over a Rust-owned session (NativeSession).
//
// Rust holds every entry's JSON text and the tree index; this layer only adapts: it builds
// entry objects for appends exactly as the reference does (so JSON.stringify gives the same
// bytes), keeps a cache of materialized entry objects (parsed lazily, once, so repeated calls
// return the same objects), and turns Rust's index answers into objects.
// Looked up at call time (not destructured) so a test can stub `crypto.randomUUID`, as it can for the
// reference after `syncBuiltinESMExports()`.
const crypto = require("node:crypto");
const { existsSync, mkdirSync, statSync } = require("node:fs");
const { join, resolve } = require("node:path");
const native = require("./native.js");
const paths = require("./paths.js");
const context = require("./context.js");
const { getCurrentSystemMessage } = require("./system-message.js");
const { migrateSessionEntries } = require("./migrate.js");
const discovery = require("./discovery-bridge.js");
const { parseEntries } = require("./materialize.js");
const { Shells } = require("./lazy-entries.js");

/**
 * `new Date().toISOString()`, formatted once per millisecond: appends in a loop come many to a
 * millisecond, and formatting is about half the cost of an in-memory append. The Date is made
 * every call, so a fake clock or a replaced `Date` applies as in the reference. The cache is
 * only used while the Date's `toISOString` is V8's own (unobservable, a pure function of the
 * time value, read with V8's own `getTime`): a replaced or spied `toISOString`, or a `Date`
 * class of its own, is called every time, as the reference calls it. An invalid date (NaN
 * never equals) throws the same `RangeError`.
 */
const NATIVE_TO_ISO = Date.prototype.toISOString;
const NATIVE_GET_TIME = Date.prototype.getTime;
const CAN_CACHE_STAMPS = /\{\s*\[native code\]\s*\}\s*$/.test(Function.prototype.toString.call(NATIVE_TO_ISO));
let lastStampMs = Number.NaN;
let lastStamp = "";
function nowStamp() {
  const d = new Date();
  if (!CAN_CACHE_STAMPS || d.toISOString !== NATIVE_TO_ISO) return d.toISOString();
  const ms = NATIVE_GET_TIME.call(d);
  if (ms !== lastStampMs) {
    lastStamp = NATIVE_TO_ISO.call(d);
    lastStampMs = ms;
  }
  return lastStamp;
}

const CURRENT_SESSION_VERSION = 3;
const SESSION_ID_PATTERN = /^[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?$/;

function assertValidSessionId(id) {
  if (!SESSION_ID_PATTERN.test(id)) {
    throw new Error(
      "Session id must be non-empty, contain only alphanumeric characters, '-', '_', and '.', and start and end with an alphanumeric character",
    );
  }
}

const ERRNO = { EPERM: -1, ENOENT: -2, EIO: -5, EBADF: -9, EACCES: -13, EEXIST: -17, ENOTDIR: -20, EISDIR: -21, EMFILE: -24, EFBIG: -27, ENOSPC: -28, EROFS: -30, EDQUOT: -122 };

/** A native filesystem error with Node's error fields (errno, code, syscall, path). */
function fsError(err) {
  const m = /^(E[A-Z]+): .*, (\w+)(?: '(.*)')?$/s.exec(err?.message ?? "");
  if (!m) return err;
  const fields = { errno: ERRNO[m[1]] ?? -5, code: m[1], syscall: m[2] };
  return Object.assign(new Error(err.message), m[3] === undefined ? fields : { ...fields, path: m[3] });
}

/** Run a native call that may fail on the filesystem; rethrow with Node's error fields. */
function fsCall(fn) {
  try {
    return fn();
  } catch (err) {
    throw fsError(err);
  }
}

/**
 * Key of a JS id value in Rust's id space. String ids are themselves; other primitives get a
 * tagged key that follows `Map` equality; objects never match anything.
 */
function keyOf(v) {
  switch (typeof v) {
    case "string":
      return v;
    case "undefined":
      return "\u0000undefined";
    case "number":
      return `\u0000n${String(v)}`;
    case "boolean":
      return `\u0000${v}`;
    default:
      return v === null ? "\u0000null" : "\u0000obj-unmatchable";
  }
}

/** `kind` codes of the native `appendFields` (src/node/session.rs). */
const FIELD_KINDS = { message: 0, custom: 1, session_info: 2, thinking_level_change: 3, model_change: 4, custom_message: 5, usage: 6 };
const ROLE_ASSISTANT = 1;
const ROLE_OTHER = 4;

/**
 * The role code of an in-memory message, read from the object as the reference reads it
 * (`message.role === "user"`, ...): it never serializes an in-memory entry.
 */
function objectRole(message) {
  let role;
  try {
    role = typeof message === "object" && message !== null ? message.role : undefined;
  } catch {
    // A getter or a revoked Proxy: not a role the context would recognize either.
    return ROLE_OTHER;
  }
  return roleCode(role);
}

/** The role code of a role value (`appendFields`' codes). Comparisons, not a Map: this runs on every append. */
function roleCode(role) {
  if (role === "user") return 0;
  if (role === "assistant") return 1;
  if (role === "toolResult") return 2;
  if (role === "system") return 3;
  return ROLE_OTHER;
}

/**
 * The role code Rust's index would read from `JSON.stringify` of an entry holding `message`,
 * or -1 when that is not certain without serializing (not a plain object, a `toJSON`, a
 * non-string role): the caller then sends the text to be scanned.
 */
function messageRole(message) {
  if (typeof message !== "object" || message === null || Array.isArray(message)) return -1;
  if (typeof message.toJSON === "function") return -1;
  const role = message.role;
  if (role === undefined) return ROLE_OTHER;
  if (typeof role !== "string") return -1;
  return roleCode(role);
}

/**
 * An id that reaches Rust as the same key its JSON text would give (no lone surrogates) and
 * can travel in a newline-separated batch (`_flush`).
 */
function plainId(id) {
  return typeof id === "string" && !/[\n\ud800-\udfff]/.test(id);
}

/**
 * A label id for `createBranchedSession` as the reference draws it: `randomUUID().slice(0, 8)`,
 * or the whole UUID as its last resort (`full`). Rust's text route calls it too, so both
 * routes draw the same ids from the same `crypto.randomUUID` (a test may stub it).
 */
function drawLabelId(full) {
  return full ? crypto.randomUUID() : crypto.randomUUID().slice(0, 8);
}

/** The message of a native append that needs entry texts back (see `_send`). */
const NEEDS_TEXTS = "PI_SESSION_NATIVE_NEEDS_TEXTS";

function stringifyEntry(entry) {
  const line = JSON.stringify(entry);
  return typeof line === "string" ? line : "{}";
}

class SessionManager {
  constructor(cwd, sessionDir, sessionFile, persist, newSessionOptions, preloadedFileEntries) {
    this.sessionId = "";
    this.sessionFile = undefined;
    this.cwd = paths.resolvePath(cwd);
    this.sessionDir = paths.normalizePath(sessionDir);
    this.persist = persist;
    this.leafId = null;
    this._clearQueue();
    this._core = new native.NativeSession(persist);
    this._shells = new Shells(this._core, (err) => this._changedUnderUs(err));
    this._resetCache();
    if (persist && this.sessionDir && !existsSync(this.sessionDir)) {
      mkdirSync(this.sessionDir, { recursive: true });
    }
    if (sessionFile) {
      this._setSessionFile(sessionFile);
    } else if (preloadedFileEntries?.length) {
      this._loadObjects(preloadedFileEntries, newSessionOptions);
    } else {
      this.newSession(newSessionOptions);
    }
  }

  /** The Rust session, after the queued in-memory appends are handed to it. */
  get _native() {
    if (this._q.length !== 0) this._flush();
    return this._core;
  }

  /**
   * Empty the queue of in-memory appends not yet handed to Rust (see `_queue`). Every use of
   * `_native` hands them over first, so Rust never answers from a stale index. Per entry `k`
   * of `_q`, what Rust will index is taken when it is appended: kind and role codes
   * (`_qKinds`, `_qRoles`; typed arrays grown by doubling), the id key (`_qIds`) and the
   * parent (`_qParents`: -1 null, -2 the id of entry `k - 1`, else an index into
   * `_qParentKeys`) — the arguments of `appendFieldsBatch`. And, for a context built without
   * handing them over (`_contextPlan`): the key of the first one's parent (`_qAnchor`),
   * whether each later one's parent is the one before (`_qChain`), and the positions of the
   * last thinking-level entry and of the last model-setting one (-1: none).
   */
  _clearQueue() {
    this._q = [];
    this._qIds = [];
    this._qParentKeys = [];
    this._qAnchor = null;
    this._qChain = true;
    this._qThinking = -1;
    this._qModel = -1;
    if (this._qKinds === undefined || this._qKinds.length > 4096) this._sizeQueue(64);
  }

  /** Room for `n` queued entries in the code arrays, keeping what they hold. */
  _sizeQueue(n) {
    const kinds = new Uint8Array(n);
    const roles = new Uint8Array(n);
    const parents = new Int32Array(n);
    if (this._qKinds !== undefined && this._q.length !== 0) {
      kinds.set(this._qKinds);
      roles.set(this._qRoles);
      parents.set(this._qParents);
    }
    this._qKinds = kinds;
    this._qRoles = roles;
    this._qParents = parents;
  }

  /**
   * Hand the queued in-memory appends to Rust in one call: their codes as gathered by
   * `_queue`, the ids as one `\n`-joined string (cheapest to hand over; Rust answers -1 if an
   * id held a newline, and they go again as an array).
   */
  _flush() {
    const q = this._q;
    const n = q.length;
    const kinds = this._qKinds.subarray(0, n);
    const roles = this._qRoles.subarray(0, n);
    const parents = this._qParents.subarray(0, n);
    const ids = this._qIds;
    let start = this._core.appendFieldsBatch(kinds, roles, ids.join("\n"), parents, this._qParentKeys);
    if (start < 0) start = this._core.appendFieldsBatch(kinds, roles, ids, parents, this._qParentKeys);
    const objs = this._objs;
    for (let k = 0; k < n; k++) objs[start + k] = q[k];
    this._clearQueue();
  }

  // ---------------------------------------------------------------------------------------
  // Materialization cache

  _resetCache() {
    /** The current leaf's branch (`_leafBranch`). */
    this._branchCache = null;
    // Unfilled entries move to a retired copy before Rust's entries are replaced
    // (`Shells.settle`); one left here would read another entry's text, so it is cut off.
    this._shells.detach();
    /**
     * File index -> entry object (sparse). Sized to the entries up front: an empty array
     * written first at an index past ~1,024 turns into a slow dictionary-mode array in V8.
     */
    this._objs = new Array(this._native.length);
    /** getEntries() result once fully materialized (copied on return). */
    this._entriesArr = null;
    /**
     * id -> entry object for ids already looked up or appended. With `_idsComplete`, it also
     * has every other id of the session (as a key whose value is undefined), so a fresh id
     * candidate is checked without asking Rust (`_idTaken`).
     */
    this._byIdCache = new Map();
    this._idsComplete = false;
  }

  /** Give `_byIdCache` every id key Rust holds (once per load). */
  _completeIds() {
    for (const k of this._native.idKeys()) if (!this._byIdCache.has(k)) this._byIdCache.set(k, undefined);
    this._idsComplete = true;
  }

  /** Whether an entry has the (generated, plain) id `id`. */
  _idTaken(id) {
    return this._idsComplete ? this._byIdCache.has(id) : this._native.indexOf(id) >= 0;
  }

  /**
   * The object of Rust's entry `i`. Every index comes from a Rust answer (given after a
   * hand-over, or by `_queuedPlan` for the entries before the queue), so reading its text
   * needs no hand-over: `_core`, not `_native`, which would hand the queue over in the middle
   * of `_contextPlan` and leave it building on a queue that is gone.
   */
  _obj(i) {
    let o = this._objs[i];
    if (o === undefined) {
      const text = this._core.line(i);
      // No text: it could not be read back (its file was cut or overwritten under us).
      if (text == null) throw this._changedUnderUs(new SyntaxError("entry text could not be read back"));
      try {
        o = JSON.parse(text);
      } catch (err) {
        throw this._changedUnderUs(err);
      }
      this._objs[i] = o;
    }
    return o;
  }

  /**
   * Every text Rust holds was a complete JSON line when loaded or appended: one that no
   * longer parses was read back from a file another program overwrote under this session.
   * Reported as the I/O error it is (docs/durability.md), never as a SyntaxError.
   */
  _changedUnderUs(err) {
    if (!(err instanceof SyntaxError)) return err;
    const file = this.sessionFile ?? "";
    return Object.assign(
      new Error(`EIO: i/o error, read '${file}' (the session file was changed by another program under this open session; an entry's text is no longer what was written: ${err.message})`),
      { code: "EIO", errno: -5, syscall: "read", path: file },
    );
  }

  /**
   * Objects for file indices, making the missing ones in one batch. With `lazy` (what the
   * public getters hand out), entries with heavy values come as shells whose heavy values
   * are parsed when first read (lib/lazy-entries.js); without it (the context, which reads
   * every selected message), objects are parsed whole and shells among them filled.
   */
  _objsAt(indices, lazy = false) {
    const missing = [];
    const shells = this._shells;
    const check = !lazy && shells.groups.size > 0;
    let unfilled = false;
    for (const i of indices) {
      const o = this._objs[i];
      if (o === undefined) missing.push(i);
      else if (check && shells.unfilled(o)) unfilled = true;
    }
    if (missing.length > 0) this._parseBatch(missing, lazy);
    const out = new Array(indices.length);
    for (let k = 0; k < indices.length; k++) out[k] = this._objs[indices[k]];
    if (unfilled) shells.fill(out);
    return out;
  }

  _parseBatch(missing, lazy = false) {
    const want = Uint32Array.from(missing);
    // `_core`: indices from a Rust answer, as in `_obj`.
    let gone = false;
    const put = (k, o) => {
      if (o === null) gone = true;
      else this._objs[want[k]] = o;
    };
    try {
      if (lazy && this._shells.enabled) this._shells.make(want, put);
      else parseEntries(this._core, want, put);
    } catch (err) {
      throw this._changedUnderUs(err);
    }
    // A text that can no longer be read back (its file was cut or overwritten under this
    // session): the EIO of that read, as a single-entry read reports it.
    if (gone) for (const i of missing) if (this._objs[i] === undefined) this._obj(i);
  }

  _all() {
    if (this._entriesArr === null) {
      this._entriesArr = this._objsAt(this._native.nonSession(), true);
    }
    return this._entriesArr;
  }

  /** Adopt Rust's current entries after a load; JS objects already known can be given. */
  _adopt(objs) {
    this._resetCache();
    if (objs) this._objs = objs.slice();
    this._syncLeafFromNative();
  }

  _syncLeafFromNative() {
    const key = this._native.leafKey();
    if (key === null || key === undefined) {
      this.leafId = null;
    } else if (!key.startsWith("\u0000")) {
      this.leafId = key;
    } else {
      // A non-string id (hand-edited file): read its JS value from the entry that has it.
      const i = this._native.indexOf(key);
      this.leafId = i >= 0 ? this._obj(i).id : undefined;
    }
  }

  _setLeaf(id) {
    this._native.setLeaf(id === null ? null : keyOf(id));
    this.leafId = id;
  }

  _has(id) {
    return this._native.indexOf(keyOf(id)) >= 0;
  }

  _generateId() {
    return this._generateIdFrom(0);
  }

  /** The reference's id loop from try `first` on (100 tries, then a full UUID). */
  _generateIdFrom(first) {
    for (let i = first; i < 100; i++) {
      const id = crypto.randomUUID().slice(0, 8);
      if (!this._idTaken(id)) return id;
    }
    return crypto.randomUUID();
  }

  // ---------------------------------------------------------------------------------------
  // Session lifecycle

  setSessionFile(sessionFile) {
    this._setSessionFile(sessionFile);
  }

  _setSessionFile(sessionFile) {
    this.sessionFile = paths.resolvePath(sessionFile);
    // The path switches before the file is judged: if it is refused below, later appends
    // still go to it (the reference's observable behaviour).
    this._native.setFile(this.sessionFile, this._native.flushed);
    if (existsSync(this.sessionFile)) {
      const file = this.sessionFile;
      this._shells.settle();
      const { count } = fsCall(() => this._native.loadFile(file));
      if (count === 0) {
        if (statSync(file).size > 0) {
          throw new Error(`Session file is not a valid ${paths.APP_NAME} session: ${file}`);
        }
        this.newSession();
        this.sessionFile = file;
        this._native.setFile(file, false);
        fsCall(() => this._native.rewrite());
        this._native.flushed = true;
        return;
      }
      this._native.setFile(file, true);
      this._afterNativeLoad();
    } else {
      const explicitPath = this.sessionFile;
      this.newSession();
      this.sessionFile = explicitPath;
      this._native.setFile(explicitPath, false);
    }
  }

  /** Entries were loaded into Rust from a file: header, migration, index. */
  _afterNativeLoad() {
    this._resetCache();
    const h = this._native.headerIndex();
    const header = this._obj(h);
    this.sessionId = header.id;
    // Old versions are migrated in Rust (src/migrate.rs) and the file rewritten.
    if (this._native.migrate()) {
      fsCall(() => this._native.rewrite());
      this._adopt();
      return;
    }
    this._syncLeafFromNative();
  }

  /** `inMemory(cwd, options, entries)`: entries held outside the filesystem. */
  _loadObjects(entries, options) {
    this._shells.settle();
    const header = entries.find((e) => e.type === "session");
    if (header) {
      this.sessionId = header.id;
      migrateSessionEntries(entries);
      this._native.replaceLines(entries.map(stringifyEntry).join("\n"));
      this._adopt(entries);
    } else {
      this.newSession(options);
      const all = [this._objs[0], ...entries];
      this._native.replaceLines(all.map(stringifyEntry).join("\n"));
      this._adopt(all);
    }
  }

  newSession(options) {
    if (options?.id !== undefined) assertValidSessionId(options.id);
    this.sessionId = options?.id ?? native.uuidv7();
    const timestamp = nowStamp();
    const header = {
      type: "session",
      version: CURRENT_SESSION_VERSION,
      id: this.sessionId,
      timestamp,
      cwd: this.cwd,
      parentSession: options?.parentSession,
    };
    this._shells.settle();
    this._native.replaceLines(stringifyEntry(header));
    this._resetCache();
    this._objs[0] = header;
    // Only the header, which has no place in the id index.
    this._idsComplete = true;
    this.leafId = null;
    this._native.setLeaf(null);
    if (this.persist) {
      const fileTimestamp = timestamp.replace(/[:.]/g, "-");
      this.sessionFile = join(this.getSessionDir(), `${fileTimestamp}_${this.sessionId}.jsonl`);
    }
    this._native.setFile(this.sessionFile ?? null, false);
    return this.sessionFile;
  }

  isPersisted() {
    return this.persist;
  }

  getCwd() {
    return this.cwd;
  }

  getSessionDir() {
    return this.sessionDir;
  }

  usesDefaultSessionDir() {
    return paths.pathsEqual(this.sessionDir, paths.getDefaultSessionDirPath(this.cwd));
  }

  getSessionId() {
    return this.sessionId;
  }

  getSessionFile() {
    return this.sessionFile;
  }

  _persist(entry) {
    // Persistence happens in Rust as part of append; kept for API shape (pi calls it only
    // through append*). Re-append is not meaningful, so this is a no-op for foreign callers.
    void entry;
  }

  /**
   * Append `entry`. With `freshId`, `entry.id` is an unchecked first candidate (see `_base`):
   * Rust checks it in the same call and answers -1 when it is taken; the id is then redrawn
   * by the rest of the reference's loop. Same ids as the reference, one call per append.
   *
   * `kind` (see `FIELD_KINDS`) and `role` (messages, see `messageRole`) let Rust take the
   * entry's index fields as given instead of scanning its text: for those types the index
   * holds nothing but type, id, parentId and role. In-memory sessions then send no text at
   * all (the reference never serializes an entry it does not write) and this object is what
   * every later read returns; persisted ones send the line to write. Without a kind, with
   * role -1 or with an id that is not a plain string, the line is sent and scanned.
   */
  _appendEntry(entry, freshId, kind = -1, role = ROLE_OTHER) {
    if (kind >= 0 && !this.persist) {
      this._queue(entry, freshId, kind, role);
      return;
    }
    const fields = kind >= 0 && role >= 0 && plainId(entry.id) && (entry.parentId === null || plainId(entry.parentId));
    let i;
    try {
      i = this._send(entry, fields, kind, role, freshId);
      if (i < 0) {
        entry.id = this._generateIdFrom(1);
        i = this._send(entry, fields, kind, role, false);
      }
    } catch (err) {
      throw fsError(err);
    }
    this._objs[i] = entry;
    if (this._entriesArr !== null) this._entriesArr.push(entry);
    this._byIdCache.set(entry.id, entry);
    this.leafId = entry.id;
  }

  /**
   * An in-memory append of a type Rust indexes by fields alone (`FIELD_KINDS`): no native
   * call now; the entry joins `_q` and is handed over by the next use of `_native`
   * (`_flush`). A fresh id candidate is checked against `_byIdCache`, which holds every id of
   * the session once `_completeIds` ran: one `set` that does not grow the map found it
   * taken; the old id then maps to undefined (Rust is asked for its entry, which is what
   * `getEntry` does for such a key) and the id is redrawn by the rest of the reference's
   * loop. An unchecked id (`freshId` false: drawn by `_generateId`, or its full-UUID
   * fallback) replaces, as the reference's `byId.set` does.
   *
   * What Rust indexes (kind, role, id, parent) is taken now, as a persisted append takes it
   * from the line it writes: a field changed on the object later is not seen by Rust's walks
   * (the reference's in-memory walks read the live objects). Gathering it here, in a small
   * function every append runs, keeps the hand-over a copy: a loop over 10,000 objects in
   * `_flush`, run once per batch, mostly ran before V8 had optimized it (~0.4 µs an entry).
   */
  _queue(entry, freshId, kind, role) {
    if (!this._idsComplete) this._completeIds();
    const byId = this._byIdCache;
    const size = byId.size;
    byId.set(entry.id, entry);
    if (freshId && byId.size === size) {
      byId.set(entry.id, undefined);
      entry.id = this._generateIdFrom(1);
      byId.set(entry.id, entry);
    }
    const q = this._q;
    const k = q.length;
    if (k === this._qKinds.length) this._sizeQueue(k * 2);
    this._qKinds[k] = kind;
    this._qRoles[k] = role;
    const ids = this._qIds;
    const p = entry.parentId;
    if (p === null) this._qParents[k] = -1;
    else if (k > 0 && p === ids[k - 1]) this._qParents[k] = -2;
    else this._qParents[k] = this._qParentKeys.push(keyOf(p)) - 1;
    if (k === 0) this._qAnchor = p === null ? null : keyOf(p);
    else if (this._qParents[k] !== -2) this._qChain = false;
    // The reference's walk ends at a falsy parentId (0, "", false, undefined), Rust's plan for
    // such a leaf does not: those queues are handed over for a context.
    if (p !== null && !p) this._qChain = false;
    if (kind === FIELD_KINDS.thinking_level_change) this._qThinking = k;
    else if (kind === FIELD_KINDS.model_change || (kind === FIELD_KINDS.message && role === ROLE_ASSISTANT)) this._qModel = k;
    ids.push(keyOf(entry.id));
    q.push(entry);
    if (this._entriesArr !== null) this._entriesArr.push(entry);
    this.leafId = entry.id;
  }

  /** One native append of `entry` (id checked when `checked`), retried once after `_restoreTexts`. */
  _send(entry, fields, kind, role, checked) {
    const line = fields && !this.persist ? null : stringifyEntry(entry);
    try {
      return this._sendOnce(entry, line, fields, kind, role, checked);
    } catch (err) {
      if (err?.message !== NEEDS_TEXTS) throw err;
      this._restoreTexts();
      return this._sendOnce(entry, line, fields, kind, role, checked);
    }
  }

  _sendOnce(entry, line, fields, kind, role, checked) {
    if (fields) return this._native.appendFields(kind, entry.id, entry.parentId, role, !checked, line);
    return checked ? this._native.appendNew(line) : this._native.append(line);
  }

  /**
   * Appended entries keep only their place in the session file (Rust holds no copy of their
   * text). If another program truncated that file in place, Rust cannot rewrite it alone: the
   * append throws `NEEDS_TEXTS`, and this hands back the texts of the entries it lists, which
   * this layer holds as objects; the caller retries the append once.
   */
  _restoreTexts() {
    const indices = this._native.neededTexts();
    const lines = Array.from(indices, (k) => (this._objs[k] === undefined ? null : stringifyEntry(this._objs[k])));
    this._native.restoreTexts(Array.from(indices), lines);
  }

  /** A new entry's common fields; its id is the first, unchecked candidate (`_appendEntry(e, true)`). */
  _base(type) {
    return { type, id: crypto.randomUUID().slice(0, 8), parentId: this.leafId, timestamp: nowStamp() };
  }

  appendMessage(message) {
    // One literal (not `_base` + a property): the object is built in its final shape.
    const entry = { type: "message", id: crypto.randomUUID().slice(0, 8), parentId: this.leafId, timestamp: nowStamp(), message };
    if (this.persist) this._appendEntry(entry, true, FIELD_KINDS.message, messageRole(message));
    else this._queue(entry, true, FIELD_KINDS.message, objectRole(message));
    return entry.id;
  }

  appendThinkingLevelChange(thinkingLevel) {
    const entry = this._base("thinking_level_change");
    entry.thinkingLevel = thinkingLevel;
    this._appendEntry(entry, true, FIELD_KINDS.thinking_level_change);
    return entry.id;
  }

  appendModelChange(provider, modelId) {
    const entry = this._base("model_change");
    entry.provider = provider;
    entry.modelId = modelId;
    this._appendEntry(entry, true, FIELD_KINDS.model_change);
    return entry.id;
  }

  appendUsage(kind, provider, model, usage, note) {
    const entry = this._base("usage");
    Object.assign(entry, { kind, provider, model, usage }, note ? { note } : {});
    this._appendEntry(entry, true, FIELD_KINDS.usage);
    return entry;
  }

  appendCompaction(summary, firstKeptEntryId, tokensBefore, details, fromHook, usage) {
    const timestamp = nowStamp();
    const systemMessage = getCurrentSystemMessage(this.buildSessionProjection().messages);
    const id = this._generateId();
    const entry = {
      type: "compaction",
      id,
      parentId: this.leafId,
      timestamp,
      summary,
      firstKeptEntryId: firstKeptEntryId ?? id,
      tokensBefore,
      details,
      usage,
      fromHook,
      ...(systemMessage ? { systemMessage: { ...systemMessage, timestamp: new Date(timestamp).getTime() } } : {}),
    };
    this._appendEntry(entry);
    return entry.id;
  }

  appendCustomEntry(customType, data) {
    const entry = { type: "custom", customType, data, id: this._generateId(), parentId: this.leafId, timestamp: nowStamp() };
    this._appendEntry(entry, false, FIELD_KINDS.custom);
    return entry.id;
  }

  appendSessionInfo(name) {
    const entry = this._base("session_info");
    entry.name = name.replace(/[\r\n]+/g, " ").trim();
    this._appendEntry(entry, true, FIELD_KINDS.session_info);
    return entry.id;
  }

  getSessionName() {
    const i = this._native.lastSessionInfo();
    if (i < 0) return undefined;
    return this._obj(i).name?.trim() || undefined;
  }

  appendCustomMessageEntry(customType, content, display, details) {
    const entry = {
      type: "custom_message",
      customType,
      content,
      display,
      details,
      id: this._generateId(),
      parentId: this.leafId,
      timestamp: nowStamp(),
    };
    this._appendEntry(entry, false, FIELD_KINDS.custom_message);
    return entry.id;
  }

  appendContextEdit(targetId, replacement) {
    if (
      replacement !== null &&
      (typeof replacement !== "object" ||
        !("content" in replacement) ||
        (typeof replacement.content !== "string" && !Array.isArray(replacement.content)))
    ) {
      throw new Error("Context edit replacement must be null or contain string/array content");
    }
    const target = this.getEntry(targetId);
    if (!target) throw new Error(`Entry ${targetId} not found`);
    if (!this._native.branchContains(keyOf(targetId))) {
      throw new Error(`Entry ${targetId} is not on the active branch`);
    }
    const editable =
      target.type === "custom_message" ||
      (target.type === "message" &&
        (target.message.role === "user" || target.message.role === "assistant" || target.message.role === "toolResult"));
    if (!editable) throw new Error(`Entry ${targetId} does not contribute editable model content`);
    const role = target.type === "message" ? target.message.role : "custom";
    const normalized =
      replacement !== null && (role === "assistant" || role === "toolResult") && typeof replacement.content === "string"
        ? { content: [{ type: "text", text: replacement.content }] }
        : replacement;
    const entry = this._base("context_edit");
    entry.targetId = targetId;
    entry.replacement = normalized;
    this._appendEntry(entry, true);
    return entry.id;
  }

  // ---------------------------------------------------------------------------------------
  // Tree traversal

  getLeafId() {
    return this.leafId;
  }

  getLeafEntry() {
    return this.leafId ? this.getEntry(this.leafId) : undefined;
  }

  getEntry(id) {
    const cached = this._byIdCache.get(id);
    if (cached !== undefined) return cached;
    const i = this._native.indexOf(keyOf(id));
    if (i < 0) return undefined;
    const o = this._obj(i);
    if (typeof id === "string") this._byIdCache.set(id, o);
    return o;
  }

  getChildren(parentId) {
    return this._objsAt(this._native.children(parentId === null ? null : keyOf(parentId)), true);
  }

  getLabel(id) {
    const i = this._native.labelIndex(keyOf(id));
    return i < 0 ? undefined : this._obj(i).label;
  }

  appendLabelChange(targetId, label) {
    if (!this._has(targetId)) throw new Error(`Entry ${targetId} not found`);
    const entry = this._base("label");
    entry.targetId = targetId;
    entry.label = label;
    this._appendEntry(entry, true);
    return entry.id;
  }

  getBranch(fromId) {
    if (fromId === undefined || fromId === null) return this._leafBranch();
    return this._objsAt(this._native.branch(keyOf(fromId)), true);
  }

  /**
   * The current leaf's branch. pi asks for it six to nine times at start-up and on every
   * turn; the path of a leaf never changes while the session holds the same entries (appends
   * only add leaves, and replacing the entries resets the cache), so the objects are kept
   * for as long as the leaf and the entry count are the same. A new array each call, as the
   * reference's.
   */
  _leafBranch() {
    const core = this._native;
    const leaf = core.leafKey() ?? null;
    const n = core.length;
    const c = this._branchCache;
    if (c !== null && c.leaf === leaf && c.n === n) return c.arr.slice();
    const arr = this._objsAt(core.branch(null), true);
    this._branchCache = { leaf, n, arr };
    return arr.slice();
  }

  buildContextEntries() {
    return this._contextPlan(false).selected;
  }

  buildSessionProjection() {
    const { selected, editFor, thinkingLevel, model } = this._contextPlan();
    return context.projectSelected(selected, editFor, thinkingLevel, model);
  }

  buildSessionContext() {
    const { selected, editFor, thinkingLevel, model } = this._contextPlan();
    return { messages: context.selectedMessages(selected, editFor), thinkingLevel, model };
  }

  /**
   * Rust's context plan for the current leaf, as objects: the selected entries, their edits
   * and (`withSettings`) the thinking level and model.
   */
  _contextPlan(withSettings = true) {
    let plan = this._queuedPlan();
    // The queue as it is now (nothing below hands it over: `_obj` and `_objsAt` read through
    // `_core`; taken first all the same).
    const q = plan === null ? null : this._q;
    const qThinking = this._qThinking;
    const qModel = this._qModel;
    if (plan === null) plan = this._native.contextPlan();
    let selected = this._objsAt(plan.indices);
    const rustCount = selected.length;
    if (q !== null) selected = selected.concat(q);
    const editIdx = plan.edits;
    const editFor = (_e, index) => (index < rustCount && editIdx[index] >= 0 ? this._obj(editIdx[index]) : undefined);
    if (!withSettings) return { selected, editFor, thinkingLevel: "off", model: null };
    let thinking;
    if (q !== null && qThinking >= 0) thinking = q[qThinking];
    else if (plan.thinkingFrom >= 0) thinking = this._obj(plan.thinkingFrom);
    let modelEntry;
    if (q !== null && qModel >= 0) modelEntry = q[qModel];
    else if (plan.modelFrom >= 0) modelEntry = this._obj(plan.modelFrom);
    const thinkingLevel = thinking === undefined ? "off" : thinking.thinkingLevel;
    let model = null;
    if (modelEntry !== undefined) {
      const e = modelEntry;
      model = e.type === "model_change" ? { provider: e.provider, modelId: e.modelId } : { provider: e.message.provider, modelId: e.message.model };
    }
    return { selected, editFor, thinkingLevel, model };
  }

  /**
   * Rust's context plan for the leaf the queued appends started from, when they extend it
   * as they are: then the context is that plan followed by the queued entries, and nothing
   * is handed over (a run of in-memory appends and a context, pi's turn, costs no batch).
   * That holds when the queue is one chain (each entry's parent the one before), its first
   * entry's parent is Rust's leaf and an entry of Rust's (or null: a path of queued entries
   * only), and no selected `context_edit` targets a queued id. Queued entries are never
   * compactions, labels or edits (not field kinds), so they cannot change what is selected
   * before them; they come after it on the path and are all selected, and the last
   * thinking-level and model entries among them win (`getSessionContextSettings`).
   * `null` otherwise (the caller hands the queue over and asks again).
   */
  _queuedPlan() {
    if (this._q.length === 0 || !this._qChain) return null;
    const core = this._core;
    const anchor = this._qAnchor;
    if (core.leafKey() !== anchor || (anchor !== null && core.indexOf(anchor) < 0)) return null;
    const plan = core.contextPlan();
    const targets = plan.editTargets;
    if (targets.length !== 0) {
      const queuedIds = new Set(this._qIds);
      if (targets.some((t) => queuedIds.has(t))) return null;
    }
    return plan;
  }

  getHeader() {
    const h = this._native.headerIndex();
    return h >= 0 ? this._obj(h) : null;
  }

  getEntryCount() {
    return this._native.idCount();
  }

  getEntries() {
    return this._all().slice();
  }

  _labelMaps() {
    const labels = new Map();
    const stamps = new Map();
    for (const e of this._objsAt(this._native.labelIndices())) {
      labels.set(e.targetId, e.label);
      stamps.set(e.targetId, e.timestamp);
    }
    return { labels, stamps };
  }

  getTree() {
    const entries = this._all();
    const { labels, stamps } = this._labelMaps();
    const nodeMap = new Map();
    const roots = [];
    for (const entry of entries) {
      nodeMap.set(entry.id, { entry, children: [], label: labels.get(entry.id), labelTimestamp: stamps.get(entry.id) });
    }
    for (const entry of entries) {
      const node = nodeMap.get(entry.id);
      if (entry.parentId === null || entry.parentId === entry.id) {
        roots.push(node);
      } else {
        const parent = nodeMap.get(entry.parentId);
        if (parent) parent.children.push(node);
        else roots.push(node);
      }
    }
    // Oldest first; iterative so deep trees cannot overflow the stack.
    const stack = roots.slice();
    while (stack.length > 0) {
      const node = stack.pop();
      node.children.sort((a, b) => new Date(a.entry.timestamp).getTime() - new Date(b.entry.timestamp).getTime());
      for (const c of node.children) stack.push(c);
    }
    return roots;
  }

  // ---------------------------------------------------------------------------------------
  // Branching

  branch(branchFromId) {
    if (!this._has(branchFromId)) throw new Error(`Entry ${branchFromId} not found`);
    this._setLeaf(branchFromId);
  }

  resetLeaf() {
    this._setLeaf(null);
  }

  branchWithSummary(branchFromId, summary, details, fromHook, usage) {
    if (branchFromId !== null && !this._has(branchFromId)) throw new Error(`Entry ${branchFromId} not found`);
    const fromId = this.leafId ?? "root";
    // The leaf moves before the write; a failed write leaves it moved, as in the reference.
    this._setLeaf(branchFromId);
    const entry = {
      type: "branch_summary",
      id: this._generateId(),
      parentId: branchFromId,
      timestamp: nowStamp(),
      fromId,
      summary,
      details,
      usage,
      fromHook,
    };
    this._appendEntry(entry);
    return entry.id;
  }

  createBranchedSession(leafId) {
    const previousSessionFile = this.sessionFile;
    const newSessionId = native.uuidv7();
    const timestamp = nowStamp();
    const header = {
      type: "session",
      version: CURRENT_SESSION_VERSION,
      id: newSessionId,
      timestamp,
      cwd: this.cwd,
      parentSession: this.persist ? previousSessionFile : undefined,
    };
    // Fast route: Rust splices parentId (and a relabelled firstKeptEntryId) into the lines,
    // which are already in JSON.stringify form, without materializing the path (src/branch.rs).
    // Only for a path none of whose objects JS has handed out: the reference spreads the
    // live objects (a caller's mutation, an appended entry's undefined-valued keys), and
    // those are only known here.
    const from = leafId === undefined || leafId === null ? null : keyOf(leafId);
    const path = this._native.branch(from);
    if (path.length === 0) throw new Error(`Entry ${leafId} not found`);
    let untouched = true;
    for (const i of path) {
      if (this._objs[i] !== undefined) {
        untouched = false;
        break;
      }
    }
    this._shells.settle();
    const done = untouched ? this._native.branchInto(from, stringifyEntry(header), drawLabelId) : 0;
    if (done < 0) throw new Error(`Entry ${leafId} not found`);
    if (done > 0) {
      this.sessionId = newSessionId;
      this._adopt([header]);
    } else {
      this._branchFromObjects(leafId, header);
    }
    if (this.persist) {
      const fileTimestamp = timestamp.replace(/[:.]/g, "-");
      const newSessionFile = join(this.getSessionDir(), `${fileTimestamp}_${newSessionId}.jsonl`);
      this.sessionFile = newSessionFile;
      this._native.setFile(newSessionFile, false);
      // Same rule as the first flush: write now only if the path holds a conversation.
      if (this._native.hasConversation()) {
        fsCall(() => this._native.rewrite());
        this._native.flushed = true;
      }
      return newSessionFile;
    }
    return undefined;
  }

  /** The reference's object route, for paths with lines Rust cannot splice exactly. */
  _branchFromObjects(leafId, header) {
    const path = this.getBranch(leafId);
    if (path.length === 0) throw new Error(`Entry ${leafId} not found`);
    // Labels are tree entries: dropping them re-chains the path, and a compaction whose
    // firstKeptEntryId named a dropped label points at the entry that replaced it.
    const pathWithoutLabels = [];
    const replacementByLabelId = new Map();
    const pendingLabelIds = [];
    let pathParentId = null;
    for (const entry of path) {
      if (entry.type === "label") {
        pendingLabelIds.push(entry.id);
        continue;
      }
      for (const labelId of pendingLabelIds) replacementByLabelId.set(labelId, entry.id);
      pendingLabelIds.length = 0;
      if (entry.type === "compaction") {
        const firstKeptEntryId =
          entry.firstKeptEntryId === entry.id ? entry.id : (replacementByLabelId.get(entry.firstKeptEntryId) ?? entry.firstKeptEntryId);
        pathWithoutLabels.push({ ...entry, parentId: pathParentId, firstKeptEntryId });
      } else {
        pathWithoutLabels.push({ ...entry, parentId: pathParentId });
      }
      pathParentId = entry.id;
    }
    const pathEntryIds = new Set(pathWithoutLabels.map((e) => e.id));
    const { labels, stamps } = this._labelMaps();
    const labelsToWrite = [];
    for (const [targetId, label] of labels) {
      if (pathEntryIds.has(targetId)) labelsToWrite.push({ targetId, label, timestamp: stamps.get(targetId) });
    }
    const labelEntries = [];
    let parentId = pathWithoutLabels[pathWithoutLabels.length - 1]?.id || null;
    for (const { targetId, label, timestamp: labelTimestamp } of labelsToWrite) {
      // The reference's generateId over the path's ids: 100 tries, then a whole UUID unchecked.
      let id;
      for (let i = 0; i < 100 && id === undefined; i++) {
        const c = drawLabelId(false);
        if (!pathEntryIds.has(c)) id = c;
      }
      if (id === undefined) id = drawLabelId(true);
      pathEntryIds.add(id);
      labelEntries.push({ type: "label", id, parentId, timestamp: labelTimestamp, targetId, label });
      parentId = id;
    }
    const all = [header, ...pathWithoutLabels, ...labelEntries];
    this._shells.settle();
    this._native.replaceLines(all.map(stringifyEntry).join("\n"));
    this.sessionId = header.id;
    this._adopt(all);
  }

  // ---------------------------------------------------------------------------------------
  // Statics

  static create(cwd, sessionDir, options) {
    const dir = sessionDir ? paths.normalizePath(sessionDir) : paths.getDefaultSessionDir(cwd);
    return new SessionManager(cwd, dir, undefined, true, options);
  }

  static open(path, sessionDir, cwdOverride) {
    const resolvedPath = paths.resolvePath(path);
    let header = null;
    if (cwdOverride === undefined && existsSync(resolvedPath)) {
      header = discovery.readSessionHeaderForOpen(resolvedPath);
    }
    const headerCwd = header && typeof header.cwd === "string" ? header.cwd : undefined;
    const cwd = cwdOverride ?? headerCwd ?? process.cwd();
    const dir = sessionDir ? paths.normalizePath(sessionDir) : resolve(resolvedPath, "..");
    return new SessionManager(cwd, dir, resolvedPath, true);
  }

  static continueRecent(cwd, sessionDir) {
    const dir = sessionDir ? paths.normalizePath(sessionDir) : paths.getDefaultSessionDir(cwd);
    const filterCwd = sessionDir !== undefined && !paths.pathsEqual(dir, paths.getDefaultSessionDirPath(cwd));
    const mostRecent = discovery.findMostRecentSession(dir, filterCwd ? cwd : undefined);
    return new SessionManager(cwd, dir, mostRecent || undefined, true);
  }

  static inMemory(cwd = process.cwd(), options, entries) {
    return new SessionManager(cwd, "", undefined, false, options, entries);
  }

  static forkFrom(sourcePath, targetCwd, sessionDir, options) {
    const resolvedSourcePath = paths.resolvePath(sourcePath);
    const resolvedTargetCwd = paths.resolvePath(targetCwd);
    const source = new native.NativeSession(true);
    const { count } = fsCall(() => source.loadFile(resolvedSourcePath));
    if (count === 0) throw new Error(`Cannot fork: source session file is empty or invalid: ${resolvedSourcePath}`);
    if (source.headerIndex() < 0) throw new Error(`Cannot fork: source session has no header: ${resolvedSourcePath}`);
    const dir = sessionDir ? paths.normalizePath(sessionDir) : paths.getDefaultSessionDir(resolvedTargetCwd);
    if (!existsSync(dir)) mkdirSync(dir, { recursive: true });
    if (options?.id !== undefined) assertValidSessionId(options.id);
    const newSessionId = options?.id ?? native.uuidv7();
    const timestamp = nowStamp();
    const fileTimestamp = timestamp.replace(/[:.]/g, "-");
    const newSessionFile = join(dir, `${fileTimestamp}_${newSessionId}.jsonl`);
    const newHeader = {
      type: "session",
      version: CURRENT_SESSION_VERSION,
      id: newSessionId,
      timestamp,
      cwd: resolvedTargetCwd,
      parentSession: resolvedSourcePath,
    };
    fsCall(() => source.forkInto(newSessionFile, stringifyEntry(newHeader)));
    return new SessionManager(resolvedTargetCwd, dir, newSessionFile, true);
  }

  static findById(cwd, id, sessionDir) {
    return discovery.findById(cwd, id, sessionDir);
  }

  static list(cwd, sessionDir, onProgress, signal) {
    return discovery.list(cwd, sessionDir, onProgress, signal);
  }

  static listAll(sessionDirOrOnProgress, onProgressOrSignal, signal) {
    return discovery.listAll(sessionDirOrOnProgress, onProgressOrSignal, signal);
  }
}

module.exports = { SessionManager, CURRENT_SESSION_VERSION, assertValidSessionId, fsCall };
