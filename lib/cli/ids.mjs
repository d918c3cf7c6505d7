// Session ids on the command line: FILE|ID arguments (show, export, check) resolve an id prefix
// against a store's session headers, and the ids ls and search print are prefixes that resolve
// to exactly one session of that same store. pi's ids are uuid v7: sessions started within about
// a minute share their first 8 characters, so a fixed-width prefix would be ambiguous.
import { existsSync, readdirSync } from "node:fs";
import { createRequire } from "node:module";
import { join, resolve } from "node:path";
import { CliError, hasJsonl, isDir, paths } from "./util.mjs";

const discovery = createRequire(import.meta.url)("../discovery/index.js");

/** Characters of an id printed on a terminal at the least (a uuid's first group). */
export const MIN_ID = 8;

/**
 * Session files of a store, like listAll's candidates (no content read): `dir` holding
 * `*.jsonl` is one session directory; otherwise `dir` (default: pi's sessions root) is a root
 * and its project directories are read.
 * @param {string} [dir]
 */
export function storeFiles(dir) {
  const base = dir !== undefined ? resolve(paths.normalizePath(dir)) : paths.getSessionsDir();
  const jsonl = (d) => {
    try {
      return readdirSync(d)
        .filter((f) => f.endsWith(".jsonl"))
        .map((f) => join(d, f));
    } catch {
      return [];
    }
  };
  if (!isDir(base)) return [];
  if (dir !== undefined && hasJsonl(base)) return jsonl(base);
  let subdirs = [];
  try {
    subdirs = readdirSync(base, { withFileTypes: true }).filter((e) => e.isDirectory() || e.isSymbolicLink());
  } catch {
    return [];
  }
  return subdirs.flatMap((e) => jsonl(join(base, e.name)));
}

/**
 * `{path, id}` of every session of the store `dir` (storeFiles), from their headers (the
 * discovery layer's bounded header read; ~15 ms for 1,000 sessions): what an ID argument is
 * resolved against. Files without a readable header are left out.
 * @param {string} [dir]
 * @returns {{ path: string, id: string }[]}
 */
export function storeSessionIds(dir) {
  const found = [];
  for (const f of storeFiles(dir)) {
    let h = null;
    try {
      h = discovery.readSessionHeader(f);
    } catch {
      // unreadable or oversized header: not a candidate
    }
    if (h && typeof h.id === "string") found.push({ path: f, id: h.id });
  }
  return found;
}

/** Length of the common prefix of two strings. */
function common(a, b) {
  let i = 0;
  while (i < a.length && i < b.length && a[i] === b[i]) i++;
  return i;
}

/**
 * The id to print for each of `ids`: its shortest prefix of at least `min` characters that no
 * other id of `among` (the store the ids are resolved against) starts with, so that `show`,
 * `export` and `check` take it. An id `among` holds twice (a copied file) is printed whole.
 * @param {string[]} ids
 * @param {string[]} among
 * @param {number} [min]
 * @returns {Map<string, string>} id -> prefix to print
 */
export function idPrefixes(ids, among, min = MIN_ID) {
  const sorted = [...new Set([...among, ...ids])].sort();
  const at = new Map(sorted.map((id, i) => [id, i]));
  const out = new Map();
  for (const id of ids) {
    const i = at.get(id) ?? 0;
    // In sorted order the id sharing the longest prefix with this one is a neighbour.
    const shared = Math.max(i > 0 ? common(id, sorted[i - 1]) : 0, common(id, sorted[i + 1] ?? ""));
    out.set(id, id.slice(0, Math.max(min, shared + 1)));
  }
  return out;
}

/**
 * The prefixes to print for `ids`, resolved against the store `dir` (default: pi's store, every
 * project), the one FILE|ID arguments are looked up in without or with `--dir DIR`.
 * @param {string[]} ids
 * @param {{ dir?: string, min?: number }} [options]
 */
export function printedIds(ids, { dir, min = MIN_ID } = {}) {
  return idPrefixes(
    ids,
    storeSessionIds(dir).map((s) => s.id),
    min,
  );
}

/** Whether a FILE|ID argument that names no file may be an id prefix. */
const idLike = (arg) => arg !== "" && !arg.includes("/") && !arg.includes("\\") && !arg.endsWith(".jsonl");

/**
 * FILE|ID: an existing path is used as is; otherwise the store (`dir`, or pi's store, every
 * project) is searched for a session whose header id starts with the argument.
 * @param {string} arg
 * @param {{ dir?: string }} [options]
 */
export async function resolveSession(arg, { dir } = {}) {
  const p = resolve(paths.normalizePath(arg));
  if (existsSync(p)) {
    if (isDir(p)) throw new CliError(`${arg}: is a directory`);
    return p;
  }
  if (!idLike(arg)) throw new CliError(`${arg}: no such file or directory`);
  if (dir !== undefined && !isDir(resolve(paths.normalizePath(dir)))) throw new CliError(`${dir}: not a directory`);
  const hits = storeSessionIds(dir).filter((s) => s.id.startsWith(arg));
  if (hits.length === 0) {
    const where = dir ?? paths.getSessionsDir();
    throw new CliError(`${arg}: no such file, and no session id starting with it in ${where}`);
  }
  const exact = hits.filter((h) => h.id === arg);
  const pick = exact.length === 1 ? exact : hits;
  if (pick.length > 1) {
    throw new CliError(
      `${arg}: ambiguous session id prefix (${pick.length} sessions: ${pick
        .slice(0, 3)
        .map((s) => s.id)
        .join(", ")}${pick.length > 3 ? ", …" : ""}); give more of the id`,
    );
  }
  return pick[0].path;
}

/** Whether `arg` names no file but may name a session by id (check's FILE|DIR|ID). */
export function isIdArgument(arg) {
  return idLike(arg) && !existsSync(resolve(paths.normalizePath(arg)));
}
