// pi extension of pi-session-native (the package's `pi` manifest names this file):
//
//   /sessions <text>   search the text of every session (all projects: messages, tool calls
//                      and their results), pick one, see the hit in its context, and continue
//                      from the session's latest entry or from the hit
//   a footer mark      whether pi-native serves the session store ("sessions: native"), and a
//                      notice when pi runs unmodified and why (lib/store-state.mjs)
//   search_sessions    a tool the model can call: the same search over the past sessions of
//                      the current project, bounded output (paths, session ids, entry ids,
//                      snippets)
//
// While /sessions searches, pi's footer says so (`ctx.ui.setStatus`), with the index build's
// progress when the engine reports it (`searchSessions`' `onProgress`); a second /sessions
// while one runs is refused with a note. Listing goes through this package's native
// SessionManager.list/listAll (worker threads and the sidecar index), the text search
// through the package's search engine (`searchSessions`: the SQLite FTS5 index shared with the
// `pi-session search` CLI and the JS API; words, "phrases", prefix*, case- and
// accent-insensitive, active branch), or a literal scan for a query without a word (`=>`,
// `!!`). pi loads this file through jiti; "pi-session-native" resolves to the package itself
// (self-reference through its `exports`), whether installed or in a clone.
import type { ExtensionAPI, ExtensionCommandContext, ExtensionContext } from "@earendil-works/pi-coding-agent";
import psn, { SessionManager, readSessionWindow } from "pi-session-native";

/** pi's tool-parameter schema type (a TypeBox TSchema); the plain JSON Schema below has its shape. */
type ToolParameters = Parameters<ExtensionAPI["registerTool"]>[0]["parameters"];
import {
  TOOL_LIMITS,
  clean,
  formatToolResult,
  indexable,
  listRow,
  progressText,
  quoted,
  roleLabel,
  searchDirs,
  searchSessionFiles,
  searchSessionsIndexed,
  sessionTitle,
  shownId,
  shortDate,
  snippet,
  tildify,
  windowLines,
} from "./lib/session-search.mjs";
import { showStoreState } from "./lib/store-state.mjs";
import { continuePoint } from "./lib/tool-results.mjs";

/** Sessions offered by /sessions. */
const COMMAND_MAX_SESSIONS = 50;
/** Key of this extension's footer status. */
const STATUS_KEY = "sessions";
/** Width of list rows when pi's terminal width is unknown (rpc clients draw their own). */
const DEFAULT_WIDTH = 120;

/** Delay before the background index warm-up starts (pi's start and first paint come first). */
const WARM_DELAY_MS = 2000;
/** Quiet time (no turn, no key pressed in the TUI) before the warm-up resumes. */
const WARM_IDLE_MS = 3000;
/** A word no session holds: a search for it brings the index up to date and finds nothing. */
const WARM_PROBE = "pisessionnativewarmupprobe";

/** The engine's index-build progress (`searchSessions`' `onProgress`). */
type IndexProgress = { phase: "indexing"; done: number; total: number; bytesDone?: number; bytesTotal?: number };
/** The engine's `warmSearchIndex`, when this build of the package has it. */
type WarmSearchIndex = (options?: {
  sessionDir?: string;
  onProgress?: (p: IndexProgress) => void;
  signal?: AbortSignal;
}) => Promise<void>;

type Info = Awaited<ReturnType<typeof SessionManager.list>>[number];

function currentSessionFile(ctx: ExtensionContext): string | undefined {
  try {
    return ctx.sessionManager.getSessionFile() ?? undefined;
  } catch {
    return undefined;
  }
}

function currentSessionDir(ctx: ExtensionContext): string | undefined {
  try {
    return ctx.sessionManager.getSessionDir() || undefined;
  } catch {
    return undefined;
  }
}

/** Every session of every project (newest first), plus those of pi's own session dir when it lies elsewhere. */
async function allSessions(
  ctx: ExtensionContext,
  onProgress?: (loaded: number, total: number) => void,
  signal?: AbortSignal,
): Promise<Info[]> {
  const infos = await SessionManager.listAll(onProgress, signal);
  const dir = currentSessionDir(ctx);
  if (dir) {
    const seen = new Set(infos.map((s) => s.path));
    let extra: Info[] = [];
    try {
      extra = (await SessionManager.list(ctx.cwd, dir, undefined, signal)).filter((s) => !seen.has(s.path));
    } catch {
      // an unreadable directory adds nothing
      signal?.throwIfAborted();
    }
    if (extra.length) {
      infos.push(...extra);
      infos.sort((a, b) => b.modified.getTime() - a.modified.getTime());
    }
  }
  return infos;
}

