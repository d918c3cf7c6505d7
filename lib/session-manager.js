"use strict";
// The public SessionManager: the reference's API over a Rust-owned session (NativeSession).
//
// Rust holds every entry's JSON text and the tree index; this class only adapts: it builds
// entry objects for appends exactly as the reference does (so JSON.stringify gives the same
// bytes), hands out cached entry objects (lib/entry-cache.js) and turns Rust's index answers
// into objects. In-memory appends wait in lib/append-queue.js until Rust is next asked.
const { existsSync, statSync } = require("node:fs");
const { resolve } = require("node:path");
const native = require("./native.js");
const paths = require("./paths.js");
const context = require("./context.js");
const { getCurrentSystemMessage } = require("./system-message.js");
const { migrateSessionEntries } = require("./migrate.js");
const discovery = require("./discovery/index.js");
const { Shells } = require("./lazy-entries.js");
const { EntryCache } = require("./entry-cache.js");
const { AppendQueue } = require("./append-queue.js");
const { changedUnderUs } = require("./errors.js");
const { nowStamp } = require("./timestamp.js");
const { drawShortId, drawFreshId, drawLabelId, keyOf, isTaggedKey, plainId } = require("./entry-ids.js");
const { FieldKind, FieldRole, ROLE_UNKNOWN, objectRole, messageRole } = require("./field-codes.js");
const {
  CURRENT_SESSION_VERSION,
  assertValidSessionId,
  sessionFileName,
  sessionHeader,
  stringifyEntry,
} = require("./session-files.js");

/** The `code` of a native append's error that asks for entry texts back (see `_send`; src/error.rs). */
const NEEDS_TEXTS = "PI_SESSION_NATIVE_NEEDS_TEXTS";

/** `_appendEntry`'s kind of an entry Rust indexes by scanning its text (not a `FieldKind`; never sent). */
const NO_KIND = -1;
const { Branched, ID_TAKEN } = native;

class SessionManager {
  constructor(cwd, sessionDir, sessionFile, persist, newSessionOptions, preloadedFileEntries) {
    this.sessionId = "";
    this.sessionFile = undefined;
    this.cwd = paths.resolvePath(cwd);
    this.sessionDir = paths.normalizePath(sessionDir);
    this.persist = persist;
    this.leafId = null;
    /** In-memory appends not yet handed to Rust (lib/append-queue.js). */
    this._appends = new AppendQueue();
    this._core = new native.NativeSession(persist);
    this._shells = new Shells(this._core, (err) => this._changedUnderUs(err));
    /** Entry objects by Rust's entry index, by id, and the leaf's branch (lib/entry-cache.js). */
    this._cache = new EntryCache(this._core, this._shells, (err) => this._changedUnderUs(err));
    if (persist && this.sessionDir && !existsSync(this.sessionDir)) {
      paths.makeDir(this.sessionDir);
    }
    if (sessionFile) {
      this._setSessionFile(sessionFile);
    } else if (preloadedFileEntries?.length) {
      this._loadObjects(preloadedFileEntries, newSessionOptions);
    } else {
      this.newSession(newSessionOptions);
    }
  }

  /**
   * The Rust session, after the queued in-memory appends are handed to it: every use of Rust
   * that may read its index goes through here, so Rust never answers from a stale index.
   * Reads of texts at indices Rust gave (the entry cache) use `_core` directly.
   */
  get _native() {
    if (this._appends.length !== 0) this._flush();
    return this._core;
  }

  /** The queued in-memory entries (read by tests: how many wait for a hand-over). */
  get _q() {
    return this._appends.entries;
  }

  /** Hand the queued in-memory appends to Rust in one call; their objects join the cache. */
  _flush() {
    const { start, entries } = this._appends.handOver(this._core);
    this._cache.placeRun(start, entries);
  }

  // ---------------------------------------------------------------------------------------
  // Entry objects (lib/entry-cache.js)

  _resetCache() {
    this._cache.reset(this._native.length);
  }

  /** Give the cache every id key Rust holds (once per load). */
  _completeIds() {
    this._cache.completeIds(this._native.idKeys());
  }

