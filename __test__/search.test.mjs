// searchSessions / readSessionWindow (issue 25): recall against a brute-force scan, branch
// flags and filtering, incremental updates, a concurrent writer in another process, hostile
// index files, pathological queries.
import { describe, it, expect } from "vitest";
import { spawn, execFileSync } from "node:child_process";
import {
  chmodSync,
  chownSync,
  lstatSync,
  readFileSync,
  readdirSync,
  renameSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
  mkdirSync,
} from "node:fs";
import { join } from "node:path";
import { nat, root, tmp } from "./helpers.mjs";
import { writeLargeSession } from "./tty-helpers.mjs";

const { SessionManager, searchSessions, warmSearchIndex, readSessionWindow, searchIndexReading } = nat;
const INDEX = ".pi-session-search.sqlite";

const user = (t) => ({ role: "user", content: t, timestamp: Date.now() });
const asst = (t, tool) => ({
  role: "assistant",
  content: [{ type: "text", text: t }, ...(tool ? [{ type: "toolCall", id: "c1", name: tool, arguments: {} }] : [])],
  timestamp: Date.now(),
});

const WORDS = "alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike".split(" ");
const filler = (i, n = 12) => Array.from({ length: n }, (_, k) => WORDS[(i * 7 + k * 3) % WORDS.length]).join(" ");

/**
 * A store of `n` sessions in `dir/--proj-k--/`. Session i plants fact i: the word
 * `zq<i>fact`, the phrase `purple <i> walrus`, the prefix word `authx<i>ology`. Every third
 * session plants it on an abandoned branch. Returns the facts with where they were planted.
 */
function makeStore(dir, n) {
  const facts = [];
  for (let i = 0; i < n; i++) {
    const sub = join(dir, `--proj-${i % 3}--`);
    const sm = SessionManager.create(`/proj/${i % 3}`, sub);
    const u = sm.appendMessage(user(`session ${i}: ${filler(i)}`));
    sm.appendMessage(asst(filler(i + 1), "bash"));
    const abandoned = i % 3 === 0;
    const text = `note ${filler(i, 4)} zq${i}fact then purple ${i} walrus and Authx${i}ology done`;
    const planted = abandoned ? sm.appendMessage(asst(text, "read")) : null;
    if (abandoned) sm.branch(u);
    const id = abandoned ? planted : sm.appendMessage(asst(text, "read"));
    sm.appendMessage(user(`follow up ${filler(i + 2)}`));
    facts.push({ i, path: sm.getSessionFile(), sessionId: sm.getSessionId(), entryId: id, active: !abandoned });
  }
  return facts;
}

/** Brute force: (path, entryId) of every entry whose text contains `needle` (case-insensitive). */
function scan(dir, needle) {
  const out = [];
  for (const d of readdirSync(dir)) {
    const sub = join(dir, d);
    if (!statSync(sub).isDirectory()) continue;
    for (const f of readdirSync(sub).filter((x) => x.endsWith(".jsonl"))) {
      const path = join(sub, f);
      for (const line of readFileSync(path, "utf8").split("\n")) {
        if (!line.trim()) continue;
        const e = JSON.parse(line);
        const c = e.message?.content;
        const t =
          typeof c === "string"
            ? c
            : Array.isArray(c)
              ? c
                  .filter((b) => b.type === "text")
                  .map((b) => b.text)
                  .join("\n")
              : "";
        if (t.toLowerCase().includes(needle.toLowerCase())) out.push(`${path}#${e.id}`);
      }
    }
  }
  return out.sort();
}

const key = (h) => `${h.sessionPath}#${h.entryId}`;

