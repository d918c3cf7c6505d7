// pi-session CLI: every command against generated temp stores and the committed sample store.
import { describe, expect, it } from "vitest";
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, readdirSync, writeFileSync, appendFileSync, statSync } from "node:fs";
import { basename, dirname, join } from "node:path";
import { root, ref, tmp } from "./helpers.mjs";
import { SessionBuilder, sampleSessions, writeSampleStore } from "../scripts/make-sample-store.mjs";
import { makeOut } from "../lib/cli/util.mjs";

const BIN = join(root, "bin", "pi-session.mjs");
const SAMPLE = join(root, "examples", "sample-store", "sessions");
const SAMPLE_DIR = join(SAMPLE, "--home-user-demo--");
const sampleFile = (prefix) =>
  join(
    SAMPLE_DIR,
    readdirSync(SAMPLE_DIR).find((f) => f.startsWith(prefix)),
  );
const agentDir = tmp("psn-cli-agent-");

function cli(args, { env = {}, cwd = root } = {}) {
  const r = spawnSync(process.execPath, [BIN, ...args], {
    cwd,
    encoding: "utf8",
    env: { ...process.env, NO_COLOR: "1", TZ: "UTC", PI_CODING_AGENT_DIR: agentDir, ...env },
  });
  return { code: r.status, out: r.stdout, err: r.stderr };
}
const json = (args, opts) => {
  const r = cli([...args, "--json"], opts);
  return { ...r, data: r.out ? JSON.parse(r.out) : undefined };
};

/** A temp session dir with the sample sessions. */
function tempStore() {
  const d = tmp("psn-cli-store-");
  writeSampleStore(d);
  return { root: join(d, "sessions"), dir: join(d, "sessions", "--home-user-demo--") };
}

describe("sample store", () => {
  it("is what scripts/make-sample-store.mjs generates (deterministic)", () => {
    const d = tmp("psn-cli-gen-");
    const files = writeSampleStore(d);
    const committed = readdirSync(SAMPLE_DIR).filter((f) => f.endsWith(".jsonl"));
    expect(files.map((f) => basename(f)).sort()).toEqual(committed.sort());
    for (const f of files) expect(readFileSync(f, "utf8")).toBe(readFileSync(join(SAMPLE_DIR, basename(f)), "utf8"));
  });
  it("loads in the reference with branches, labels, a compaction and a name", () => {
    const sm = ref.SessionManager.open(sampleFile("2026-01-05"));
    expect(sm.getSessionName()).toBe("Parser: trailing commas");
    expect(sm.getEntries().filter((e) => e.type === "label")).toHaveLength(2);
    const b = ref.SessionManager.open(sampleFile("2026-01-06"));
    expect(b.getEntries().some((e) => e.type === "compaction")).toBe(true);
  });
});

describe("help and conventions", () => {
  it("--help for every command, exit 0", () => {
    for (const c of ["ls", "show", "search", "check", "repair", "stats", "export"]) {
      const r = cli([c, "--help"]);
      expect(r.code, c).toBe(0);
      expect(r.out).toContain(`pi-session ${c}`);
    }
    expect(cli(["--help"]).code).toBe(0);
    expect(cli([]).code).toBe(2);
  });
  it("usage errors: one line on stderr, exit 2", () => {
    for (const args of [["frob"], ["ls", "--bogus"], ["show"], ["export", "x.jsonl"], ["ls", "--limit", "x"]]) {
      const r = cli(args);
      expect(r.code, args.join(" ")).toBe(2);
      expect(r.err.trim().split("\n"), args.join(" ")).toHaveLength(1);
      expect(r.err).toMatch(/^pi-session: /);
    }
  });
  it("a missing file: one line naming the path", () => {
    const r = cli(["show", "/nonexistent/dir/s.jsonl"]);
    expect(r.code).toBe(2);
    expect(r.err).toBe("pi-session: /nonexistent/dir/s.jsonl: no such file or directory\n");
  });
  it("colour only on a TTY and never with NO_COLOR", () => {
    // Colours become escape sequences at the sink (after sanitising the text they wrap).
    const w = [];
    const o = makeOut({ isTTY: true, write: (s) => w.push(s) }, {});
    o.line(o.red("x\x1b[2J"));
    expect(w.join("")).toBe("\x1b[31mx\x1b[2m\\e\x1b[22m[2J\x1b[39m\n");
    expect(makeOut({ isTTY: true, write() {} }, { NO_COLOR: "1" }).red("x")).toBe("x");
    expect(makeOut({ isTTY: false, write() {} }, {}).red("x")).toBe("x");
    const r = cli(["show", sampleFile("2026-01-05"), "--tree"], { env: { NO_COLOR: undefined } });
    expect(r.out).not.toContain("\x1b[");
  });
});