/** The sessions of the current project (the directory pi writes this session to). */
async function projectSessions(ctx: ExtensionContext): Promise<Info[]> {
  const dir = currentSessionDir(ctx);
  const infos = dir ? await SessionManager.list(ctx.cwd, dir) : await SessionManager.list(ctx.cwd);
  return infos.filter((s) => !s.cwd || s.cwd === ctx.cwd);
}

type Matches = Awaited<ReturnType<typeof searchSessionsIndexed<Info>>>;

/**
 * Search `infos` (newest first) for `query`: through the engine over pi's sessions root, and
 * over pi's session dir for this run when it lies elsewhere (`--session-dir`); a query
 * without a word to index by the literal scan.
 */
async function searchInfos(
  ctx: ExtensionContext,
  infos: Info[],
  query: string,
  opts: {
    perSession: number;
    maxSessions: number;
    cwd?: string;
    branch?: "active" | "all";
    onlyOtherBranches?: boolean;
    signal?: AbortSignal;
    onProgress?: (p: IndexProgress) => void;
  },
): Promise<Matches> {
  if (!indexable(query)) return searchSessionFiles(infos, query, opts);
  const sessionDirs = searchDirs(currentSessionDir(ctx));
  const current = currentSessionFile(ctx);
  return searchSessionsIndexed(infos, query, { ...opts, sessionDirs, exclude: current ? [current] : undefined });
}

function commandReport(matches: Matches, elsewhere: Matches, infos: Info[], query: string): string {
  const lines = [
    `sessions matching ${quoted(query)}: ${matches.sessions.length}${matches.complete ? "" : "+"} of ${infos.length}` +
      (elsewhere.sessions.length ? `; ${elsewhere.sessions.length} more only on other branches (marked)` : ""),
  ];
  for (const s of [...matches.sessions, ...elsewhere.sessions]) {
    const info = s.file as Info;
    lines.push(`${sessionTitle(info, 60)}  ${clean(tildify(info.cwd || "?"))}  ${shortDate(info.modified)}`);
    lines.push(`  ${clean(info.path)}`);
    for (const h of s.hits)
      lines.push(
        `  ${clean(h.entryId ?? "-")} ${clean(h.role)}${h.onActiveBranch === false ? " [other branch]" : ""}: ${snippet(h, 120)}`,
      );
  }
  return lines.join("\n");
}

/** Columns of pi's terminal (the TUI draws on stdout), or a default for rpc. */
function screenWidth(ctx: ExtensionContext): number {
  const cols = ctx.mode === "tui" ? process.stdout.columns : undefined;
  return cols && cols > 20 ? cols : DEFAULT_WIDTH;
}

type Match = Matches["sessions"][number];
type Choice = { action: "latest" } | { action: "hit"; entryId: string; role: string } | { action: "back" };

/**
 * The chosen session's hit in its context (the entries around it on its branch) and what to
 * do: continue from the session's latest entry, or from the hit, or go back to the list.
 */