describe("searchSessions", () => {
  const dir = tmp("psn-search-");
  const facts = makeStore(dir, 30);

  it("finds every planted fact by word, phrase and prefix, with the right branch flag, like a scan", async () => {
    for (const f of facts) {
      const want = scan(dir, `zq${f.i}fact`);
      expect(want).toEqual([`${f.path}#${f.entryId}`]);
      for (const q of [`zq${f.i}fact`, `"purple ${f.i} walrus"`, `authx${f.i}olo*`, `AUTHX${f.i}OLOGY zq${f.i}fact`]) {
        const hits = await searchSessions(q, { sessionDir: dir, branch: "all" });
        expect(hits.map(key), q).toEqual(want);
        expect(hits[0].onActiveBranch, q).toBe(f.active);
        expect(hits[0].sessionId).toBe(f.sessionId);
        expect(hits[0].role).toBe("assistant");
        expect(hits[0].snippet).toMatch(/«/);
      }
    }
    // A common word: as many hits as the scan finds entries (within the limit).
    const all = await searchSessions("walrus", { sessionDir: dir, branch: "all", limit: 1000 });
    expect(all.map(key).sort()).toEqual(scan(dir, "walrus"));
  });

  it("filters abandoned branches by default", async () => {
    for (const f of facts) {
      const hits = await searchSessions(`zq${f.i}fact`, { sessionDir: dir });
      expect(hits.length).toBe(f.active ? 1 : 0);
    }
    const walrus = await searchSessions("walrus", { sessionDir: dir, limit: 1000 });
    expect(walrus.length).toBe(facts.filter((f) => f.active).length);
    expect(walrus.every((h) => h.onActiveBranch)).toBe(true);
  });

  it("filters by cwd, role, tool, time, and pages with limit/offset", async () => {
    const byCwd = await searchSessions("walrus", { sessionDir: dir, cwd: "/proj/1", branch: "all", limit: 1000 });
    expect(byCwd.length).toBe(10);
    expect(byCwd.every((h) => h.cwd === "/proj/1")).toBe(true);
    expect(await searchSessions("walrus", { sessionDir: dir, roles: ["user"] })).toEqual([]);
    expect(
      (await searchSessions("walrus", { sessionDir: dir, tools: ["read"], branch: "all", limit: 1000 })).length,
    ).toBe(30);
    expect(await searchSessions("walrus", { sessionDir: dir, tools: ["bash"] })).toEqual([]);
    expect(await searchSessions("walrus", { sessionDir: dir, since: Date.now() + 60_000 })).toEqual([]);
    expect((await searchSessions("walrus", { sessionDir: dir, until: new Date(Date.now() + 60_000) })).length).toBe(20);
    const page1 = await searchSessions("walrus", { sessionDir: dir, limit: 5 });
    const page2 = await searchSessions("walrus", { sessionDir: dir, limit: 5, offset: 5 });
    expect(page1.length).toBe(5);
    expect(page2.length).toBe(5);
    expect(new Set([...page1, ...page2].map(key)).size).toBe(10);
    const one = await searchSessions("walrus", { sessionDir: dir, limit: 100, perSession: 1, branch: "all" });
    expect(new Set(one.map((h) => h.sessionPath)).size).toBe(one.length);
  });

  it("finds a session by id or id prefix", async () => {
    const f = facts[4];
    // The full id: that session first.
    const exact = await searchSessions(f.sessionId, { sessionDir: dir });
    expect(exact[0].sessionPath).toBe(f.path);
    expect(exact[0].match).toBe("sessionId");
    // A prefix (uuid v7: the first 13 characters are the creation millisecond, which
    // sessions made in the same millisecond share): every session it names, that one among them.
    const prefix = f.sessionId.slice(0, 13);
    const byId = (await searchSessions(prefix, { sessionDir: dir, limit: 1000 })).filter(
      (h) => h.match === "sessionId",
    );
    expect(byId.map((h) => h.sessionPath)).toContain(f.path);
    for (const h of byId) expect(h.sessionId.startsWith(prefix)).toBe(true);
  });

  it("is accent- and case-insensitive for Latin text and finds CJK by substring", async () => {
    const d = tmp("psn-search-i18n-");
    const sm = SessionManager.create("/x", d);
    sm.appendMessage(user("Le CAFÉ de la Straße: 修复了解析器的错误"));
    expect((await searchSessions("cafe strasse", { sessionDir: d })).length).toBe(1);
    expect((await searchSessions("Café", { sessionDir: d })).length).toBe(1);
    expect((await searchSessions("解析器", { sessionDir: d })).length).toBe(1);
    expect((await searchSessions("析器的", { sessionDir: d })).length).toBe(1);
    expect((await searchSessions("解器", { sessionDir: d })).length).toBe(0);
  });

  it("sees an appended turn at the next query (incremental), and a rewritten file", async () => {
    const d = tmp("psn-search-inc-");
    const sm = SessionManager.create("/x", d);
    sm.appendMessage(user("first turn"));
    expect(await searchSessions("secondturnword", { sessionDir: d })).toEqual([]);
    sm.appendMessage(asst("the secondturnword arrives"));
    expect((await searchSessions("secondturnword", { sessionDir: d })).length).toBe(1);
    // Branch from the first entry: the old turn leaves the active branch.
    const first = sm.getEntries()[0].id;
    sm.branch(first);
    sm.appendMessage(asst("a thirdturnword elsewhere"));
    expect(await searchSessions("secondturnword", { sessionDir: d })).toEqual([]);
    expect((await searchSessions("secondturnword", { sessionDir: d, branch: "all" }))[0].onActiveBranch).toBe(false);
    expect((await searchSessions("thirdturnword", { sessionDir: d }))[0].onActiveBranch).toBe(true);
    // Rewritten in place (shorter): old text gone.
    const file = sm.getSessionFile();
    const lines = readFileSync(file, "utf8").split("\n").filter(Boolean);
    writeFileSync(file, `${lines[0]}\n${lines[1]}\n`);
    expect(await searchSessions("thirdturnword", { sessionDir: d, branch: "all" })).toEqual([]);
    expect((await searchSessions("first", { sessionDir: d })).length).toBe(1);
    // Removed: no hit.
    rmSync(file);
    expect(await searchSessions("first", { sessionDir: d })).toEqual([]);
  });

  it("has no stale hit while another process appends", async () => {
    const d = tmp("psn-search-conc-");
    const sm = SessionManager.create("/x", d);
    sm.appendMessage(user("writer start"));
    const file = sm.getSessionFile();
    const script = `
      const { SessionManager } = require(${JSON.stringify(join(root, "index.js"))});
      const sm = SessionManager.open(${JSON.stringify(file)});
      let i = 0;
      const tick = () => {
        sm.appendMessage({ role: "assistant", content: [{ type: "text", text: "conc" + i + "word" }], timestamp: Date.now() });
        process.stdout.write(i + "\\n");
        if (++i < 15) setTimeout(tick, 20); else process.exit(0);
      };
      tick();`;
    const child = spawn(process.execPath, ["-e", script], { stdio: ["ignore", "pipe", "inherit"] });
    const acked = [];
    let buf = "";
    child.stdout.on("data", (c) => {
      buf += c;
      const parts = buf.split("\n");
      buf = parts.pop();
      acked.push(...parts.map(Number));
    });
    const done = new Promise((r) => child.on("exit", r));
    let running = true;
    done.then(() => (running = false));
    const checked = new Set();
    while (running || checked.size < acked.length) {
      // Background noise: a query that races with the writer must not fail.
      await searchSessions("conc*", { sessionDir: d, limit: 50 });
      for (const i of acked.slice()) {
        if (checked.has(i)) continue;
        // Acknowledged: the query after this one (at the latest) must see it.
        await searchSessions("writer", { sessionDir: d });
        const hits = await searchSessions(`conc${i}word`, { sessionDir: d });
        expect(hits.length, `conc${i}word`).toBe(1);
        checked.add(i);
      }
    }
    expect(await done).toBe(0);
    expect(checked.size).toBe(15);
  });

  it("rebuilds hostile index files and never follows them", async () => {
    const d = tmp("psn-search-hostile-");
    const sm = SessionManager.create("/x", d);
    sm.appendMessage(user("hostile needleword"));
    const ix = join(d, INDEX);
    const check = async () => {
      const hits = await searchSessions("needleword", { sessionDir: d });
      expect(hits.length).toBe(1);
      const st = lstatSync(ix);
      expect(st.isFile()).toBe(true);
      expect(st.mode & 0o777).toBe(0o600);
      expect(st.uid).toBe(process.getuid());
    };
    await check();
    // FIFO
    rmSync(ix);
    execFileSync("mkfifo", [ix]);
    await check();
    // symlink to /dev/zero, and to a file of ours that must stay untouched
    rmSync(ix);
    symlinkSync("/dev/zero", ix);
    await check();
    const victim = join(d, "victim.txt");
    writeFileSync(victim, "keep");
    rmSync(ix);
    symlinkSync(victim, ix);
    await check();
    expect(readFileSync(victim, "utf8")).toBe("keep");
    // garbage
    rmSync(ix);
    writeFileSync(ix, Buffer.alloc(100_000, 0x41), { mode: 0o600 });
    await check();
    // a valid SQLite file of someone else's schema
    rmSync(ix);
    writeFileSync(ix, Buffer.concat([Buffer.from("SQLite format 3\0"), Buffer.alloc(8192, 7)]), { mode: 0o600 });
    await check();
    // wrong owner, then readable by others
    if (process.getuid() === 0) {
      chownSync(ix, 1234, 1234);
      await check();
    }
    chmodSync(ix, 0o644);
    await check();
    // a directory
    rmSync(ix, { force: true });
    mkdirSync(ix);
    const hits = await searchSessions("needleword", { sessionDir: d });
    expect(hits.length).toBe(1); // in memory: the directory is left alone
    rmSync(ix, { recursive: true });
    await check();
  });

  it("takes pathological queries as text, in bounded time", async () => {
    const qs = [
      "x".repeat(100_000),
      "zq1fact ".repeat(20_000),
      '"'.repeat(1000),
      "*",
      "**",
      "-",
      "^",
      "NEAR(zq1fact walrus, 2)",
      "zq1fact OR zq2fact",
      "zq1fact NOT walrus",
      "body:zq1fact",
      "fts:zq1fact",
      "{body}: zq1fact",
      "zq1fact -walrus",
      "^zq1fact",
      "(",
      "\u0000\u0001",
      "\ud800",
      "a".repeat(5000) + "*",
    ];
    for (const q of qs) {
      const t0 = Date.now();
      const hits = await searchSessions(q, { sessionDir: dir, branch: "all" });
      expect(Array.isArray(hits)).toBe(true);
      expect(Date.now() - t0, q.slice(0, 40)).toBeLessThan(5000);
    }
    // Operators are words: "OR" must be in the text, so this finds nothing.
    expect(await searchSessions("zq1fact OR zq2fact", { sessionDir: dir, branch: "all" })).toEqual([]);
    // "-walrus" is the word walrus.
    expect((await searchSessions("zq1fact -walrus", { sessionDir: dir, branch: "all" })).length).toBe(1);
    expect((await searchSessions("body:zq1fact", { sessionDir: dir, branch: "all" })).length).toBe(0);
    expect((await searchSessions("NEAR(zq1fact walrus, 2)", { sessionDir: dir, branch: "all" })).length).toBe(0);
  });

  it("honours an AbortSignal", async () => {
    const ac = new AbortController();
    ac.abort();
    await expect(searchSessions("walrus", { sessionDir: dir, signal: ac.signal })).rejects.toThrow();
  });
});