describe("ls", () => {
  it("--json matches SessionManager.listAll (reference) for a session dir", async () => {
    const { dir } = tempStore();
    const { code, data } = json(["ls", dir]);
    expect(code).toBe(0);
    const expected = await ref.SessionManager.listAll(dir);
    expect(data.map((s) => s.path)).toEqual(expected.map((s) => s.path));
    data.forEach((s, i) => {
      const e = expected[i];
      expect(s).toEqual({
        path: e.path,
        id: e.id,
        cwd: e.cwd,
        name: e.name ?? null,
        parentSessionPath: e.parentSessionPath ?? null,
        created: e.created.toISOString(),
        modified: e.modified.toISOString(),
        messageCount: e.messageCount,
        firstMessage: e.firstMessage,
        size: statSync(e.path).size,
      });
    });
  });
  it("default store: the current project via PI_CODING_AGENT_DIR, --all for every project", async () => {
    const agent = tmp("psn-cli-agent2-");
    const proj = join(agent, "proj");
    mkdirSync(proj);
    const projDir = join(agent, "sessions", `--${proj.replace(/^\//, "").replace(/[/\\:]/g, "-")}--`);
    const a = new SessionBuilder({ id: "019c0000-0000-7000-8000-0000000000a1", cwd: proj, seed: 5 });
    a.user("hello from proj");
    a.assistant("hi");
    a.write(projDir);
    const b = new SessionBuilder({ id: "019c0000-0000-7000-8000-0000000000b2", cwd: "/elsewhere", seed: 6 });
    b.user("other project");
    b.write(join(agent, "sessions", "--elsewhere--"));
    const env = { PI_CODING_AGENT_DIR: agent };
    const here = json(["ls"], { env, cwd: proj });
    expect(here.data.map((s) => s.id)).toEqual([a.header.id]);
    const viaCwd = json(["ls", "--cwd", proj], { env });
    expect(viaCwd.data.map((s) => s.id)).toEqual([a.header.id]);
    const all = json(["ls", "--all"], { env });
    process.env.PI_CODING_AGENT_DIR = agent;
    try {
      const expected = await ref.SessionManager.listAll();
      expect(all.data.map((s) => s.id)).toEqual(expected.map((s) => s.id));
      const listed = await ref.SessionManager.list(proj);
      expect(here.data.map((s) => s.path)).toEqual(listed.map((s) => s.path));
    } finally {
      process.env.PI_CODING_AGENT_DIR = agentDir;
    }
    expect(all.data).toHaveLength(2);
    // a sessions root given as DIR behaves like the store
    expect(
      json(["ls", join(agent, "sessions"), "--all"])
        .data.map((s) => s.id)
        .sort(),
    ).toEqual(all.data.map((s) => s.id).sort());
    expect(json(["ls", join(agent, "sessions"), "--cwd", proj]).data.map((s) => s.id)).toEqual([a.header.id]);
    // nothing there: empty list, not an error, and no directory created
    const empty = tmp("psn-cli-empty-");
    expect(json(["ls"], { env: { PI_CODING_AGENT_DIR: empty } }).data).toEqual([]);
    expect(existsSync(join(empty, "sessions"))).toBe(false);
  });
  it("table: newest first, name or first message, --limit", () => {
    const r = cli(["ls", SAMPLE, "--all"]);
    expect(r.code).toBe(0);
    const lines = r.out.trimEnd().split("\n");
    expect(lines[0]).toMatch(/^MODIFIED\s+MSGS\s+SIZE\s+ID\s+CWD\s+NAME \/ FIRST MESSAGE$/);
    expect(lines).toHaveLength(5);
    expect(lines[1]).toContain("019b9b10-0000");
    expect(lines[4]).toContain("Parser: trailing commas");
    expect(lines[4]).toMatch(/2026-01-05 09:01\s+8\s+4\.1 kB/);
    expect(cli(["ls", SAMPLE, "--all", "--limit", "2"]).out.trimEnd().split("\n")).toHaveLength(3);
  });
});

const EXPECTED_TREE = `Tree
002d616b  • [model: claude-sonnet-4-5]
2c0aba0b  • [thinking: medium]
1237126e  • user: The JSON parser in src/parse.ts crashes on a trailing comma. Can you fix it?
8fe27daa  ├─ • user: Actually, make trailing commas a clear error message instead of a crash.
cabceda1  │     • [chosen] assistant: Now \`parse()\` throws \`SyntaxError: trailing comma at 3:14\` instead of crashing.
b6142285  │     • [label: chosen → cabceda1]
7ad7ef47  │     • [title: Parser: trailing commas] ← leaf
ff2fe033  └─ assistant: Let me look at the parser first. [read: src/parse.ts]
6619b547        [read: src/parse.ts] → export function parse(s: string) { // ... }
469edeff        [first-fix] assistant: The tokenizer treats \`,]\` as an error. I changed it to skip a trailing comma before \`]\` and \`}\`.
356f7bbf        [label: first-fix → 469edeff]
990620d3        user: Please also add a test for it.
fe91a5fd        assistant: Added \`trailing comma\` cases to test/parse.test.ts; all 14 tests pass.
`;

