import { errLine, formatBytes, listSessions, makeOut, parse, progress, readEntries, CliError } from "./util.mjs";
import { statSync } from "node:fs";
import { allHint, resolveScope } from "./scope.mjs";

export const help = `Usage: pi-session stats [DIR] [--all] [--cwd PATH] [--json]

Totals over a store: sessions, bytes, entries, messages by role, and tokens and cost
from usage fields (usage.totalTokens, or input + output + cacheRead + cacheWrite in older
sessions without it; usage.cost.total) of assistant messages and of usage / compaction /
branch_summary entries, by provider/model ("(summaries)" for compaction and branch
summary usage, which names no model). Every entry of every
file counts (abandoned branches too: they were paid for).

  DIR          as for ls (default: pi's store)
  --all, -a    every project (default: the current project's sessions, like ls and search)
  --cwd PATH   only the sessions of this project
  --json       {sessions, bytes, entries, messages: {role: n},
                tokens, cost, byModel: {"provider/model": {messages, tokens, cost,
                input, output, cacheRead, cacheWrite}}}

Exit: 0 ok, 2 usage or read error.`;

/** {tokens, cost, model} of an entry's usage, or null. */
export function usageOf(e) {
  let u;
  let model;
  if (e.type === "message" && e.message?.role === "assistant") {
    u = e.message.usage;
    model = `${e.message.provider ?? "?"}/${e.message.model ?? "?"}`;
  } else if (e.type === "usage") {
    u = e.usage;
    model = `${e.provider ?? "?"}/${e.model ?? "?"}`;
  } else if (e.type === "compaction" || e.type === "branch_summary") {
    u = e.usage;
    model = "(summaries)";
  }
  if (!u || typeof u !== "object") return null;
  const n = (v) => (Number.isFinite(v) ? v : 0);
  const parts = { input: n(u.input), output: n(u.output), cacheRead: n(u.cacheRead), cacheWrite: n(u.cacheWrite) };
  // Older sessions have no totalTokens: use the sum of its parts, as pi computes it.
  const tokens = Number.isFinite(u.totalTokens)
    ? u.totalTokens
    : parts.input + parts.output + parts.cacheRead + parts.cacheWrite;
  const cost = u.cost && Number.isFinite(u.cost.total) ? u.cost.total : 0;
  return { tokens, cost, model, ...parts };
}

export async function computeStats(infos) {
  const t = { sessions: 0, bytes: 0, entries: 0, messages: {}, tokens: 0, cost: 0, byModel: {} };
  for (const s of infos) {
    let entries;
    try {
      entries = readEntries(s.path);
      t.bytes += statSync(s.path).size;
    } catch (err) {
      errLine(err.message);
      continue;
    }
    if (entries.length === 0) continue;
    t.sessions++;
    for (const e of entries.slice(1)) {
      t.entries++;
      if (e?.type === "message") {
        const r = e.message?.role ?? "(none)";
        t.messages[r] = (t.messages[r] ?? 0) + 1;
      }
      const u = e && usageOf(e);
      if (!u) continue;
      t.tokens += u.tokens;
      t.cost += u.cost;
      t.byModel[u.model] ??= { messages: 0, tokens: 0, cost: 0, input: 0, output: 0, cacheRead: 0, cacheWrite: 0 };
      const m = t.byModel[u.model];
      m.messages++;
      for (const k of ["tokens", "cost", "input", "output", "cacheRead", "cacheWrite"]) m[k] += u[k];
    }
  }
  return t;
}

export async function run(argv) {
  const { values, positionals } = parse(
    argv,
    {
      all: { type: "boolean", short: "a" },
      cwd: { type: "string" },
      json: { type: "boolean" },
    },
    { command: "stats" },
  );
  const out = makeOut();
  if (values.help) {
    out.line(help);
    return 0;
  }
  if (positionals.length > 1) throw new CliError(`stats: expected at most one DIR, got ${positionals.length}`);
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
  const t = await computeStats(infos);
  if (values.json) {
    out.json(t);
    return 0;
  }

  const kv = (k, v) => out.row(`${out.dim(k.padEnd(10))}${v}`);
  kv("Sessions", String(t.sessions));
  kv("Bytes", `${formatBytes(t.bytes)} (${t.bytes})`);
  kv("Entries", String(t.entries));
  kv(
    "Messages",
    Object.entries(t.messages)
      .map(([r, n]) => `${r} ${n}`)
      .join(", ") || "none",
  );
  kv("Tokens", t.tokens.toLocaleString("en-US"));
  kv("Cost", `$${t.cost.toFixed(4)}`);
  const models = Object.entries(t.byModel).sort((a, b) => b[1].cost - a[1].cost || b[1].tokens - a[1].tokens);
  if (models.length) {
    out.line();
    const w = Math.max(5, ...models.map(([m]) => m.length));
    out.line(out.dim(`${"MODEL".padEnd(w)}  ${"MSGS".padStart(6)}  ${"TOKENS".padStart(12)}  ${"COST".padStart(10)}`));
    for (const [m, v] of models) {
      out.line(
        `${m.padEnd(w)}  ${String(v.messages).padStart(6)}  ${v.tokens.toLocaleString("en-US").padStart(12)}  ${`$${v.cost.toFixed(4)}`.padStart(10)}`,
      );
    }
  }
  const scope = resolveScope({ dir: positionals[0], all: values.all, cwd: values.cwd });
  const hint = allHint(scope);
  if (hint) {
    const note = makeOut(process.stderr);
    note.line(note.dim(`this project only; ${hint}`));
  }
  return 0;
}