/**
 * A session planting fact `i` in every place a fact can live: user text, assistant text, a
 * thinking block (not indexed), tool calls of each kind (edit: path and old/new text; bash:
 * command; grep: pattern; write: content; read: path), a tool result, a `!` command, an
 * extension's message, a compaction and a branch summary, a label and the session's name.
 * Every fact is a word of its own: `<place>fact<i>`.
 */
function plantEverywhere(dir, i) {
  const sm = SessionManager.create(`/tools/${i % 2}`, dir);
  const u = sm.appendMessage(user(`please fix the helper ufact${i}z`));
  sm.appendMessage({
    role: "assistant",
    content: [
      { type: "thinking", thinking: `hidden tfact${i}z` },
      { type: "text", text: `Looking afact${i}z` },
      {
        type: "toolCall",
        id: `e${i}`,
        name: "edit",
        arguments: {
          path: `src/mod${i}/session-manager.ts`,
          edits: [{ oldText: `function fooWidget${i}Helper() { eoldfact${i}z }`, newText: `enewfact${i}z` }],
        },
      },
      { type: "toolCall", id: `b${i}`, name: "bash", arguments: { command: `npm run quokka${i}-check`, timeout: 30 } },
      { type: "toolCall", id: `g${i}`, name: "grep", arguments: { pattern: `gpatfact${i}z.*x`, ignoreCase: true } },
      { type: "toolCall", id: `w${i}`, name: "write", arguments: { path: "notes.md", content: `# wfact${i}z\n` } },
      { type: "toolCall", id: `r${i}`, name: "read", arguments: { path: `docs/readfact${i}z.md`, offset: 10 } },
    ],
    timestamp: Date.now(),
  });
  sm.appendMessage({
    role: "toolResult",
    toolCallId: `e${i}`,
    toolName: "edit",
    content: [{ type: "text", text: `Replaced rfact${i}z` }],
    details: { diff: `dfact${i}z` },
    isError: false,
    timestamp: Date.now(),
  });
  sm.appendMessage({
    role: "bashExecution",
    command: `ls bcmdfact${i}z`,
    output: `boutfact${i}z`,
    exitCode: 0,
    timestamp: Date.now(),
  });
  sm.appendCustomMessageEntry("note", `custom cfact${i}z`, true);
  sm.appendCompaction(`summary kfact${i}z`, u, 1000);
  sm.appendLabelChange(u, `lfact${i}z`);
  sm.appendSessionInfo(`name nfact${i}z`);
  sm.branchWithSummary(sm.getLeafId(), `branch sfact${i}z`);
  sm.appendMessage(user("after the branch"));
  return sm.getSessionFile();
}