describe("show", () => {
  it("header and stats", () => {
    const r = cli(["show", sampleFile("2026-01-05")]);
    expect(r.code).toBe(0);
    expect(r.out).toContain("Session  019b8d1e-5a00-7c3e-9a41-2f0c6d1e0a01");
    expect(r.out).toContain("Name     Parser: trailing commas");
    expect(r.out).toContain("Entries  13  (messages: user 3, assistant 4, toolResult 1)");
    expect(r.out).toContain("Branches 2 leaves; current leaf 7ad7ef47; 2 labels");
  });
  it("--tree draws branches, labels, the active path and the leaf", () => {
    const r = cli(["show", sampleFile("2026-01-05"), "--tree"]);
    expect(r.code).toBe(0);
    expect(r.out.slice(r.out.indexOf("Tree\n"))).toBe(EXPECTED_TREE);
  });
  it("--tree with several roots and nested branches", () => {
    const b = new SessionBuilder({ id: "019c0000-0000-7000-8000-00000000aaaa", seed: 9 });
    const u = b.user("root one");
    const x = b.assistant("reply A");
    b.user("follow A");
    b.branch(x);
    b.user("follow B");
    b.branch(u);
    b.assistant("reply C");
    b.branch(null);
    b.user("second root");
    const file = b.write(tmp("psn-cli-tree-"));
    const sm = ref.SessionManager.open(file);
    expect(sm.getTree()).toHaveLength(2);
    const r = cli(["show", file, "--tree"]);
    const body = r.out
      .slice(r.out.indexOf("Tree\n") + 5)
      .trimEnd()
      .split("\n")
      .map((l) => l.slice(10));
    expect(body).toEqual([
      // several roots: listed flat (pi's virtual root), the one holding the leaf first
      "• user: second root ← leaf",
      "user: root one",
      "├─ assistant: reply A",
      "│  ├─ user: follow A",
      "│  └─ user: follow B",
      "└─ assistant: reply C",
    ]);
  });
  it("--context marks compaction summaries, the retained tail and context edits", () => {
    const r = cli(["show", sampleFile("2026-01-06"), "--context"]);
    expect(r.code).toBe(0);
    const ctx = r.out.slice(r.out.indexOf("Context\n")).split("\n");
    expect(ctx[1]).toBe("thinking: off  model: openai/gpt-5  messages: 7");
    expect(ctx[2]).toMatch(/^ {2}1 compactionSummary \w{8} \[compaction summary\]$/);
    expect(ctx.filter((l) => l.includes("[retained tail]"))).toHaveLength(2);
    expect(r.out).toMatch(/user \w{8} \[edited by \w{8}\]\n {6}Add a Node 20\/22 matrix\./);
  });
  it("--context of a compaction without retainedTail: entries kept via firstKeptEntryId", () => {
    const b = new SessionBuilder({ id: "019c0000-0000-7000-8000-00000000cccc", seed: 3 });
    b.user("old question");
    b.assistant("old answer");
    const keep = b.user("kept question");
    b.assistant("kept answer");
    b.compaction("summary of the old part", keep, 1000);
    b.user("new question");
    const file = b.write(tmp("psn-cli-ctx-"));
    const r = cli(["show", file, "--context"]);
    const heads = r.out
      .slice(r.out.indexOf("Context\n"))
      .split("\n")
      .filter((l) => /^ {2}\d /.test(l));
    expect(heads.map((l) => l.replace(/ [0-9a-f]{8}/, ""))).toEqual([
      "  1 compactionSummary [compaction summary]",
      "  2 user [kept]",
      "  3 assistant [kept]",
      "  4 user",
    ]);
    const { data } = json(["show", file, "--context"]);
    expect(data.context).toEqual(JSON.parse(JSON.stringify(ref.SessionManager.open(file).buildSessionContext())));
  });
  it("--json: header, stats, tree and context as SessionManager computes them", () => {
    const f = sampleFile("2026-01-06");
    const { data } = json(["show", f, "--tree", "--context"]);
    const sm = ref.SessionManager.open(f);
    expect(data.header).toEqual(sm.getHeader());
    expect(data.leafId).toBe(sm.getLeafId());
    expect(data.context).toEqual(JSON.parse(JSON.stringify(sm.buildSessionContext())));
    expect(data.stats.messages).toEqual({ user: 4, assistant: 5, toolResult: 1 });
    expect(data.tree.map((n) => n.id)).toEqual(sm.getEntries().map((e) => e.id)); // one branch
    expect(data.tree[0]).toEqual({
      id: sm.getEntries()[0].id,
      type: "model_change",
      parentId: null,
      label: null,
      children: [sm.getEntries()[1].id],
    });
    const branched = json(["show", sampleFile("2026-01-05"), "--tree"]).data.tree;
    expect(branched.find((n) => n.id === "1237126e").children).toEqual(["ff2fe033", "8fe27daa"]);
    expect(branched.find((n) => n.id === "cabceda1").label).toBe("chosen");
  });
  it("resolves an id prefix in the store; unknown and ambiguous prefixes fail", () => {
    const r = cli(["show", "019b8e40", "--dir", SAMPLE]);
    expect(r.code).toBe(0);
    expect(r.out).toContain("019b8e40-1200-7a11-8b22-3c4d5e6f0a02");
    const none = cli(["show", "ffffffff", "--dir", SAMPLE]);
    expect(none.code).toBe(2);
    expect(none.err).toContain("ffffffff");
    // default store: PI_CODING_AGENT_DIR/sessions, every project
    const viaStore = cli(["show", "019b9b10"], { env: { PI_CODING_AGENT_DIR: dirname(SAMPLE) } });
    expect(viaStore.code).toBe(0);
    expect(viaStore.out).toContain("019b9b10-0000-7e00-8c00-5f6a7b8c9a04");
    expect(
      cli(["export", "019b9b10", "--format", "md"], { env: { PI_CODING_AGENT_DIR: dirname(SAMPLE) } }).out,
    ).toContain("# Session 019b9b10");
    const amb = cli(["show", "019b", "--dir", SAMPLE]);
    expect(amb.code).toBe(2);
    expect(amb.err).toContain("ambiguous");
  });
  it("never modifies the file (no final newline is added, unlike SessionManager.open)", () => {
    const d = tmp("psn-cli-ro-");
    const f = join(d, "s.jsonl");
    writeFileSync(f, readFileSync(sampleFile("2026-01-09"), "utf8").trimEnd());
    const before = readFileSync(f);
    expect(cli(["show", f, "--tree", "--context"]).code).toBe(0);
    expect(readFileSync(f).equals(before)).toBe(true);
  });
});

