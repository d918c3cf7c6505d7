import { createRequire } from "node:module";
import {
  CliError,
  contentText,
  errLine,
  listSessions,
  makeOut,
  parse,
  parseIntOption,
  paths,
  pkg,
  progress,
  readRegularFile,
  shortenHome,
} from "./util.mjs";

const native = createRequire(import.meta.url)("../native.js");

export const help = `Usage: pi-session search QUERY [DIR] [--all] [--cwd PATH] [--all-branches] [--role R]...
                         [--tool NAME]... [--since DATE] [--until DATE] [--offset N] [--limit N] [--json]
       pi-session search TEXT [DIR] --literal|--regex [--all] [--cwd PATH] [-i] [--limit N] [--json]

Search the message text of sessions (user and assistant text, tool results, custom
messages, compaction and branch summaries).

Default: ranked search through the search index (the package's searchSessions, the engine
of the API and of the pi package's /sessions and search_sessions; a SQLite FTS5 index
DIR/.pi-session-search.sqlite, DIR defaulting to pi's sessions root, brought up to date
before the query). QUERY: words (all must match), "exact phrases", prefixes (auth*), a
session id or id prefix; case- and accent-insensitive, CJK by substring. Best hits first,
one per entry, on each session's active branch unless --all-branches.

  DIR                a sessions directory (default: pi's store)
  --all, -a          all projects (default: the current project's sessions)
  --cwd PATH         the project to search
  --all-branches     entries of abandoned branches too (marked)
  --role R           only these roles: user, assistant, toolResult, bash, custom:<type>,
                     compaction, branch_summary (repeatable)
  --tool NAME        only entries naming this tool (tool calls, tool results; repeatable)
  --since DATE, --until DATE   entry time (ISO date or date-time)
  --offset N         skip N hits (paging)
  --limit N          at most N hits (default 20, at most 1000)
  --json             [{sessionPath, sessionId, cwd, entryId, role, timestamp, snippet,
                       score, onActiveBranch, match}]  (snippet: matches marked «…»)

Scan (--literal or --regex): every matching line of every message text, in file order,
without the index. TEXT: plain text (smart case: case-insensitive unless TEXT has an
upper-case letter; -i always), or a JavaScript regular expression with --regex.
  --limit N          stop after N matching lines
  --json             [{path, sessionId, sessionName, entryId, role, line, text, matches:
                       [[start, end], ...]}]  (line: 1-based line within the message text;
                       offsets in UTF-16 code units of text)
Literal scans run in Rust, in parallel over files; --regex uses JavaScript's RegExp (flags
g, u, and i when case-insensitive). PI_SESSION_SEARCH_ENGINE=js forces JS.

Exit: 0 matches found, 1 no match, 2 usage or read error.`;

const str = (v) => (typeof v === "string" ? v : "");

/** The (role, text) pairs searched in an entry (src/check/search.rs implements the same). */
function texts(e) {
  if (!e || typeof e !== "object") return [];
  if (e.type === "message") {
    const m = e.message ?? {};
    if (m.role === "user" || m.role === "assistant" || m.role === "toolResult")
      return [[m.role, contentText(m.content)]];
    if (m.role === "bashExecution") return [["bash", `${str(m.command)}\n${str(m.output)}`]];
    return [];
  }
  if (e.type === "custom_message")
    return [[`custom:${typeof e.customType === "string" ? e.customType : "?"}`, contentText(e.content)]];
  if (e.type === "compaction" || e.type === "branch_summary") return [[e.type, str(e.summary)]];
  return [];
}

/**
 * Search files for a literal (`query`, case-insensitive with `icase`) or a RegExp
 * (`regex`). Literal searches run in Rust, in parallel over files
 * (binding checkSearchFiles), when the binding has it; `engine: "js"` forces the JS path.
 * Hits in file order, entry order, line order; at most `limit`.
 * @param {{ path: string, id?: string, name?: string }[]} files
 * @param {{ query?: string | RegExp, regex?: boolean, icase?: boolean, limit?: number, engine?: string }} [options]
 *   `query`: the text, or the compiled RegExp with `regex`
 */
