// Helpers of the pi extension in ../sessions.ts: the search of session text through the
// package's search engine (`searchSessions`: SQLite FTS5 index, active branch), grouped per
// session in the order of the listing with a cap per session; a literal, case-insensitive
// scan (`searchFiles` of the `pi-session` CLI) for queries without a word to index; and the
// sanitising and formatting of what is shown to the user and to the model.
//
// Not an extension itself (pi loads only the files the package manifest names).
import { printedIds } from "../../lib/cli/ids.mjs";
import { displayWidth, fitEnd, fitStart } from "../../lib/cli/layout.mjs";
import { searchFiles } from "../../lib/cli/search.mjs";
import { createRequire } from "node:module";
import { basename, sep } from "node:path";
import { searchSessions } from "../../index.mjs";

const paths = createRequire(import.meta.url)("../../lib/paths.js");

/** pi's sessions root (`<agentDir>/sessions`): the engine's default directory and index. */
export function sessionsRoot() {
  return paths.resolvePath(paths.getSessionsDir());
}

/**
 * The directories to search for the sessions of the root plus `dir` (pi's session dir of this
 * run, when given): the root, and `dir` too when it lies outside the root (`--session-dir`).
 * @param {string | undefined} dir
 * @returns {string[]}
 */
export function searchDirs(dir) {
  const root = sessionsRoot();
  if (!dir) return [root];
  const d = paths.resolvePath(dir);
  return d === root || d.startsWith(root + sep) ? [root] : [root, d];
}

/** Most hits asked of the engine per search (its own maximum). */
const ENGINE_LIMIT = 1000;
/** Characters of the engine's snippet (windowed again by `snippet` below). */
const ENGINE_SNIPPET = 400;
/** An engine mark around one matching token (tokens hold no spaces). */
const MARK = /«([^«»\s]+)»/g;

/** Whether the engine can search for `query`: it indexes words (letters, digits). */
export function indexable(query) {
  return /[\p{L}\p{N}]/u.test(String(query ?? ""));
}

/**
 * A hit of the engine in the shape of a `searchFiles` hit: its snippet with the «…» marks
 * removed and their places as `matches` (so `snippet` windows it around the first one).
 */
export function engineHit(h) {
  const raw = String(h.snippet ?? "");
  let text = "";
  const matches = [];
  let last = 0;
  for (const m of raw.matchAll(MARK)) {
    text += raw.slice(last, m.index);
    matches.push([text.length, text.length + m[1].length]);
    text += m[1];
    last = m.index + m[0].length;
  }
  text += raw.slice(last);
  return {
    path: h.sessionPath,
    sessionId: h.sessionId,
    entryId: h.entryId,
    role: h.role,
    line: 1,
    text,
    matches: matches.length ? matches : [[0, 0]],
    score: h.score,
    /** false: the entry is on another branch than the session's latest (branch "all" only). */
    onActiveBranch: h.onActiveBranch !== false,
  };
}

/**
 * Search `files` (SessionInfo-like, in the order to report them, e.g. newest first) with the
 * search engine: words (all must match), "phrases", prefix*; case- and accent-insensitive;
 * the active branch of each session. Each of `sessionDirs` (default: pi's sessions root) is
 * searched with the `cwd` filter when given; hits outside `files` are dropped. Returns the
 * same shape as `searchSessionFiles`: the matching sessions in the order of `files`, each
 * with its best `perSession` hits (engine rank) and whether it has more:
 *   { sessions: [{ file, hits, more }], searched, complete }
 * `complete` is false when more than `maxSessions` sessions match, or when the engine's cap
 * of 1000 hits was reached (some matching sessions may be missing then).
 *
 * @template {{ path: string }} F
 * @param {F[]} files
 * @param {string} query
 * `branch: "all"` searches every branch (hits carry `onActiveBranch`), `onlyOtherBranches` then
 * keeps only hits off the active branch.
 * @param {{ perSession?: number, maxSessions?: number, sessionDirs?: (string | undefined)[], cwd?: string, exclude?: string[], branch?: "active" | "all", onlyOtherBranches?: boolean, signal?: AbortSignal, onProgress?: (p: { phase: "indexing", done: number, total: number, bytesDone?: number, bytesTotal?: number }) => void }} [options]
 * @returns {Promise<{ sessions: { file: F, hits: ReturnType<typeof engineHit>[], more: boolean }[], searched: number, complete: boolean }>}
 */
