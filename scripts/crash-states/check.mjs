// Checking crash states: each state is written to a scratch folder twice (one copy per reader,
// since opening repairs and migrates files) and opened by ours and by the reference.
//
// What must hold (docs/durability.md, "Power loss"):
//   - every session the promise covers exists and opens, in ours and in the reference;
//   - every entry the promise covers is in it (an initial session keeps at least its entries);
//   - a whole-file write in progress at the crash leaves the old content (or a prefix of it:
//     appends of the old file not synced yet) or the new content, never a mix;
//   - no line but a torn last one is invalid JSON (lines invalid in the initial state aside);
//   - every parentId resolves; ours and the reference read the same entries;
//   - no temp file of a whole-file write is left with a session file's name;
//   - the sidecar listing index and the search index never change an answer: listing and
//     searching the state as it is gives what they give without the index files.
// Which entries "the promise covers" depends on the writer and the model (promise()).
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join, relative } from "node:path";
import { programContent } from "./model.mjs";

// Opening a state must not fsync (speed) and must see the index as written.
process.env.PI_SESSION_NATIVE_FSYNC = "never";
const require = createRequire(import.meta.url);
const repo = join(import.meta.dirname, "..", "..");
const ours = require(join(repo, "index.js"));
const ref = await import(join(repo, "node_modules/@earendil-works/pi-coding-agent/dist/core/session-manager.js"));
const CWD = "/home/user/project";
const INDEX_FILES = /^\.pi-session-(index|search)/;

/**
 * Marks of a run: acks ({ i, kind, path, ids, ino }), whole-file windows ({ from, to, path })
 * and file switches ({ i, path }: the file left).
 */
export function readMarks(ops) {
  const acks = [];
  const windows = [];
  const switches = [];
  let open;
  for (const o of ops) {
    if (o.kind !== "mark") continue;
    const [kind, path, rest] = o.text.split(" ");
    if (kind === "append" || kind === "whole") acks.push({ i: o.i, kind, path, ids: rest.split(","), ino: o.ino });
    else if (kind === "synced") switches.push({ i: o.i, path });
    else if (kind === "begin") open = o.i;
    else if (kind === "end" && open !== undefined) {
      windows.push({ from: open, to: o.i, path });
      open = undefined;
    }
  }
  return { acks, windows, switches };
}

/**
 * Whether the promise of `writer` (ours-batch, ours-always, ours-never, ref) under `model`
 * covers an ack at crash point k. `prefix`: everything issued is durable, for every writer.
 * `barrier`: `always` every ack; `batch` whole-file writes at once, appends once an fsync of
 * their file completed after them, once a file switch away from their file returned, and every
 * ack once the process has exited; `never` and the reference (which never fsyncs) nothing.
 */
export function promise(writer, model, ops) {
  const exitAt = ops.find((o) => o.kind === "exit")?.i ?? Number.POSITIVE_INFINITY;
  const { switches } = readMarks(ops);
  const syncs = new Map();
  for (const o of ops) if (o.kind === "sync") syncs.set(o.unit, [...(syncs.get(o.unit) ?? []), o.i]);
  return (ack, k) => {
    if (ack.i >= k) return false;
    if (model === "prefix" || writer === "ours-always") return true;
    if (writer !== "ours-batch") return false;
    if (ack.kind === "whole" || exitAt < k) return true;
    if (switches.some((w) => w.path === ack.path && w.i > ack.i && w.i < k)) return true;
    return (
      (syncs.get(`f${ack.ino}`) ?? []).some((s) => s > ack.i && s < k) ||
      (syncs.get("*") ?? []).some((s) => s > ack.i && s < k)
    );
  };
}

/** Lines of a file's text; `torn`: it does not end with a newline. */
function splitLines(text) {
  const lines = text.split("\n");
  const torn = lines[lines.length - 1] !== "";
  if (!torn) lines.pop();
  return { lines, torn };
}

function parses(l) {
  try {
    JSON.parse(l);
    return true;
  } catch {
    return false;
  }
}