/**
 * Brute force over the places the engine documents as indexed (index.d.ts SearchHit.role):
 * `path#entryId role` of every text holding `needle` (case-insensitive), all branches.
 */
function scanEverywhere(dir, needle) {
  const texts = (c) =>
    typeof c === "string"
      ? [c]
      : Array.isArray(c)
        ? [
            c
              .filter((b) => b.type === "text")
              .map((b) => b.text)
              .join("\n"),
          ]
        : [];
  const strings = (v) =>
    typeof v === "string" ? [v] : v && typeof v === "object" ? Object.values(v).flatMap(strings) : [];
  const out = [];
  for (const f of readdirSync(dir).filter((x) => x.endsWith(".jsonl"))) {
    const path = join(dir, f);
    for (const line of readFileSync(path, "utf8").split("\n")) {
      if (!line.trim()) continue;
      const e = JSON.parse(line);
      const found = [];
      const m = e.message;
      if (e.type === "message" && ["user", "assistant", "toolResult"].includes(m.role)) {
        found.push(...texts(m.content).map((t) => [m.role, t]));
        if (m.role === "assistant")
          for (const b of m.content.filter((b) => b.type === "toolCall"))
            found.push(["toolCall", [b.name, ...strings(b.arguments)].join("\n")]);
      }
      if (e.type === "message" && m.role === "bashExecution") found.push(["bash", `${m.command}\n${m.output}`]);
      if (e.type === "custom_message") found.push([`custom:${e.customType}`, texts(e.content).join("")]);
      if (e.type === "compaction" || e.type === "branch_summary") found.push([e.type, e.summary]);
      if (e.type === "label") found.push(["label", e.label ?? ""]);
      if (e.type === "session_info") found.push(["session_info", e.name ?? ""]);
      for (const [role, t] of found)
        if (t.toLowerCase().includes(needle.toLowerCase())) out.push(`${path}#${e.id} ${role}`);
    }
  }
  return [...new Set(out)].sort();
}