describe("check", () => {
  const H = '{"type":"session","version":3,"id":"s1","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/w"}';
  const m = (id, parentId, text = "x") =>
    JSON.stringify({
      type: "message",
      id,
      parentId,
      timestamp: "2026-01-01T00:00:01.000Z",
      message: { role: "user", content: text, timestamp: 1 },
    });
  const write = (lines, raw) => {
    const f = join(tmp("psn-cli-check-"), "s.jsonl");
    writeFileSync(f, raw ?? `${lines.join("\n")}\n`);
    return f;
  };
  const problems = (f) => json(["check", f]).data[0].problems.map((p) => [p.kind, p.line]);

  it("clean files: exit 0", () => {
    expect(cli(["check", SAMPLE]).code).toBe(0);
    const r = json(["check", SAMPLE]);
    expect(r.data).toHaveLength(4);
    expect(r.data.every((x) => x.ok && x.problems.length === 0)).toBe(true);
  });
  it("each problem kind, with line numbers; exit 1", () => {
    const cases = [
      [[H, m("a", null), "{not json", m("b", "a")], [["malformed", 3]]],
      [[H, m("a", null), "42", m("b", "a")], [["not-an-entry", 3]]],
      [[m("a", null), H], [["header", 1]]],
      [
        [H, m("a", null), JSON.stringify({ type: "message", parentId: "a", message: { role: "user", content: "x" } })],
        [["missing-id", 3]],
      ],
      [
        [H, m("a", null), m("b", "a"), m("a", "b")],
        [
          ["cycle", 3],
          ["duplicate-id", 4],
        ],
      ],
      [[H, m("a", null), m("b", "zzz")], [["dangling-parent", 3]]],
      [[H, m("a", "b"), m("b", "a")], [["cycle", 2]]],
      [[H, m("a", "a")], [["cycle", 2]]],
      [
        [
          H,
          m("a", null),
          JSON.stringify({ type: "label", id: "l", parentId: "a", timestamp: "t", targetId: "nope", label: "x" }),
        ],
        [["label-target", 3]],
      ],
      [
        [
          H,
          m("a", null),
          JSON.stringify({
            type: "context_edit",
            id: "c",
            parentId: "a",
            timestamp: "t",
            targetId: "nope",
            replacement: null,
          }),
        ],
        [["context-edit-target", 3]],
      ],
      [
        [
          H,
          m("a", null),
          m("b", "a"),
          m("side", "a"),
          JSON.stringify({
            type: "compaction",
            id: "k",
            parentId: "b",
            timestamp: "t",
            summary: "s",
            firstKeptEntryId: "side",
            tokensBefore: 1,
          }),
        ],
        [["compaction-first-kept", 5]],
      ],
      [
        [
          H,
          m("a", null),
          JSON.stringify({
            type: "compaction",
            id: "k",
            parentId: "a",
            timestamp: "t",
            summary: "s",
            firstKeptEntryId: "gone",
            tokensBefore: 1,
          }),
        ],
        [["compaction-first-kept", 3]],
      ],
      [
        [
          H,
          m("a", null),
          JSON.stringify({
            type: "compaction",
            id: "k",
            parentId: "a",
            timestamp: "t",
            summary: "s",
            tokensBefore: 1,
            retainedTail: [{ role: "user", content: "x" }, 7],
          }),
        ],
        [["retained-tail", 3]],
      ],
      [
        [
          H,
          m("a", null),
          JSON.stringify({
            type: "compaction",
            id: "k",
            parentId: "a",
            timestamp: "t",
            summary: "s",
            firstKeptEntryId: "a",
            tokensBefore: 1,
            retainedTail: {},
          }),
        ],
        [["retained-tail", 3]],
      ],
    ];
    for (const [lines, expected] of cases) {
      const f = write(lines);
      expect(problems(f), lines.join("\n")).toEqual(expected);
      const r = cli(["check", f]);
      expect(r.code).toBe(1);
      for (const [kind, line] of expected) expect(r.out).toContain(`${f}:${line}: ${kind}:`);
    }
  });
  it("a retainedTail compaction needs no firstKeptEntryId", () => {
    const f = write([
      H,
      m("a", null),
      JSON.stringify({
        type: "compaction",
        id: "k",
        parentId: "a",
        timestamp: "t",
        summary: "s",
        tokensBefore: 1,
        retainedTail: [{ role: "user", content: "x" }],
      }),
    ]);
    expect(problems(f)).toEqual([]);
  });
  it("torn tail and missing final newline", () => {
    const torn = write(null, `${H}\n${m("a", null)}\n{"type":"message","id":"b","par`);
    expect(problems(torn)).toEqual([["torn-tail", 3]]);
    const nonl = write(null, `${H}\n${m("a", null)}`);
    expect(problems(nonl)).toEqual([["missing-final-newline", 2]]);
  });
  it("notes are not problems: blank lines, legacy versions", () => {
    const f = write([H.replace('"version":3', '"version":2'), "", m("a", null)]);
    const r = json(["check", f]).data[0];
    expect(r.ok).toBe(true);
    expect(r.notes.map((n) => n.kind).sort()).toEqual(["blank-line", "legacy-version"]);
    expect(cli(["check", f]).code).toBe(0);
  });
  it("unreadable: exit 2, one line naming the path", () => {
    const r = cli(["check", "/nonexistent/x.jsonl"]);
    expect(r.code).toBe(2);
    expect(r.err).toBe("pi-session: /nonexistent/x.jsonl: no such file or directory\n");
    // a directory with a mix: worst code wins
    const d = tempStore().dir;
    writeFileSync(join(d, "zz-broken.jsonl"), `${H}\n{oops\n`);
    expect(cli(["check", d]).code).toBe(1);
    expect(cli(["check", d, "/nonexistent"]).code).toBe(2);
  });
});