async function chooseWhere(ctx: ExtensionCommandContext, match: Match, width: number): Promise<Choice | undefined> {
  const info = match.file as Info;
  const hit = match.hits[0];
  const entryId = hit?.entryId ?? undefined;
  const latest = "Continue from the latest entry";
  const back = "Back to the list";
  if (!entryId) {
    // A session-id match: no entry to show.
    const pick = await ctx.ui.select(`${sessionTitle(info, 80)} · ${clean(tildify(info.cwd || "?"))}`, [latest, back]);
    return pick === latest ? { action: "latest" } : pick === back ? { action: "back" } : undefined;
  }
  let around: Awaited<ReturnType<typeof readSessionWindow>> = [];
  try {
    around = await readSessionWindow(info.path, entryId, { before: 3, after: 3, maxEntryChars: 600, maxChars: 6000 });
  } catch {
    // unreadable now: the choice is still offered
  }
  const body = around.length
    ? windowLines(around, width - 4)
    : [`▶ ${roleLabel(hit.role, null)}: ${snippet(hit, width - 20)}`];
  // The hit is the latest entry of its branch: "from the hit" would be "from the latest" (unless off the latest branch).
  const atLatest = around.length > 0 && around[around.length - 1].hit && hit.onActiveBranch !== false;
  const role = roleLabel(hit.role, null);
  const offBranch = hit.onActiveBranch === false;
  const fromHit = `Continue from the hit (${role}, entry ${clean(entryId)}${offBranch ? ", on its branch" : ""})`;
  const title = [
    `${sessionTitle(info, Math.max(20, width - 40))} · ${clean(tildify(info.cwd || "?"))} · ${shortDate(info.modified)}`,
    ...(offBranch ? ["The hit is on another branch than the session's latest entry."] : []),
    "",
    ...body,
  ].join("\n");
  const options = atLatest ? [latest, back] : [latest, fromHit, back];
  const pick = await ctx.ui.select(title, options);
  if (pick === latest) return { action: "latest" };
  if (pick === fromHit) return { action: "hit", entryId, role };
  if (pick === back) return { action: "back" };
  return undefined;
}

/** Switch to `info`'s session, then (choice "hit") move its leaf to the hit; say where we are. */
async function switchTo(ctx: ExtensionCommandContext, info: Info, choice: Choice): Promise<void> {
  await ctx.waitForIdle();
  const label = sessionTitle(info, 60);
  // The id as `pi-session show` takes it: the shortest prefix naming one session of the store.
  const where = `${clean(shownId(info.id))}, ${clean(tildify(info.cwd || "?"))}`;
  let next: ExtensionCommandContext | undefined;
  let navigated: string | undefined;
  let target: ReturnType<typeof continuePoint> | undefined;
  const result = await ctx.switchSession(info.path, {
    withSession: async (replaced) => {
      next = replaced;
      if (choice.action !== "hit") return;
      try {
        // A tool call (or result) hit: past the turn's last result, so no call is left unanswered.
        target = continuePoint(replaced.sessionManager, choice.entryId);
        const r = await replaced.navigateTree(target.id, { summarize: false });
        navigated = r.cancelled ? "cancelled" : "ok";
      } catch (err) {
        navigated = String((err as Error)?.message ?? err);
      }
    },
  });
  if (result?.cancelled) {
    ctx.ui.notify("Session switch cancelled", "warning");
    return;
  }
  if (!next) return;
  // Said after switchSession returns: pi's own "Resumed session" status line is written after
  // withSession and would replace a notice given inside it (which is why it never showed).
  let at: string;
  if (choice.action === "hit" && navigated === "ok") {
    const entry = next.sessionManager.getEntry(choice.entryId);
    const intoEditor = (entry?.type === "message" && entry.message.role === "user") || entry?.type === "custom_message";
    // pi moves the leaf to a user message's parent (its text goes to the TUI's editor).
    const results = target && target.id !== choice.entryId ? target : undefined;
    at = intoEditor
      ? `just before the hit (${choice.role}, entry ${clean(choice.entryId)}${next.mode === "tui" ? ", its text in the editor" : ""})`
      : results
        ? `after the hit's tool results (${choice.role}, entry ${clean(choice.entryId)}; ${results.results} result${results.results === 1 ? "" : "s"}, up to entry ${clean(results.id)})`
        : `at the hit (${choice.role}, entry ${clean(choice.entryId)})`;
    if (target?.missing) at += `; ${target.missing} tool call${target.missing === 1 ? " has" : "s have"} no result`;
  } else {
    const leaf = next.sessionManager.getLeafId();
    at = `at its latest entry${leaf ? ` ${clean(leaf)}` : ""}`;
    if (choice.action === "hit") at += ` (could not go to entry ${clean(choice.entryId)}: ${clean(navigated ?? "?")})`;
  }
  next.ui.notify(
    `Switched to session "${label}" (${where}) ${at}`,
    navigated && navigated !== "ok" ? "warning" : "info",
  );
}

/** What the engine gives by `searchIndexReading` (this build of the package may lack it). */
type IndexReading = { path: string; bytesDone: number; bytes: number; ms: number };