describe("searchSessions: tool calls and every place a fact can live", () => {
  const dir = tmp("psn-search-tools-");
  const N = 12;
  const files = Array.from({ length: N }, (_, i) => plantEverywhere(dir, i));
  const keyRole = (h) => `${h.sessionPath}#${h.entryId} ${h.role}`;
  const find = async (q, o = {}) =>
    (await searchSessions(q, { sessionDir: dir, branch: "all", limit: 1000, ...o })).map(keyRole).sort();

  it("finds every planted fact where the brute-force scan does, in its role", async () => {
    const places = "u a eold enew gpat w read r bcmd bout c k l n s".split(" ");
    for (let i = 0; i < N; i++) {
      for (const p of places) {
        const word = `${p}fact${i}z`;
        const want = scanEverywhere(dir, word);
        expect(want.length, word).toBe(1);
        expect(await find(word), word).toEqual(want);
      }
      // Not indexed: thinking and a tool result's details.
      expect(await find(`tfact${i}z`)).toEqual([]);
      expect(await find(`dfact${i}z`)).toEqual([]);
    }
  });

  it("finds paths, commands and identifiers whole and by their parts", async () => {
    for (let i = 0; i < N; i++) {
      const call = scanEverywhere(dir, `eoldfact${i}z`);
      for (const q of [
        `src/mod${i}/session-manager.ts`,
        `mod${i}/session-manager`,
        `fooWidget${i}Helper`,
        `widget${i}Helper`,
        `fooWidget${i}`,
        `"npm run quokka${i}-check"`,
        `quokka${i}-check`,
        `docs/readfact${i}z.md`,
      ]) {
        const want = q.includes("quokka") || q.includes("readfact") ? scanEverywhere(dir, q.replaceAll('"', "")) : call;
        expect(want.length, q).toBe(1);
        expect(await find(q), q).toEqual(want);
      }
    }
    // A part shared by every session: as many hits as the scan finds.
    expect(await find("session-manager")).toEqual(scanEverywhere(dir, "session-manager"));
    expect((await find("helper")).length).toBe(2 * N); // the user's word and each identifier
    const [hit] = await searchSessions("fooWidget3Helper", { sessionDir: dir, branch: "all" });
    expect(hit.snippet).toContain("«fooWidget3Helper»");
    expect(hit.snippet).toContain("session-manager.ts");
  });

  it("picks tool calls and their results with roles and tools", async () => {
    const calls = await find("quokka3", { roles: ["toolCall"] });
    expect(calls).toEqual(scanEverywhere(dir, "quokka3-check"));
    expect(await find("quokka3", { roles: ["assistant"] })).toEqual([]);
    expect(await find("quokka3", { tools: ["edit"], roles: ["toolCall"] })).toEqual([]);
    expect((await find("quokka3", { tools: ["bash"] })).length).toBe(1);
    // tools: ["edit"]: the edit calls, the edit results, and assistant text calling edit.
    const edit = await searchSessions("edit OR replaced OR looking", {
      sessionDir: dir,
      branch: "all",
      limit: 1000,
    });
    expect(edit).toEqual([]); // words are ANDed, OR is a word
    const roles = new Set();
    for (const q of ["edit", "replaced", "looking"])
      for (const h of await searchSessions(q, { sessionDir: dir, branch: "all", limit: 1000, tools: ["edit"] }))
        roles.add(h.role);
    expect([...roles].sort()).toEqual(["assistant", "toolCall", "toolResult"]);
    // The window around a tool-call hit shows the calls.
    const [hit] = await searchSessions("gpatfact5z", { sessionDir: dir, branch: "all" });
    const w = await readSessionWindow(hit.sessionPath, hit.entryId, { before: 0, after: 0 });
    expect(w[0].hit).toBe(true);
    expect(w[0].text).toContain("Looking afact5z\nedit\nsrc/mod5/session-manager.ts");
    expect(w[0].text).toContain("grep\ngpatfact5z.*x");
    expect(files.length).toBe(N);
  });
});