  /** Whether an entry has the (generated, plain) id `id`. */
  _idTaken(id) {
    const c = this._cache;
    return c.idsComplete ? c.byId.has(id) : this._native.indexOf(id) !== null;
  }

  /** The object of Rust's entry `i` (an index from a Rust answer). */
  _obj(i) {
    return this._cache.obj(i);
  }

  /** Objects for Rust's entry indices; `lazy`: heavy values parsed on first read. */
  _objsAt(indices, lazy = false) {
    return this._cache.objsAt(indices, lazy);
  }

  /** A text that no longer parses: the EIO of this session's file (lib/errors.js). */
  _changedUnderUs(err) {
    return changedUnderUs(err, this.sessionFile ?? "");
  }

  _all() {
    const c = this._cache;
    if (c.entries === null) c.entries = this._objsAt(this._native.nonSession(), true);
    return c.entries;
  }

  /** Adopt Rust's current entries after a load; JS objects already known can be given. */
  _adopt(objs) {
    this._resetCache();
    if (objs) this._cache.adopt(objs);
    this._syncLeafFromNative();
  }

  _syncLeafFromNative() {
    const key = this._native.leafKey();
    if (key === null || key === undefined) {
      this.leafId = null;
    } else if (!isTaggedKey(key)) {
      this.leafId = key;
    } else {
      // A non-string id (hand-edited file): read its JS value from the entry that has it.
      const i = this._native.indexOf(key);
      this.leafId = i !== null ? this._obj(i).id : undefined;
    }
  }

  _setLeaf(id) {
    this._native.setLeaf(id === null ? null : keyOf(id));
    this.leafId = id;
  }

  _has(id) {
    return this._native.indexOf(keyOf(id)) !== null;
  }

  _generateId() {
    return this._generateIdFrom(0);
  }