export async function searchSessionsIndexed(
  files,
  query,
  {
    perSession = 3,
    maxSessions = 50,
    sessionDirs = [undefined],
    cwd,
    exclude,
    branch = "active",
    onlyOtherBranches = false,
    signal,
    onProgress,
  } = {},
) {
  const byPath = new Map(files.map((f) => [f.path, f]));
  /** @type {Map<string, { hits: ReturnType<typeof engineHit>[], more: boolean }>} */
  const found = new Map();
  let complete = true;
  for (const sessionDir of sessionDirs) {
    // onProgress: the engine's index-build progress (an option older builds ignore).
    const options = {
      sessionDir,
      cwd,
      exclude,
      perSession: perSession + 1,
      limit: ENGINE_LIMIT,
      snippetChars: ENGINE_SNIPPET,
      branch,
      signal,
      onProgress,
    };
    const hits = await searchSessions(query, options);
    if (hits.length >= ENGINE_LIMIT) complete = false;
    for (const h of hits) {
      if (!byPath.has(h.sessionPath)) continue;
      if (onlyOtherBranches && h.onActiveBranch !== false) continue;
      let s = found.get(h.sessionPath);
      if (!s) {
        s = { hits: [], more: false };
        found.set(h.sessionPath, s);
      }
      if (s.hits.length >= perSession) s.more = true;
      else s.hits.push(engineHit(h));
    }
  }
  const sessions = [];
  for (const file of files) {
    const s = found.get(file.path);
    if (!s) continue;
    if (sessions.length >= maxSessions) {
      complete = false;
      break;
    }
    sessions.push({ file, hits: s.hits, more: s.more });
  }
  return { sessions, searched: files.length, complete };
}

/** Files handed to one native call (parallel over files inside it). */
const BATCH = 32;

/**
 * Search `files` (SessionInfo-like: {path, id, name?}, in the order to report them) for
 * `query`, case-insensitive. Returns the sessions with a match, in file order, each with
 * its first `perSession` matching lines and whether it has more:
 *   { sessions: [{ file, hits, more }], searched, complete }
 * Stops after `maxSessions` matching sessions (`complete: false` when files were left).
 *
 * The native search caps hits per file at the limit it is given and `searchFiles` caps the
 * total at the same number; a batch of n files is searched with limit perSession * n, and
 * when that total was reached the files after the last one reported are searched again in
 * the next batch, so no matching session is skipped and no file's output is unbounded.
 */
export function searchSessionFiles(files, query, { perSession = 3, maxSessions = 50 } = {}) {
  const sessions = [];
  let i = 0;
  while (i < files.length && sessions.length < maxSessions) {
    const chunk = files.slice(i, i + BATCH);
    const cap = perSession * chunk.length;
    const hits = searchFiles(
      chunk.map((f) => ({ path: f.path, id: f.id, name: f.name })),
      { query, icase: true, limit: cap },
    );
    const byPath = new Map();
    for (const h of hits) {
      const list = byPath.get(h.path);
      if (list) list.push(h);
      else byPath.set(h.path, [h]);
    }
    let consumed = chunk.length;
    const cut = hits.length >= cap;
    if (cut) {
      const last = hits[hits.length - 1].path;
      consumed = chunk.findIndex((f) => f.path === last) + 1;
    }
    for (let k = 0; k < consumed && sessions.length < maxSessions; k++) {
      const list = byPath.get(chunk[k].path);
      if (!list) continue;
      const more = list.length > perSession || (cut && k === consumed - 1);
      sessions.push({ file: chunk[k], hits: list.slice(0, perSession), more });
    }
    i += consumed;
  }
  return { sessions, searched: i, complete: i >= files.length };
}

