"use strict";
// What SessionManager needs from discovery (lib/discovery.js, the native listing):
// header reads for open(), most-recent and by-id lookups, list/listAll.
const { readdirSync, statSync } = require("node:fs");
const { join } = require("node:path");
const paths = require("./paths.js");

// Until the native discovery module is present, a small synchronous fallback keeps
// open()/continueRecent() working (full reads; no list()).
function loadFirstEntryFallback(path) {
  const { NativeSession } = require("./native.js");
  const s = new NativeSession(false);
  const { count } = s.loadFile(path);
  return count > 0 ? JSON.parse(s.line(0)) : null;
}
const fallback = {
  readSessionHeader: loadFirstEntryFallback,
  loadFirstEntry: loadFirstEntryFallback,
  findMostRecentSession(sessionDir, cwd) {
    const dir = paths.normalizePath(sessionDir);
    const want = cwd ? paths.resolvePath(cwd) : undefined;
    try {
      const files = readdirSync(dir)
        .filter((f) => f.endsWith(".jsonl"))
        .map((f) => join(dir, f))
        .map((p) => ({ p, m: statSync(p).mtimeMs }))
        .sort((a, b) => b.m - a.m);
      for (const { p } of files) {
        let h = null;
        try {
          h = loadFirstEntryFallback(p);
        } catch {}
        const hc = typeof h?.cwd === "string" ? h.cwd : undefined;
        if (h && (!want || (hc && paths.pathsEqual(paths.resolvePath(hc), want)))) return p;
      }
      return null;
    } catch {
      return null;
    }
  },
  findById() {
    throw new Error("pi-session-native: discovery module not built");
  },
  list: async () => {
    throw new Error("pi-session-native: discovery module not built");
  },
  listAll: async () => {
    throw new Error("pi-session-native: discovery module not built");
  },
};
let discovery;
try {
  discovery = require("./discovery.js");
} catch (e) {
  if (e?.code !== "MODULE_NOT_FOUND") throw e;
  discovery = fallback;
}

/**
 * `open()` reads only the header to learn the cwd. A header beyond the bounded scan falls
 * back to a full load, whose first entry is authoritative (as in the reference).
 */
function readSessionHeaderForOpen(path) {
  try {
    return discovery.readSessionHeader(path);
  } catch (error) {
    if (error?.name !== "SessionHeaderScanLimitError") throw error;
    const first = (discovery.loadFirstEntry ?? loadFirstEntryFallback)(path);
    return first?.type === "session" ? first : null;
  }
}

module.exports = {
  readSessionHeaderForOpen,
  findMostRecentSession: discovery.findMostRecentSession,
  findById: discovery.findById,
  list: discovery.list,
  listAll: discovery.listAll,
};