  /** The reference's id loop from try `first` on (100 tries, then a full UUID). */
  _generateIdFrom(first) {
    return drawFreshId((id) => this._idTaken(id), first);
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
      const { count } = this._native.loadFile(file);
      if (count === 0) {
        if (statSync(file).size > 0) {
          throw new Error(`Session file is not a valid ${paths.APP_NAME} session: ${file}`);
        }
        this.newSession();
        this.sessionFile = file;
        this._native.setFile(file, false);
        this._native.rewrite();
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
    // Old versions are migrated in Rust (crates/core/src/migrate.rs) and the file rewritten.
    if (this._native.migrate()) {
      this._native.rewrite();
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
      const all = [this._cache.objs[0], ...entries];
      this._native.replaceLines(all.map(stringifyEntry).join("\n"));
      this._adopt(all);
    }
  }

  newSession(options) {
    if (options?.id !== undefined) assertValidSessionId(options.id);
    this.sessionId = options?.id ?? native.uuidv7();
    const timestamp = nowStamp();
    const header = sessionHeader(this.sessionId, timestamp, this.cwd, options?.parentSession);
    this._shells.settle();
    this._native.replaceLines(stringifyEntry(header));
    this._resetCache();
    this._cache.objs[0] = header;
    // Only the header, which has no place in the id index.
    this._cache.idsComplete = true;
    this.leafId = null;
    this._native.setLeaf(null);
    if (this.persist) this.sessionFile = sessionFileName(this.getSessionDir(), timestamp, this.sessionId);
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
   * Rust checks it in the same call and answers `ID_TAKEN` when it is taken; the id is then redrawn
   * by the rest of the reference's loop. Same ids as the reference, one call per append.
   *
   * `kind` (see `FieldKind`) and `role` (messages, see `messageRole`) let Rust take the
   * entry's index fields as given instead of scanning its text: for those types the index
   * holds nothing but type, id, parentId and role. In-memory sessions then send no text at
   * all (the reference never serializes an entry it does not write) and this object is what
   * every later read returns; persisted ones send the line to write. Without a kind, with
   * `ROLE_UNKNOWN` or with an id that is not a plain string, the line is sent and scanned.
   * @param {object} entry
   * @param {boolean} [freshId]
   * @param {import("../binding.js").FieldKind | -1} [kind] `NO_KIND`: none
   * @param {import("../binding.js").FieldRole | -1} [role] `ROLE_UNKNOWN`: not certain
   */
  _appendEntry(entry, freshId, kind = NO_KIND, role = FieldRole.Other) {
    if (kind !== NO_KIND && !this.persist) {
      this._queue(entry, freshId, kind, role);
      return;
    }
    const fields =
      kind !== NO_KIND &&
      role !== ROLE_UNKNOWN &&
      plainId(entry.id) &&
      (entry.parentId === null || plainId(entry.parentId));
    let i = this._send(entry, fields, kind, role, freshId);
    if (i === ID_TAKEN) {
      entry.id = this._generateIdFrom(1);
      i = this._send(entry, fields, kind, role, false);
    }
    this._cache.appended(i, entry);
    this.leafId = entry.id;
  }

  /**
   * An in-memory append of a type Rust indexes by fields alone (`FieldKind`): no native
   * call now; the entry joins the append queue and is handed over by the next use of
   * `_native` (`_flush`). A fresh id candidate is checked against the cache's `byId`, which
   * holds every id of the session once `_completeIds` ran: one `set` that does not grow the
   * map found it taken; the old id then maps to undefined (Rust is asked for its entry, which
   * is what `getEntry` does for such a key) and the id is redrawn by the rest of the
   * reference's loop. An unchecked id (`freshId` false: drawn by `_generateId`, or its
   * full-UUID fallback) replaces, as the reference's `byId.set` does.
   */
  _queue(entry, freshId, kind, role) {
    const cache = this._cache;
    if (!cache.idsComplete) this._completeIds();
    const byId = cache.byId;
    const size = byId.size;
    byId.set(entry.id, entry);
    if (freshId && byId.size === size) {
      byId.set(entry.id, undefined);
      entry.id = this._generateIdFrom(1);
      byId.set(entry.id, entry);
    }
    this._appends.push(entry, kind, role);
    if (cache.entries !== null) cache.entries.push(entry);
    this.leafId = entry.id;
  }

  /** One native append of `entry` (id checked when `checked`), retried once after `_restoreTexts`. */
  _send(entry, fields, kind, role, checked) {
    const line = fields && !this.persist ? null : stringifyEntry(entry);
    try {
      return this._sendOnce(entry, line, fields, kind, role, checked);
    } catch (err) {
      if (err?.code !== NEEDS_TEXTS) throw err;
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
    const objs = this._cache.objs;
    const lines = Array.from(indices, (k) => (objs[k] === undefined ? null : stringifyEntry(objs[k])));
    this._native.restoreTexts(Array.from(indices), lines);
  }

  /** A new entry's common fields; its id is the first, unchecked candidate (`_appendEntry(e, true)`). */
  _base(type) {
    return { type, id: drawShortId(), parentId: this.leafId, timestamp: nowStamp() };
  }

  appendMessage(message) {
    // One literal (not `_base` + a property): the object is built in its final shape.
    const entry = { type: "message", id: drawShortId(), parentId: this.leafId, timestamp: nowStamp(), message };
    if (this.persist) this._appendEntry(entry, true, FieldKind.Message, messageRole(message));
    else this._queue(entry, true, FieldKind.Message, objectRole(message));
    return entry.id;
  }

  appendThinkingLevelChange(thinkingLevel) {
    const entry = this._base("thinking_level_change");
    entry.thinkingLevel = thinkingLevel;
    this._appendEntry(entry, true, FieldKind.ThinkingLevelChange);
    return entry.id;
  }

  appendModelChange(provider, modelId) {
    const entry = this._base("model_change");
    entry.provider = provider;
    entry.modelId = modelId;
    this._appendEntry(entry, true, FieldKind.ModelChange);
    return entry.id;
  }

  appendUsage(kind, provider, model, usage, note) {
    const entry = this._base("usage");
    Object.assign(entry, { kind, provider, model, usage }, note ? { note } : {});
    this._appendEntry(entry, true, FieldKind.Usage);
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
    const entry = {
      type: "custom",
      customType,
      data,
      id: this._generateId(),
      parentId: this.leafId,
      timestamp: nowStamp(),
    };
    this._appendEntry(entry, false, FieldKind.Custom);
    return entry.id;
  }

  appendSessionInfo(name) {
    const entry = this._base("session_info");
    entry.name = name.replace(/[\r\n]+/g, " ").trim();
    this._appendEntry(entry, true, FieldKind.SessionInfo);
    return entry.id;
  }

  getSessionName() {
    const i = this._native.lastSessionInfo();
    if (i === null) return undefined;
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
    this._appendEntry(entry, false, FieldKind.CustomMessage);
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
        (target.message.role === "user" ||
          target.message.role === "assistant" ||
          target.message.role === "toolResult"));
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
    const byId = this._cache.byId;
    const cached = byId.get(id);
    if (cached !== undefined) return cached;
    const i = this._native.indexOf(keyOf(id));
    if (i === null) return undefined;
    const o = this._obj(i);
    if (typeof id === "string") byId.set(id, o);
    return o;
  }

  getChildren(parentId) {
    return this._objsAt(this._native.children(parentId === null ? null : keyOf(parentId)), true);
  }

  getLabel(id) {
    const i = this._native.labelIndex(keyOf(id));
    return i === null ? undefined : this._obj(i).label;
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
    const c = this._cache.branch;
    if (c !== null && c.leaf === leaf && c.n === n) return c.arr.slice();
    const arr = this._objsAt(core.branch(null), true);
    this._cache.branch = { leaf, n, arr };
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
    const appends = this._appends;
    const q = plan === null ? null : appends.entries;
    const qThinking = appends.lastThinking;
    const qModel = appends.lastModel;
    if (plan === null) plan = this._leafPlan();
    let selected = this._objsAt(plan.indices);
    const rustCount = selected.length;
    if (q !== null) selected = selected.concat(q);
    const editIdx = plan.edits;
    const editFor = (_e, index) =>
      index < rustCount && editIdx[index] !== native.NO_EDIT ? this._obj(editIdx[index]) : undefined;
    if (!withSettings) return { selected, editFor, thinkingLevel: "off", model: null };
    let thinking;
    if (q !== null && qThinking >= 0) thinking = q[qThinking];
    else if (plan.thinkingFrom != null) thinking = this._obj(plan.thinkingFrom);
    let modelEntry;
    if (q !== null && qModel >= 0) modelEntry = q[qModel];
    else if (plan.modelFrom != null) modelEntry = this._obj(plan.modelFrom);
    const thinkingLevel = thinking === undefined ? "off" : thinking.thinkingLevel;
    let model = null;
    if (modelEntry !== undefined) {
      const e = modelEntry;
      model =
        e.type === "model_change"
          ? { provider: e.provider, modelId: e.modelId }
          : { provider: e.message.provider, modelId: e.message.model };
    }
    return { selected, editFor, thinkingLevel, model };
  }

  /**
   * Rust's context plan for the current leaf, kept while the leaf and the entry count are the
   * same (as `_leafBranch` keeps the branch): pi builds the context or its projection three
   * times at start-up and again around every turn, and each plan walks the whole path (~55 ms
   * for a 700 MB session's 321,395 entries).
   */
  _leafPlan() {
    const core = this._native;
    const leaf = core.leafKey() ?? null;
    const n = core.length;
    const c = this._cache.plan;
    if (c !== null && c.leaf === leaf && c.n === n) return c.plan;
    const plan = core.contextPlan();
    this._cache.plan = { leaf, n, plan };
    return plan;
  }

  /**
   * Rust's context plan for the leaf the queued appends started from, when they extend it as
   * they are (the context is then that plan followed by the queued entries, and nothing is
   * handed over); `null` otherwise (`AppendQueue.plan`).
   */
  _queuedPlan() {
    return this._appends.plan(this._core);
  }

  getHeader() {
    const h = this._native.headerIndex();
    return h !== null ? this._obj(h) : null;
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
    // Oldest first; iterative so deep trees cannot overflow the stack. Each entry's time is
    // parsed once (the reference parses both dates in every comparison: the same order, at
    // n log n date parses).
    const times = new Map();
    const timeOf = (node) => {
      let t = times.get(node);
      if (t === undefined) {
        t = new Date(node.entry.timestamp).getTime();
        times.set(node, t);
      }
      return t;
    };
    const stack = roots.slice();
    while (stack.length > 0) {
      const node = stack.pop();
      if (node.children.length > 1) node.children.sort((a, b) => timeOf(a) - timeOf(b));
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
    const header = sessionHeader(newSessionId, timestamp, this.cwd, this.persist ? previousSessionFile : undefined);
    // Fast route: Rust splices parentId (and a relabelled firstKeptEntryId) into the lines,
    // which are already in JSON.stringify form, without materializing the path (crates/core/src/branch.rs).
    // Only for a path none of whose objects JS has handed out: the reference spreads the
    // live objects (a caller's mutation, an appended entry's undefined-valued keys), and
    // those are only known here.
    const from = leafId === undefined || leafId === null ? null : keyOf(leafId);
    const path = this._native.branch(from);
    if (path.length === 0) throw new Error(`Entry ${leafId} not found`);
    let untouched = true;
    const objs = this._cache.objs;
    for (const i of path) {
      if (objs[i] !== undefined) {
        untouched = false;
        break;
      }
    }
    this._shells.settle();
    const done = untouched ? this._native.branchInto(from, stringifyEntry(header), drawLabelId) : Branched.ObjectRoute;
    if (done === Branched.NotFound) throw new Error(`Entry ${leafId} not found`);
    if (done === Branched.Done) {
      this.sessionId = newSessionId;
      this._adopt([header]);
    } else {
      this._branchFromObjects(leafId, header);
    }
    if (this.persist) {
      const newSessionFile = sessionFileName(this.getSessionDir(), timestamp, newSessionId);
      this.sessionFile = newSessionFile;
      this._native.setFile(newSessionFile, false);
      // Same rule as the first flush: write now only if the path holds a conversation.
      if (this._native.hasConversation()) {
        this._native.rewrite();
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
          entry.firstKeptEntryId === entry.id
            ? entry.id
            : (replacementByLabelId.get(entry.firstKeptEntryId) ?? entry.firstKeptEntryId);
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
      const id = drawFreshId((c) => pathEntryIds.has(c));
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
    const { dir, path } = discovery.continueRecentPath(cwd, sessionDir);
    return new SessionManager(cwd, dir, path || undefined, true);
  }

  static inMemory(cwd = process.cwd(), options, entries) {
    return new SessionManager(cwd, "", undefined, false, options, entries);
  }

  static forkFrom(sourcePath, targetCwd, sessionDir, options) {
    const resolvedSourcePath = paths.resolvePath(sourcePath);
    const resolvedTargetCwd = paths.resolvePath(targetCwd);
    // Appends to the source that this process has not synced yet (a manager still open on
    // it, batch mode) go to the device before the copy is made durable.
    native.syncPendingAppends(resolvedSourcePath);
    const source = new native.NativeSession(true);
    const { count } = source.loadFile(resolvedSourcePath);
    if (count === 0) throw new Error(`Cannot fork: source session file is empty or invalid: ${resolvedSourcePath}`);
    if (source.headerIndex() === null)
      throw new Error(`Cannot fork: source session has no header: ${resolvedSourcePath}`);
    const dir = sessionDir ? paths.normalizePath(sessionDir) : paths.getDefaultSessionDir(resolvedTargetCwd);
    if (!existsSync(dir)) paths.makeDir(dir);
    if (options?.id !== undefined) assertValidSessionId(options.id);
    const newSessionId = options?.id ?? native.uuidv7();
    const timestamp = nowStamp();
    const newSessionFile = sessionFileName(dir, timestamp, newSessionId);
    const newHeader = sessionHeader(newSessionId, timestamp, resolvedTargetCwd, resolvedSourcePath);
    source.forkInto(newSessionFile, stringifyEntry(newHeader));
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

module.exports = { SessionManager, CURRENT_SESSION_VERSION, assertValidSessionId };