describe("searchSessions: progress, warming, abort, old index", () => {
  /** A store of `n` sessions (tool-heavy ones) in a fresh directory. */
  function store(n) {
    const d = tmp("psn-search-progress-");
    for (let i = 0; i < n; i++) plantEverywhere(d, i);
    return d;
  }

  it("reports a cold build with growing done/total and stays quiet on a warm index", async () => {
    const d = store(150);
    const calls = [];
    const hits = await searchSessions("quokka7", { sessionDir: d, onProgress: (p) => calls.push(p) });
    expect(hits.length).toBe(1);
    expect(calls.length).toBeGreaterThan(0);
    const bytes = calls[0].bytesTotal;
    expect(bytes).toBeGreaterThan(150 * 1000);
    expect(calls.every((p) => p.phase === "indexing" && p.total === 150 && p.bytesTotal === bytes)).toBe(true);
    // Each report grows `done` or `bytesDone`, neither ever goes back.
    for (let k = 1; k < calls.length; k++) {
      expect(calls[k].done).toBeGreaterThanOrEqual(calls[k - 1].done);
      expect(calls[k].bytesDone).toBeGreaterThanOrEqual(calls[k - 1].bytesDone);
      expect(calls[k].done + calls[k].bytesDone).toBeGreaterThan(calls[k - 1].done + calls[k - 1].bytesDone);
    }
    expect(calls.at(-1)).toEqual({ phase: "indexing", done: 150, total: 150, bytesDone: bytes, bytesTotal: bytes });
    // Files changed within the last second are looked at once more when they settle.
    await new Promise((r) => setTimeout(r, 1100));
    await searchSessions("quokka7", { sessionDir: d });
    calls.length = 0;
    expect((await searchSessions("quokka8", { sessionDir: d, onProgress: (p) => calls.push(p) })).length).toBe(1);
    expect(calls).toEqual([]);
  });

  it("warms the index without a query; the next search has nothing to index", async () => {
    const d = store(60);
    const calls = [];
    await expect(warmSearchIndex({ sessionDir: d, onProgress: (p) => calls.push(p) })).resolves.toBeUndefined();
    expect(calls.at(-1)).toMatchObject({ phase: "indexing", done: 60, total: 60 });
    await new Promise((r) => setTimeout(r, 1100));
    await warmSearchIndex({ sessionDir: d });
    calls.length = 0;
    expect((await searchSessions("gpatfact9z", { sessionDir: d, onProgress: (p) => calls.push(p) })).length).toBe(1);
    expect(calls).toEqual([]);
    // A search started while a warm-up builds (after the warm-up's first report) waits for
    // it, receives that build's reports, and finds the same.
    const d2 = store(150);
    const seen = [];
    /** @type {{ started?: Promise<unknown[]> }} */
    const search = {};
    await warmSearchIndex({
      sessionDir: d2,
      onProgress: () => {
        search.started ??= searchSessions("wfact3z", { sessionDir: d2, onProgress: (p) => seen.push(p) });
      },
    });
    expect((await search.started)?.length).toBe(1);
    expect(seen.length).toBeGreaterThan(0);
    for (let k = 1; k < seen.length; k++) expect(seen[k].done).toBeGreaterThanOrEqual(seen[k - 1].done);
    expect(seen.at(-1)).toMatchObject({ phase: "indexing", done: 150, total: 150 });
    await expect(warmSearchIndex({ sessionDir: d2, onProgress: 5 })).rejects.toThrow(TypeError);
  });

  it("aborts a cold build from onProgress or a signal, and a throwing onProgress rejects with its error", async () => {
    const d = store(200);
    const ac = new AbortController();
    const seen = [];
    await expect(
      searchSessions("quokka1", {
        sessionDir: d,
        signal: ac.signal,
        onProgress: (p) => {
          seen.push(p);
          ac.abort();
        },
      }),
    ).rejects.toThrow(/abort/i);
    expect(seen.length).toBe(1);
    const boom = new Error("boom");
    await expect(
      warmSearchIndex({
        sessionDir: d,
        onProgress: () => {
          throw boom;
        },
      }),
    ).rejects.toBe(boom);
    // The index is still usable, and complete after the next refresh.
    for (const i of [0, 99, 199]) expect((await searchSessions(`eoldfact${i}z`, { sessionDir: d })).length).toBe(1);
    const pre = new AbortController();
    pre.abort();
    await expect(warmSearchIndex({ sessionDir: d, signal: pre.signal })).rejects.toThrow();
  });

  it("searchIndexReading names the large file a build is on, how far it is; an abort stops inside it", async () => {
    const d = tmp("psn-large-");
    const { path } = writeLargeSession(d, "/p/large", 40);
    const size = statSync(path).size;
    expect(searchIndexReading()).toBeNull();
    const ac = new AbortController();
    const build = warmSearchIndex({ sessionDir: d, signal: ac.signal });
    let seen = null;
    const end = Date.now() + 30_000;
    while (Date.now() < end && !(seen?.path === path && seen.bytesDone > 0)) {
      await new Promise((r) => setTimeout(r, 1));
      seen = searchIndexReading();
    }
    expect(seen?.path).toBe(path);
    expect(seen.bytes).toBe(size);
    expect(seen.bytesDone).toBeGreaterThan(0);
    expect(seen.bytesDone).toBeLessThan(size);
    expect(seen.ms).toBeGreaterThanOrEqual(0);
    const t = performance.now();
    ac.abort();
    await expect(build).rejects.toThrow(/abort/i);
    console.log(`[search] abort inside a 40 MB file: settled after ${(performance.now() - t).toFixed(0)} ms`);
    expect(searchIndexReading()).toBeNull();
  });

  it("rebuilds an index written by an older version", async () => {
    const d = store(5);
    await warmSearchIndex({ sessionDir: d });
    const file = join(d, INDEX);
    // `PRAGMA user_version` is the big-endian integer at offset 60 of a SQLite file.
    const buf = readFileSync(file);
    expect(buf.readUInt32BE(60)).toBe(6);
    // Schema 3: positions, two columns (issue 33): read with schema 6's queries it would
    // answer wrong, so it is rebuilt.
    buf.writeUInt32BE(3, 60);
    // Put in place as another program would: a new file renamed over the index.
    writeFileSync(`${file}.tmp`, buf, { mode: 0o600 });
    renameSync(`${file}.tmp`, file);
    expect((await searchSessions("fooWidget2Helper", { sessionDir: d })).length).toBe(1);
    expect(readFileSync(file).readUInt32BE(60)).toBe(6);
  });

  it("reports a large session's bytes as it is read, before the file is done", async () => {
    const d = tmp("psn-search-big-");
    // ~24 MB: six of the engine's 4 MB read chunks.
    const filler = "the quick brown fox jumps over the lazy dog ".repeat(500);
    const lines = [
      JSON.stringify({ type: "session", version: 3, id: "big-1", timestamp: new Date().toISOString(), cwd: "/big" }),
    ];
    let parent = null;
    for (let i = 0; i < 1100; i++) {
      const id = `b${i}`;
      lines.push(
        JSON.stringify({
          type: "message",
          id,
          parentId: parent,
          timestamp: new Date().toISOString(),
          message: user(`turn ${i} bigfact${i}q ${filler}`),
        }),
      );
      parent = id;
    }
    writeFileSync(join(d, "big.jsonl"), `${lines.join("\n")}\n`);
    const calls = [];
    const t0 = performance.now();
    const hits = await searchSessions("bigfact777q", { sessionDir: d, onProgress: (p) => calls.push(p) });
    const took = performance.now() - t0;
    expect(hits.length).toBe(1);
    const size = calls[0].bytesTotal;
    expect(size).toBeGreaterThan(20e6);
    expect(calls.at(-1)).toEqual({ phase: "indexing", done: 1, total: 1, bytesDone: size, bytesTotal: size });
    // Reports are at most every ~100 ms, each after a chunk is read: a build that lasts
    // more than 400 ms (six chunks) reports from inside the file. (Rust's
    // `a_big_file_is_reported_on_as_it_is_read` checks every chunk, without the clock.)
    const within = calls.filter((p) => p.done === 0 && p.bytesDone > 0 && p.bytesDone < size);
    if (took > 400) expect(within.length).toBeGreaterThan(0);
    for (let k = 1; k < calls.length; k++)
      expect(calls[k].done + calls[k].bytesDone).toBeGreaterThan(calls[k - 1].done + calls[k - 1].bytesDone);
  });
});