const BIDI = /[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;
// CSI (ESC [ ... final), OSC (ESC ] ... BEL or ESC \), other two-byte ESC sequences.
const ANSI =
  /\u001b\[[0-?]*[ -/]*[@-~]|\u001b\][^\u0007\u001b]*(?:\u0007|\u001b\\)?|\u001b[@-Z\\-_]|\u009b[0-?]*[ -/]*[@-~]/g;

/**
 * Text safe to print on a terminal and to hand to a model on one line: terminal escape
 * sequences removed, other control characters shown as Unicode control pictures
 * (ESC as ␛, BEL as ␇, DEL as ␡; C1 controls as U+FFFD), line breaks and tabs as spaces,
 * bidirectional overrides removed.
 */
export function clean(s) {
  return String(s ?? "")
    .replace(ANSI, "")
    .replace(/[\t\n\r\u2028\u2029]/g, " ")
    .replace(/[\u0000-\u001f]/g, (c) => String.fromCharCode(0x2400 + c.charCodeAt(0)))
    .replace(/\u007f/g, "\u2421")
    .replace(/[\u0080-\u009f]/g, "\ufffd")
    .replace(BIDI, "");
}

/** One line of at most `max` characters (after cleaning), with an ellipsis when cut. */
export function oneLine(s, max) {
  const t = clean(s).replace(/ {2,}/g, " ").trim();
  return t.length > max ? `${t.slice(0, Math.max(0, max - 1))}…` : t;
}

/**
 * A window of at most `width` characters of a hit's line around its first match, cleaned,
 * with ellipses where the line was cut. The match stays in the window (up to `width`).
 */
export function snippet(hit, width = 160) {
  const text = hit.text ?? "";
  const [start, end] = hit.matches?.[0] ?? [0, 0];
  const before = Math.min(start, Math.max(0, Math.floor((width - (end - start)) / 3)));
  let from = start - before;
  let to = Math.min(text.length, from + width);
  if (to - from < width) from = Math.max(0, to - width);
  // Do not cut a surrogate pair in half.
  if (from > 0 && /[\udc00-\udfff]/.test(text[from] ?? "")) from++;
  if (to < text.length && /[\ud800-\udbff]/.test(text[to - 1] ?? "")) to--;
  const body = clean(text.slice(from, to)).replace(/ {2,}/g, " ");
  return `${from > 0 ? "…" : ""}${body.trim()}${to < text.length ? "…" : ""}`;
}

/**
 * A session id as `pi-session show` takes it: its shortest prefix of at least 8 characters that
 * names one session of pi's store (the whole id when the store cannot be read).
 */
export function shownId(id) {
  try {
    return printedIds([id]).get(id) ?? id;
  } catch {
    return id;
  }
}

/** A session's title: its name, else its first message, on one line. */
export function sessionTitle(info, max = 60) {
  const t = info.name || info.firstMessage || "(no messages)";
  return oneLine(t, max);
}

/** `YYYY-MM-DD HH:MM` (local time) of a Date, or "" for an invalid one. */
export function shortDate(d) {
  const t = d instanceof Date ? d : new Date(d);
  if (Number.isNaN(t.getTime())) return "";
  const p = (n) => String(n).padStart(2, "0");
  return `${t.getFullYear()}-${p(t.getMonth() + 1)}-${p(t.getDate())} ${p(t.getHours())}:${p(t.getMinutes())}`;
}

/** `~/...` for paths under the home directory. */
export function tildify(p, home = process.env.HOME) {
  const s = String(p ?? "");
  if (home && home !== "/" && (s === home || s.startsWith(`${home}/`))) return `~${s.slice(home.length)}`;
  return s;
}

/** Tool limits (also in the tool's description). */
export const TOOL_LIMITS = {
  defaultHits: 10,
  maxHits: 50,
  perSession: 5,
  snippetChars: 200,
  totalChars: 12_000,
};

/**
 * The model-facing text of the search tool: a header, then per session its id, title,
 * date and path, and per hit its entry id, role and a snippet. At most `limit` hits,
 * `perSession` per session, `snippetChars` per snippet and `totalChars` in all (whole
 * hits only; a last line says what was left out).
 */
export function formatToolResult({ query, cwd, result, total, limit, limits = TOOL_LIMITS, mode = "words" }) {
  const lines = [];
  const sessions = [];
  let hitsShown = 0;
  let truncated = !result.complete;
  let size = 0;
  const push = (line) => {
    lines.push(line);
    size += line.length + 1;
  };
  const matching = result.sessions.length;
  push(
    `Search of past sessions of ${clean(cwd)} for "${oneLine(query, 100)}" (${mode === "literal" ? "literal text" : 'all words; "phrases", prefix*'}, case-insensitive): ` +
      `${matching}${result.complete ? "" : "+"} matching session${matching === 1 ? "" : "s"} of ${total} searched.`,
  );
  outer: for (const s of result.sessions) {
    const info = s.file;
    const head = [
      "",
      `session ${clean(info.id)}  ${shortDate(info.modified)}  "${sessionTitle(info, 80)}"`,
      `  path: ${clean(info.path)}`,
    ];
    const headSize = head.reduce((n, l) => n + l.length + 1, 0);
    if (hitsShown >= limit || size + headSize > limits.totalChars) {
      truncated = true;
      break;
    }
    const shown = [];
    for (const h of s.hits.slice(0, limits.perSession)) {
      const line = `  - entry ${clean(h.entryId ?? "-")} (${clean(h.role)}${h.line > 1 ? `, line ${h.line}` : ""}): ${snippet(h, limits.snippetChars)}`;
      if (hitsShown >= limit || size + headSize + line.length + 1 > limits.totalChars) {
        truncated = true;
        if (!shown.length) break outer;
        break;
      }
      if (!shown.length) for (const l of head) push(l);
      push(line);
      shown.push({ entryId: h.entryId ?? null, role: h.role, line: h.line, snippet: snippet(h, limits.snippetChars) });
      hitsShown++;
    }
    if (s.more || shown.length < s.hits.length) {
      push("  - (more matches in this session)");
    }
    sessions.push({ path: info.path, id: info.id, name: info.name ?? null, hits: shown });
  }
  if (!matching) push("No matches.");
  else if (truncated)
    push(
      `[Output limited to ${hitsShown} matching lines; use a more specific query or a larger limit (max ${limits.maxHits}).]`,
    );
  return { text: lines.join("\n"), details: { query, cwd, searched: total, sessions, truncated } };
}

/** A query as typed, quoted unless it holds quotes itself (`"token bucket"` is not shown as `""token bucket""`). */
export function quoted(query, max = 80) {
  const q = oneLine(query, max);
  return q.includes('"') ? q : `"${q}"`;
}

/** The words a hit matched (lower case), from its match offsets. */
function matchedTerms(hit) {
  const text = String(hit?.text ?? "");
  return (hit?.matches ?? []).map(([a, b]) => text.slice(a, b).toLowerCase()).filter((t) => t.length > 0);
}

/** Columns for a /sessions row's text and cwd below which the cwd is left out (an 80-column terminal). */
const NARROW = 70;

/**
 * One row of the /sessions list, at most `width` columns: `N. title — snippet  cwd  date`.
 * The snippet is left out when it adds nothing: the title is the session's first message and
 * already shows every matched word. The cwd is cut at its start (its end says most).
 * A session that matches only off its latest branch is marked `[other branch]`.
 * @param {{ n: number, info: { name?: string, firstMessage?: string, cwd?: string, modified: Date }, hit?: { text?: string, matches?: number[][] }, width: number, otherBranch?: boolean }} row
 */
export function listRow({ n, info, hit, width, otherBranch = false }) {
  const num = `${n}. ${otherBranch ? "[other branch] " : ""}`;
  const date = shortDate(info.modified);
  const where = clean(tildify(info.cwd || "?"));
  const title = sessionTitle(info, 200);
  // Columns for the text and the cwd (two spaces before each of cwd and date). The text comes
  // first: under NARROW columns the cwd goes (the hit view shows it), else it gets a fifth.
  const room = Math.max(8, width - displayWidth(num) - displayWidth(date) - 2);
  const whereW = room < NARROW ? 0 : Math.min(displayWidth(where), Math.max(8, Math.floor(room * 0.2)));
  const textRoom = whereW ? room - whereW - 2 : room;
  const fullTitle = fitEnd(title, textRoom);
  const terms = matchedTerms(hit);
  const titleShows = !info.name && terms.length > 0 && terms.every((t) => fullTitle.toLowerCase().includes(t));
  let text = fullTitle;
  if (hit && !titleShows) {
    const titleW = Math.min(displayWidth(title), Math.max(12, Math.floor(textRoom * 0.4)));
    const snipW = textRoom - titleW - 3;
    if (snipW >= 12) text = `${fitEnd(title, titleW)} — ${fitEnd(snippet(hit, snipW), snipW)}`;
  }
  return `${num}${text}${whereW ? `  ${fitStart(where, whereW)}` : ""}  ${date}`;
}

/** Role names of window entries and hits as the user knows them. */
const ROLE_LABEL = {
  toolCall: "tool call",
  toolResult: "tool result",
  bash: "shell command",
  branch_summary: "branch summary",
  compaction: "compaction summary",
  session_info: "session name",
};
/** Entry types without a role (nothing of them is searched), as the user knows them. */
const TYPE_LABEL = {
  model_change: "model changed",
  thinking_level_change: "thinking level changed",
  custom: "extension data",
  custom_message: "extension message",
  context_edit: "context edited",
  usage: "usage recorded",
  message: "message",
  session: "session start",
};

/** A window entry's role as shown: `user`, `assistant`, `tool call`, `model changed`, … */
export function roleLabel(role, type) {
  if (role)
    return (
      ROLE_LABEL[role] ??
      (String(role).startsWith("custom:") ? `extension message (${String(role).slice(7)})` : String(role))
    );
  const t = String(type ?? "entry");
  return TYPE_LABEL[t] ?? t.replace(/_/g, " ");
}

/**
 * The hit in its context (readSessionWindow's entries, oldest first) as lines of at most
 * `width` columns: one line per entry, the hit marked `▶`.
 * @param {{ id: string | null, role: string | null, type: string | null, text: string, hit: boolean }[]} entries
 */
export function windowLines(entries, width) {
  return entries.map((e) => {
    const label = roleLabel(e.role, e.type);
    const text = clean(e.text).replace(/ {2,}/g, " ").trim();
    // An entry with no text of its own (a model or thinking-level change, extension data) is
    // named, not shown as an empty message.
    if (!text) return fitEnd(`${e.hit ? "▶" : " "} (${label})`, Math.max(10, width));
    const head = `${e.hit ? "▶" : " "} ${label}: `;
    return `${head}${fitEnd(text, Math.max(10, width - displayWidth(head)))}`;
  });
}

/** Bytes as whole megabytes (one decimal under 10). */
const megabytes = (n) => {
  const mb = n / 1e6;
  return mb < 10 ? mb.toFixed(1) : String(Math.round(mb));
};

/**
 * The status line while /sessions works: the listing's or the index build's progress, else a
 * plain note; the seconds spent once there are any (so the line moves every second while the
 * engine is on one large file) and that large file, and how to cancel. What moves comes first
 * (a narrow footer cuts the end).
 * @param {string} query
 * @param {{ phase: string, done: number, total: number, bytesDone?: number, bytesTotal?: number } | undefined} p
 * @param {number} [seconds]
 * @param {boolean} [cancellable] say that Escape cancels (the TUI)
 * @param {{ path: string, bytesDone: number, bytes: number }} [reading] a file the build has
 *   been on for long: named by its session id, with how far it is
 */
export function progressText(query, p, seconds = 0, cancellable = false, reading = undefined) {
  const time = seconds >= 1 ? `, ${seconds} s` : "";
  const esc = cancellable ? " (Esc cancels)" : "";
  const q = quoted(query, 40);
  const counted = p && Number.isFinite(p.done) && Number.isFinite(p.total);
  if (counted && (p.phase === "indexing" || p.phase === "listing")) {
    const what = p.phase === "indexing" ? "Indexing" : "Reading";
    const file = reading && p.phase === "indexing" ? ` (${readingText(reading)})` : "";
    // The share of bytes read moves while one large session is read (engines that report it);
    // a named large file says more, and the footer is narrow.
    const share =
      !file && p.phase === "indexing" && Number.isFinite(p.bytesDone) && p.bytesTotal > 0
        ? ` (${Math.floor((100 * p.bytesDone) / p.bytesTotal)}%)`
        : "";
    return `${what} sessions ${p.done}/${p.total}${share}${time}${file} for /sessions ${q}…${esc}`;
  }
  return `Searching sessions for ${q}…${seconds >= 1 ? ` ${seconds} s` : ""}${esc}`;
}

/** `reading session 019d0001: 97/125 MB` (the id from pi's file name `<time>_<id>.jsonl`). */
function readingText({ path, bytesDone, bytes }) {
  const name = basename(path);
  const id = /_([0-9a-f-]{8,})\.jsonl$/i.exec(name)?.[1]?.slice(0, 8) ?? fitStart(name, 24);
  return `reading session ${clean(id)}: ${megabytes(Math.min(bytesDone, bytes))}/${megabytes(bytes)} MB`;
}
