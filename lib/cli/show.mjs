import {
  CliError,
  formatBytes,
  formatDate,
  isoOrNull,
  loadSession,
  makeOut,
  oneLine,
  parse,
  shortenHome,
} from "./util.mjs";
import { resolveSession } from "./ids.mjs";
import { fitStart } from "./layout.mjs";
import { renderContext, treeLines } from "./render.mjs";
import { usageOf } from "./stats.mjs";

export const help = `Usage: pi-session show FILE|ID [--tree] [--context] [--full] [--json] [--dir DIR]

Print a session's header and statistics.

  FILE|ID      a session file, or a session id prefix searched for in the store
               (pi's store, or --dir DIR)
  --tree       the entry tree, like pi's /tree: branches drawn with box-drawing
               characters, • on the current branch, [labels], "← leaf" on the current leaf;
               each line starts with the entry id
  --context    what the model would see (buildSessionContext on the current leaf): one
               block per message with its source entry id; marked: [compaction summary],
               [retained tail] (a compaction's retainedTail messages), [compaction system
               message], [kept] (kept via firstKeptEntryId), [branch summary], [edited by ID]
  --full       with --context: whole message texts (default: first 4 lines)
  --json       {file, header, fileVersion, name, size, leafId, stats, tree?, context?}:
               header as in the file (before pi's migration of version 1/2 files);
               stats = {entries, byType, messages: {role: n}, leaves, labels,
               tokens, cost}; tree = getTree() flattened in pre-order (roots and
               children in getTree's order): [{id, type, parentId, label, children: [id]}];
               context = buildSessionContext() result.

The file is read, never modified. Exit: 0 ok, 2 not found / unreadable / not a session.`;

export function sessionStats(sm) {
  const entries = sm.getEntries();
  const byType = {};
  const messages = {};
  let tokens = 0;
  let cost = 0;
  const parents = new Set();
  for (const e of entries) {
    byType[e.type] = (byType[e.type] ?? 0) + 1;
    if (e.parentId) parents.add(e.parentId);
    if (e.type === "message") {
      const role = e.message?.role ?? "(none)";
      messages[role] = (messages[role] ?? 0) + 1;
    }
    const u = usageOf(e);
    if (u) {
      tokens += u.tokens;
      cost += u.cost;
    }
  }
  const leaves = entries.filter((e) => !parents.has(e.id)).length;
  let labels = 0;
  for (const e of entries) if (sm.getLabel(e.id)) labels++;
  return { entries: entries.length, byType, messages, leaves, labels, tokens, cost };
}

/** getTree() as a flat pre-order list (deep sessions would overflow a nested JSON). */
function treeJson(roots) {
  const out = [];
  const stack = [...roots].reverse();
  while (stack.length) {
    const n = stack.pop();
    out.push({
      id: n.entry.id,
      type: n.entry.type,
      parentId: n.entry.parentId ?? null,
      label: n.label ?? null,
      children: n.children.map((c) => c.entry.id),
    });
    for (let i = n.children.length - 1; i >= 0; i--) stack.push(n.children[i]);
  }
  return out;
}

export async function run(argv) {
  const { values, positionals } = parse(
    argv,
    {
      tree: { type: "boolean", short: "t" },
      context: { type: "boolean", short: "c" },
      full: { type: "boolean" },
      json: { type: "boolean" },
      dir: { type: "string" },
    },
    { command: "show" },
  );
  const out = makeOut();
  if (values.help) {
    out.line(help);
    return 0;
  }
  if (positionals.length !== 1)
    throw new CliError("show: expected one FILE or session ID (see pi-session show --help)");
  const file = await resolveSession(positionals[0], { dir: values.dir });
  const { sm, header, fileVersion, size } = loadSession(file);
  const stats = sessionStats(sm);
  const name = sm.getSessionName();
  if (values.json) {
    const j = { file, header, fileVersion, name: name ?? null, size, leafId: sm.getLeafId(), stats };
    if (values.tree) j.tree = treeJson(sm.getTree());
    if (values.context) j.context = sm.buildSessionContext();
    out.json(j);
    return 0;
  }
  // On a terminal every line fits its width (out.row).
  const kv = (k, v) => out.row(`${out.dim(k.padEnd(9))}${v}`);
  // paths cut at their start (their end says most)
  const path = (p) => (out.columns ? fitStart(p, Math.max(16, out.columns - 9)) : p);
  kv("Session", out.bold(header.id));
  if (name) kv("Name", out.bold(name));
  kv("File", path(file));
  kv("Cwd", path(shortenHome(String(header.cwd ?? ""))));
  kv("Created", `${formatDate(header.timestamp)}  (${isoOrNull(header.timestamp) ?? String(header.timestamp)})`);
  if (header.parentSession) kv("Parent", path(String(header.parentSession)));
  kv(
    "Version",
    fileVersion < 3
      ? `${fileVersion} (migrated to 3 in memory${fileVersion < 2 ? "; entry ids are generated anew on every read" : ""})`
      : String(fileVersion),
  );
  kv("Size", `${formatBytes(size)} (${size} bytes)`);
  const roles = Object.entries(stats.messages)
    .map(([r, n]) => `${r} ${n}`)
    .join(", ");
  kv("Entries", `${stats.entries}  (messages: ${roles || "none"})`);
  const other = Object.entries(stats.byType)
    .filter(([t]) => t !== "message")
    .map(([t, n]) => `${t} ${n}`)
    .join(", ");
  if (other) kv("Other", other);
  kv(
    "Branches",
    `${stats.leaves} ${stats.leaves === 1 ? "leaf" : "leaves"}; current leaf ${sm.getLeafId() ?? "(none)"}; ${stats.labels} label${stats.labels === 1 ? "" : "s"}`,
  );
  if (stats.tokens || stats.cost)
    kv("Usage", `${stats.tokens.toLocaleString("en-US")} tokens, $${stats.cost.toFixed(4)}`);
  const first = sm.getEntries().find((e) => e.type === "message" && e.message?.role === "user");
  if (first && !name)
    kv(
      "First",
      oneLine(
        first.message.content && typeof first.message.content === "string"
          ? first.message.content
          : (first.message.content ?? [])
              .filter?.((b) => b.type === "text")
              .map((b) => b.text)
              .join(" "),
        90,
      ),
    );
  if (values.tree) {
    out.line();
    out.line(out.bold("Tree"));
    for (const l of treeLines(sm, out)) out.row(l);
  }
  if (values.context) {
    out.line();
    out.line(out.bold("Context"));
    for (const l of renderContext(sm, out, { full: values.full })) out.row(l);
  }
  return 0;
}
