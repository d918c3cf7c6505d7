"use strict";
// Lookups by header: `findMostRecentSession` (behind `continueRecent`) and `findById`, with
// the reference's results (pi-coding-agent session-manager.js).
const { readdirSync } = require("node:fs");
const { join } = require("node:path");
const native = require("../native.js");
const { normalizePath, resolvePath } = require("../paths.js");
const { readSessionHeaderForDiscovery } = require("./headers.js");
const { sessionScope, getSessionHeaderCwd, sessionCwdMatches, sessionFilesSync } = require("./dirs.js");

/** `findMostRecentSession(sessionDir, cwd?)`. */
function findMostRecentSession(sessionDir, cwd) {
  const resolvedSessionDir = normalizePath(sessionDir);
  const resolvedCwd = cwd ? resolvePath(cwd) : undefined;
  try {
    const paths = sessionFilesSync(resolvedSessionDir);
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
  const { dir, filterCwd } = sessionScope(cwd, sessionDir);
  return { dir, path: findMostRecentSession(dir, filterCwd ? cwd : undefined) };
}

/** `SessionManager.findById(cwd, id, sessionDir?)`. */
function findById(cwd, id, sessionDir) {
  const { dir, filterCwd } = sessionScope(cwd, sessionDir);
  const resolvedCwd = resolvePath(cwd);
  try {
    if (typeof id === "string") {
      // The headers are read natively in one call (files in directory order, the first
      // match wins); a match whose cwd is filtered out continues the scan after it.
      let paths = sessionFilesSync(dir);
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

module.exports = { findMostRecentSession, continueRecentPath, findById };
