"use strict";
// `SessionManager.list` / `listAll` with the reference's results (pi-coding-agent
// session-manager.js: listSessionsFromDir, list, listAll).
//
// JS keeps everything whose exact semantics live in the JS engine or in Node's fs:
// directory listing, `localeCompare` sorts, Date construction, `String#trim`, progress
// callbacks, AbortSignal handling. The per-file work runs natively (./extract.js).
// Progress: as in the reference, onProgress runs as files complete (completion order), with
// the same counts, publish points and sorted partial lists, throttled (./progress.js); which
// files a partial list holds depends on completion order, as in the reference. Abort: the
// signal is checked before starting and between steps; the promise rejects with
// signal.reason, as throwIfAborted does.

const { existsSync } = require("node:fs");
const { readdir } = require("node:fs/promises");
const { basename, join } = require("node:path");
const native = require("../native.js");
const { normalizePath, resolvePath, getSessionsDir } = require("../paths.js");
const { buildSessionInfos, PROFILE } = require("./extract.js");
const { sessionScope, sessionCwdMatches, dirPrefix } = require("./dirs.js");
const {
  CURRENT_SESSION_LIST_PUBLISH_INTERVAL,
  ALL_SESSION_LIST_PUBLISH_INTERVAL,
  throttledProgress,
} = require("./progress.js");

const MAX_CONCURRENT_SESSION_DISCOVERY_LOADS = 64;

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
  const { dir, filterCwd } = sessionScope(cwd, sessionDir);
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

module.exports = { list, listAll };
