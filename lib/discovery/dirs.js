"use strict";
// Which session directory a call looks in, and which of its sessions belong to the cwd:
// the rules `list`, `findById` and `continueRecent` share.
const { readdirSync } = require("node:fs");
const { join } = require("node:path");
const {
  normalizePath,
  pathsEqual,
  resolvePath,
  getDefaultSessionDir,
  getDefaultSessionDirPath,
} = require("../paths.js");

/**
 * The directory of `cwd`'s sessions (`sessionDir` or the default one) and whether its
 * sessions must be filtered by cwd (a custom directory other than the default may hold
 * sessions of other cwds).
 */
function sessionScope(cwd, sessionDir) {
  const dir = sessionDir ? normalizePath(sessionDir) : getDefaultSessionDir(cwd);
  const filterCwd = sessionDir !== undefined && !pathsEqual(dir, getDefaultSessionDirPath(cwd));
  return { dir, filterCwd };
}

/** A header's cwd, when it is a string. */
function getSessionHeaderCwd(header) {
  const cwd = header.cwd;
  return typeof cwd === "string" ? cwd : undefined;
}

function sessionCwdMatches(cwd, resolvedCwd) {
  return cwd !== undefined && cwd !== "" && pathsEqual(resolvePath(cwd), resolvedCwd);
}

/**
 * `join(dir, name)` is `dirPrefix(dir) + name` for a directory entry's name (no separator,
 * never "." or ".."): `join` normalizes `dir` and adds one separator (none after a root).
 * Computed once per directory: `join` per file was a tenth of a warm 10,000-file listing.
 */
function dirPrefix(dir) {
  return join(dir, "a").slice(0, -1);
}

/** The `.jsonl` files of `dir`, in directory order (throws as `readdirSync` does). */
function sessionFilesSync(dir) {
  const prefix = dirPrefix(dir);
  return readdirSync(dir)
    .filter((file) => file.endsWith(".jsonl"))
    .map((file) => prefix + file);
}

module.exports = { sessionScope, getSessionHeaderCwd, sessionCwdMatches, dirPrefix, sessionFilesSync };