/**
 * How long the engine is on one file before /sessions names it (PI_SESSION_NATIVE_SLOW_FILE_MS
 * overrides: the tests set 0, so that a fast machine cannot finish the large file unseen).
 */
const SLOW_FILE_MS = Number(process.env.PI_SESSION_NATIVE_SLOW_FILE_MS ?? 1000);

/**
 * The file an index build has been on for over a second, while /sessions shows a build's
 * progress: its `done` counts whole files, so a large one would hold the count still.
 */
function longRead(p: { phase: string } | undefined): IndexReading | undefined {
  if (p?.phase !== "indexing") return undefined;
  const reading = (psn as unknown as { searchIndexReading?: () => IndexReading | null }).searchIndexReading?.();
  return reading && reading.ms >= SLOW_FILE_MS ? reading : undefined;
}

/** `work`, or an AbortError as soon as `signal` aborts (the work goes on to its own end unawaited). */
function untilAborted<T>(work: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener("abort", onAbort, { once: true });
    work.then(
      (v) => {
        signal.removeEventListener("abort", onAbort);
        resolve(v);
      },
      (e) => {
        signal.removeEventListener("abort", onAbort);
        reject(e);
      },
    );
  });
}

/** The note for a /sessions given while one is searching. */
const stillSearching = (query: string) => `/sessions is still searching for ${quoted(query, 60)}; its list comes next`;

/** Enter as terminals send it (plain, and the kitty keyboard protocol's form). */
const ENTER = new Set(["\r", "\n", "\u001b[13u"]);

/** Escape and Ctrl+C as terminals send them (plain, and the kitty keyboard protocol's forms). */
const CANCEL = new Set(["\u001b", "\u0003", "\u001b[27u", "\u001b[99;5u"]);

/**
 * While /sessions searches in the TUI: Escape or Ctrl+C cancels it (`controller`), and an
 * Enter that would submit another /sessions is swallowed with a note (the text stays in the
 * editor). Returns the unsubscribe function.
 */
function guardSearch(ctx: ExtensionCommandContext, query: string, controller: AbortController): () => void {
  return ctx.ui.onTerminalInput((data) => {
    if (CANCEL.has(data)) {
      controller.abort();
      return { consume: true };
    }
    if (!ENTER.has(data)) return undefined;
    if (!/^\/sessions(\s|$)/.test(ctx.ui.getEditorText().trim())) return undefined;
    ctx.ui.notify(stillSearching(query), "warning");
    return { consume: true };
  });
}