function writeState(state, dir, skip) {
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  for (const d of [...state.dirs].sort()) mkdirSync(join(dir, d), { recursive: true });
  for (const [f, b] of state.files) if (!skip?.(f)) writeFileSync(join(dir, f), b);
}

/** The entries a SessionManager class reads from `file` (opening it: repairs, migrates). */
function readWith(SM, file) {
  const sm = SM.open(file);
  return sm.getEntries();
}

function sameEntries(a, b, byType) {
  const key = (e) => (byType ? e.type : `${e.type}:${e.id}`);
  return a.length === b.length && a.every((e, i) => key(e) === key(b[i]));
}

/** The listing's answer without what may legitimately differ between two listings (times). */
function listingKey(list, dir) {
  return JSON.stringify(
    list
      .map((s) => [relative(dir, s.path), s.id, s.messageCount, s.firstMessage, s.name ?? null, s.allMessagesText])
      .sort((a, b) => String(a[0]).localeCompare(String(b[0]))),
  );
}

function searchKey(hits, dir) {
  return JSON.stringify(
    hits
      .map((h) => [relative(dir, h.sessionPath), h.entryId, h.role, h.snippet, h.onActiveBranch])
      .sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b))),
  );
}

/**
 * A checker for one recorded run: check(state, k) answers the problems of a state,
 * each { kind, file, detail, promised } (promised: the promise covered what was lost; for
 * structural problems always true).
 */
export function checker(rec, writer, model, scratch) {
  const { ops, init, root, initial } = rec;
  const { acks, windows } = readMarks(ops);
  const covered = promise(writer, model, ops);
  const windowText = windows.map((w) => ({
    ...w,
    rel: relative(root, w.path),
    old: programContent(ops, init, root, w.from, w.path),
    new: programContent(ops, init, root, w.to, w.path),
  }));
  // Initial sessions must survive whatever the writer did to them, where whole-file writes
  // are durable: always under the prefix model, under the barrier model for fsyncing writers.
  const initialKept = model === "prefix" || writer === "ours-batch" || writer === "ours-always";
  const dirO = join(scratch, "o");
  const dirR = join(scratch, "r");
  const dirX = join(scratch, "x");
  // What a state's files read as depends on the files only: read once per distinct state.
  const cache = new Map();
  const check = async (state, k) => {
    let seen = cache.get(state.key);
    if (!seen) {
      seen = await readState(state);
      cache.set(state.key, seen);
    }
    const problems = [...seen.problems];
    const add = (kind, file, detail, promised = true) => problems.push({ kind, file, detail, promised });
    const { read } = seen;
    for (const [f, count] of initial.counts) {
      const ids = read.get(f);
      if (!ids) add("lost-session", f, "an initial session is gone", initialKept);
      else if (ids.size < count) add("lost-entry", f, `${ids.size} of ${count} initial entries`, initialKept);
    }
    for (const ack of acks) {
      if (ack.i >= k) continue;
      const f = relative(root, ack.path);
      const ids = read.get(f);
      const promised = covered(ack, k);
      if (!ids) add("lost-session", f, `${ack.kind} at op ${ack.i}`, promised);
      else
        for (const id of ack.ids) if (!ids.has(id)) add("lost-entry", f, `${ack.kind} ${id} at op ${ack.i}`, promised);
    }
    for (const w of windowText) {
      if (k <= w.from || k > w.to) continue;
      const now = state.files.get(w.rel);
      const isNew = now !== undefined && w.new !== undefined && now.equals(w.new);
      const isOld =
        w.old === undefined ? now === undefined : now !== undefined && w.old.subarray(0, now.length).equals(now);
      if (!isNew && !isOld)
        add("mixed-whole-file", w.rel, `neither old nor new (${now?.length ?? "absent"} bytes)`, initialKept);
    }
    return problems;
  };
  check.distinct = () => cache.size;
  return check;

  /** Open every session file of a state with both readers: { problems, read: Map file -> ids }. */
  async function readState(state) {
    const problems = [];
    const add = (kind, file, detail) => problems.push({ kind, file, detail, promised: true });
    writeState(state, dirO);
    writeState(state, dirR);
    if (rec.workload === "index" && writer.startsWith("ours")) await checkIndexes(state, dirO, dirX, add);
    const read = new Map();
    for (const [f, bytes] of state.files) {
      const base = f.split("/").pop();
      if (base.startsWith(".") && base.endsWith(".jsonl")) add("stray-temp", f, "a temp file named like a session");
      if (!f.endsWith(".jsonl") || base.startsWith(".")) continue;
      const { lines, torn } = splitLines(bytes.toString("utf8"));
      const allowed = initial.invalid.get(f) ?? new Set();
      lines.forEach((l, j) => {
        if (j === lines.length - 1 && torn) return;
        if (!parses(l) && !allowed.has(l)) add("invalid-line", f, `line ${j + 1}: ${l.slice(0, 60)}`);
      });
      let mine;
      let theirs;
      try {
        mine = readWith(ours.SessionManager, join(dirO, f));
      } catch (e) {
        add("open-failed", f, `ours: ${String(e).slice(0, 120)}`);
      }
      try {
        theirs = readWith(ref.SessionManager, join(dirR, f));
      } catch (e) {
        add("open-failed", f, `reference: ${String(e).slice(0, 120)}`);
      }
      if (mine) {
        const ids = new Set(mine.map((e) => e.id));
        for (const e of mine)
          if (e.parentId !== null && e.parentId !== undefined && !ids.has(e.parentId))
            add("dangling-parent", f, `${e.id} -> ${e.parentId}`);
        read.set(f, ids);
        const v1 = !/"version":\s*3/.test(lines[0] ?? "");
        if (theirs && !sameEntries(mine, theirs, v1)) add("disagree", f, `${mine.length} vs ${theirs.length} entries`);
      }
    }
    return { problems, read };
  }
}

