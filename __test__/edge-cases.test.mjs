// Hand-made edge cases, native vs reference: file reading, migration, context building.
import { describe, test, expect } from "vitest";
import { writeFileSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { createRequire } from "node:module";
import { ref, nat, tmp, normalizer, j, jsonDeep, root } from "./helpers.mjs";

const ourPaths = createRequire(import.meta.url)("../lib/paths.js");
const refPaths = await import(join(root, "node_modules/@earendil-works/pi-coding-agent/dist/utils/paths.js"));

const H = '{"type":"session","version":3,"id":"s1","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/w"}';
const msg = (id, parent, role, content, extra = "") =>
  `{"type":"message","id":"${id}","parentId":${parent === null ? "null" : `"${parent}"`},"timestamp":"2025-01-01T00:00:0${id.length % 10}.000Z","message":{"role":"${role}","content":${JSON.stringify(content)}${extra},"timestamp":1}}`;

/** Write bytes to two files, open with both managers, compare all state and the files. */
function both(bytes, name = "s.jsonl") {
  const da = tmp(),
    db = tmp();
  writeFileSync(join(da, name), bytes);
  writeFileSync(join(db, name), bytes);
  let ea, eb, a, b;
  try {
    a = ref.SessionManager.open(join(da, name));
  } catch (e) {
    ea = e.message.replace(da, "<dir>");
  }
  try {
    b = nat.SessionManager.open(join(db, name));
  } catch (e) {
    eb = e.message.replace(db, "<dir>");
  }
  expect(eb).toBe(ea);
  const fa = readFileSync(join(da, name)),
    fb = readFileSync(join(db, name));
  const na = normalizer(),
    nb = normalizer();
  expect(nb(fb.toString("latin1"))).toBe(na(fa.toString("latin1")));
  if (!a) return {};
  for (const m of [
    "getEntries",
    "getTree",
    "buildSessionContext",
    "buildContextEntries",
    "getHeader",
    "getLeafId",
    "getEntryCount",
    "getSessionName",
    "getBranch",
  ]) {
    expect(nb(j(b[m]())), m).toBe(na(j(a[m]())));
  }
  expect(nb(j(nat.loadEntriesFromFile(join(db, name))))).toBe(na(j(ref.loadEntriesFromFile(join(da, name)))));
  return { a, b, na, nb };
}

describe("tolerant reading", () => {
  test("malformed and blank lines are skipped", () => {
    both(
      [H, "", "   ", "{bad json", msg("a", null, "user", "hi"), "[1,2", msg("b", "a", "assistant", [])].join("\n") +
        "\n",
    );
  });
  test("invalid UTF-8 decodes to U+FFFD like StringDecoder", () => {
    const parts = [
      Buffer.from(H + "\n"),
      Buffer.from('{"type":"message","id":"a","parentId":null,"timestamp":"t","message":{"role":"user","content":"x'),
      Buffer.from([0xff, 0xc3, 0x28, 0xe2, 0x82, 0xf0, 0x9f, 0x98]),
      Buffer.from('y"}}\n'),
    ];
    both(Buffer.concat(parts));
  });
  test("lone surrogate escapes load (not dropped as malformed)", () => {
    const { b } = both(
      [H, msg("a", null, "user", "cut \ud83d emoji"), msg("b", "a", "user", "\udc00 low")].join("\n") + "\n",
    );
    expect(b.getEntries()).toHaveLength(2);
  });
  test("CRLF line endings", () => {
    both([H, msg("a", null, "user", "hi"), msg("b", "a", "assistant", [])].join("\r\n") + "\r\n");
  });
  test("final line without newline is kept and the file repaired", () => {
    both([H, msg("a", null, "user", "hi")].join("\n"));
    both([H, msg("a", null, "user", "hi"), "{torn"].join("\n"));
  });
  test("first entry not a header: not a session, file untouched", () => {
    both([msg("a", null, "user", "hi"), H].join("\n") + "\n");
    both('{"type":"session","id":5}\n');
    both("\ufeff" + H + "\n");
  });
  test("empty file gets a header", () => {
    both("");
  });
  test("falsy and non-object JSON lines", () => {
    both([H, "null", "0", '""', "false", "5", '"str"', "[1]", "true", msg("a", null, "user", "hi")].join("\n") + "\n");
  });
  test("duplicate keys, integer-like keys, __proto__", () => {
    both(
      [
        H,
        '{"type":"message","id":"a","id":"b","parentId":null,"timestamp":"t","message":{"role":"user","content":"x","10":1,"2":2,"__proto__":{"p":1}}}',
      ].join("\n") + "\n",
    );
  });
  test("missing parents are orphans/roots", () => {
    both(
      [H, msg("a", null, "user", "hi"), msg("b", "zz", "user", "orphan"), msg("c", "b", "assistant", [])].join("\n") +
        "\n",
    );
  });
  test("deep chain", () => {
    const lines = [H];
    for (let i = 0; i < 1000; i++)
      lines.push(msg(`e${i}`, i ? `e${i - 1}` : null, i % 2 ? "assistant" : "user", `m${i}`));
    both(lines.join("\n") + "\n");
  });
  // `j` falls back to `jsonDeep` where JSON.stringify runs out of stack (the deep chain's tree
  // under node.exe on Windows, the reference's as ours): it must give JSON.stringify's text.
  test("jsonDeep serializes as JSON.stringify does", () => {
    const lines = [H];
    for (let i = 0; i < 200; i++)
      lines.push(msg(`e${i}`, i ? `e${i - 1}` : null, i % 2 ? "assistant" : "user", `m${i}`));
    const d = tmp();
    writeFileSync(join(d, "s.jsonl"), lines.join("\n") + "\n");
    const rep = (_k, x) => (x === undefined ? "<undefined>" : x);
    const values = [
      ref.SessionManager.open(join(d, "s.jsonl")).getTree(),
      nat.SessionManager.open(join(d, "s.jsonl")).getTree(),
      { a: undefined, b: [undefined, () => 1, Symbol("s"), Number.NaN, -0, 1e21], c: new Date(0), d: {} },
      [new Number(1), new String("s\u2028\ud800"), new Boolean(false), [], [[{}]], null, { toJSON: (k) => `k=${k}` }],
      "plain",
      7,
      undefined,
    ];
    for (const v of values) {
      expect(jsonDeep(v, rep)).toBe(JSON.stringify(v, rep));
      expect(jsonDeep(v, (_k, x) => x)).toBe(JSON.stringify(v));
    }
    const cyclic = { a: [] };
    cyclic.a.push(cyclic);
    expect(() => jsonDeep(cyclic, (_k, x) => x)).toThrow(TypeError);
  });
  test("duplicate ids (latest wins in byId, first position kept)", () => {
    both([H, msg("a", null, "user", "1"), msg("b", "a", "user", "2"), msg("a", null, "user", "3")].join("\n") + "\n");
  });
});

describe("cycles terminate (the reference would hang)", () => {
  test("parent cycle and self-parent", () => {
    const d = tmp();
    const f = join(d, "c.jsonl");
    writeFileSync(
      f,
      [H, msg("a", "b", "user", "x"), msg("b", "a", "user", "y"), msg("c", "c", "user", "z")].join("\n") + "\n",
    );
    const s = nat.SessionManager.open(f);
    expect(s.getBranch("a").map((e) => e.id)).toEqual(["b", "a"]);
    expect(s.getBranch("c").map((e) => e.id)).toEqual(["c"]);
    expect(s.buildSessionContext().messages.length).toBe(1);
    expect(s.getTree().length).toBe(1); // c is its own root; a/b hang off each other
    const entries = s.getEntries();
    expect(nat.buildSessionContext(entries, "a").messages.length).toBe(2);
  });
});

describe("migration", () => {
  test("v1 file: ids, parent chain, firstKeptEntryIndex, hookMessage", () => {
    const v1 = [
      '{"type":"session","id":"old","timestamp":"2024-01-01T00:00:00.000Z","cwd":"/w"}',
      '{"type":"message","timestamp":"2024-01-01T00:00:01.000Z","message":{"role":"user","content":"a","timestamp":1}}',
      '{"type":"message","timestamp":"2024-01-01T00:00:02.000Z","message":{"role":"hookMessage","customType":"x","content":"h","display":true,"timestamp":2}}',
      '{"type":"compaction","timestamp":"2024-01-01T00:00:03.000Z","summary":"s","firstKeptEntryIndex":2,"tokensBefore":5}',
      '{"type":"compaction","timestamp":"2024-01-01T00:00:04.000Z","summary":"s2","firstKeptEntryIndex":0,"tokensBefore":6}',
      '{"type":"message","timestamp":"2024-01-01T00:00:05.000Z","message":{"role":"user","content":"b","timestamp":3}}',
    ];
    both(v1.join("\n") + "\n");
  });
  test("v2 file: hookMessage -> custom only", () => {
    both(
      [
        '{"type":"session","version":2,"id":"v2","timestamp":"2024-01-01T00:00:00.000Z","cwd":"/w"}',
        msg("a", null, "hookMessage", "h"),
      ].join("\n") + "\n",
    );
  });
  test("migrateSessionEntries mutates in place", () => {
    const mk = () => [
      { type: "session", id: "x", version: 2 },
      { type: "message", id: "a", parentId: null, message: { role: "hookMessage" } },
    ];
    const a = mk(),
      b = mk();
    const ka = a[1],
      kb = b[1];
    ref.migrateSessionEntries(a);
    nat.migrateSessionEntries(b);
    expect(b).toEqual(a);
    expect(b[1]).toBe(kb);
    expect(ka.message.role).toBe("custom");
  });
});

describe("context building", () => {
  const comp = (id, parent, fields) =>
    JSON.stringify({
      type: "compaction",
      id,
      parentId: parent,
      timestamp: "2025-01-01T00:01:00.000Z",
      summary: "sum",
      tokensBefore: 10,
      ...fields,
    });
  test("compaction with firstKeptEntryId, system messages dropped from kept range", () => {
    both(
      [
        H,
        msg("a", null, "user", "1"),
        msg("bb", "a", "system", "sys"),
        msg("ccc", "bb", "assistant", []),
        comp("k", "ccc", { firstKeptEntryId: "a" }),
        msg("d", "k", "user", "after"),
      ].join("\n") + "\n",
    );
  });
  test("compaction without firstKeptEntryId, with missing id, with its own id", () => {
    both([H, msg("a", null, "user", "1"), comp("k", "a", {}), msg("d", "k", "user", "after")].join("\n") + "\n");
    both(
      [
        H,
        msg("a", null, "user", "1"),
        comp("k", "a", { firstKeptEntryId: "nope" }),
        msg("d", "k", "user", "after"),
      ].join("\n") + "\n",
    );
    both([H, msg("a", null, "user", "1"), comp("k", "a", { firstKeptEntryId: "k" })].join("\n") + "\n");
  });
  test("compaction systemMessage checkpoint and two compactions", () => {
    const sys = { role: "system", content: "prompt", timestamp: 5 };
    both(
      [
        H,
        msg("a", null, "user", "1"),
        comp("k1", "a", { firstKeptEntryId: "a", systemMessage: sys }),
        msg("b", "k1", "user", "2"),
        comp("k2", "b", { firstKeptEntryId: "a" }),
        msg("c", "k2", "user", "3"),
      ].join("\n") + "\n",
    );
  });
  test("context edits: latest wins per target, null omits, string on assistant", () => {
    const edit = (id, parent, target, replacement) =>
      JSON.stringify({
        type: "context_edit",
        id,
        parentId: parent,
        timestamp: "2025-01-01T00:02:00.000Z",
        targetId: target,
        replacement,
      });
    both(
      [
        H,
        msg("a", null, "user", "1"),
        msg("b", "a", "assistant", [{ type: "text", text: "x" }]),
        edit("e1", "b", "a", { content: "new" }),
        edit("e2", "e1", "a", { content: "newer" }),
        edit("e3", "e2", "b", { content: "s" }),
        edit("e4", "e3", "zz", null),
      ].join("\n") + "\n",
    );
    both([H, msg("a", null, "user", "1"), edit("e1", "a", "a", null)].join("\n") + "\n");
  });
  test("model and thinking level come from the whole path", () => {
    both(
      [
        H,
        '{"type":"thinking_level_change","id":"t","parentId":null,"timestamp":"x","thinkingLevel":"high"}',
        '{"type":"model_change","id":"m","parentId":"t","timestamp":"x","provider":"p","modelId":"q"}',
        msg("a", "m", "user", "1"),
        comp("k", "a", { firstKeptEntryId: "k" }),
      ].join("\n") + "\n",
    );
  });
  test("null content, custom_message, branch_summary", () => {
    both(
      [
        H,
        '{"type":"message","id":"a","parentId":null,"timestamp":"t","message":{"role":"user","content":null}}',
        '{"type":"custom_message","id":"c","parentId":"a","timestamp":"2025-01-01T00:00:00.000Z","customType":"x","content":"cc","display":false}',
        '{"type":"branch_summary","id":"bs","parentId":"c","timestamp":"2025-01-01T00:00:00.000Z","fromId":"a","summary":"went"}',
        '{"type":"branch_summary","id":"bs2","parentId":"bs","timestamp":"t","fromId":"a","summary":""}',
      ].join("\n") + "\n",
    );
  });
});

describe("retainedTail (the spec's checkpoint; deliberately not in the reference)", () => {
  const tail = [
    { role: "user", content: "latest request", timestamp: 7 },
    { role: "assistant", content: [{ type: "text", text: "latest reply" }], provider: "p", model: "m", timestamp: 8 },
  ];
  const lines = [
    H,
    msg("a", null, "user", "old 1"),
    msg("b", "a", "assistant", []),
    JSON.stringify({
      type: "compaction",
      id: "k",
      parentId: "b",
      timestamp: "2025-01-01T00:01:00.000Z",
      summary: "S",
      tokensBefore: 9,
      firstKeptEntryId: "a",
      retainedTail: tail,
    }),
    msg("c", "k", "user", "after"),
  ];
  test("context is summary + retained messages + entries after; nothing older walked", () => {
    const d = tmp();
    writeFileSync(join(d, "r.jsonl"), lines.join("\n") + "\n");
    const s = nat.SessionManager.open(join(d, "r.jsonl"));
    expect(s.buildContextEntries().map((e) => e.id)).toEqual(["k", "c"]);
    const msgs = s.buildSessionContext().messages;
    expect(msgs.map((m) => m.role)).toEqual(["compactionSummary", "user", "assistant", "user"]);
    expect(msgs[1].content).toBe("latest request");
    expect(msgs[3].content).toBe("after");
    const entries = s.getEntries();
    expect(nat.buildSessionContext(entries).messages.map((m) => m.role)).toEqual([
      "compactionSummary",
      "user",
      "assistant",
      "user",
    ]);
  });
  test("systemMessage + retainedTail, and a later plain compaction ends the checkpoint", () => {
    const sys = { role: "system", content: "P", timestamp: 1 };
    const more = [
      ...lines.slice(0, 3),
      JSON.stringify({
        type: "compaction",
        id: "k",
        parentId: "b",
        timestamp: "2025-01-01T00:01:00.000Z",
        summary: "S",
        tokensBefore: 9,
        firstKeptEntryId: "a",
        retainedTail: tail,
        systemMessage: sys,
      }),
      msg("c", "k", "user", "after"),
    ];
    const d = tmp();
    writeFileSync(join(d, "r.jsonl"), more.join("\n") + "\n");
    const s = nat.SessionManager.open(join(d, "r.jsonl"));
    expect(s.buildSessionContext().messages.map((m) => m.role)).toEqual([
      "system",
      "compactionSummary",
      "user",
      "assistant",
      "user",
    ]);
    s.appendCompaction("S2", s.getLeafId(), 3);
    const roles = s.buildSessionContext().messages.map((m) => m.role);
    expect(roles).toEqual(["system", "compactionSummary", "user"]);
  });
});

describe("file-backed entries (large files keep only byte ranges in memory)", () => {
  test("same results as the reference with every file backed", () => {
    process.env.PI_SESSION_NATIVE_BACKED_MIN = "0";
    try {
      both(
        [H, "", "{bad json", msg("a", null, "user", "hi \ud83d"), msg("b", "a", "assistant", []), "5"].join("\n") +
          "\n",
      );
      const parts = [
        Buffer.from(H + "\n"),
        Buffer.from('{"type":"message","id":"a","parentId":null,"timestamp":"t","message":{"role":"user","content":"x'),
        Buffer.from([0xff, 0xc3, 0x28]),
        Buffer.from('y"}}\r\n'),
        Buffer.from(msg("b", "a", "user", "z")),
      ];
      both(Buffer.concat(parts));
      both(
        [
          '{"type":"session","id":"old","timestamp":"2024-01-01T00:00:00.000Z","cwd":"/w"}',
          '{"type":"message","timestamp":"2024-01-01T00:00:01.000Z","message":{"role":"user","content":"a","timestamp":1}}',
        ].join("\n") + "\n",
      );
      both([msg("a", null, "user", "hi"), H].join("\n") + "\n");
    } finally {
      delete process.env.PI_SESSION_NATIVE_BACKED_MIN;
    }
  });
  test("an unlinked file stays readable; appends recreate it from memory", async () => {
    const { unlinkSync, existsSync } = await import("node:fs");
    process.env.PI_SESSION_NATIVE_BACKED_MIN = "0";
    try {
      const d = tmp();
      const f = join(d, "big.jsonl");
      const lines = [H];
      for (let i = 0; i < 2000; i++)
        lines.push(msg(`e${i}`, i ? `e${i - 1}` : null, i % 2 ? "assistant" : "user", `m${i} ${"x".repeat(200)}`));
      writeFileSync(f, lines.join("\n") + "\n");
      const s = nat.SessionManager.open(f);
      unlinkSync(f);
      expect(s.getEntries()).toHaveLength(2000);
      expect(s.getBranch().length).toBe(2000);
      s.appendMessage({ role: "user", content: "after unlink", timestamp: 5 });
      expect(existsSync(f)).toBe(true);
      const back = ref.SessionManager.open(f);
      expect(back.getEntries()).toHaveLength(2001);
      expect(back.buildSessionContext().messages.at(-1).content).toBe("after unlink");
    } finally {
      delete process.env.PI_SESSION_NATIVE_BACKED_MIN;
    }
  });
});

describe("regressions (divergences found by the differential and bad-input suites)", () => {
  test("differential seed 96: a refused setSessionFile still switches the write path", () => {
    const out = [];
    for (const M of [ref, nat]) {
      const d = tmp();
      const sm = M.SessionManager.create("/tmp/reg-cwd", d);
      sm.appendMessage({ role: "user", content: "first", timestamp: 1 });
      const bad = join(d, "bom.jsonl");
      writeFileSync(bad, "\ufeff" + H + "\n");
      expect(() => sm.setSessionFile(bad)).toThrow(/is not a valid pi session/);
      expect(sm.getSessionFile()).toBe(bad);
      sm.appendMessage({ role: "user", content: "second", timestamp: 2 });
      out.push(readFileSync(bad, "utf8").split("\n").length);
    }
    expect(out[1]).toBe(out[0]);
  });
  test("bad-input: opening a directory fails like Node's readSync (EISDIR, syscall read, no path)", () => {
    const d = tmp();
    const errs = [ref, nat].map((M) => {
      try {
        M.loadEntriesFromFile(d);
        return "no error";
      } catch (e) {
        return `${e.code} ${e.syscall} ${e.message}`;
      }
    });
    expect(errs[1]).toBe(errs[0]);
  });
  test("bad-input: a non-string path throws the reference's TypeError text", () => {
    const msgs = [ref, nat].map((M) => {
      try {
        M.findMostRecentSession(5);
      } catch (e) {
        return e.message;
      }
      return null;
    });
    expect(msgs[0]).toEqual(expect.any(String));
    expect(msgs[1]).toBe(msgs[0]);
  });
  // pi's normalizePath turns Git Bash / MSYS / Cygwin / WSL drive paths into Windows paths on
  // win32 (reading process.platform at call time): ours too. Checked here with the platform
  // set to win32 for the call (node:path stays this platform's, for both managers alike).
  test("Windows shell drive paths (/c/x, /mnt/c/x, /cygdrive/c/x) are normalized as the reference does on win32", () => {
    const asWin32 = (fn) => {
      const real = Object.getOwnPropertyDescriptor(process, "platform");
      Object.defineProperty(process, "platform", { ...real, value: "win32" });
      try {
        return fn();
      } catch (e) {
        return `throws ${e.constructor.name}: ${e.message}`;
      } finally {
        Object.defineProperty(process, "platform", real);
      }
    };
    const inputs = ["/c", "/c/", "/C/Users/me", "/mnt/d/work/x", "/cygdrive/e/a/b", "/cd/x", "/tmp/x", "//srv/share"];
    for (const p of [...inputs, "/c/x\\y", "c/x", "~", 5]) {
      const cwds = [ref, nat].map((M) => asWin32(() => M.SessionManager.inMemory(p).getCwd()));
      expect(cwds[1], String(p)).toBe(cwds[0]);
    }
    // The normalized forms themselves, ours and pi's.
    const forms = inputs.map((p) => asWin32(() => ourPaths.normalizePath(p)));
    expect(forms).toEqual(inputs.map((p) => asWin32(() => refPaths.normalizePath(p))));
    expect(forms).toEqual([
      "C:\\",
      "C:\\",
      "C:\\Users\\me",
      "D:\\work\\x",
      "E:\\a\\b",
      "/cd/x",
      "/tmp/x",
      "//srv/share",
    ]);
    expect(asWin32(() => nat.findMostRecentSession(5))).toBe("throws TypeError: filePath.startsWith is not a function");
    expect(asWin32(() => ref.findMostRecentSession(5))).toBe("throws TypeError: filePath.startsWith is not a function");
  });
  test('review: getBranch("") is an empty path (only null/undefined mean the leaf)', () => {
    const r = ref.SessionManager.inMemory("/tmp"),
      n = nat.SessionManager.inMemory("/tmp");
    for (const s of [r, n]) s.appendMessage({ role: "user", content: "x", timestamp: 1 });
    expect(n.getBranch("")).toEqual(r.getBranch(""));
    expect(n.getBranch(null).length).toBe(r.getBranch(null).length);
  });
});

describe("materialization in batches (entry texts laid out by Rust, parsed per entry in JS)", () => {
  // Characters JSON carries raw in a file: accents, CJK, astral (surrogate pairs in JS),
  // U+2028/2029, a BOM-like U+FEFF, combining marks; plus escapes that must stay escapes.
  const texts = [
    "café",
    "日本語のテキスト",
    "emoji 😀👍🏽",
    "line\u2028sep\u2029",
    "\ufeffbom",
    "e\u0301",
    "esc \\u00e9 \\ud83d",
    "plain ascii",
  ];
  function session() {
    const lines = [H];
    let parent = null;
    for (let i = 0; i < 400; i++) {
      const id = `m${i}`;
      const content = `${texts[i % texts.length]} #${i} ${"é".repeat(i % 7)}${"x".repeat(i % 50)}`;
      lines.push(msg(id, parent, i % 2 ? "assistant" : "user", content));
      if (i % 97 === 5) lines.push('{"bad": "ünïcode but not closed');
      if (i % 131 === 7)
        lines.push(
          `{"type":"label","id":"l${i}","parentId":"${id}","timestamp":"2025-01-01T00:00:01.000Z","targetId":"${id}","label":"étiquette ${i}"}`,
        );
      parent = i % 131 === 7 ? `l${i}` : id;
      // A branch: every 50th entry continues from an older one.
      if (i % 50 === 49) parent = `m${i - 10}`;
    }
    const text = lines.join("\n") + "\n";
    // One line with invalid UTF-8 inside a string (read as U+FFFD, as by the reference).
    const bad = Buffer.from(msg("bad", "m399", "user", "x@y"));
    bad[bad.indexOf("@")] = 0xff;
    return Buffer.concat([Buffer.from(text), bad, Buffer.from("\n")]);
  }
  const methods = ["getEntries", "getTree", "getBranch", "buildSessionContext", "buildContextEntries"];
  for (const backed of [undefined, "0"]) {
    for (const batch of [undefined, "1", "700", "5000"]) {
      test(`same objects as the reference (backed=${backed ?? "no"}, batch=${batch ?? "default"})`, async () => {
        if (backed) process.env.PI_SESSION_NATIVE_BACKED_MIN = backed;
        if (batch) process.env.PI_SESSION_NATIVE_TEXT_BATCH = batch;
        // batch=1 lays out every entry as its own batch, each prepared on a new thread: under
        // Wine a thread costs milliseconds and this test tens of seconds. The event loop turns
        // between the steps, so that vitest's worker answers its runner (an RPC unanswered for
        // 60 s fails the run with "Timeout calling onTaskUpdate").
        const turn = () => new Promise((resolve) => setImmediate(resolve));
        try {
          const bytes = session();
          both(bytes);
          await turn();
          // Each method first on a fresh session: partial materialization, then the rest.
          const da = tmp(),
            db = tmp();
          writeFileSync(join(da, "s.jsonl"), bytes);
          writeFileSync(join(db, "s.jsonl"), bytes);
          for (const m of methods) {
            const a = ref.SessionManager.open(join(da, "s.jsonl"));
            const b = nat.SessionManager.open(join(db, "s.jsonl"));
            expect(j(b[m]()), m).toBe(j(a[m]()));
            expect(j(b.getBranch("m120")), m).toBe(j(a.getBranch("m120")));
            expect(j(b.getEntries()), m).toBe(j(a.getEntries()));
            await turn();
          }
          expect(j(nat.loadEntriesFromFile(join(db, "s.jsonl")))).toBe(j(ref.loadEntriesFromFile(join(da, "s.jsonl"))));
        } finally {
          delete process.env.PI_SESSION_NATIVE_BACKED_MIN;
          delete process.env.PI_SESSION_NATIVE_TEXT_BATCH;
        }
      });
    }
  }
});

describe("createBranchedSession of a compaction without firstKeptEntryId (found by the verifier's scenarios)", () => {
  test("the branched compaction has the key, undefined, as the reference's spread gives it", () => {
    const lines = [
      '{"type":"session","version":3,"id":"s","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/w"}',
      '{"type":"message","id":"m1","parentId":null,"timestamp":"2025-01-01T00:00:01.000Z","message":{"role":"user","content":"a","timestamp":1}}',
      '{"type":"compaction","id":"c0","parentId":"m1","timestamp":"2025-01-01T00:00:02.000Z","summary":"s","tokensBefore":1}',
      '{"type":"label","id":"l1","parentId":"c0","timestamp":"2025-01-01T00:00:03.000Z","targetId":"m1","label":"x"}',
      '{"type":"message","id":"m2","parentId":"l1","timestamp":"2025-01-01T00:00:04.000Z","message":{"role":"user","content":"b","timestamp":2}}',
    ];
    const [a, b] = [ref, nat].map((impl) => {
      const dir = tmp();
      writeFileSync(join(dir, "s.jsonl"), `${lines.join("\n")}\n`);
      const sm = impl.SessionManager.open(join(dir, "s.jsonl"), dir);
      sm.createBranchedSession("m2");
      return sm;
    });
    const keys = (sm) => Object.keys(sm.getEntries().find((e) => e.id === "c0"));
    expect(keys(b)).toEqual(keys(a));
    expect(keys(b)).toContain("firstKeptEntryId");
    // The same lines but for the header and the re-created label's fresh id.
    const body = (sm) =>
      readFileSync(sm.getSessionFile(), "utf8")
        .split("\n")
        .slice(1)
        .map((l) => l.replace(/^\{"type":"label","id":"[0-9a-f]{8}"/, '{"type":"label","id":"<new>"'));
    expect(body(b)).toEqual(body(a));
  });
});

describe("createBranchedSession on a session whose path was never materialized (Rust text route)", () => {
  /** A persisted session with labels on the path, a compaction keeping from a label, a branch. */
  function build(dir) {
    const sm = ref.SessionManager.create("/w", dir);
    const u1 = sm.appendMessage({ role: "user", content: "first é 😀", timestamp: 1 });
    sm.appendLabelChange(u1, "start");
    const a1 = sm.appendMessage({
      role: "assistant",
      content: [{ type: "text", text: 'ok "q"\n' }],
      provider: "p",
      model: "m",
      usage: { input: 1, output: 2, cost: { total: 0.003 } },
      stopReason: "stop",
      timestamp: 2,
    });
    const l2 = sm.appendLabelChange(a1, "answer");
    sm.appendCompaction("summary", l2, 1234, { readFiles: ["a"] });
    sm.appendLabelChange(u1, "renamed");
    const u2 = sm.appendMessage({ role: "user", content: "second", timestamp: 3 });
    sm.appendCustomEntry("ext", { k: [1, 2.5, null] });
    sm.appendSessionInfo("name");
    sm.branch(u1);
    sm.appendMessage({ role: "user", content: "side branch", timestamp: 4 });
    return { file: sm.getSessionFile(), targets: [u2, a1, u1, sm.getLeafId(), undefined] };
  }
  test("same new file and state as the reference, without materializing", () => {
    const src = tmp();
    const { file, targets } = build(src);
    for (const target of targets) {
      const da = tmp(),
        db = tmp();
      const a = ref.SessionManager.open(file, da);
      const b = nat.SessionManager.open(file, db);
      const orig = b._native.branchInto.bind(b._native);
      let route;
      b._native.branchInto = (...args) => (route = orig(...args));
      const fa = a.createBranchedSession(target);
      const fb = b.createBranchedSession(target);
      expect(route, `text route for ${target}`).toBe(1);
      const na = normalizer(),
        nb = normalizer();
      expect(nb(readFileSync(fb, "utf8"))).toBe(na(readFileSync(fa, "utf8")));
      for (const m of ["getEntries", "getTree", "buildSessionContext", "getHeader", "getLeafId", "getSessionName"]) {
        expect(nb(j(b[m]())), m).toBe(na(j(a[m]())));
      }
    }
  });
  test("a materialized path or a hand-edited line takes the object route, same result", () => {
    const src = tmp();
    const { file, targets } = build(src);
    const text = readFileSync(file, "utf8").split("\n");
    // A line not in JSON.stringify form (spaces) on the path.
    text[2] = text[2].replace('"type":', '"type": ');
    const edited = join(src, "edited.jsonl");
    writeFileSync(edited, text.join("\n"));
    for (const [f, touch] of [
      [file, true],
      [edited, false],
    ]) {
      const da = tmp(),
        db = tmp();
      const a = ref.SessionManager.open(f, da);
      const b = nat.SessionManager.open(f, db);
      if (touch) b.getEntries();
      const orig = b._native.branchInto.bind(b._native);
      let route = "not called";
      b._native.branchInto = (...args) => (route = orig(...args));
      const fa = a.createBranchedSession(targets[0]);
      const fb = b.createBranchedSession(targets[0]);
      expect(route).toBe(touch ? "not called" : 0);
      const na = normalizer(),
        nb = normalizer();
      expect(nb(readFileSync(fb, "utf8"))).toBe(na(readFileSync(fa, "utf8")));
      expect(nb(j(b.getEntries()))).toBe(na(j(a.getEntries())));
    }
  });
  test("unknown entry and in-memory sessions", () => {
    const src = tmp();
    const { file } = build(src);
    const a = ref.SessionManager.open(file, tmp());
    const b = nat.SessionManager.open(file, tmp());
    expect(() => b.createBranchedSession("nope")).toThrow("Entry nope not found");
    expect(() => a.createBranchedSession("nope")).toThrow("Entry nope not found");
    const entries = ref.loadEntriesFromFile(file);
    const ma = ref.SessionManager.inMemory(
      "/w",
      undefined,
      entries.map((e) => ({ ...e })),
    );
    const mb = nat.SessionManager.inMemory(
      "/w",
      undefined,
      entries.map((e) => ({ ...e })),
    );
    expect(mb.createBranchedSession(mb.getLeafId())).toBe(ma.createBranchedSession(ma.getLeafId()));
    const na = normalizer(),
      nb = normalizer();
    expect(nb(j(mb.getEntries()))).toBe(na(j(ma.getEntries())));
  });
});
