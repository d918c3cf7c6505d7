"use strict";
// Migration of old session files to version 3, on JS entry objects, in place (the
// reference's `migrateSessionEntries` contract). v1 -> v2 gives entries ids and a linear
// parent chain and turns `firstKeptEntryIndex` into `firstKeptEntryId`; v2 -> v3 renames
// the `hookMessage` role to `custom`.
// Looked up at call time (not destructured) so a test can stub `crypto.randomUUID`, as it can for the
// reference after `syncBuiltinESMExports()`.
const crypto = require("node:crypto");

const CURRENT_SESSION_VERSION = 3;

function freshId(taken) {
  for (let i = 0; i < 100; i++) {
    const id = crypto.randomUUID().slice(0, 8);
    if (!taken.has(id)) return id;
  }
  return crypto.randomUUID();
}

function toV2(entries) {
  // Note: like the reference, generated ids are not added to the set they are checked against.
  const taken = new Set();
  let previous = null;
  for (const entry of entries) {
    if (entry.type === "session") {
      entry.version = 2;
      continue;
    }
    entry.id = freshId(taken);
    entry.parentId = previous;
    previous = entry.id;
    if (entry.type === "compaction" && typeof entry.firstKeptEntryIndex === "number") {
      const target = entries[entry.firstKeptEntryIndex];
      if (target && target.type !== "session") entry.firstKeptEntryId = target.id;
      delete entry.firstKeptEntryIndex;
    }
  }
}

function toV3(entries) {
  for (const entry of entries) {
    if (entry.type === "session") {
      entry.version = 3;
      continue;
    }
    if (entry.type === "message" && entry.message && entry.message.role === "hookMessage") {
      entry.message.role = "custom";
    }
  }
}

/** Bring entries to the current version in place; true if anything was migrated. */
function migrateToCurrentVersion(entries) {
  const header = entries.find((e) => e.type === "session");
  const version = header?.version ?? 1;
  if (version >= CURRENT_SESSION_VERSION) return false;
  if (version < 2) toV2(entries);
  if (version < 3) toV3(entries);
  return true;
}

function migrateSessionEntries(entries) {
  migrateToCurrentVersion(entries);
}

module.exports = { migrateSessionEntries, migrateToCurrentVersion };