/** /sessions: search, list, show the chosen hit in its context, switch. */
async function runSessionsCommand(ctx: ExtensionCommandContext, query: string): Promise<void> {
  const current = currentSessionFile(ctx);
  const status = (text: string) => {
    if (ctx.hasUI) ctx.ui.setStatus(STATUS_KEY, text);
  };
  // The footer's line: the latest progress, redrawn every second with the time spent, so it
  // moves even while the engine works on one large file.
  const started = Date.now();
  let last: IndexProgress | { phase: "listing"; done: number; total: number } | undefined;
  const tui = ctx.mode === "tui";
  const show = () => status(progressText(query, last, Math.floor((Date.now() - started) / 1000), tui, longRead(last)));
  let over = false;
  const progress = (p: typeof last) => {
    // a warm-up this search stopped waiting for (cancelled) may still report: not ours now
    if (over) return;
    last = p;
    show();
  };
  show();
  const ticker = setInterval(show, 1000);
  // Escape / Ctrl+C in the TUI cancels the search: everything below takes the signal, and each
  // wait also ends at once when it aborts (native work stops at its next check).
  const controller = new AbortController();
  const { signal } = controller;
  // pi's TUI queues what is submitted while a command runs and runs it afterwards: a second
  // /sessions would give a second list after this one. Refused while this one searches.
  const unguard = ctx.mode === "tui" ? guardSearch(ctx, query, controller) : () => {};
  let infos: Info[];
  let matches: Matches;
  let elsewhere: Matches;
  try {
    infos = (
      await untilAborted(
        allSessions(ctx, (done, total) => progress({ phase: "listing", done, total }), signal),
        signal,
      )
    ).filter((s) => s.path !== current);
    // A background warm-up building the index now: wait for it instead of building beside it.
    await untilAborted(awaitWarmUp(progress), signal);
    // One line per session in the dialog; up to three in the plain report.
    const perSession = ctx.hasUI ? 1 : 3;
    matches = await untilAborted(
      searchInfos(ctx, infos, query, {
        perSession,
        maxSessions: COMMAND_MAX_SESSIONS,
        signal,
        onProgress: progress,
      }),
      signal,
    );
    // Sessions that mention it only off their latest branch (say, after continuing from an
    // earlier hit): a second section. The literal scan reads every branch already.
    const matched = new Set(matches.sessions.map((m) => (m.file as Info).path));
    elsewhere = indexable(query)
      ? await untilAborted(
          searchInfos(
            ctx,
            infos.filter((s) => !matched.has(s.path)),
            query,
            {
              perSession,
              maxSessions: Math.max(10, COMMAND_MAX_SESSIONS - matches.sessions.length),
              branch: "all",
              onlyOtherBranches: true,
              signal,
            },
          ),
          signal,
        )
      : { sessions: [], searched: 0, complete: true };
  } catch (err) {
    if (!signal.aborted) throw err;
    ctx.ui.notify(`/sessions ${quoted(query, 60)} cancelled`, "info");
    return;
  } finally {
    over = true;
    clearInterval(ticker);
    unguard();
    if (ctx.hasUI) ctx.ui.setStatus(STATUS_KEY, undefined);
  }

  if (!ctx.hasUI) {
    // print / json mode: no dialog to pick from; report what was found on stderr (pi
    // keeps stdout for the model's answer in print mode and for events in json mode).
    process.stderr.write(`${commandReport(matches, elsewhere, infos, query)}\n`);
    return;
  }
  if (!matches.sessions.length && !elsewhere.sessions.length) {
    ctx.ui.notify(`No session mentions ${quoted(query)} (${infos.length} searched, every branch)`, "info");
    return;
  }
  const width = screenWidth(ctx);
  const all = [...matches.sessions, ...elsewhere.sessions];
  // The list's rows sit after "→ " and a one-column margin on each side; rows of the second
  // section are marked "[other branch]".
  const options = all.map((s, i) =>
    listRow({
      n: i + 1,
      info: s.file as Info,
      hit: s.hits[0],
      width: width - 4,
      otherBranch: i >= matches.sessions.length,
    }),
  );
  const count = (m: Matches) => `${m.sessions.length}${m.complete ? "" : "+"}`;
  const title = matches.sessions.length
    ? `Sessions mentioning ${quoted(query, 60)} (${count(matches)} of ${infos.length}${elsewhere.sessions.length ? `; ${count(elsewhere)} more only on other branches` : ""})`
    : `Sessions mentioning ${quoted(query, 60)} only on other branches than their latest (${count(elsewhere)} of ${infos.length})`;
  for (;;) {
    const picked = await ctx.ui.select(title, options);
    if (picked === undefined) return;
    const index = options.indexOf(picked);
    if (index < 0) return;
    const match = all[index];
    const choice = await chooseWhere(ctx, match, width);
    if (choice === undefined) return;
    if (choice.action === "back") continue;
    await switchTo(ctx, match.file as Info, choice);
    return;
  }
}

/**
 * The background warm-up: one per pi process (the extension is loaded again on each session
 * switch). It works only while pi is idle: a turn (agent_start) or, in the TUI, a key pressed
 * (a prompt is being typed) stops it, and it resumes after WARM_IDLE_MS of quiet (the engine
 * commits every 128 files, so little is redone).
 * `running` while it works, with its last progress; /sessions waits for it rather than
 * building the same index a second time beside it.
 */
type Warmer = {
  started: boolean;
  done: boolean;
  quit: boolean;
  /** An agent run is in progress (between agent_start and agent_end). */
  busy: boolean;
  dirs: string[];
  controller?: AbortController;
  timer?: ReturnType<typeof setTimeout>;
  running?: Promise<void>;
  progress?: IndexProgress;
  listeners: Set<(p: IndexProgress) => void>;
};
function warmer(): Warmer {
  const g = globalThis as { [key: symbol]: Warmer | undefined };
  const key = Symbol.for("pi-session-native.sessions.warmer");
  g[key] ??= { started: false, done: false, quit: false, busy: false, dirs: [], listeners: new Set() };
  return g[key];
}

