// pi extension of pi-session-native (the package's `pi` manifest names this file):
//
//   /sessions <text>   search of the message text of every session (all projects), pick one,
//                      switch to it
//   search_sessions    a tool the model can call: the same search over the past sessions of
//                      the current project, bounded output (paths, session ids, entry ids,
//                      snippets)
//
// Listing goes through this package's native SessionManager.list/listAll (worker threads and
// the sidecar index), the text search through the package's search engine (`searchSessions`:
// the SQLite FTS5 index shared with the `pi-session search` CLI and the JS API; words,
// "phrases", prefix*, case- and accent-insensitive, active branch), or a literal scan for a
// query without a word (`=>`, `!!`). pi loads this file through jiti; "pi-session-native"
// resolves to the package itself (self-reference through its `exports`), whether installed or
// in a clone.
import type { ExtensionAPI, ExtensionCommandContext, ExtensionContext } from "@earendil-works/pi-coding-agent";
import { SessionManager } from "pi-session-native";

/** pi's tool-parameter schema type (a TypeBox TSchema); the plain JSON Schema below has its shape. */
type ToolParameters = Parameters<ExtensionAPI["registerTool"]>[0]["parameters"];
import {
  TOOL_LIMITS,
  clean,
  formatToolResult,
  indexable,
  oneLine,
  searchDirs,
  searchSessionFiles,
  searchSessionsIndexed,
  sessionTitle,
  shortDate,
  snippet,
  tildify,
} from "./lib/session-search.mjs";

/** Sessions offered by /sessions. */
const COMMAND_MAX_SESSIONS = 50;

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
async function allSessions(ctx: ExtensionContext): Promise<Info[]> {
  const infos = await SessionManager.listAll();
  const dir = currentSessionDir(ctx);
  if (dir) {
    const seen = new Set(infos.map((s) => s.path));
    let extra: Info[] = [];
    try {
      extra = (await SessionManager.list(ctx.cwd, dir)).filter((s) => !seen.has(s.path));
    } catch {
      // an unreadable directory adds nothing
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
  opts: { perSession: number; maxSessions: number; cwd?: string; signal?: AbortSignal },
): Promise<Matches> {
  if (!indexable(query)) return searchSessionFiles(infos, query, opts);
  const sessionDirs = searchDirs(currentSessionDir(ctx));
  const current = currentSessionFile(ctx);
  return searchSessionsIndexed(infos, query, { ...opts, sessionDirs, exclude: current ? [current] : undefined });
}

function commandReport(matches: Matches, infos: Info[], query: string): string {
  const lines = [
    `sessions matching "${oneLine(query, 80)}": ${matches.sessions.length}${matches.complete ? "" : "+"} of ${infos.length}`,
  ];
  for (const s of matches.sessions) {
    const info = s.file as Info;
    lines.push(`${sessionTitle(info, 60)}  ${clean(tildify(info.cwd || "?"))}  ${shortDate(info.modified)}`);
    lines.push(`  ${clean(info.path)}`);
    for (const h of s.hits) lines.push(`  ${clean(h.entryId ?? "-")} ${clean(h.role)}: ${snippet(h, 120)}`);
  }
  return lines.join("\n");
}

export default function sessionsExtension(pi: ExtensionAPI) {
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
      const current = currentSessionFile(ctx);
      const infos = (await allSessions(ctx)).filter((s) => s.path !== current);
      // One line per session in the dialog; up to three in the plain report.
      const matches = await searchInfos(ctx, infos, query, {
        perSession: ctx.hasUI ? 1 : 3,
        maxSessions: COMMAND_MAX_SESSIONS,
      });

      if (!ctx.hasUI) {
        // print / json mode: no dialog to pick from; report what was found on stderr (pi
        // keeps stdout for the model's answer in print mode and for events in json mode).
        process.stderr.write(`${commandReport(matches, infos, query)}\n`);
        return;
      }
      if (!matches.sessions.length) {
        ctx.ui.notify(`No session mentions "${oneLine(query, 80)}" (${infos.length} searched)`, "info");
        return;
      }
      const options = matches.sessions.map((s, i) => {
        const info = s.file as Info;
        const where = `${tildify(info.cwd || "?")}, ${shortDate(info.modified)}`;
        return `${i + 1}. ${sessionTitle(info, 50)} — ${snippet(s.hits[0], 90)}  [${clean(where)}]`;
      });
      const title = `Sessions mentioning "${oneLine(query, 60)}" (${matches.sessions.length}${matches.complete ? "" : "+"} of ${infos.length})`;
      const choice = await ctx.ui.select(title, options);
      if (choice === undefined) return;
      const index = options.indexOf(choice);
      if (index < 0) return;
      const target = matches.sessions[index].file as Info;
      await ctx.waitForIdle();
      const label = sessionTitle(target, 60);
      const result = await ctx.switchSession(target.path, {
        withSession: async (next) => {
          next.ui.notify(`Switched to session ${label} (${clean(tildify(target.path))})`, "info");
        },
      });
      if (result?.cancelled) ctx.ui.notify("Session switch cancelled", "warning");
    },
  });

  pi.registerTool({
    name: "search_sessions",
    label: "Search sessions",
    description:
      'Search the message text of past pi sessions of the current project (all words must match; "exact phrases", ' +
      "prefix* and a session id work too; case- and accent-insensitive; user, assistant and tool-result text, summaries; " +
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
