// The one default scope of `ls`, `search` and `stats`, and what `--all` would add to it.
import { readdirSync } from "node:fs";
import { basename, join } from "node:path";
import { CliError, encodeCwd, hasJsonl, isDir, paths } from "./util.mjs";

/**
 * @typedef {{ kind: "dir" | "project" | "all", root: string, projectDir?: string, cwd: string }} Scope
 *   kind "dir": DIR holds session files (one session directory, all of it);
 *   "project": the sessions of one project (`cwd`) in a sessions root (`root`);
 *   "all": every project of the root.
 */

/**
 * What a command covers: a DIR holding `*.jsonl` is a session directory, all of it; otherwise
 * DIR (default: pi's store) is a sessions root, and the command covers the project of `--cwd`
 * or of the current directory, or every project with `--all`.
 * @param {{ dir?: string, all?: boolean, cwd?: string }} options
 * @returns {Scope}
 */
export function resolveScope({ dir, all = false, cwd }) {
  const wantCwd = paths.resolvePath(cwd ?? process.cwd());
  if (dir !== undefined) {
    const d = paths.resolvePath(dir);
    if (!isDir(d)) throw new CliError(`${dir}: ${existsAsFile(d) ? "not a directory" : "no such file or directory"}`);
    if (hasJsonl(d)) return { kind: "dir", root: d, cwd: wantCwd };
    return { kind: all ? "all" : "project", root: d, projectDir: join(d, encodeCwd(wantCwd)), cwd: wantCwd };
  }
  return {
    kind: all ? "all" : "project",
    root: paths.getSessionsDir(),
    projectDir: paths.getDefaultSessionDirPath(wantCwd),
    cwd: wantCwd,
  };
}

function existsAsFile(p) {
  try {
    readdirSync(p);
    return false;
  } catch (err) {
    return /** @type {NodeJS.ErrnoException} */ (err).code === "ENOTDIR";
  }
}

/**
 * Session files and projects outside a "project" scope's directory (what `--all` adds), by
 * counting `*.jsonl` names in the root's other project directories (nothing is read).
 * @param {Scope} scope
 * @returns {{ sessions: number, projects: number }}
 */
export function otherProjects(scope) {
  const none = { sessions: 0, projects: 0 };
  if (scope.kind !== "project") return none;
  let dirs;
  try {
    dirs = readdirSync(scope.root, { withFileTypes: true });
  } catch {
    return none;
  }
  const own = scope.projectDir ? basename(scope.projectDir) : "";
  let sessions = 0;
  let projects = 0;
  for (const e of dirs) {
    if (e.name === own || !(e.isDirectory() || e.isSymbolicLink())) continue;
    let n = 0;
    try {
      n = readdirSync(join(scope.root, e.name)).filter((f) => f.endsWith(".jsonl")).length;
    } catch {
      continue;
    }
    if (n) {
      sessions += n;
      projects++;
    }
  }
  return { sessions, projects };
}

/** `n thing` / `n things`. */
export const plural = (n, one, many = `${one}s`) => `${n.toLocaleString("en-US")} ${n === 1 ? one : many}`;

/** The one-line `--all` hint of ls and stats, or "" when --all adds nothing. */
export function allHint(scope) {
  const { sessions, projects } = otherProjects(scope);
  if (!sessions) return "";
  return `--all adds ${plural(sessions, "session")} in ${plural(projects, "other project")}`;
}
