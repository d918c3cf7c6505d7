import { statSync } from "node:fs";
import {
  CliError,
  formatBytes,
  formatDate,
  isoOrNull,
  listSessions,
  makeOut,
  oneLine,
  parse,
  parseIntOption,
  progress,
  shortenHome,
} from "./util.mjs";

export const help = `Usage: pi-session ls [DIR] [--all] [--cwd PATH] [--json] [--limit N]

List sessions, newest first: name (or first message), id, cwd, message count, size,
last activity.

  DIR           a session directory (holding *.jsonl) or a sessions root such as
                ~/.pi/agent/sessions (then: the project dir for --cwd, or all with --all).
                Default: pi's store, $PI_CODING_AGENT_DIR/sessions or ~/.pi/agent/sessions.
  --all, -a     sessions of every project (SessionManager.listAll)
  --cwd PATH    the project whose sessions to list (default: the current directory);
                also filters by the sessions' recorded cwd
  --limit N     at most N sessions
  --json        a JSON array, one object per session:
                {path, id, cwd, name, parentSessionPath, created, modified, messageCount,
                 firstMessage, size}  (dates as ISO strings or null; name/parentSessionPath
                 null when absent; size in bytes or null)

Exit: 0 ok (also when nothing is found), 2 usage or read error.`;

export async function run(argv) {
  const { values, positionals } = parse(argv, {
    all: { type: "boolean", short: "a" },
    cwd: { type: "string" },
    json: { type: "boolean" },
    limit: { type: "string", short: "n" },
  });
  const out = makeOut();
  if (values.help) {
    out.line(help);
    return 0;
  }
  if (positionals.length > 1) throw new CliError(`ls: expected at most one DIR, got ${positionals.length}`);
  const limit = parseIntOption(values.limit, "limit");
  const p = progress("reading sessions");
  let infos;
  try {
    infos = await listSessions({
      dir: positionals[0],
      all: values.all,
      cwd: values.cwd,
      explicitCwd: values.cwd !== undefined,
      onProgress: p.onProgress,
    });
  } finally {
    p.done();
  }
  if (limit !== undefined) infos = infos.slice(0, limit);
  const rows = infos.map((s) => {
    let size = null;
    try {
      size = statSync(s.path).size;
    } catch {
      // vanished since listing
    }
    return { info: s, size };
  });
  if (values.json) {
    const json = rows.map(({ info: s, size }) => ({
      path: s.path,
      id: s.id,
      cwd: s.cwd,
      name: s.name ?? null,
      parentSessionPath: s.parentSessionPath ?? null,
      created: isoOrNull(s.created),
      modified: isoOrNull(s.modified),
      messageCount: s.messageCount,
      firstMessage: s.firstMessage,
      size,
    }));
    out.json(json);
    return 0;
  }
  if (rows.length === 0) {
    process.stderr.write("no sessions found\n");
    return 0;
  }
  const table = rows.map(({ info: s, size }) => ({
    modified: formatDate(s.modified),
    msgs: String(s.messageCount),
    size: size === null ? "-" : formatBytes(size),
    id: s.id.length > 13 ? s.id.slice(0, 13) : s.id,
    cwd: shortenHome(s.cwd || "-"),
    title: s.name ? s.name : oneLine(s.firstMessage, 60),
    named: Boolean(s.name),
  }));
  const w = (k, h) => Math.max(h.length, ...table.map((r) => r[k].length));
  const W = {
    modified: w("modified", "MODIFIED"),
    msgs: w("msgs", "MSGS"),
    size: w("size", "SIZE"),
    id: w("id", "ID"),
    cwd: Math.min(w("cwd", "CWD"), 30),
  };
  const cut = (s, n) => (s.length > n ? `…${s.slice(s.length - n + 1)}` : s);
  out.line(
    out.dim(
      `${"MODIFIED".padEnd(W.modified)}  ${"MSGS".padStart(W.msgs)}  ${"SIZE".padStart(W.size)}  ${"ID".padEnd(W.id)}  ${"CWD".padEnd(W.cwd)}  NAME / FIRST MESSAGE`,
    ),
  );
  const fixed = W.modified + W.msgs + W.size + W.id + W.cwd + 10;
  const titleMax = out.columns ? Math.max(10, out.columns - fixed - 1) : Infinity;
  for (const r of table) {
    if (Array.from(r.title).length > titleMax) r.title = oneLine(r.title, titleMax);
    out.line(
      `${r.modified.padEnd(W.modified)}  ${r.msgs.padStart(W.msgs)}  ${r.size.padStart(W.size)}  ${out.cyan(r.id.padEnd(W.id))}  ${cut(r.cwd, W.cwd).padEnd(W.cwd)}  ${r.named ? out.bold(r.title) : r.title}`,
    );
  }
  return 0;
}