export function searchFiles(files, { query, regex = false, icase = false, limit = Infinity, engine } = {}) {
  if (!regex && engine !== "js" && typeof native.checkSearchFiles === "function") {
    const per = native.checkSearchFiles(
      files.map((f) => f.path),
      query,
      icase,
      Math.min(limit, 0xffffffff),
    );
    const hits = [];
    for (let i = 0; i < files.length && hits.length < limit; i++) {
      if (per[i] == null) continue;
      const { path, id, name } = files[i];
      for (const [entryId, role, line, text, matches] of JSON.parse(per[i])) {
        hits.push({ path, sessionId: id, sessionName: name ?? null, entryId, role, line, text, matches });
        if (hits.length >= limit) break;
      }
    }
    return hits;
  }
  const re = regex ? query : new RegExp(escapeRegExp(query), `g${icase ? "i" : ""}u`);
  return searchFilesJs(files, re, limit);
}

export const escapeRegExp = (s) => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

/** The JS implementation (any RegExp with the g flag). */
export function searchFilesJs(files, re, limit = Infinity) {
  const hits = [];
  for (const { path, id, name } of files) {
    let text;
    try {
      text = readRegularFile(path).toString("utf8");
    } catch {
      continue;
    }
    for (const raw of text.split("\n")) {
      if (!raw.trim()) continue;
      // cheap pre-filter on the raw line would miss escaped text; parse each entry
      let e;
      try {
        e = JSON.parse(raw);
      } catch {
        continue;
      }
      for (const [role, t] of texts(e)) {
        if (!t) continue;
        const lines = t.split("\n");
        for (let i = 0; i < lines.length; i++) {
          re.lastIndex = 0;
          const matches = [];
          for (let m = re.exec(lines[i]); m !== null; m = re.exec(lines[i])) {
            matches.push([m.index, m.index + m[0].length]);
            if (m[0].length === 0) re.lastIndex++;
          }
          if (matches.length) {
            hits.push({
              path,
              sessionId: id,
              sessionName: name ?? null,
              entryId: e.id ?? null,
              role,
              line: i + 1,
              text: lines[i],
              matches,
            });
            if (hits.length >= limit) return hits;
          }
        }
      }
    }
  }
  return hits;
}

