"use strict";
// What a session file is made of: its name, its header line, the line of an entry, the
// session id rule.
const { join } = require("node:path");

const CURRENT_SESSION_VERSION = 3;
const SESSION_ID_PATTERN = /^[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?$/;

function assertValidSessionId(id) {
  if (!SESSION_ID_PATTERN.test(id)) {
    throw new Error(
      "Session id must be non-empty, contain only alphanumeric characters, '-', '_', and '.', and start and end with an alphanumeric character",
    );
  }
}

/** `<dir>/<timestamp with ':' and '.' as '-'>_<sessionId>.jsonl`, the reference's file name. */
function sessionFileName(dir, timestamp, sessionId) {
  return join(dir, `${timestamp.replace(/[:.]/g, "-")}_${sessionId}.jsonl`);
}

/** A session header in the reference's key order (`parentSession` kept when undefined). */
function sessionHeader(id, timestamp, cwd, parentSession) {
  return { type: "session", version: CURRENT_SESSION_VERSION, id, timestamp, cwd, parentSession };
}

/** An entry's line: `JSON.stringify`, or `{}` for a value it cannot give text for. */
function stringifyEntry(entry) {
  const line = JSON.stringify(entry);
  return typeof line === "string" ? line : "{}";
}

module.exports = { CURRENT_SESSION_VERSION, assertValidSessionId, sessionFileName, sessionHeader, stringifyEntry };
