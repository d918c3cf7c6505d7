"use strict";
// Path rules of the reference (pi's utils/paths.js and config.js), re-implemented:
// `~` expansion, file:// URLs, resolution against process.cwd(), the agent dir from
// PI_CODING_AGENT_DIR, and the `--<cwd>--` session directory encoding.
const { homedir } = require("node:os");
const { isAbsolute, join, resolve, posix, win32 } = require("node:path");
const { fileURLToPath } = require("node:url");
const { existsSync, mkdirSync } = require("node:fs");

const APP_NAME = "pi";
const ENV_AGENT_DIR = "PI_CODING_AGENT_DIR";

/**
 * On Windows, a drive path as Git Bash, MSYS, Cygwin or WSL write it (`/c`, `/c/x/y`,
 * `/mnt/c/x`, `/cygdrive/c/x`) becomes the path Windows APIs take (`C:\`, `C:\x\y`); anything
 * else (`//server`, a path with a backslash, `/tmp`) is left as it is. pi's
 * `normalizeWindowsShellPath`, which its `normalizePath` applies on Windows first.
 */
function windowsShellPath(filePath) {
  // Named like the reference's parameter: on Windows a non-string path fails here first, with
  // the reference's TypeError text ("filePath.startsWith is not a function").
  if (!filePath.startsWith("/") || filePath.startsWith("//") || filePath.includes("\\")) return filePath;
  const drive = /^\/(?:mnt\/|cygdrive\/)?([a-z])(?:\/(.*))?$/i.exec(filePath);
  if (drive === null) return filePath;
  const rest = drive[2] === undefined ? "" : drive[2].split("/").join("\\");
  return `${drive[1].toUpperCase()}:\\${rest}`;
}

/** `normalizePath`: Windows shell drive paths, a leading `~`, file:// URLs. */
function normalizePath(input) {
  // Named like the reference's local so a wrong argument type gives the same TypeError text.
  let normalized = input;
  if (process.platform === "win32") normalized = windowsShellPath(normalized);
  const home = homedir();
  if (normalized === "~") return home;
  if (normalized.startsWith("~/") || (process.platform === "win32" && normalized.startsWith("~\\"))) {
    return join(home, normalized.slice(2));
  }
  if (/^file:\/\//.test(normalized)) return fileURLToPath(normalized);
  return normalized;
}

/** `resolvePath`: normalize, then resolve against process.cwd(). */
function resolvePath(input, baseDir = process.cwd()) {
  const p = normalizePath(input);
  const base = normalizePath(baseDir);
  return isAbsolute(p) ? resolve(p) : resolve(base, p);
}

function comparisonKey(p) {
  const api = process.platform === "win32" ? win32 : posix;
  const r = api.resolve(p);
  return api === win32 ? r.toLowerCase() : r;
}

/** `pathsEqual`: same location after resolution (case-folded on Windows). */
function pathsEqual(a, b) {
  return comparisonKey(a) === comparisonKey(b);
}

/** The agent directory (`~/.pi/agent`, or `PI_CODING_AGENT_DIR`), read at call time. */
function getAgentDir() {
  const env = process.env[ENV_AGENT_DIR];
  if (env) return normalizePath(env);
  return join(homedir(), ".pi", "agent");
}

function getSessionsDir() {
  return join(getAgentDir(), "sessions");
}

/** `<agentDir>/sessions/--<cwd with / \ : as ->--` without creating it. */
function getDefaultSessionDirPath(cwd, agentDir = getAgentDir()) {
  const resolvedCwd = resolvePath(cwd);
  const resolvedAgentDir = resolvePath(agentDir);
  const safe = `--${resolvedCwd.replace(/^[/\\]/, "").replace(/[/\\:]/g, "-")}--`;
  return join(resolvedAgentDir, "sessions", safe);
}

/** `getDefaultSessionDir`: the path above, created if missing. */
function getDefaultSessionDir(cwd, agentDir = getAgentDir()) {
  const dir = getDefaultSessionDirPath(cwd, agentDir);
  if (!existsSync(dir)) makeDir(dir);
  return dir;
}

/**
 * `mkdirSync(dir, { recursive: true })` (its errors are the reference's), then the new
 * directories made durable: the parent of each one created is fsynced, up to the first that
 * existed (unless PI_SESSION_NATIVE_FSYNC=never; docs/durability.md). A power loss then
 * cannot take a new session folder with the sessions fsynced in it.
 */
function makeDir(dir) {
  const first = mkdirSync(dir, { recursive: true });
  // The addon is loaded only here: this module also serves code that never writes.
  if (first !== undefined) require("./native.js").syncCreatedDirs(resolve(first), resolve(dir));
}

module.exports = {
  APP_NAME,
  normalizePath,
  resolvePath,
  pathsEqual,
  getAgentDir,
  getSessionsDir,
  getDefaultSessionDirPath,
  getDefaultSessionDir,
  makeDir,
};