describe("repair", () => {
  const H = '{"type":"session","version":3,"id":"s1","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/w"}';
  const completeLines = (text) =>
    text.split("\n").filter((l) => {
      try {
        JSON.parse(l);
        return true;
      } catch {
        return false;
      }
    });
  const setup = (content) => {
    const d = tmp("psn-cli-repair-");
    const f = join(d, "s.jsonl");
    writeFileSync(f, content);
    return { d, f };
  };
  const sidefiles = (d, kind) => readdirSync(d).filter((x) => x.includes(`.${kind}-`));

  it("torn tail: moved to the sidecar, backup written (--backup), no complete entry lost", () => {
    const good = readFileSync(sampleFile("2026-01-05"), "utf8");
    const tornBytes = '{"type":"message","id":"torn1","parentId":"7ad7ef47","message":{"role":"us';
    const { d, f } = setup(good + tornBytes);
    const original = readFileSync(f);
    expect(cli(["check", f]).code).toBe(1);
    const dry = cli(["repair", f, "--dry-run"]);
    expect(dry.code).toBe(0);
    expect(dry.out).toContain(`${f}:15: would move the torn last line`);
    expect(readdirSync(d)).toEqual(["s.jsonl"]);
    const r = json(["repair", f, "--backup"]);
    expect(r.code).toBe(0);
    expect(r.data.actions).toEqual([{ kind: "move-torn-tail", line: 15, bytes: tornBytes.length }]);
    expect(readFileSync(r.data.backup).equals(original)).toBe(true);
    expect(readFileSync(r.data.sidecar, "utf8")).toBe(tornBytes);
    const after = readFileSync(f, "utf8");
    expect(after).toBe(good);
    expect(completeLines(after)).toEqual(completeLines(original.toString("utf8")));
    expect(cli(["check", f]).code).toBe(0);
    // the reference loads the same entries as before
    expect(ref.loadEntriesFromFile(f)).toHaveLength(14);
    expect(cli(["repair", f]).out).toContain("nothing to repair");
    expect(sidefiles(d, "bak")).toHaveLength(1);
  });
  it("missing final newline: added; bytes otherwise unchanged; no backup unless asked", () => {
    const { d, f } = setup(`${H}\n{"type":"custom","id":"a","parentId":null,"timestamp":"t","customType":"x"}`);
    const original = readFileSync(f, "utf8");
    const plain = setup(`${H}\n{"type":"custom","id":"a","parentId":null,"timestamp":"t","customType":"x"}`);
    expect(json(["repair", plain.f]).data.backup).toBe(null);
    expect(readdirSync(plain.d)).toEqual(["s.jsonl"]);
    const r = json(["repair", f, "--backup"]);
    expect(r.data.actions).toEqual([{ kind: "add-final-newline", line: 2, bytes: 1 }]);
    expect(readFileSync(f, "utf8")).toBe(`${original}\n`);
    expect(sidefiles(d, "corrupt")).toHaveLength(0);
    expect(readFileSync(r.data.backup, "utf8")).toBe(original);
  });
  it("--move-malformed: malformed middle lines go to the sidecar with their line numbers", () => {
    const lines = [
      H,
      '{"type":"custom","id":"a","parentId":null,"timestamp":"t","customType":"x"}',
      "{broken",
      '{"type":"custom","id":"b","parentId":"a","timestamp":"t","customType":"x"}',
    ];
    const { f } = setup(`${lines.join("\n")}\n`);
    const plain = json(["repair", f, "--dry-run"]);
    expect(plain.data.actions).toEqual([]);
    const r = json(["repair", f, "--move-malformed"]);
    expect(r.data.actions).toEqual([{ kind: "move-malformed", line: 3, bytes: 8 }]);
    expect(readFileSync(f, "utf8")).toBe(`${[lines[0], lines[1], lines[3]].join("\n")}\n`);
    expect(readFileSync(r.data.sidecar, "utf8")).toBe("# line 3\n{broken\n");
  });
  it("a file that changes during the repair is left alone (nothing pi appended is lost, nothing left behind)", async () => {
    const { repairFile } = await import("../lib/cli/repair.mjs");
    const { d, f } = setup(
      `${H}\n{"type":"custom","id":"a","parentId":null,"timestamp":"t","customType":"x"}\n{"type":"cus`,
    );
    const appended = '\n{"type":"custom","id":"b","parentId":"a","timestamp":"t","customType":"y"}\n';
    const original = readFileSync(f, "utf8");
    expect(() => repairFile(f, { backup: true, beforeReplace: () => appendFileSync(f, appended) })).toThrow(
      /changed during the repair/,
    );
    expect(readFileSync(f, "utf8")).toBe(original + appended);
    expect(readdirSync(d)).toEqual(["s.jsonl"]);
  });
  it("unreadable file: exit 2", () => {
    const r = cli(["repair", "/nonexistent/s.jsonl"]);
    expect(r.code).toBe(2);
    expect(r.err).toContain("/nonexistent/s.jsonl");
  });
});

