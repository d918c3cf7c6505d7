// pi-session on a real terminal (tmux panes of 80 and 160 columns): ls, search and stats share
// one default scope (the current project) and say what --all would add; search hits are grouped
// by session with a "more" note; ls shows a screenful and the total; no line is wider than the
// terminal. A cold index build shows progress on stderr, erased afterwards, and nothing with
// --json. Facts that live only in tool calls are found (needs the engine that indexes tool
// calls; skipped, saying so, without it).
import { existsSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { scriptedUsage } from "../scripts/model-server.mjs";
import { displayWidth } from "../lib/cli/layout.mjs";
import { root, tmp } from "./helpers.mjs";
import { encodeCwd, filler, hasTmux, runCommands, tmuxServer, writeSessions } from "./tty-helpers.mjs";

const BIN = join(root, "bin", "pi-session.mjs");
const pkg = createRequire(import.meta.url)("../index.js");
const engineIndexesToolCalls = typeof pkg.warmSearchIndex === "function";

const server = hasTmux ? tmuxServer("psn-cli-tty") : null;
afterAll(() => server?.kill());

/** `commands` run in a tmux pane (tty-helpers runCommands) through the pi-session bin. */
const runInPane = (name, options) => runCommands(server, name, { ...options, bin: BIN });

describe.skipIf(!hasTmux)("pi-session on a terminal (tmux)", () => {
  const base = tmp("psn-cli-tty-");
  afterAll(() => process.env.KEEP_TTY_OUT || rmSync(base, { recursive: true, force: true }));
  const agentDir = join(base, "agent");
  const sessions = join(agentDir, "sessions");
  const project = join(base, "work", "a-rather-long-project-directory", "with", "nested", "parts", "app");
  const other = join(base, "other");
  mkdirSync(project, { recursive: true });
  mkdirSync(other, { recursive: true });
  const mine = writeSessions(sessions, project, 30, {
    turns: 1,
    text: (i) => [
      `walrus question ${i}: how does the very long title of this session read when it is wider than the terminal's columns allow for it`,
      `walrus answer ${i}`,
    ],
    name: (i) =>
      i === 3 ? "a named session about walruses and their migration habits in the northern seas" : undefined,
  });
  writeSessions(sessions, other, 3, {
    turns: 1,
    text: (i) => (i < 2 ? [`the quokka count ${i}`, `quokka ${i} counted`] : ["nothing", "here"]),
  });

  for (const width of [80, 160]) {
    it(`at ${width} columns: fitted, grouped, hinted`, async () => {
      const { screen, sections } = await runInPane(`w${width}`, {
        width,
        cwd: project,
        agentDir,
        logDir: base,
        commands: [
          ["ls", "ls"],
          ["search walrus", "search walrus"],
          ["search quokka", "search quokka"],
          ["stats", "stats"],
        ],
      });
      // No line wider than the terminal (wrapped lines are joined by capture-pane -J).
      for (const line of screen.split("\n")) expect(displayWidth(line), line).toBeLessThanOrEqual(width);

      // ls: a screenful (24 rows: 20 sessions), the total, what --all adds.
      const ls = sections.ls;
      expect(ls[0]).toMatch(
        width < 100 ? /^MODIFIED\s+MSGS\s+ID\s+CWD\s+NAME/ : /^MODIFIED\s+MSGS\s+SIZE\s+ID\s+CWD\s+NAME/,
      );
      const rows = ls.slice(1, -2);
      expect(rows).toHaveLength(20);
      for (const r of rows) expect(r).toMatch(/^\d{4}-\d\d-\d\d \d\d:\d\d\s+2\s/);
      // Newest first; short ids; the cwd cut at its start, keeping its end.
      expect(rows[0]).toContain(mine[29].id.slice(0, 8));
      for (const r of rows) expect(r).toMatch(/…\S*\/parts\/app {2}|\/parts\/app {2}/);
      expect(ls.slice(-2)).toEqual([
        "20 of 30 sessions shown; --limit 30 for all",
        "--all adds 3 sessions in 1 other project",
      ]);

      // search: grouped by session (one header each: short id, title, cwd, date), hits below.
      const s = sections["search walrus"];
      const headers = s.filter((l) => /^019c/.test(l));
      expect(headers.length).toBeGreaterThanOrEqual(10);
      for (const h of headers) expect(h).toMatch(/^019c[0-9a-f]{4} {2}\S.* {2}\S+ {2}\d{4}-\d\d-\d\d \d\d:\d\d$/);
      expect(new Set(headers.map((h) => h.slice(0, 8))).size).toBe(headers.length);
      const hitLines = s.filter((l) => /^ {2}[0-9a-f]{8} (user|assistant)/.test(l));
      expect(hitLines).toHaveLength(20);
      for (const [i, l] of s.entries()) if (/^019c/.test(l)) expect(s[i + 1]).toMatch(/^ {2}[0-9a-f]{8} /);
      expect(s.at(-1)).toBe("40 more hits: --offset 20");
      expect(s.join("\n")).not.toContain("--all has");
      // The named session's header shows its name (cut to fit at 80 columns).
      const named = headers.find((h) => h.startsWith(mine[3].id.slice(0, 8)));
      if (named) expect(named).toMatch(/ a named session about walr/);

      // Nothing here, but elsewhere: one line saying what --all would find.
      expect(sections["search quokka"]).toEqual(['no match for "quokka" here; --all has 4 hits in 2 sessions']);
      // stats: the current project, and a hint.
      expect(sections.stats[0]).toBe("Sessions  30");
      expect(sections.stats.at(-1)).toBe("this project only; --all adds 3 sessions in 1 other project");
    });
  }

  it("a cold index build shows progress on stderr, erased afterwards; nothing with --json", async () => {
    const big = join(base, "big");
    const bigProject = join(big, "proj");
    mkdirSync(bigProject, { recursive: true });
    const bigSessions = join(big, "agent", "sessions");
    writeSessions(bigSessions, bigProject, 800, {
      turns: 2,
      text: (i, t) => [filler(i * 7 + t, 250), filler(i * 11 + t, 250)],
    });
    const index = join(bigSessions, ".pi-session-search.sqlite");
    const { raw, sections } = await runInPane("cold", {
      width: 100,
      cwd: bigProject,
      agentDir: join(big, "agent"),
      logDir: base,
      commands: [["cold", "search zzzznotthere --all"]],
    });
    expect(existsSync(index)).toBe(true);
    expect(sections.cold).toEqual(['no match for "zzzznotthere"']);
    const progress = engineIndexesToolCalls
      ? /\r\x1b\[Kindexing sessions \d+\/800/
      : /\r\x1b\[K(searching sessions…|indexing sessions \d+\/800)/;
    expect(raw).toMatch(progress);
    if (engineIndexesToolCalls) expect(raw).toContain("indexing sessions 800/800");
    // Erased before the answer: the last progress write is followed by an erase, then the note.
    const last = raw.lastIndexOf("sessions");
    expect(raw.indexOf("\r\x1b[K", last)).toBeGreaterThan(last);
    expect(raw.indexOf("\r\x1b[K", last)).toBeLessThan(raw.indexOf("no match for"));

    rmSync(index, { force: true });
    for (const f of [`${index}-wal`, `${index}-shm`]) rmSync(f, { force: true });
    const json = await runInPane("cold-json", {
      width: 100,
      cwd: bigProject,
      agentDir: join(big, "agent"),
      logDir: base,
      commands: [["json", "search zzzznotthere --all --json"]],
    });
    expect(existsSync(index)).toBe(true);
    expect(json.raw).not.toMatch(/searching sessions|indexing sessions/);
    expect(json.sections.json).toEqual(["[]"]);
  });
});

describe.skipIf(!hasTmux || !engineIndexesToolCalls)("tool calls (needs the engine indexing tool calls)", () => {
  it("search finds a path, a command and an identifier that only tool calls hold; --role toolCall picks them", async () => {
    const base = tmp("psn-cli-tools-");
    const agentDir = join(base, "agent");
    const project = join(base, "proj");
    mkdirSync(project, { recursive: true });
    const dir = join(agentDir, "sessions", encodeCwd(project));
    mkdirSync(dir, { recursive: true });
    const id = "019c7777-0000-7000-8000-000000000001";
    const lines = [
      { type: "session", version: 3, id, timestamp: "2026-02-01T10:00:00.000Z", cwd: project },
      {
        type: "message",
        id: "u1",
        parentId: null,
        timestamp: "2026-02-01T10:00:01.000Z",
        message: { role: "user", content: "tidy the tree code", timestamp: 1 },
      },
      {
        type: "message",
        id: "a1",
        parentId: "u1",
        timestamp: "2026-02-01T10:00:02.000Z",
        message: {
          role: "assistant",
          content: [
            { type: "toolCall", id: "c1", name: "read", arguments: { path: "src/quillwort/session-manager.ts" } },
            { type: "toolCall", id: "c2", name: "bash", arguments: { command: "make frobnicate-widgets" } },
            {
              type: "toolCall",
              id: "c3",
              name: "edit",
              arguments: { path: "src/t.ts", oldText: "x", newText: "function idSummaryTreeZq() {}" },
            },
          ],
          stopReason: "toolUse",
          timestamp: 2,
        },
      },
    ];
    writeFileSync(
      join(dir, `2026-02-01T10-00-00-000Z_${id}.jsonl`),
      `${lines.map((l) => JSON.stringify(l)).join("\n")}\n`,
    );
    const { sections } = await runInPane("tools", {
      width: 120,
      cwd: project,
      agentDir,
      logDir: base,
      commands: [
        ["path", "search quillwort/session-manager.ts"],
        ["part", "search session-manager --role toolCall"],
        ["cmd", "search frobnicate-widgets"],
        ["ident", "search idSummaryTreeZq"],
      ],
    });
    for (const k of ["path", "part", "cmd", "ident"]) {
      expect(sections[k][0], k).toMatch(/^019c7777 {2}tidy the tree code/);
      expect(sections[k][1], k).toMatch(/^ {2}a1\s+toolCall /);
    }
    rmSync(base, { recursive: true, force: true });
  });
});

describe.skipIf(!hasTmux)("pi-session fits every line and helps with typos (tmux)", () => {
  it("show --tree/--context fit 80 and 160 columns (tool tags, labels, ← leaf); typos get the nearest name", async () => {
    const base = tmp("psn-cli-fit-");
    const agentDir = join(base, "agent");
    const project = join(base, "proj");
    mkdirSync(project, { recursive: true });
    const { SessionManager } = pkg;
    const sm = SessionManager.create(project, join(agentDir, "sessions", encodeCwd(project)));
    const usage = scriptedUsage();
    const u = sm.appendMessage({
      role: "user",
      content: "please read the invoice rounding code and fix the ledger reconciliation bug in it today",
      timestamp: 1,
    });
    const a = sm.appendMessage({
      role: "assistant",
      content: [
        { type: "text", text: "Let me look at the rounding module and the ledger first, then run the script." },
        { type: "toolCall", id: "c1", name: "read", arguments: { path: `${project}/src/billing/invoiceRounding.ts` } },
        {
          type: "toolCall",
          id: "c2",
          name: "bash",
          arguments: { command: "./scripts/reconcile-ledger.sh --dry-run --since 2026-01-01" },
        },
      ],
      api: "x",
      provider: "p",
      model: "m",
      usage,
      stopReason: "toolUse",
      timestamp: 2,
    });
    sm.appendMessage({
      role: "toolResult",
      toolCallId: "c1",
      toolName: "read",
      content: [
        { type: "text", text: "export function roundInvoice(x: number) { return Math.round(x * 100) / 100; }" },
      ],
      isError: false,
      timestamp: 3,
    });
    sm.appendLabelChange(a, "the-rounding-investigation-label-that-is-long");
    sm.branch(u);
    sm.appendMessage({
      role: "assistant",
      content: [{ type: "text", text: "another branch whose answer runs well past eighty columns of any terminal" }],
      api: "x",
      provider: "p",
      model: "m",
      usage,
      stopReason: "stop",
      timestamp: 4,
    });
    const file = sm.getSessionFile();
    for (const width of [80, 160]) {
      const { screen, sections } = await runInPane(`fit${width}`, {
        width,
        height: 60,
        cwd: project,
        agentDir,
        logDir: base,
        commands: [
          ["tree", `show ${file} --tree --context`],
          ["serch", "serch ledger"],
          ["role", "search ledger --role usr"],
          ["opt", "ls --al"],
        ],
      });
      for (const line of screen.split("\n")) expect(displayWidth(line), line).toBeLessThanOrEqual(width);
      const tree = sections.tree.slice(sections.tree.indexOf("Tree") + 1);
      // The leaf mark and the tree stay whole; the text is cut.
      expect(tree.find((l) => l.includes("← leaf"))).toMatch(
        /^[0-9a-f]{8} {2}├─ • assistant: another branch.* ← leaf$/,
      );
      expect(tree.find((l) => l.includes("[the-rounding"))).toMatch(/└─ \[the-rounding/);
      if (width === 160) expect(tree.join("\n")).toContain("[read: ");
      // Errors are wrapped at spaces to the terminal's width, never cut.
      const said = (k) => sections[k].map((l) => l.trim()).join(" ");
      expect(said("serch")).toBe("pi-session: unknown command 'serch'; did you mean 'search'? (see pi-session --help)");
      expect(said("role")).toMatch(
        /^pi-session: search: --role usr: not a role; did you mean user\? \(roles: user, .*custom:<type>\)$/,
      );
      expect(said("opt")).toBe("pi-session: ls: unknown option --al; did you mean --all? (see pi-session ls --help)");
    }
    rmSync(base, { recursive: true, force: true });
  });
});

describe.skipIf(!hasTmux)("search's no-match line points to other branches (tmux)", () => {
  it("says what --all-branches would find when only abandoned branches mention it", async () => {
    const base = tmp("psn-cli-branches-");
    const agentDir = join(base, "agent");
    const project = join(base, "proj");
    mkdirSync(project, { recursive: true });
    const sm = pkg.SessionManager.create(project, join(agentDir, "sessions", encodeCwd(project)));
    const u = sm.appendMessage({ role: "user", content: "read the ledger code", timestamp: 1 });
    sm.appendMessage({ role: "user", content: "now run reconcile-ledger on it", timestamp: 2 });
    sm.branch(u);
    sm.appendMessage({ role: "user", content: "something else instead", timestamp: 3 });
    const { sections } = await runInPane("branches", {
      width: 100,
      cwd: project,
      agentDir,
      logDir: base,
      commands: [
        ["active", "search reconcile-ledger"],
        ["all", "search reconcile-ledger --all-branches"],
        ["none", "search nowhere-at-all"],
      ],
    });
    expect(sections.active).toEqual(['no match for "reconcile-ledger" here; --all-branches has 1 hit in 1 session']);
    expect(sections.all.join("\n")).toMatch(/now run reconcile-ledger on it.*\[abandoned branch\]/);
    expect(sections.none).toEqual(['no match for "nowhere-at-all" here']);
    rmSync(base, { recursive: true, force: true });
  });
});
