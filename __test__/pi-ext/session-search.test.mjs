// The extension's search helpers (extensions/lib/session-search.mjs), in-process: the batched
// per-session search against a per-file reference, and the sanitising of printed text.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { searchFiles } from "../../lib/cli/search.mjs";
import {
  TOOL_LIMITS,
  clean,
  engineHit,
  formatToolResult,
  indexable,
  searchDirs,
  searchSessionFiles,
  searchSessionsIndexed,
  sessionsRoot,
  snippet,
} from "../../extensions/lib/session-search.mjs";
import { SessionManager } from "./helpers.mjs";

const root = mkdtempSync(join(tmpdir(), "pi-ext-search-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

/** 90 sessions (three batches of the helper) with 0, 1, 2 or 40 matching lines. */
function store() {
  const files = [];
  for (let i = 0; i < 90; i++) {
    const sm = SessionManager.create("/proj", join(root, "s"));
    const n = [0, 1, 2, 40][(i * 7) % 4];
    sm.appendMessage({ role: "user", content: `session ${i}`, timestamp: 1 });
    for (let k = 0; k < n; k++)
      sm.appendMessage({ role: "user", content: `line ${k} of ${i}: the Needle`, timestamp: 2 });
    sm.appendMessage({ role: "assistant", content: [{ type: "text", text: "ok" }], timestamp: 3 });
    files.push({ path: sm.getSessionFile(), id: sm.getSessionId(), n });
  }
  return files;
}

describe("searchSessionFiles", () => {
  const files = store();

  it("finds every matching session, in file order, with its first lines, across batches that hit the cap", () => {
    for (const perSession of [1, 3]) {
      const got = searchSessionFiles(files, "NEEDLE", { perSession, maxSessions: 1000 });
      expect(got.complete).toBe(true);
      expect(got.searched).toBe(files.length);
      const want = files.filter((f) => f.n > 0);
      expect(got.sessions.map((s) => s.file.path)).toEqual(want.map((f) => f.path));
      for (const s of got.sessions) {
        const ref = searchFiles([s.file], { query: "needle", icase: true });
        expect(s.hits).toEqual(ref.slice(0, perSession));
        expect(s.more).toBe(ref.length > perSession);
      }
    }
  });

  it("stops after maxSessions and says the search was not complete", () => {
    const got = searchSessionFiles(files, "needle", { perSession: 2, maxSessions: 5 });
    expect(got.sessions).toHaveLength(5);
    expect(got.complete).toBe(false);
    expect(got.sessions.map((s) => s.file.path)).toEqual(
      files
        .filter((f) => f.n > 0)
        .slice(0, 5)
        .map((f) => f.path),
    );
  });

  it("formats a bounded tool result", () => {
    const result = searchSessionFiles(files, "needle", { perSession: TOOL_LIMITS.perSession, maxSessions: 51 });
    const { text, details } = formatToolResult({
      query: "needle",
      cwd: "/proj",
      result,
      total: files.length,
      limit: 50,
    });
    expect(text.split("\n").filter((l) => l.startsWith("  - entry "))).toHaveLength(50);
    expect(text.length).toBeLessThanOrEqual(TOOL_LIMITS.totalChars);
    expect(details.truncated).toBe(true);
    expect(text).toMatch(/\[Output limited to 50 matching lines/);
  });
});

describe("searchSessionsIndexed (the search engine)", () => {
  const files = store();
  const dir = join(root, "s");
  const other = SessionManager.create("/elsewhere", dir);
  other.appendMessage({ role: "user", content: "the needle elsewhere", timestamp: 1 });
  const colored = SessionManager.create("/proj", dir);
  colored.appendMessage({ role: "user", content: "run the tests", timestamp: 1 });
  colored.appendMessage({
    role: "toolResult",
    toolCallId: "t1",
    toolName: "bash",
    content: [{ type: "text", text: "FAIL \u001b[31mNeedle\u001b[0m \u001b]0;pwned\u0007 x" }],
    isError: false,
    timestamp: 2,
  });
  const all = [
    ...files,
    { path: colored.getSessionFile(), id: colored.getSessionId(), n: 1 },
    { path: other.getSessionFile(), id: other.getSessionId(), n: 1 },
  ];

  it("reports the matching sessions in the order given, the best hits of each, the rest as `more`", async () => {
    const got = await searchSessionsIndexed(all, "needle", { perSession: 3, maxSessions: 1000, sessionDirs: [dir] });
    expect(got.complete).toBe(true);
    expect(got.sessions.map((s) => s.file.path)).toEqual(all.filter((f) => f.n > 0).map((f) => f.path));
    for (const s of got.sessions) {
      expect(s.hits.length).toBe(Math.min(3, s.file.n));
      expect(s.more).toBe(s.file.n > 3);
      for (const h of s.hits) {
        expect(h.text).not.toMatch(/[«»]/);
        const [a, b] = h.matches[0];
        expect(h.text.slice(a, b).toLowerCase()).toBe("needle");
      }
    }
    // A coloured word of a tool's output is found; what is shown is sanitised.
    const c = got.sessions.find((s) => s.file.path === colored.getSessionFile());
    expect(c.hits[0].role).toBe("toolResult");
    expect(snippet(c.hits[0], 100)).toBe("FAIL Needle x");
  });

  it("filters by cwd, leaves out excluded files, stops after maxSessions", async () => {
    const got = await searchSessionsIndexed(all, "needle", {
      perSession: 1,
      maxSessions: 1000,
      sessionDirs: [dir],
      cwd: "/elsewhere",
    });
    expect(got.sessions.map((s) => s.file.path)).toEqual([other.getSessionFile()]);
    const ex = await searchSessionsIndexed(all, "needle", {
      perSession: 1,
      maxSessions: 1000,
      sessionDirs: [dir],
      exclude: [other.getSessionFile()],
    });
    expect(ex.sessions.map((s) => s.file.path)).not.toContain(other.getSessionFile());
    const few = await searchSessionsIndexed(all, "needle", { perSession: 1, maxSessions: 5, sessionDirs: [dir] });
    expect(few.sessions).toHaveLength(5);
    expect(few.complete).toBe(false);
    // Only the files given are reported.
    const some = await searchSessionsIndexed(all.slice(0, 10), "needle", { perSession: 1, sessionDirs: [dir] });
    expect(some.sessions.every((s) => all.slice(0, 10).includes(s.file))).toBe(true);
  });

  it("turns engine marks into match offsets; a query without a word goes to the literal scan", () => {
    const h = engineHit({
      sessionPath: "/p",
      sessionId: "i",
      entryId: "e",
      role: "user",
      snippet: "…a «Foo» and «bar» «not a mark»",
      score: 1,
    });
    expect(h.text).toBe("…a Foo and bar «not a mark»");
    expect(h.matches).toEqual([
      [3, 6],
      [11, 14],
    ]);
    expect(indexable("=> !!")).toBe(false);
    expect(indexable("naïve")).toBe(true);
    expect(indexable("修复")).toBe(true);
    expect(searchDirs(undefined)).toEqual([sessionsRoot()]);
    expect(searchDirs(join(sessionsRoot(), "--proj--"))).toEqual([sessionsRoot()]);
    expect(searchDirs("/somewhere/else")).toEqual([sessionsRoot(), "/somewhere/else"]);
  });
});

describe("sanitising", () => {
  it("removes escape sequences and shows other controls as symbols", () => {
    expect(clean("a\u001b[1;31mred\u001b[0m b")).toBe("ared b");
    expect(clean("x\u001b]0;title\u0007y")).toBe("xy");
    expect(clean("x\u001b]8;;http://e\u001b\\link\u001b]8;;\u001b\\y")).toBe("xlinky");
    expect(clean("bell\u0007 nul\u0000 del\u007f c1\u009b2J")).toBe("bell\u2407 nul\u2400 del\u2421 c1");
    expect(clean("line\nnext\ttab\r")).toBe("line next tab ");
    expect(clean("a\u202eb\u2066c")).toBe("abc");
  });

  it("cuts a window around the first match", () => {
    const text = `${"a".repeat(500)}MATCH${"b".repeat(500)}`;
    const s = snippet({ text, matches: [[500, 505]] }, 100);
    expect(s).toContain("MATCH");
    expect(s.startsWith("…") && s.endsWith("…")).toBe(true);
    expect(s.length).toBe(102);
    expect(snippet({ text: "short MATCH", matches: [[6, 11]] }, 100)).toBe("short MATCH");
    // A surrogate pair is never cut in half.
    const emoji = `${"😀".repeat(100)}MATCH`;
    const e = snippet({ text: emoji, matches: [[200, 205]] }, 51);
    expect(e).not.toMatch(/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/);
  });
});