/**
 * Bring the search index of `w.dirs` up to date off pi's thread (the engine works on libuv's
 * pool), so the first /sessions needs no index build: `warmSearchIndex` when the package has
 * it, else a search for a word no session holds (which refreshes the index the same way).
 * Errors are dropped: /sessions builds what is missing itself and reports it.
 */
async function warmIndex(w: Warmer, signal: AbortSignal): Promise<void> {
  const warm = (psn as unknown as { warmSearchIndex?: WarmSearchIndex }).warmSearchIndex;
  const onProgress = (p: IndexProgress) => {
    w.progress = p;
    for (const l of w.listeners) l(p);
  };
  for (const sessionDir of w.dirs) {
    if (signal.aborted) return;
    try {
      if (typeof warm === "function") await warm({ sessionDir, signal, onProgress });
      else
        await psn.searchSessions(WARM_PROBE, { sessionDir, limit: 1, signal, onProgress } as Parameters<
          typeof psn.searchSessions
        >[1]);
    } catch {
      // aborted, or unreadable: nothing to warm
      if (signal.aborted) return;
    }
  }
  w.done = true;
}

/** Start the warm-up in `delay` ms unless it is done, running or pi is quitting. */
function scheduleWarmUp(w: Warmer, delay: number): void {
  if (w.done || w.quit) return;
  if (w.timer) clearTimeout(w.timer);
  w.timer = setTimeout(() => {
    w.timer = undefined;
    if (w.running || w.done || w.quit || w.busy) return;
    const controller = new AbortController();
    w.controller = controller;
    w.running = warmIndex(w, controller.signal).finally(() => {
      w.running = undefined;
      w.progress = undefined;
    });
  }, delay);
  w.timer.unref?.();
}

/** Stop the warm-up (a turn starts, pi quits); it resumes when scheduled again. */
function pauseWarmUp(w: Warmer): void {
  if (w.timer) clearTimeout(w.timer);
  w.timer = undefined;
  w.controller?.abort();
}

/** Wait for a warm-up in progress (its progress shown through `onProgress`). */
async function awaitWarmUp(onProgress: (p: IndexProgress) => void): Promise<void> {
  const w = warmer();
  if (!w.running) return;
  if (w.progress) onProgress(w.progress);
  w.listeners.add(onProgress);
  try {
    await w.running;
  } finally {
    w.listeners.delete(onProgress);
  }
}

