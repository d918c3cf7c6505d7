"use strict";
// pi-session-native: the reference's `session-manager` module surface, backed by Rust.
const { existsSync } = require("node:fs");
const { SessionManager, CURRENT_SESSION_VERSION, assertValidSessionId } = require("./lib/session-manager.js");
const context = require("./lib/context.js");
const { migrateSessionEntries } = require("./lib/migrate.js");
const paths = require("./lib/paths.js");
const discovery = require("./lib/discovery/index.js");
const native = require("./lib/native.js");
const { parseEntries } = require("./lib/materialize.js");
// search.js (and the SQLite index behind it) loads on the first search: a session run never needs it
let searchModule;
const search = () => {
  searchModule ??= require("./lib/search.js");
  return searchModule;
};

/** Parse JSONL text; blank and malformed lines skipped (`parseSessionEntries`). */
function parseSessionEntries(content) {
  const entries = [];
  for (const line of content.trim().split("\n")) {
    if (!line.trim()) continue;
    try {
      entries.push(JSON.parse(line));
    } catch {
      // Malformed lines are skipped, as in the reference.
    }
  }
  return entries;
}

/** All file entries (header first) of a session file; [] if missing or not a session. */
function loadEntriesFromFile(filePath) {
  const resolved = paths.normalizePath(filePath);
  if (!existsSync(resolved)) return [];
  const s = new native.NativeSession(false);
  const { count } = s.loadFile(resolved);
  if (count === 0) return [];
  const out = new Array(count);
  parseEntries(
    s,
    Uint32Array.from({ length: count }, (_, i) => i),
    (k, o) => {
      out[k] = o;
    },
  );
  return out;
}

function findMostRecentSession(sessionDir, cwd) {
  return discovery.findMostRecentSession(sessionDir, cwd);
}

module.exports = {
  CURRENT_SESSION_VERSION,
  SessionManager,
  assertValidSessionId,
  migrateSessionEntries,
  parseSessionEntries,
  getLatestCompactionEntry: context.getLatestCompactionEntry,
  sessionEntryToContextMessages: context.sessionEntryToContextMessages,
  buildContextEntries: context.buildContextEntries,
  projectContextEntry: context.projectContextEntry,
  buildSessionProjection: context.buildSessionProjection,
  buildSessionContext: context.buildSessionContext,
  getDefaultSessionDir: paths.getDefaultSessionDir,
  loadEntriesFromFile,
  findMostRecentSession,
  searchSessions: (query, options) => search().searchSessions(query, options),
  warmSearchIndex: (options) => search().warmSearchIndex(options),
  readSessionWindow: (sessionPath, entryId, options) => search().readSessionWindow(sessionPath, entryId, options),
  searchIndexReading: () => search().searchIndexReading(),
};
