// Shared helpers of the pi-session CLI: output, colour, errors, formatting, store paths.
import { createRequire } from "node:module";
import { closeSync, constants as fsc, existsSync, fstatSync, openSync, readSync, readdirSync, statSync } from "node:fs";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { fitLine } from "./layout.mjs";
import { MARK, errLine, jsonSafe, sanitize } from "./sanitize.mjs";
import { didYouMean } from "./suggest.mjs";

export { errLine, sanitize };

const require = createRequire(import.meta.url);
export const pkg = require("../../index.js");
export const paths = require("../paths.js");
export const { SessionManager } = pkg;

/** Exit codes (documented in `pi-session --help`). */
export const EXIT = { OK: 0, PROBLEMS: 1, ERROR: 2 };

/** An error reported as one line on stderr, with the exit code to use. */
export class CliError extends Error {
  constructor(message, code = EXIT.ERROR) {
    super(message);
    this.exitCode = code;
  }
}

/** Name of a non-regular file type (fs.Stats / Dirent). */
export function fileKind(st) {
  if (st.isFIFO()) return "fifo";
  if (st.isCharacterDevice()) return "character device";
  if (st.isBlockDevice()) return "block device";
  if (st.isSocket()) return "socket";
  if (st.isDirectory()) return "directory";
  return "special file";
}

/**
 * The bytes of a regular file, read up to the size it had when opened. Opened with
 * O_NONBLOCK (a FIFO never blocks the open) and checked on the descriptor: anything but a
 * regular file (FIFO, device, socket) throws `{ code: "ENOTREG" }`; a directory keeps EISDIR.
 */
export function readRegularFile(file) {
  const fd = openSync(file, fsc.O_RDONLY | (fsc.O_NONBLOCK ?? 0));
  try {
    const st = fstatSync(fd);
    if (st.isDirectory())
      throw Object.assign(new Error(`EISDIR: illegal operation on a directory, read`), { code: "EISDIR" });
    if (!st.isFile()) throw Object.assign(new Error(`not a regular file (${fileKind(st)})`), { code: "ENOTREG" });
    const buf = Buffer.allocUnsafe(st.size);
    let n = 0;
    while (n < buf.length) {
      const r = readSync(fd, buf, n, buf.length - n, n);
      if (r === 0) break;
      n += r;
    }
    return buf.subarray(0, n);
  } finally {
    closeSync(fd);
  }
}

/**
 * One stderr warning per `*.jsonl` in `dirs` that is not a regular file (the listing skips
 * those: a FIFO would block, a device never ends).
 */
export function warnSpecialFiles(dirs) {
  for (const d of dirs) {
    let names;
    try {
      names = readdirSync(d).filter((f) => f.endsWith(".jsonl"));
    } catch {
      continue;
    }
    for (const f of names) {
      const p = join(d, f);
      let st;
      try {
        st = statSync(p);
      } catch {
        continue;
      }
      if (!st.isFile() && !st.isDirectory()) errLine(`pi-session: ${p}: not a regular file (${fileKind(st)}); skipped`);
    }
  }
}

/** One-line description of an fs error, with the path. */
export function fsErrorMessage(err, path) {
  const code = err?.code;
  const notRegular = /not a regular file \(([^)]*)\)/.exec(String(err?.message || ""));
  const what = notRegular
    ? `not a regular file (${notRegular[1]})`
    : code === "ENOENT"
      ? "no such file or directory"
      : code === "EISDIR"
        ? "is a directory"
        : code === "ENOTDIR"
          ? "not a directory"
          : code === "EACCES" || code === "EPERM"
            ? "permission denied"
            : String(err?.message || err).split("\n")[0];
  return `${path}: ${what}`;
}

/**
 * Output sink with colour decided once: only on a TTY, never with NO_COLOR.
 * @param {{ isTTY?: boolean, columns?: number, write: (s: string) => unknown }} [stream] a writable stream (or a stand-in in tests)
 * @param {Record<string, string | undefined>} [env]
 */
export function makeOut(stream = process.stdout, env = process.env) {
  // no-color.org: NO_COLOR set to a non-empty value disables colour.
  const color = Boolean(stream.isTTY) && !env.NO_COLOR && env.TERM !== "dumb";
  // Our colours are written as MARK (sanitize() turns it into ESC); every sink sanitises.
  const wrap = (open, close) => (s) => (color ? `${MARK}[${open}m${s}${MARK}[${close}m` : String(s));
  const columns = stream.isTTY && stream.columns > 0 ? stream.columns : undefined;
  return {
    color,
    columns,
    write: (s) => stream.write(sanitize(s, color)),
    line: (s = "") => stream.write(`${sanitize(s, color)}\n`),
    /** A line fitted to the terminal's width (layout.mjs fitLine), as is elsewhere. */
    row: (s = "") => stream.write(`${sanitize(columns ? fitLine(s, columns) : s, color)}\n`),
    /** `--json` output: JSON.stringify, with every C0/C1/bidi control \u-escaped. */
    json: (v) => stream.write(`${jsonSafe(JSON.stringify(v, null, 2))}\n`),
    bold: wrap(1, 22),
    dim: wrap(2, 22),
    red: wrap(31, 39),
    green: wrap(32, 39),
    yellow: wrap(33, 39),
    blue: wrap(34, 39),
    magenta: wrap(35, 39),
    cyan: wrap(36, 39),
  };
}