export default function sessionsExtension(pi: ExtensionAPI) {
  // pi-native's state where a TUI user sees it: a footer mark, and a notice (once per process)
  // when pi runs unmodified and why (the stderr line scrolls away before the first frame).
  pi.on("session_start", (_event, ctx) => {
    if (ctx.hasUI) showStoreState(ctx.ui);
  });
  // Keep the search index warm in the TUI, while pi is idle, once per process. Only the TUI by
  // default: there a key pressed stops it well before a prompt is sent, while an rpc client's
  // prompt can arrive while a batch is in flight (BENCHMARKS.md). PI_SESSION_NATIVE_WARM=0 turns
  // it off, =1 on in rpc mode too.
  pi.on("session_start", (_event, ctx) => {
    const setting = process.env.PI_SESSION_NATIVE_WARM;
    if (setting === "0" || !ctx.hasUI || (ctx.mode !== "tui" && setting !== "1")) return;
    const w = warmer();
    if (ctx.mode === "tui") {
      // A key pressed: a prompt is on its way; the warm-up makes room for its turn.
      ctx.ui.onTerminalInput(() => {
        if (w.started && !w.done && !w.quit) {
          pauseWarmUp(w);
          scheduleWarmUp(w, WARM_IDLE_MS);
        }
        return undefined;
      });
    }
    if (w.started) return;
    w.started = true;
    w.dirs = searchDirs(currentSessionDir(ctx));
    scheduleWarmUp(w, WARM_DELAY_MS);
  });
  pi.on("agent_start", () => {
    const w = warmer();
    w.busy = true;
    if (w.started) pauseWarmUp(w);
  });
  pi.on("agent_end", () => {
    const w = warmer();
    w.busy = false;
    if (w.started) scheduleWarmUp(w, WARM_IDLE_MS);
  });
  pi.on("session_shutdown", (event) => {
    if (event.reason !== "quit") return;
    const w = warmer();
    w.quit = true;
    pauseWarmUp(w);
  });

  /** The query of the /sessions that is running, if one is. */
  let running: string | undefined;

  pi.registerCommand("sessions", {
    description: "Search the text of all sessions (all projects) and switch to one",
    handler: async (args: string, ctx: ExtensionCommandContext) => {
      let query = (args ?? "").trim();
      if (!query && ctx.hasUI) query = ((await ctx.ui.input("Search sessions for:", "text")) ?? "").trim();
      if (!query) {
        const msg =
          'usage: /sessions <words> (all words, "phrases", prefix*; case-insensitive search of every session\'s messages)';
        if (ctx.hasUI) ctx.ui.notify(msg, "warning");
        else process.stderr.write(`${msg}\n`);
        return;
      }
      if (running !== undefined) {
        const msg = stillSearching(running);
        if (ctx.hasUI) ctx.ui.notify(msg, "warning");
        else process.stderr.write(`${msg}\n`);
        return;
      }
      running = query;
      try {
        // Nothing here may touch `ctx` after the command: once it has switched sessions, every
        // getter of this ctx throws (pi's stale-ctx guard). runSessionsCommand clears its
        // footer status itself, before any switch.
        await runSessionsCommand(ctx, query);
      } finally {
        running = undefined;
      }
    },
  });

  pi.registerTool({
    name: "search_sessions",
    label: "Search sessions",
    description:
      'Search the text of past pi sessions of the current project (all words must match; "exact phrases", ' +
      "prefix* and a session id work too; case- and accent-insensitive; user and assistant text, tool calls (file paths, " +
      "commands, patterns, edited text) and tool results, summaries; " +
      "the current branch of each session). Returns per matching session its id and file path, and per " +
      `matching entry the entry id, role and a snippet of at most ${TOOL_LIMITS.snippetChars} characters. Newest sessions first, ` +
      `best matches first within a session; at most \`limit\` matching entries (default ${TOOL_LIMITS.defaultHits}, max ${TOOL_LIMITS.maxHits}), ` +
      `${TOOL_LIMITS.perSession} per session, ${TOOL_LIMITS.totalChars} characters in all. The current session is not searched.`,
    promptSnippet: "Search the text of this project's past pi sessions",
    promptGuidelines: [
      "Use search_sessions when the user refers to earlier work or past conversations in this project that are not in the current context.",
    ],
    // Plain JSON Schema (pi validates any JSON Schema), so the package needs no typebox.
    parameters: {
      type: "object",
      properties: {
        query: {
          type: "string",
          description: 'Words to find (all must match), "exact phrases", prefix*',
          minLength: 1,
        },
        limit: {
          type: "integer",
          description: `Maximum matching entries to return (default ${TOOL_LIMITS.defaultHits}, max ${TOOL_LIMITS.maxHits})`,
          minimum: 1,
        },
      },
      required: ["query"],
    } as ToolParameters,
    async execute(_toolCallId, params, signal, _onUpdate, ctx) {
      const args = params as { query?: unknown; limit?: unknown };
      const query = String(args.query ?? "");
      if (!query.trim()) throw new Error("query must not be empty");
      const limit = Math.max(
        1,
        Math.min(
          TOOL_LIMITS.maxHits,
          Math.floor(Number(args.limit ?? TOOL_LIMITS.defaultHits)) || TOOL_LIMITS.defaultHits,
        ),
      );
      const current = currentSessionFile(ctx);
      const infos = (await projectSessions(ctx)).filter((s) => s.path !== current);
      await awaitWarmUp(() => {});
      // One more session than can be shown, so the output can say that more exist.
      const result = await searchInfos(ctx, infos, query, {
        perSession: TOOL_LIMITS.perSession,
        maxSessions: limit + 1,
        cwd: ctx.cwd,
        signal,
      });
      const mode = indexable(query) ? "words" : "literal";
      const { text, details } = formatToolResult({ query, cwd: ctx.cwd, result, total: infos.length, limit, mode });
      return { content: [{ type: "text", text }], details };
    },
  });
}