export async function run(argv) {
  const { values, positionals } = parse(argv, {
    all: { type: "boolean", short: "a" },
    cwd: { type: "string" },
    regex: { type: "boolean", short: "e" },
    "ignore-case": { type: "boolean", short: "i" },
    json: { type: "boolean" },
    limit: { type: "string", short: "n" },
    literal: { type: "boolean", short: "l" },
    // Accepted for scripts written for the opt-in ranked mode; ranked is the default now.
    ranked: { type: "boolean" },
    "all-branches": { type: "boolean" },
    role: { type: "string", multiple: true },
    tool: { type: "string", multiple: true },
    since: { type: "string" },
    until: { type: "string" },
    offset: { type: "string" },
  });
  const out = makeOut();
  if (values.help) {
    out.line(help);
    return 0;
  }
  if (positionals.length < 1 || positionals.length > 2)
    throw new CliError("search: expected TEXT [DIR] (see pi-session search --help)");
  const [query, dir] = positionals;
  if (!query) throw new CliError("search: empty TEXT");
  const scan = values.literal || values.regex;
  if (!scan) return runRanked(query, dir, values, out);
  const rankedOnly = ["ranked", "all-branches", "role", "tool", "since", "until", "offset"].filter(
    (k) => values[k] !== undefined && values[k] !== false,
  );
  if (rankedOnly.length)
    throw new CliError(
      `search: --${rankedOnly[0]} is an option of the ranked search; it does not combine with --${values.regex ? "regex" : "literal"}`,
    );
  if (values.literal && values.regex) throw new CliError("search: --literal and --regex exclude each other");
  const icase = values["ignore-case"] || (!values.regex && query === query.toLowerCase());
  let re;
  if (values.regex) {
    try {
      re = new RegExp(query, `g${icase ? "i" : ""}u`);
    } catch (err) {
      throw new CliError(`search: invalid regular expression: ${String(err.message).split("\n")[0]}`);
    }
  }
  const limit = parseIntOption(values.limit, "limit") ?? Infinity;
  const p = progress("reading sessions");
  let infos;
  try {
    infos = await listSessions({
      dir,
      all: values.all,
      cwd: values.cwd,
      explicitCwd: values.cwd !== undefined,
      onProgress: p.onProgress,
    });
  } finally {
    p.done();
  }
  const files = infos.map((s) => ({ path: s.path, id: s.id, name: s.name }));
  const hits = searchFiles(files, {
    query: re ?? query,
    regex: Boolean(re),
    icase,
    limit,
    engine: process.env.PI_SESSION_SEARCH_ENGINE,
  });
  if (values.json) {
    out.json(hits);
    return hits.length ? 0 : 1;
  }
  let last = null;
  for (const h of hits) {
    if (h.path !== last) {
      if (last !== null) out.line();
      out.line(`${out.bold(h.sessionName ?? h.sessionId)}  ${out.dim(shortenHome(h.path))}`);
      last = h.path;
    }
    // Show a window of the line around the first match.
    const [s0] = h.matches[0];
    const from = Math.max(0, s0 - 60);
    const to = Math.min(h.text.length, Math.max(h.matches[h.matches.length - 1][1], s0) + 80);
    let shown = "";
    let pos = from;
    for (const [s, e] of h.matches) {
      if (s < from || e > to) continue;
      shown += h.text.slice(pos, s) + out.red(out.bold(h.text.slice(s, e)));
      pos = e;
    }
    shown += h.text.slice(pos, to);
    shown = `${from > 0 ? "…" : ""}${shown.replace(/\t/g, " ")}${to < h.text.length ? "…" : ""}`;
    out.line(
      `  ${out.dim(`${h.entryId ?? "-"}`)} ${out.cyan(h.role.padEnd(9))} ${h.line > 1 ? out.dim(`${h.line}: `) : ""}${shown}`,
    );
  }
  if (!hits.length)
    errLine(`no match for ${JSON.stringify(query)} in ${infos.length} session${infos.length === 1 ? "" : "s"}`);
  return hits.length ? 0 : 1;
}

const date = (v, name) => {
  if (v === undefined) return undefined;
  const t = Date.parse(v);
  if (!Number.isFinite(t)) throw new CliError(`search: --${name}: not a date: ${v}`);
  return t;
};

/** Ranked mode (the default): the package's searchSessions (one engine for the API, the CLI and the pi package). */
async function runRanked(query, dir, values, out) {
  const sessionDir = dir === undefined ? paths.getSessionsDir() : paths.resolvePath(dir);
  const cwd = values.all ? undefined : paths.resolvePath(values.cwd ?? process.cwd());
  const hits = await pkg.searchSessions(query, {
    sessionDir,
    cwd: values.all || (dir !== undefined && values.cwd === undefined) ? undefined : cwd,
    roles: values.role,
    tools: values.tool,
    since: date(values.since, "since"),
    until: date(values.until, "until"),
    branch: values["all-branches"] ? "all" : "active",
    limit: parseIntOption(values.limit, "limit") ?? 20,
    offset: parseIntOption(values.offset, "offset") ?? 0,
  });
  if (values.json) {
    out.json(hits);
    return hits.length ? 0 : 1;
  }
  // Session text goes to out.line as is: the sink sanitises it (control characters shown
  // visibly, dim with colour) after our colour marks are placed.
  for (const h of hits) {
    const where = `${h.sessionId ?? "?"}  ${out.dim(shortenHome(h.sessionPath))}`;
    const flag = h.onActiveBranch ? "" : out.dim(" [abandoned branch]");
    out.line(`${where}  ${out.dim(h.timestamp ?? "")}${flag}`);
    const snip = String(h.snippet).replace(/«([^«»\s]+)»/g, (_, m) => out.red(out.bold(m)));
    out.line(`  ${out.dim(h.entryId ?? "-")} ${out.cyan(String(h.role).padEnd(9))} ${snip}`);
  }
  if (!hits.length) errLine(`no match for ${JSON.stringify(query)}`);
  return hits.length ? 0 : 1;
}