/**
 * util.parseArgs with CLI-friendly errors: one line naming the command, and for an unknown
 * long option the nearest known one.
 * @param {string[]} argv
 * @param {import("node:util").ParseArgsOptionsConfig} options
 * @param {{ allowPositionals?: boolean, command?: string }} [config]
 * @returns {{ values: Record<string, any>, positionals: string[] }}
 */
export function parse(argv, options, { allowPositionals = true, command } = {}) {
  const all = { help: { type: /** @type {const} */ ("boolean"), short: "h" }, ...options };
  try {
    return parseArgs({ args: argv, options: all, allowPositionals, strict: true });
  } catch (err) {
    const who = command ? `${command}: ` : "";
    const see = command ? ` (see pi-session ${command} --help)` : "";
    const msg = String(err.message).split("\n")[0];
    if (err.code === "ERR_PARSE_ARGS_UNKNOWN_OPTION") {
      const opt = /'([^']+)'/.exec(msg)?.[1] ?? msg;
      const hint = opt.startsWith("--")
        ? didYouMean(
            opt.split("=")[0],
            Object.keys(all).map((n) => `--${n}`),
          )
        : "";
      throw new CliError(`${who}unknown option ${opt}${hint}${see}`);
    }
    const missing = /^Option '(?:-\w, )?(--[^ ']+) <value>' argument missing/.exec(msg);
    if (missing) throw new CliError(`${who}${missing[1]} needs a value${see}`);
    const noValue = /^Option '(?:-\w, )?(--[^ ']+)' does not take an argument/.exec(msg);
    if (noValue) throw new CliError(`${who}${noValue[1]} takes no value${see}`);
    throw new CliError(`${who}${msg}`);
  }
}

export function parseIntOption(value, name) {
  if (value === undefined) return undefined;
  if (!/^\d+$/.test(value))
    throw new CliError(`--${name}: expected a non-negative integer, got ${JSON.stringify(value)}`);
  return Number(value);
}

export function formatBytes(n) {
  if (n < 1000) return `${n} B`;
  const units = ["kB", "MB", "GB", "TB"];
  let v = n;
  let i = -1;
  do {
    v /= 1000;
    i++;
  } while (v >= 1000 && i < units.length - 1);
  return `${v < 10 ? v.toFixed(1) : Math.round(v)} ${units[i]}`;
}

const pad2 = (n) => String(n).padStart(2, "0");
/** `YYYY-MM-DD HH:MM` in local time (set TZ for reproducible output). */
export function formatDate(d) {
  const date = d instanceof Date ? d : new Date(d);
  if (Number.isNaN(date.getTime())) return "-";
  return `${date.getFullYear()}-${pad2(date.getMonth() + 1)}-${pad2(date.getDate())} ${pad2(date.getHours())}:${pad2(date.getMinutes())}`;
}

export function isoOrNull(d) {
  if (d === undefined || d === null) return null;
  const date = d instanceof Date ? d : new Date(d);
  return Number.isNaN(date.getTime()) ? null : date.toISOString();
}

/** Collapse whitespace and cut to `max` characters (by code point). */
export function oneLine(s, max = 80) {
  // Only the head matters: cut long texts first (whitespace runs shrink, so keep extra).
  let t = String(s ?? "");
  if (t.length > max * 8 + 64) t = t.slice(0, max * 8 + 64);
  t = t.replace(/\s+/g, " ").trim();
  const cps = Array.from(t);
  return cps.length > max ? `${cps.slice(0, max - 1).join("")}…` : t;
}

export function shortenHome(p) {
  const home = process.env.HOME;
  if (home && home !== "/" && (p === home || p.startsWith(`${home}/`))) return `~${p.slice(home.length)}`;
  return p;
}

/** Text of a message's content (string, or the text blocks joined). */
export function contentText(content, sep = "\n") {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return content
    .filter((b) => b && typeof b === "object" && b.type === "text" && typeof b.text === "string")
    .map((b) => b.text)
    .join(sep);
}

export function isDir(p) {
  try {
    return statSync(p).isDirectory();
  } catch {
    return false;
  }
}

export function hasJsonl(dir) {
  try {
    return readdirSync(dir).some((f) => f.endsWith(".jsonl"));
  } catch {
    return false;
  }
}

/** Sort like the reference's sortSessionInfos (newest `modified` first), stable. */
export function sortInfos(list) {
  return list.sort((a, b) => b.modified.getTime() - a.modified.getTime());
}