describe("search", () => {
  it("ranked by default: best hits with session and entry; exit 1 without match", () => {
    const r = cli(["search", "trailing comma", SAMPLE, "--all"]);
    expect(r.code).toBe(0);
    // Grouped by session: a header (short id, title, cwd, date), then its hits.
    const lines = r.out.split("\n");
    const head = lines.findIndex((l) => l.startsWith("019b8d1e  "));
    expect(lines[head]).toBe("019b8d1e  Parser: trailing commas  /home/user/demo  2026-01-05 09:01");
    expect(lines[head + 1]).toMatch(
      /^ {2}cabceda1 assistant Now `parse\(\)` throws `SyntaxError: trailing comma at 3:14`/,
    );
    expect(lines[head + 2]).toMatch(/^ {2}1237126e user {6}The JSON parser/);
    expect(r.out.match(/^019b8d1e {2}/gm)).toHaveLength(1);
    expect(r.err).toBe("");
    const none = cli(["search", "no-such-words-anywhere", SAMPLE, "--all"]);
    expect(none.code).toBe(1);
    expect(none.out).toBe("");
    expect(none.err).toBe('no match for "no-such-words-anywhere"\n');
    // A phrase query is shown as typed, not quoted twice.
    expect(cli(["search", '"comma trailing"', SAMPLE, "--all"]).err).toBe('no match for "comma trailing"\n');
  });
  it("ranked --json: SearchHit[], words, phrases, prefixes, filters, --all-branches", () => {
    const { code, data } = json(["search", "trailing comma", SAMPLE, "--all"]);
    expect(code).toBe(0);
    const hit = data.find((h) => h.entryId === "cabceda1");
    expect(hit).toMatchObject({
      role: "assistant",
      onActiveBranch: true,
      match: "text",
      sessionId: "019b8d1e-5a00-7c3e-9a41-2f0c6d1e0a01",
      cwd: "/home/user/demo",
    });
    expect(hit.snippet).toBe("Now `parse()` throws `SyntaxError: «trailing» «comma» at 3:14` instead of crashing.");
    for (const k of ["sessionPath", "timestamp", "score"]) expect(hit).toHaveProperty(k);
    // Best first.
    expect(data.map((h) => h.score)).toEqual(data.map((h) => h.score).sort((a, b) => b - a));
    expect(json(["search", '"comma trailing"', SAMPLE, "--all"]).code).toBe(1);
    expect(json(["search", "trail*", SAMPLE, "--all"]).data.length).toBeGreaterThan(0);
    // Case-insensitive whatever the case of the query (smart case is a scan option).
    expect(json(["search", "CACHE", SAMPLE, "--all"]).data.length).toBeGreaterThan(0);
    const roles = json(["search", "trailing", SAMPLE, "--all", "--role", "user", "--limit", "1000"]).data;
    expect(roles.length).toBeGreaterThan(0);
    expect(roles.every((h) => h.role === "user")).toBe(true);
    expect(json(["search", "trailing", SAMPLE, "--all", "--limit", "2"]).data).toHaveLength(2);
    const all = json(["search", "trailing", SAMPLE, "--all", "--limit", "1000"]).data;
    const paged = json(["search", "trailing", SAMPLE, "--all", "--limit", "1000", "--offset", "1"]).data;
    expect(paged).toEqual(all.slice(1));
    const branches = json(["search", "a*", SAMPLE, "--all", "--all-branches", "--limit", "1000"]).data;
    expect(branches.length).toBeGreaterThanOrEqual(
      json(["search", "a*", SAMPLE, "--all", "--limit", "1000"]).data.length,
    );
    // Scan options do not mix with ranked ones.
    const bad = cli(["search", "x", SAMPLE, "--literal", "--role", "user"]);
    expect(bad.code).toBe(2);
    expect(bad.err).toMatch(/--role is an option of the ranked search/);
  });
  it("--limit, and the default scope is the current project", () => {
    expect(json(["search", "a", SAMPLE, "--all", "--limit", "3", "--literal"]).data).toHaveLength(3);
    const agent = dirname(SAMPLE);
    for (const mode of [[], ["--literal"]]) {
      expect(json(["search", "trailing", ...mode], { env: { PI_CODING_AGENT_DIR: agent }, cwd: "/" }).code).toBe(1);
      expect(
        json(["search", "trailing", "--cwd", "/home/user/demo", ...mode], { env: { PI_CODING_AGENT_DIR: agent } }).data
          .length,
      ).toBeGreaterThan(3);
      expect(
        json(["search", "trailing", "--all", ...mode], { env: { PI_CODING_AGENT_DIR: agent } }).data.length,
      ).toBeGreaterThan(3);
    }
  });
  it("--literal: every matching line in file order, smart case; --regex; multi-line text", () => {
    const r = cli(["search", "trailing comma", SAMPLE, "--all", "--literal"]);
    expect(r.code).toBe(0);
    expect(r.out).toContain("Parser: trailing commas");
    expect(r.out).toMatch(/cabceda1 assistant Now `parse\(\)` throws `SyntaxError: trailing comma at 3:14`/);
    const { data } = json(["search", "^src/b\\.ts", SAMPLE, "--all", "--regex"]);
    expect(data).toHaveLength(1);
    expect(data[0]).toMatchObject({
      role: "toolResult",
      line: 2,
      matches: [[0, 8]],
      sessionId: "019b9a02-7f00-7d55-a1b2-4e5f60718a03",
    });
    expect(json(["search", "CACHE", SAMPLE, "--all", "--literal"]).data).toHaveLength(0);
    expect(json(["search", "cache", SAMPLE, "--all", "--literal"]).data.length).toBeGreaterThan(0);
    expect(json(["search", "CACHE", SAMPLE, "--all", "--literal", "-i"]).data.length).toBeGreaterThan(0);
    // compaction and branch summaries are searched too
    expect(json(["search", "language service rename", SAMPLE, "--all", "--literal"]).data.map((h) => h.role)).toContain(
      "branch_summary",
    );
    expect(json(["search", "language service rename", SAMPLE, "--all"]).data.map((h) => h.role)).toContain(
      "branch_summary",
    );
  });
});

