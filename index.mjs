// ESM entry: the same module as index.js.
import { createRequire } from "node:module";
const require = createRequire(import.meta.url);
const m = require("./index.js");
export const {
  CURRENT_SESSION_VERSION,
  SessionManager,
  assertValidSessionId,
  migrateSessionEntries,
  parseSessionEntries,
  getLatestCompactionEntry,
  sessionEntryToContextMessages,
  buildContextEntries,
  projectContextEntry,
  buildSessionProjection,
  buildSessionContext,
  getDefaultSessionDir,
  loadEntriesFromFile,
  findMostRecentSession,
  searchSessions,
  warmSearchIndex,
  readSessionWindow,
  searchIndexReading,
} = m;
export default m;