describe("readSessionWindow", () => {
  it("returns the entries around a hit on its own branch, bounded", async () => {
    const d = tmp("psn-window-");
    const sm = SessionManager.create("/x", d);
    const ids = [sm.appendMessage(user("one")), sm.appendMessage(asst("two")), sm.appendMessage(user("three"))];
    const abandoned = sm.appendMessage(asst("four on the old branch"));
    sm.appendMessage(user("five on the old branch"));
    sm.branch(ids[2]);
    sm.appendMessage(asst("four-b active " + "y".repeat(5000)));
    const w = await readSessionWindow(sm.getSessionFile(), abandoned, { before: 2, after: 5 });
    expect(w.map((e) => e.text)).toEqual(["two", "three", "four on the old branch", "five on the old branch"]);
    expect(w.find((e) => e.hit).id).toBe(abandoned);
    const a = await readSessionWindow(sm.getSessionFile(), ids[1], { before: 1, after: 2, maxEntryChars: 100 });
    expect(a.map((e) => e.text.slice(0, 13))).toEqual(["one", "two", "three", "four-b active"]);
    expect(a[3].truncated).toBe(true);
    expect(a[3].text.length).toBe(100);
    expect(await readSessionWindow(sm.getSessionFile(), "nope")).toEqual([]);
  });
});
