import { createRequire } from "node:module";
import { dirname } from "node:path";
import { displayWidth, fitEnd, fitMarked, fitStart } from "./layout.mjs";
import { printedIds } from "./ids.mjs";
import { didYouMean } from "./suggest.mjs";
import { otherProjects, plural, resolveScope } from "./scope.mjs";
import {
  CliError,
  SessionManager,
  contentText,
  errLine,
  formatDate,
  listSessions,
  makeOut,
  parse,
  parseIntOption,
  paths,
  pkg,
  progress,
  oneLine,
  readRegularFile,
  shortenHome,
} from "./util.mjs";

const native = createRequire(import.meta.url)("../native.js");

export const help = `Usage: pi-session search QUERY [DIR] [--all] [--cwd PATH] [--all-branches] [--role R]...
                         [--tool NAME]... [--since DATE] [--until DATE] [--offset N] [--limit N] [--json]
       pi-session search TEXT [DIR] --literal|--regex [--all] [--cwd PATH] [-i] [--limit N] [--json]

Search the text of sessions (user and assistant text, tool calls and their results,
custom messages, compaction and branch summaries).

Default: ranked search through the search index (the package's searchSessions, the engine
of the API and of the pi package's /sessions and search_sessions; a SQLite FTS5 index
DIR/.pi-session-search.sqlite, DIR defaulting to pi's sessions root, brought up to date
before the query). QUERY: words (all must match), "exact phrases", prefixes (auth*), a
session id or id prefix; case- and accent-insensitive, CJK by substring. Best hits first,
one per entry, on each session's active branch unless --all-branches.

  DIR                a session directory (holding *.jsonl: all of it) or a sessions root
                     (default: pi's store)
  --all, -a          all projects (default: the current project's sessions, like ls and stats;
                     when --all would find more, a note on stderr says how much)
  --cwd PATH         the project to search
  --all-branches     entries of abandoned branches too (marked); when the active branches
                     have no match, the "no match" note says what this would find
  --role R           only these roles: user, assistant, toolResult, toolCall, bash,
                     custom:<type>, compaction, branch_summary, label, session_info
                     (repeatable)
  --tool NAME        only entries naming this tool (tool calls, tool results; repeatable)
  --since DATE, --until DATE   entry time (ISO date or date-time)
  --offset N         skip N hits (paging)
  --limit N          at most N hits (default 20, at most 1000); "N more hits: --offset K"
                     on stderr when there are more
  --json             [{sessionPath, sessionId, cwd, entryId, role, timestamp, snippet,
                       score, onActiveBranch, match}]  (snippet: matches marked «…»); no
                     notes, no progress

Text output: hits grouped by session, sessions in the order of their best hit: one header
line (id, title, cwd, last activity; the id is the shortest prefix of at least 8 characters
that names one session of the store: show, export and check take it), then one line per hit
(entry id, role, snippet with the matches highlighted); on a terminal every line fits its
width, and a cold index build shows its progress on stderr (erased when done).

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

/** The (role, text) pairs searched in an entry (crates/core/src/check/search.rs implements the same). */
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
  const { values, positionals } = parse(
    argv,
    {
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
    },
    { command: "search" },
  );
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
  if (!hits.length) {
    const scope = resolveScope({ dir, all: values.all, cwd: values.cwd });
    const other = otherProjects(scope);
    const hint = other.sessions
      ? `; --all searches ${plural(other.sessions, "more session")} in ${plural(other.projects, "other project")}`
      : "";
    errLine(`no match for ${shownQuery(query)} in ${plural(infos.length, "session")}${hint}`);
  }
  return hits.length ? 0 : 1;
}

const date = (v, name) => {
  if (v === undefined) return undefined;
  const t = Date.parse(v);
  if (!Number.isFinite(t)) throw new CliError(`search: --${name}: not a date: ${v}`);
  return t;
};

/** A query as the user typed it, quoted unless it holds quotes itself (a phrase query stays `"token bucket"`). */
export function shownQuery(q) {
  return q.includes('"') ? q : `"${q}"`;
}

/**
 * Sign of life while the engine works, on a terminal's stderr only: "indexing sessions n/m"
 * from the engine's progress callback during a cold or partial index build, else "searching
 * sessions…" once a search takes longer than a moment; erased when done.
 * @param {boolean} enabled
 */
export function searchProgress(enabled = Boolean(process.stderr.isTTY)) {
  if (!enabled) return { onProgress: undefined, done() {} };
  let shown = false;
  const show = (s) => {
    shown = true;
    process.stderr.write(`\r\x1b[K${s}`);
  };
  const timer = setTimeout(() => show("searching sessions…"), 250);
  return {
    /** @param {{ phase?: string, done?: number, total?: number }} p */
    onProgress(p) {
      if (p && p.phase === "indexing" && Number.isFinite(p.done) && Number.isFinite(p.total))
        show(`indexing sessions ${p.done}/${p.total}`);
    },
    done() {
      clearTimeout(timer);
      if (shown) process.stderr.write("\r\x1b[K");
      shown = false;
    },
  };
}

/** The roles of the index's rows (crates/core/src/search/extract.rs), besides `custom:<type>`. */
export const ROLES = [
  "user",
  "assistant",
  "toolResult",
  "toolCall",
  "bash",
  "compaction",
  "branch_summary",
  "label",
  "session_info",
];

/** A --role value as the engine knows it (any letter case), or a usage error naming the nearest. */
function checkRole(role) {
  if (/^custom:./.test(role)) return role;
  const known = ROLES.find((r) => r.toLowerCase() === role.toLowerCase());
  if (known) return known;
  throw new CliError(
    `search: --role ${role}: not a role${didYouMean(role, ROLES)} (roles: ${ROLES.join(", ")}, custom:<type>)`,
  );
}

/** Hits fetched beyond the page to say how many more there are ("N more, --offset K"). */
const MORE_PROBE = 200;
/** Hits counted for the `--all` hint. */
const HINT_PROBE = 500;

/** SessionInfo of each session file, by path (listing each file's directory once; sidecar index). */
async function infosByPath(files) {
  const byDir = new Map();
  for (const f of files) {
    const d = dirname(f);
    if (!byDir.has(d)) byDir.set(d, []);
  }
  const map = new Map();
  for (const d of byDir.keys()) {
    try {
      for (const s of await SessionManager.listAll(d)) map.set(s.path, s);
    } catch {
      // unreadable directory: headers show the id and path only
    }
  }
  return map;
}

/** Ranked mode (the default): the package's searchSessions (one engine for the API, the CLI and the pi package). */
async function runRanked(query, dir, values, out) {
  const scope = resolveScope({ dir, all: values.all, cwd: values.cwd });
  // A session directory DIR is one project: all of it (unless --cwd narrows it).
  const cwd = scope.kind === "project" || (scope.kind === "dir" && values.cwd !== undefined) ? scope.cwd : undefined;
  const limit = parseIntOption(values.limit, "limit") ?? 20;
  const offset = parseIntOption(values.offset, "offset") ?? 0;
  const filters = {
    sessionDir: scope.root,
    roles: values.role?.map(checkRole),
    tools: values.tool,
    since: date(values.since, "since"),
    until: date(values.until, "until"),
    branch: values["all-branches"] ? "all" : "active",
  };
  const p = searchProgress(Boolean(process.stderr.isTTY) && !values.json);
  let hits;
  try {
    hits = await pkg.searchSessions(query, {
      ...filters,
      cwd,
      limit: values.json ? limit : Math.min(1000, limit + MORE_PROBE),
      offset,
      onProgress: p.onProgress,
    });
  } finally {
    p.done();
  }
  if (values.json) {
    out.json(hits);
    return hits.length ? 0 : 1;
  }
  const probed = hits.length;
  const capped = probed >= Math.min(1000, limit + MORE_PROBE) && probed > limit;
  hits = hits.slice(0, limit);

  // Grouped by session, sessions in the order of their best hit, hits best first.
  /** @type {Map<string, any[]>} */
  const groups = new Map();
  for (const h of hits) {
    const list = groups.get(h.sessionPath);
    if (list) list.push(h);
    else groups.set(h.sessionPath, [h]);
  }
  const infos = await infosByPath([...groups.keys()]);
  // Ids as prefixes that name one session of the store searched (show --dir DIR takes them).
  const fullId = (path, hit) => String(hit.sessionId ?? infos.get(path)?.id ?? "?");
  const ids = printedIds(
    [...groups].map(([path, list]) => fullId(path, list[0])),
    { dir },
  );
  const idW = Math.max(...[...ids.values()].map((id) => id.length));
  const cols = out.columns;
  let first = true;
  for (const [path, list] of groups) {
    if (!first) out.line();
    first = false;
    out.line(sessionHeader(path, list[0], infos.get(path), out, cols, ids.get(fullId(path, list[0])).padEnd(idW)));
    for (const h of list) out.line(hitLine(h, out, cols));
  }

  if (!hits.length) {
    const other = scope.kind === "project" ? await allHits(query, filters, scope.cwd) : null;
    const branches = filters.branch === "active" ? await otherBranchHits(query, filters, cwd) : null;
    const hint = `${branches ? `; --all-branches has ${branches.hits} in ${branches.sessions}` : ""}${other ? `; --all has ${other.hits} in ${other.sessions}` : ""}`;
    errLine(`no match for ${shownQuery(query)}${scope.kind === "project" ? " here" : ""}${hint}`);
    return 1;
  }
  // Notes on stderr (stdout stays the hits), dim on a terminal.
  const note = makeOut(process.stderr);
  if (probed > limit)
    note.line(note.dim(`${plural(probed - limit, "more hit")}${capped ? "+" : ""}: --offset ${offset + limit}`));
  if (scope.kind === "project") {
    const other = await allHits(query, filters, scope.cwd);
    if (other) note.line(note.dim(`--all has ${other.hits} more in ${other.sessions} of other projects`));
  }
  return 0;
}

/**
 * The hits of a probe search (`options` over `filters`, at most HINT_PROBE) that `keep` selects,
 * as "N hits" / "M sessions" (with "+" at the probe's cap), or null when there are none.
 */
async function probeHits(query, filters, options, keep) {
  let hits;
  try {
    hits = await pkg.searchSessions(query, { ...filters, ...options, limit: HINT_PROBE, snippetChars: 16 });
  } catch {
    return null;
  }
  const kept = hits.filter(keep);
  if (!kept.length) return null;
  const more = hits.length >= HINT_PROBE ? "+" : "";
  return {
    hits: `${plural(kept.length, "hit")}${more}`,
    sessions: `${plural(new Set(kept.map((h) => h.sessionPath)).size, "session")}${more}`,
  };
}

/** Hits in other projects' sessions (what --all adds). */
const allHits = (query, filters, cwd) => probeHits(query, filters, {}, (h) => !(h.cwd && paths.pathsEqual(h.cwd, cwd)));

/** Hits off the sessions' active branches in the same scope (what --all-branches adds). */
const otherBranchHits = (query, filters, cwd) =>
  probeHits(query, filters, { cwd, branch: "all" }, (h) => !h.onActiveBranch);

/** One header line per session: short id, title, cwd, date, fitted to `cols` columns. */
function sessionHeader(path, hit, info, out, cols, id) {
  const title = info ? info.name || oneLine(info.firstMessage, 200) || "(no messages)" : shortenHome(path);
  const where = shortenHome(hit.cwd ?? info?.cwd ?? "?");
  const when = info ? formatDate(info.modified) : String(hit.timestamp ?? "");
  if (!cols) return `${out.cyan(id)}  ${out.bold(oneLine(title, 200))}  ${out.dim(where)}  ${out.dim(when)}`;
  const rest = cols - displayWidth(id) - displayWidth(when) - 6;
  const whereW = Math.min(displayWidth(where), Math.max(12, Math.floor(rest * 0.3)));
  const titleW = Math.max(8, rest - whereW);
  return `${out.cyan(id)}  ${out.bold(fitEnd(title, titleW))}  ${out.dim(fitStart(where, whereW))}  ${out.dim(when)}`;
}

/** One line per hit: entry id, role, the snippet (matches highlighted), fitted to `cols`. */
function hitLine(h, out, cols) {
  const role = String(h.role);
  const flag = h.onActiveBranch ? "" : " [abandoned branch]";
  const head = `  ${h.entryId ?? "-"} ${role.padEnd(9)} `;
  const room = cols ? Math.max(10, cols - displayWidth(head) - flag.length) : Infinity;
  const snip = fitMarked(String(h.snippet), room)
    .map(([t, m]) => (m ? out.red(out.bold(t)) : t))
    .join("");
  return `  ${out.dim(h.entryId ?? "-")} ${out.cyan(role.padEnd(9))} ${snip}${out.dim(flag)}`;
}