describe("stats", () => {
  it("totals and usage by model", () => {
    const { code, data } = json(["stats", SAMPLE, "--all"]);
    expect(code).toBe(0);
    let tokens = 0;
    let cost = 0;
    const roles = {};
    let bytes = 0;
    for (const s of sampleSessions()) {
      bytes += Buffer.byteLength(s.text());
      for (const e of s.entries) {
        if (e.type !== "message") continue;
        roles[e.message.role] = (roles[e.message.role] ?? 0) + 1;
        if (e.message.role === "assistant") {
          tokens += e.message.usage.totalTokens;
          cost += e.message.usage.cost.total;
        }
      }
    }
    expect(data.sessions).toBe(4);
    expect(data.bytes).toBe(bytes);
    expect(data.messages).toEqual(roles);
    expect(data.tokens).toBe(tokens);
    expect(data.cost).toBeCloseTo(cost, 12);
    expect(Object.keys(data.byModel).sort()).toEqual(["anthropic/claude-sonnet-4-5", "openai/gpt-5"]);
    expect(data.byModel["openai/gpt-5"].messages).toBe(5);
    expect(cli(["stats", SAMPLE, "--all"]).out).toContain("Sessions  4");
    // One default scope with ls and search: the current project (here none), with a hint.
    const here = cli(["stats", SAMPLE]);
    expect(here.out).toContain("Sessions  0");
    expect(here.err).toBe("this project only; --all adds 4 sessions in 1 other project\n");
    expect(json(["stats", SAMPLE, "--cwd", "/elsewhere"]).data.sessions).toBe(0);
    expect(json(["stats", SAMPLE, "--cwd", "/home/user/demo"]).data.sessions).toBe(4);
  });
});

describe("export", () => {
  it("--format md: the active branch only", () => {
    const r = cli(["export", sampleFile("2026-01-05"), "--format", "md"]);
    expect(r.code).toBe(0);
    expect(r.out.startsWith("# Parser: trailing commas\n")).toBe(true);
    expect(r.out).toContain("## Assistant (claude-sonnet-4-5) [chosen]");
    expect(r.out).toContain("Actually, make trailing commas a clear error message");
    expect(r.out).not.toContain("Please also add a test"); // other branch
    const tools = cli(["export", sampleFile("2026-01-08"), "--format", "md"]);
    expect(tools.out).toContain("## Branch summary");
    expect(tools.out).toContain("### note");
    const other = cli(["export", sampleFile("2026-01-05"), "--format", "md", "--leaf", "fe91a5fd"]);
    expect(other.out).toContain("**Tool call** `read`");
    expect(other.out).toContain("### Tool result: `read`");
    expect(other.out).toContain("Please also add a test");
  });
  it("-o writes a file and never overwrites", () => {
    const out = join(tmp("psn-cli-exp-"), "s.md");
    expect(cli(["export", sampleFile("2026-01-06"), "--format", "md", "-o", out]).code).toBe(0);
    expect(readFileSync(out, "utf8")).toContain("## Compaction summary (48210 tokens before)");
    const again = cli(["export", sampleFile("2026-01-06"), "--format", "md", "-o", out]);
    expect(again.code).toBe(2);
    expect(again.err).toContain("already exists");
  });
  it("--format jsonl-branch: createBranchedSession semantics, written to OUT", () => {
    const { dir } = tempStore();
    const src = join(
      dir,
      readdirSync(dir).find((f) => f.startsWith("2026-01-05")),
    );
    const before = readFileSync(src);
    const outDir = tmp("psn-cli-branch-");
    const out = join(outDir, "branch.jsonl");
    const r = cli(["export", src, "--format", "jsonl-branch", "-o", out]);
    expect(r.code).toBe(0);
    expect(r.out.trim()).toBe(out);
    expect(readdirSync(outDir)).toEqual(["branch.jsonl"]);
    expect(readFileSync(src).equals(before)).toBe(true);
    const sm = ref.SessionManager.open(out);
    const orig = ref.SessionManager.open(src);
    expect(sm.getHeader().parentSession).toBe(src);
    const ids = (xs) => xs.filter((e) => e.type !== "label").map((e) => e.id);
    expect(ids(sm.getBranch())).toEqual(ids(orig.getBranch()));
    expect(sm.getEntries().every((e) => sm.getChildren(e.id).length <= 1)).toBe(true);
    expect(sm.getLabel("cabceda1")).toBe("chosen");
    expect(sm.getLabel("469edeff")).toBeUndefined();
    expect(ref.SessionManager.open(out).buildSessionContext()).toEqual(orig.buildSessionContext());
  });
});