/**
 * Sessions of a store.
 * - `dir` holding *.jsonl files: that session directory (SessionManager.listAll(dir)).
 * - `dir` without them: a sessions root (like ~/.pi/agent/sessions): its per-project
 *   sub-directories; with `all` every one, else the one for `cwd`.
 * - no `dir`: pi's store (PI_CODING_AGENT_DIR honoured): SessionManager.listAll() with
 *   `all`, else SessionManager.list(cwd) (without creating the directory).
 * `cwd` given explicitly also filters the result by the sessions' header cwd.
 * @param {{ dir?: string, all?: boolean, cwd?: string, explicitCwd?: boolean, onProgress?: (loaded: number, total: number) => void }} [options]
 */
export async function listSessions({ dir, all = false, cwd, explicitCwd = false, onProgress } = {}) {
  const wantCwd = resolve(cwd ?? process.cwd());
  const listed = [];
  let infos;
  if (dir !== undefined) {
    const d = resolve(paths.normalizePath(dir));
    if (!existsSync(d)) throw new CliError(`${dir}: no such file or directory`);
    if (!isDir(d)) throw new CliError(`${dir}: not a directory`);
    if (hasJsonl(d)) {
      infos = await SessionManager.listAll(d, onProgress);
      listed.push(d);
    } else {
      const subdirs = all
        ? readdirSync(d, { withFileTypes: true })
            .filter((e) => e.isDirectory() || e.isSymbolicLink())
            .map((e) => join(d, e.name))
        : [join(d, encodeCwd(wantCwd))];
      infos = [];
      let done = 0;
      for (const sd of subdirs) {
        if (!existsSync(sd)) continue;
        infos.push(...(await SessionManager.listAll(sd)));
        listed.push(sd);
        onProgress?.(++done, subdirs.length);
      }
      sortInfos(infos);
    }
  } else if (all) {
    infos = await SessionManager.listAll(onProgress);
    const base = paths.getSessionsDir();
    try {
      for (const e of readdirSync(base, { withFileTypes: true })) if (e.isDirectory()) listed.push(join(base, e.name));
    } catch {
      // no store yet
    }
  } else {
    const sd = paths.getDefaultSessionDirPath(wantCwd);
    infos = existsSync(sd) ? await SessionManager.list(wantCwd, sd, onProgress) : [];
    listed.push(sd);
  }
  warnSpecialFiles(listed);
  if (explicitCwd) infos = infos.filter((s) => paths.pathsEqual(s.cwd || "/", wantCwd) && s.cwd !== "");
  return infos;
}

/** pi's `--<cwd>--` directory name for a cwd. */
export function encodeCwd(cwd) {
  return `--${resolve(cwd)
    .replace(/^[/\\]/, "")
    .replace(/[/\\:]/g, "-")}--`;
}

/** Progress reporter on stderr, only when stderr is a TTY. */
export function progress(label) {
  if (!process.stderr.isTTY) return { onProgress: undefined, done() {} };
  let shown = false;
  return {
    onProgress(loaded, total) {
      shown = true;
      process.stderr.write(`\r\x1b[K${sanitize(label)} ${loaded}/${total}`);
    },
    done() {
      if (shown) process.stderr.write("\r\x1b[K");
    },
  };
}

/** Open a session file read-only in spirit (SessionManager.open; no writes unless appended to). */
export function openSession(file) {
  try {
    const st = statSync(file);
    if (!st.isFile() && !st.isDirectory()) throw new Error(`not a regular file (${fileKind(st)})`);
  } catch (err) {
    throw new CliError(fsErrorMessage(err, file));
  }
  let sm;
  try {
    sm = SessionManager.open(file);
  } catch (err) {
    throw new CliError(fsErrorMessage(err, file));
  }
  if (!sm.getHeader()) throw new CliError(`${file}: not a pi session file (no session header)`);
  return sm;
}

/**
 * Entries of a session file as pi's loadEntriesFromFile reads them (blank and malformed
 * lines skipped; [] unless the first parsed entry is a session header), without its
 * side effect (appending a missing final newline).
 */
export function readEntries(file) {
  let text;
  try {
    text = readRegularFile(file).toString("utf8");
  } catch (err) {
    throw new CliError(fsErrorMessage(err, file));
  }
  const entries = [];
  for (const line of text.split("\n")) {
    if (!line.trim()) continue;
    try {
      entries.push(JSON.parse(line));
    } catch {
      // skipped, as pi does
    }
  }
  if (entries.length === 0) return entries;
  const h = entries[0];
  if (h?.type !== "session" || typeof h.id !== "string") return [];
  return entries;
}

/** A SessionManager over a file's entries, in memory: reading never modifies the file. */
export function loadSession(file) {
  const entries = readEntries(file);
  if (entries.length === 0) throw new CliError(`${file}: not a pi session file (no session header)`);
  const header = entries[0];
  // Before pi's migration (run in memory below) bumps it.
  const fileVersion = typeof header.version === "number" ? header.version : 1;
  const fileHeader = JSON.parse(JSON.stringify(header));
  const cwd = typeof header.cwd === "string" && header.cwd ? header.cwd : process.cwd();
  const sm = SessionManager.inMemory(cwd, undefined, entries);
  return { sm, header: fileHeader, fileVersion, size: statSync(file).size };
}