/** Answers without the index files, by the session files' contents (the same for many states). */
const bareAnswers = new Map();

/** The sidecar listing index and the search index must not change an answer. */
async function checkIndexes(state, dirO, dirX, add) {
  const dir = join(dirO, "sessions/i");
  const isIndex = (f) => INDEX_FILES.test(f.split("/").pop());
  const sessionsKey = [...state.files]
    .filter(([f]) => !isIndex(f))
    .map(([f, b]) => `${f}:${b.toString("base64")}`)
    .sort()
    .join("\n");
  let bare = bareAnswers.get(sessionsKey);
  try {
    if (!bare) {
      const x = join(dirX, "sessions/i");
      writeState(state, dirX, isIndex);
      process.env.PI_SESSION_NATIVE_NO_INDEX = "1";
      bare = { list: listingKey(await ours.SessionManager.list(CWD, x), x) };
      delete process.env.PI_SESSION_NATIVE_NO_INDEX;
      for (const q of QUERIES) bare[q] = searchKey(await ours.searchSessions(q, { sessionDir: x }), x);
      bareAnswers.set(sessionsKey, bare);
    }
  } finally {
    delete process.env.PI_SESSION_NATIVE_NO_INDEX;
  }
  try {
    const withIndex = listingKey(await ours.SessionManager.list(CWD, dir), dir);
    if (withIndex !== bare.list) add("index-wrong", "sessions/i", "the listing with the sidecar index differs");
  } catch (e) {
    add("index-wrong", "sessions/i", `listing failed: ${String(e).slice(0, 120)}`);
  }
  for (const q of QUERIES) {
    try {
      const a = searchKey(await ours.searchSessions(q, { sessionDir: dir }), dir);
      if (a !== bare[q]) add("search-wrong", "sessions/i", `search ${q} with the state's index differs`);
    } catch (e) {
      add("search-wrong", "sessions/i", `search failed: ${String(e).slice(0, 120)}`);
    }
  }
}

const QUERIES = ["needle1", "needle2"];
