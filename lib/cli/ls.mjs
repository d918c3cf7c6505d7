import { statSync } from "node:fs";
import { displayWidth, fitEnd, fitStart, padTo } from "./layout.mjs";
import { MIN_ID, printedIds } from "./ids.mjs";
import { allHint, plural, resolveScope } from "./scope.mjs";
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
last activity. IDs are prefixes (at least 8 characters on a terminal, 13 otherwise, longer
where sessions share them) that name one session: show, export and check take them.

  DIR           a session directory (holding *.jsonl) or a sessions root such as
                ~/.pi/agent/sessions (then: the project dir for --cwd, or all with --all).
                Default: pi's store, $PI_CODING_AGENT_DIR/sessions or ~/.pi/agent/sessions.
  --all, -a     sessions of every project (SessionManager.listAll)
  --cwd PATH    the project whose sessions to list (default: the current directory);
                also filters by the sessions' recorded cwd
  --limit N     at most N sessions (on a terminal, without --limit: a screenful, the
                total shown below)
  --json        a JSON array, one object per session:
                {path, id, cwd, name, parentSessionPath, created, modified, messageCount,
                 firstMessage, size}  (dates as ISO strings or null; name/parentSessionPath
                 null when absent; size in bytes or null)

Exit: 0 ok (also when nothing is found), 2 usage or read error.`;

export async function run(argv) {
  const { values, positionals } = parse(
    argv,
    {
      all: { type: "boolean", short: "a" },
      cwd: { type: "string" },
      json: { type: "boolean" },
      limit: { type: "string", short: "n" },
    },
    { command: "ls" },
  );
  const out = makeOut();
  if (values.help) {
    out.line(help);
    return 0;
  }
  if (positionals.length > 1) throw new CliError(`ls: expected at most one DIR, got ${positionals.length}`);
  let limit = parseIntOption(values.limit, "limit");
  const scope = resolveScope({ dir: positionals[0], all: values.all, cwd: values.cwd });
  // A terminal gets a screenful; pipes and --json get everything.
  const screen = limit === undefined && !values.json && out.columns !== undefined;
  if (screen) limit = Math.max(10, (process.stdout.rows || 24) - 4);
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
  const total = infos.length;
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
  const note = makeOut(process.stderr);
  const hint = allHint(scope);
  if (rows.length === 0) {
    note.line(`no sessions found${scope.kind === "project" ? " here" : ""}${hint ? `; ${hint}` : ""}`);
    return 0;
  }
  // Ids as prefixes that name one session of the store show/export/check look them up in: on a
  // terminal at least 8 characters, else 13 (more where sessions share them).
  const ids = printedIds(
    rows.map((r) => r.info.id),
    { dir: positionals[0], min: out.columns ? MIN_ID : 13 },
  );
  const table = rows.map(({ info: s, size }) => ({
    modified: formatDate(s.modified),
    msgs: String(s.messageCount),
    size: size === null ? "-" : formatBytes(size),
    id: ids.get(s.id) ?? s.id,
    cwd: shortenHome(s.cwd || "-"),
    title: s.name ? s.name : oneLine(s.firstMessage, out.columns ? 300 : 60),
    named: Boolean(s.name),
  }));
  const w = (k, h) => Math.max(h.length, ...table.map((r) => displayWidth(r[k])));
  const W = {
    modified: w("modified", "MODIFIED"),
    msgs: w("msgs", "MSGS"),
    size: w("size", "SIZE"),
    id: w("id", "ID"),
    cwd: w("cwd", "CWD"),
  };
  // Narrow terminals (under 100 columns) leave the size out, for the title's sake.
  const showSize = !out.columns || out.columns >= 100;
  const fixed = W.modified + W.msgs + (showSize ? W.size + 2 : 0) + W.id + 8;
  // On a terminal every row fits its width: the cwd column gets at most 30% of what the
  // fixed columns leave (cut at its start: the end of a path says most), the title the rest.
  if (out.columns) W.cwd = Math.min(W.cwd, Math.max(Math.floor((out.columns - fixed) * 0.3), 16));
  const titleMax = out.columns ? Math.max(8, out.columns - fixed - W.cwd - 2) : Infinity;
  out.line(
    out.dim(
      fitEnd(
        `${"MODIFIED".padEnd(W.modified)}  ${"MSGS".padStart(W.msgs)}  ${showSize ? `${"SIZE".padStart(W.size)}  ` : ""}${"ID".padEnd(W.id)}  ${"CWD".padEnd(W.cwd)}  NAME / FIRST MESSAGE`,
        out.columns ?? Infinity,
      ),
    ),
  );
  for (const r of table) {
    const title = Number.isFinite(titleMax) ? fitEnd(r.title, titleMax) : r.title;
    out.line(
      `${r.modified.padEnd(W.modified)}  ${r.msgs.padStart(W.msgs)}  ${showSize ? `${r.size.padStart(W.size)}  ` : ""}${out.cyan(r.id.padEnd(W.id))}  ${padTo(fitStart(r.cwd, W.cwd), W.cwd)}  ${r.named ? out.bold(title) : title}`,
    );
  }
  if (total > rows.length)
    note.line(note.dim(`${rows.length} of ${plural(total, "session")} shown; --limit ${total} for all`));
  if (hint) note.line(note.dim(hint));
  return 0;
}