describe("search engines agree (Rust literal scan vs JS RegExp)", async () => {
  const { searchFiles } = await import("../lib/cli/search.mjs");
  const native = (await import("node:module")).createRequire(import.meta.url)("../lib/native.js");
  it.skipIf(typeof native.checkSearchFiles !== "function")(
    "on random sessions with escapes, folding and surrogates",
    () => {
      let seed = 12345;
      const rnd = (n) => {
        seed = (seed * 1103515245 + 12345) & 0x7fffffff;
        return seed % n;
      };
      const alphabet = [
        "a",
        "A",
        "b",
        "ß",
        "ẞ",
        "σ",
        "ς",
        "Σ",
        "ſ",
        "s",
        "S",
        "k",
        "K",
        "\u212a",
        "İ",
        "ı",
        "i",
        "😀",
        "\u{10400}",
        "\u{10428}",
        "\n",
        " ",
        '"',
        "\\",
        "/",
        "\t",
        "\ud800",
        "é",
        "É",
      ];
      const word = () => Array.from({ length: 1 + rnd(12) }, () => alphabet[rnd(alphabet.length)]).join("");
      const d = tmp("psn-cli-search-");
      const files = [];
      for (let f = 0; f < 6; f++) {
        const lines = [
          JSON.stringify({
            type: "session",
            version: 3,
            id: `s${f}`,
            timestamp: "2026-01-01T00:00:00.000Z",
            cwd: "/w",
          }),
        ];
        for (let i = 0; i < 60; i++) {
          const k = rnd(8);
          const id = `e${f}_${i}`;
          let e;
          if (k === 0) e = { type: "message", id, message: { role: "user", content: word() } };
          else if (k === 1)
            e = {
              type: "message",
              id,
              message: {
                role: "assistant",
                content: [
                  { type: "text", text: word() },
                  { type: "toolCall", name: word() },
                  { type: "text", text: word() },
                ],
              },
            };
          else if (k === 2)
            e = { type: "message", id, message: { role: "toolResult", content: [{ type: "text", text: word() }] } };
          else if (k === 3)
            e = { type: "message", id, message: { role: "bashExecution", command: word(), output: word() } };
          else if (k === 4) e = { type: "custom_message", id, customType: rnd(2) ? "n" : 5, content: word() };
          else if (k === 5) e = { type: rnd(2) ? "compaction" : "branch_summary", id, summary: word() };
          else if (k === 6) e = { type: "label", id, label: word() };
          else
            e = {
              type: "message",
              message: { role: "user", content: [{ type: "text", text: word() }, { type: "image" }] },
            };
          let line = JSON.stringify(e);
          if (rnd(10) === 0)
            line = line.replace(/[a-z]/g, (c) => `\\u00${c.charCodeAt(0).toString(16)}`).replace(/\\\\u00/g, "\\\\u00"); // \u escapes
          if (rnd(10) === 0) line = line.replaceAll("/", "\\/");
          try {
            JSON.parse(line);
          } catch {
            line = JSON.stringify(e);
          }
          if (rnd(30) === 0) line = "{torn";
          lines.push(line);
        }
        const p = join(d, `f${f}.jsonl`);
        writeFileSync(p, `${lines.join("\n")}\n`);
        files.push({ path: p, id: `s${f}`, name: undefined });
      }
      files.push({ path: join(d, "missing.jsonl"), id: "x" });
      let compared = 0;
      for (let q = 0; q < 150; q++) {
        const query = Array.from({ length: 1 + rnd(3) }, () => alphabet[rnd(alphabet.length - 3)])
          .join("")
          .replace(/\n/g, "");
        if (!query) continue;
        for (const icase of [false, true]) {
          const a = searchFiles(files, { query, icase });
          const b = searchFiles(files, { query, icase, engine: "js" });
          expect(a, `${JSON.stringify(query)} icase=${icase}`).toEqual(b);
          compared += a.length;
        }
      }
      expect(compared).toBeGreaterThan(100);
      expect(searchFiles(files, { query: "a", limit: 3 })).toEqual(
        searchFiles(files, { query: "a", limit: 3, engine: "js" }),
      );
    },
  );
});

describe("check engines agree (Rust line pass vs JS)", async () => {
  const { checkFiles } = await import("../lib/cli/check.mjs");
  const native = (await import("node:module")).createRequire(import.meta.url)("../lib/native.js");
  it.skipIf(typeof native.checkScanFiles !== "function")("on broken, legacy and random files", () => {
    const d = tmp("psn-cli-checkdiff-");
    const H = '{"type":"session","version":3,"id":"s1","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/w"}';
    const texts = [
      "",
      "\n",
      "\n\n  \n",
      `${H}`,
      `${H}\n\ufeff\n\u0085\n{"type":"x","id":"a","parentId":null}\n   `,
      `${H}\n{"type":"message","id":"a","parentId":"a"}\n{"type":"label","id":"l","parentId":"a","targetId":"q","label":"\\ud800"}\n{"type":"compaction","id":"k","parentId":"l","firstKeptEntryId":"zz","retainedTail":[{"role":"user"},null,[],{"role":5}]}\n{"type":"compaction","id":"k2","parentId":"k","retainedTail":"str"}\n{"type":"compaction","id":"k3","parentId":"k2","firstKeptEntryId":"a"}\n{"id":"dup","id":"a","type":"custom","parentId":"k3"}\n[1]\nnull\n"s"\n{"type":7}\n{"type":"context_edit","id":"c","parentId":"a","targetId":"none"}\n{"type":"session","id":"again"}\n{"type":"x","id":"y","parentId":"a"}{"trailing":1}\n{"type":"mess`,
      `{"type":"session","id":"old","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/w"}\n{"type":"message","message":{"role":"user","content":"hi"}}\n`,
      readFileSync(sampleFile("2026-01-05"), "utf8"),
      readFileSync(sampleFile("2026-01-06"), "utf8").replace(/\n$/, ""),
    ];
    let seed = 7;
    const rnd = (n) => {
      seed = (seed * 1103515245 + 12345) & 0x7fffffff;
      return seed % n;
    };
    for (let f = 0; f < 8; f++) {
      const lines = [H];
      for (let i = 0; i < 80; i++) {
        const id = `e${rnd(60)}`;
        const parentId = rnd(5) ? `e${rnd(60)}` : null;
        const t = ["message", "label", "context_edit", "compaction", "custom"][rnd(5)];
        const e = { type: t, id, parentId, targetId: `e${rnd(70)}`, firstKeptEntryId: `e${rnd(70)}`, label: "L" };
        if (rnd(4) === 0) e.retainedTail = rnd(2) ? [{ role: "user" }] : { no: 1 };
        let line = JSON.stringify(e);
        if (rnd(25) === 0) line = line.slice(0, rnd(line.length));
        if (rnd(30) === 0) line = "";
        lines.push(line);
      }
      texts.push(lines.join("\n") + (rnd(2) ? "\n" : ""));
    }
    const files = texts.map((t, i) => {
      const p = join(d, `f${i}.jsonl`);
      writeFileSync(p, t);
      return p;
    });
    files.push(join(d, "missing.jsonl"));
    const a = checkFiles(files);
    const b = checkFiles(files, { engine: "js" });
    expect(a).toEqual(b);
    expect(a.filter((r) => !r.ok).length).toBeGreaterThan(8);
    expect(a.at(-1).unreadable).toContain("no such file");
  });
});
