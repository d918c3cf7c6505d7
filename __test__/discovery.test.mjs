// Differential tests: lib/discovery/ vs the reference SessionManager discovery
// (@earendil-works/pi-coding-agent 1.6.0) on generated directories.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { createRequire } from "node:module";
import { spawnSync } from "node:child_process";

// Progress for every file, as the reference calls it (the ~50 ms throttle is
// tested in progress-throttle.test.mjs).
process.env.PI_SESSION_NATIVE_PROGRESS_MS = "0";

const require = createRequire(import.meta.url);
const ROOT = fs.mkdtempSync(path.join(os.tmpdir(), "pi-disc-"));
const AGENT = path.join(ROOT, "agent");
process.env.PI_CODING_AGENT_DIR = AGENT;

const ref = await import("../node_modules/@earendil-works/pi-coding-agent/dist/core/session-manager.js");
const disc = require("../lib/discovery/index.js");
const { SessionManager } = ref;

// A child Node (this Node's binary). Under QEMU user mode (`npm run test:cross` for arm64, no
// binfmt_misc) an arm64 program cannot be started directly: PI_TEST_NODE_RUNNER names the
// emulator command that runs it ("qemu-aarch64 -L /usr/aarch64-linux-gnu").
const NODE_RUNNER = (process.env.PI_TEST_NODE_RUNNER ?? "").split(" ").filter(Boolean);
const spawnNode = (args, options) =>
  NODE_RUNNER.length > 0
    ? spawnSync(NODE_RUNNER[0], [...NODE_RUNNER.slice(1), process.execPath, ...args], options)
    : spawnSync(process.execPath, args, options);

const PAST = Date.now() / 1000 - 3600;
const ts = (i) => new Date(Date.UTC(2024, 0, 1) + i * 60000).toISOString();
const line = (o) => JSON.stringify(o);
const hdr = (id, extra = {}) => line({ type: "session", version: 3, id, timestamp: ts(0), cwd: "/proj/a", ...extra });
const msg = (role, content, extra = {}, msgExtra = {}) =>
  line({
    type: "message",
    id: "m",
    parentId: null,
    timestamp: ts(5),
    ...extra,
    message: { role, content, ...msgExtra },
  });

/** Serialize with key order, undefined-valued keys and Dates (incl. invalid) kept. */
function norm(v) {
  if (v instanceof Date) return ["Date", Number.isNaN(v.getTime()) ? "NaN" : v.getTime()];
  if (v === undefined) return ["undefined"];
  if (Array.isArray(v)) return v.map(norm);
  if (v && typeof v === "object") return Object.keys(v).map((k) => [k, norm(v[k])]);
  if (typeof v === "string" && v.length > 300) {
    let h = 0;
    for (let i = 0; i < v.length; i++) h = (Math.imul(h, 31) + v.charCodeAt(i)) | 0;
    return `${v.slice(0, 60)}...<${v.length} chars, hash ${h}>`;
  }
  return v;
}

let unreadableBlocks = false;

function writeCorpus(dir, n = 0) {
  fs.mkdirSync(dir, { recursive: true });
  const files = {
    "a-normal.jsonl":
      [
        hdr("normal", { parentSession: "/p/parent.jsonl" }),
        msg("user", "hello world"),
        msg(
          "assistant",
          [
            { type: "text", text: "hi" },
            { type: "thinking", thinking: "x" },
            { type: "text", text: "there" },
          ],
          { timestamp: ts(9) },
        ),
        line({ type: "session_info", name: "  My Session \u00a0" }),
        msg("toolResult", [{ type: "text", text: "tool out" }]),
      ].join("\n") + "\n",
    "b-invalid-lines.jsonl": [
      "",
      "{bad json",
      hdr("inv"),
      "not json",
      msg("user", "q1"),
      '{"type":',
      msg("assistant", "a1"),
    ].join("\n"),
    "c-empty.jsonl": "",
    "d-header-only.jsonl": hdr("hdronly") + "\n",
    "e-huge-header.jsonl":
      hdr("huge", { cwd: "/proj/" + "x".repeat(1_200_000) }) + "\n" + msg("user", "after huge") + "\n",
    "f-notheader.jsonl": line({ type: "message", message: { role: "user", content: "x" } }) + "\n" + hdr("late") + "\n",
    "g-info-clear.jsonl": [
      hdr("clear"),
      line({ type: "session_info", name: "first" }),
      line({ type: "session_info", name: null }),
      msg("user", "u"),
    ].join("\n"),
    "g2-info-empty.jsonl": [
      hdr("clear2"),
      line({ type: "session_info", name: "first" }),
      line({ type: "session_info", name: "   " }),
    ].join("\n"),
    "g3-info-missing.jsonl": [
      hdr("clear3"),
      line({ type: "session_info", name: "first" }),
      line({ type: "session_info" }),
    ].join("\n"),
    "g4-info-number.jsonl": [hdr("badname"), line({ type: "session_info", name: 5 })].join("\n"),
    "g5-info-bom.jsonl": [hdr("bomname"), line({ type: "session_info", name: "\ufeffN\u0085" })].join("\n"),
    "h-no-ts.jsonl": [
      hdr("nots"),
      line({ type: "message", message: { role: "user", content: "no ts" } }),
      line({ type: "message", message: { role: "assistant", content: "x", timestamp: 1700000000123 } }),
    ].join("\n"),
    "h2-weird-ts.jsonl": [
      hdr("weirdts"),
      msg("user", "x", { timestamp: "2024/03/04 10:00" }),
      msg("assistant", "y", { timestamp: "2024-03-05T00:00:00+02:00" }),
      msg("user", "z", { timestamp: 1e12 }),
      msg("user", "w", { timestamp: "2021-02-30T00:00:00Z" }),
    ].join("\n"),
    "h3-bad-header-ts.jsonl": [hdr("badhts", { timestamp: "garbage" }), msg("user", "x", { timestamp: "nope" })].join(
      "\n",
    ),
    "h4-no-header-ts.jsonl": [line({ type: "session", id: "nohts" })].join("\n"),
    "h5-ts-object.jsonl": [hdr("tsobj"), msg("user", "x", { timestamp: { toString: 1 } })].join("\n"),
    // A message timestamp of 1e400 (Infinity once parsed): `modified` is an Invalid Date, and the
    // listing's sort comparator then answers NaN for it, so the order is whatever the reference's
    // sort makes of its input order. (Until session 12 this line stringified 1e400, which wrote
    // `"timestamp":null`; that case stays as h7-null-ts.)
    "h6-inf.jsonl": [
      hdr("inf"),
      msg("user", "x", {}, { timestamp: 1 }).replace('"timestamp":1}', '"timestamp":1e400}'),
    ].join("\n"),
    "h7-null-ts.jsonl": [hdr("nullts"), msg("user", "x", {}, { timestamp: null })].join("\n"),
    "i-content-null.jsonl": [hdr("cnull"), msg("user", null)].join("\n"),
    "i2-content-obj.jsonl": [hdr("cobj"), msg("user", { a: 1 })].join("\n"),
    "i3-block-null.jsonl": [hdr("bnull"), msg("user", [null])].join("\n"),
    "i4-blocks.jsonl": [
      hdr("blocks"),
      msg("user", [
        { type: "text", text: 1e21 },
        { type: "text" },
        { type: "text", text: [1, null, [true, "q"], {}] },
        "str",
        5,
        { type: "text", text: null },
        { type: "text", text: -0 },
      ]),
    ].join("\n"),
    "i5-nocontent.jsonl": [
      hdr("nocontent"),
      line({ type: "message", message: { role: "user" } }),
      line({ type: "message", message: "str" }),
      msg("user", ""),
      msg("assistant", "first is assistant"),
      msg("user", []),
    ].join("\n"),
    "i6-msg-missing.jsonl": [hdr("msgmissing"), line({ type: "message" })].join("\n"),
    "i7-block-tostring.jsonl": [hdr("bts"), msg("user", [{ type: "text", text: { toString: 1 } }])].join("\n"),
    "j-falsy-first.jsonl": ["null", "0", '""', "false", hdr("falsy"), msg("user", "ok")].join("\n"),
    "j2-truthy-first.jsonl": ["1", hdr("truthy")].join("\n"),
    "k-crlf.jsonl":
      [hdr("crlf"), msg("user", "line1"), msg("assistant", "line2")].join("\r\n") + "\r" + msg("user", "cr") + "\r",
    "k2-utf8.jsonl": Buffer.concat([
      Buffer.from(hdr("utf8") + "\n"),
      Buffer.from(msg("user", "bad ").slice(0, -3)),
      Buffer.from([0xff, 0xe2, 0x82]),
      Buffer.from('"}}\n'),
      Buffer.from(msg("user", "x").replace('"x"', '"\\ud83d lone \\u00e9"')),
    ]),
    "l-othercwd.jsonl": [hdr("othercwd", { cwd: "/proj/b" }), msg("user", "b")].join("\n"),
    "l2-nocwd.jsonl": [line({ type: "session", id: "nocwd", timestamp: ts(1) }), msg("user", "nocwd")].join("\n"),
    "m-dupkeys.jsonl": [
      '{"type":"session","id":"d1","id":"d2","timestamp":"' + ts(2) + '","cwd":"/proj/a"}',
      '{"type":"x","type":"message","message":{"role":"user","content":"dup"}}',
    ].join("\n"),
    "n-id-number.jsonl": [
      line({ type: "session", id: 42, timestamp: ts(3), cwd: "/proj/a" }),
      msg("user", "num id"),
    ].join("\n"),
    "o-array-first.jsonl": ["[1]", hdr("arr")].join("\n"),
    "notes.txt": "hello",
    "session.json": hdr("json-ext"),
  };
  for (let i = 0; i < n; i++) {
    files[`gen-${String(i).padStart(3, "0")}.jsonl`] =
      [
        hdr(`gen${i}`, { timestamp: ts(i) }),
        msg("user", `q${i}`, { timestamp: ts(i + 1) }),
        msg("assistant", [{ type: "text", text: `a${i}` }], { timestamp: ts((i * 7) % 13) }),
      ].join("\n") + "\n";
  }
  for (const [name, content] of Object.entries(files)) fs.writeFileSync(path.join(dir, name), content);
  fs.mkdirSync(path.join(dir, "p-dir.jsonl"), { recursive: true });
  try {
    fs.symlinkSync(path.join(dir, "missing-target"), path.join(dir, "q-dangling.jsonl"));
  } catch {}
  const unreadable = path.join(dir, "r-unreadable.jsonl");
  fs.writeFileSync(unreadable, hdr("unreadable") + "\n" + msg("user", "secret") + "\n");
  fs.chmodSync(unreadable, 0o000);
  try {
    fs.readFileSync(unreadable);
  } catch {
    unreadableBlocks = true;
  }
  for (const name of fs.readdirSync(dir)) {
    const p = path.join(dir, name);
    try {
      fs.utimesSync(p, PAST + name.length, PAST + name.length);
    } catch {}
  }
  return dir;
}

const CUSTOM = path.join(ROOT, "custom");
/** Whether the symbolic-linked session folder exists (not under Wine: see beforeAll). */
let linkedExists = false;
const BIG = path.join(ROOT, "big");

function idx(dir) {
  return path.join(dir, ".pi-session-index");
}

async function progressOf(fn) {
  const calls = [];
  const result = await fn((loaded, total, partial) => calls.push({ loaded, total, partial }));
  return { result, calls };
}

// Partial lists are sorted by modified; among equal times the reference keeps completion order.
function byPath(list) {
  return norm([...list].sort((x, y) => (x.path < y.path ? -1 : x.path > y.path ? 1 : 0)));
}

function shape(calls) {
  return calls.map((c) => [c.loaded, c.total, c.partial === undefined ? null : "partial"]);
}

beforeAll(() => {
  writeCorpus(CUSTOM);
  writeCorpus(BIG, 35);
  // Agent dir with per-cwd dirs, one a symlink to a dir outside.
  const sessions = path.join(AGENT, "sessions");
  writeCorpus(path.join(sessions, "--proj-a--"));
  writeCorpus(path.join(ROOT, "outside"), 120);
  // On Windows a directory link is a junction (made without privileges; Node reports it as a
  // symbolic link, as the reference's listAll expects). Wine has neither: its
  // CreateSymbolicLinkW succeeds without making anything and a junction fails with ENOTSUP, so
  // there the corpus has no linked folder (checked: `linkedExists`).
  const linked = path.join(sessions, "--linked--");
  try {
    fs.symlinkSync(path.join(ROOT, "outside"), linked, process.platform === "win32" ? "junction" : undefined);
  } catch (e) {
    if (process.platform !== "win32") throw e;
  }
  linkedExists = fs.existsSync(linked);
  fs.writeFileSync(path.join(sessions, "stray.jsonl"), hdr("stray"));
  if (!unreadableBlocks)
    console.log(
      "note: running as root, chmod 000 does not block reads; unreadable-file case is not exercised as unreadable",
    );
});

afterAll(() => {
  if (process.env.KEEP) return;
  delete process.env.PI_SESSION_NATIVE_NO_INDEX;
  fs.rmSync(ROOT, { recursive: true, force: true });
});

for (const mode of ["index", "no-index"]) {
  describe(`discovery (${mode})`, () => {
    beforeAll(() => {
      if (mode === "no-index") process.env.PI_SESSION_NATIVE_NO_INDEX = "1";
      else delete process.env.PI_SESSION_NATIVE_NO_INDEX;
      for (const d of [CUSTOM, BIG, path.join(AGENT, "sessions", "--proj-a--"), path.join(ROOT, "outside")])
        fs.rmSync(idx(d), { force: true });
    });

    for (const pass of ["cold", "warm"]) {
      it(`list with custom dir and cwd filter (${pass})`, async () => {
        for (const cwd of ["/proj/a", "/proj/b", "/nowhere"]) {
          const a = await progressOf((p) => SessionManager.list(cwd, CUSTOM, p));
          const b = await progressOf((p) => disc.list(cwd, CUSTOM, p));
          expect(norm(b.result)).toEqual(norm(a.result));
          expect(shape(b.calls)).toEqual(shape(a.calls));
          expect(byPath(b.calls.at(-1).partial)).toEqual(byPath(a.calls.at(-1).partial));
        }
        expect(fs.existsSync(idx(CUSTOM))).toBe(mode === "index");
      });

      it(`list of a bigger dir, progress publish points (${pass})`, async () => {
        const a = await progressOf((p) => SessionManager.list("/proj/a", BIG, p));
        const b = await progressOf((p) => disc.list("/proj/a", BIG, p));
        expect(norm(b.result)).toEqual(norm(a.result));
        expect(shape(b.calls)).toEqual(shape(a.calls));
        expect(b.calls.length).toBeGreaterThan(60);
        for (const c of b.calls)
          if (c.partial) expect(c.partial).toEqual([...c.partial].sort((x, y) => y.modified - x.modified));
      });

      it(`listAll default (symlinked dirs) and custom (${pass})`, async () => {
        const a = await progressOf((p) => SessionManager.listAll(p));
        const b = await progressOf((p) => disc.listAll(p));
        expect(norm(b.result)).toEqual(norm(a.result));
        expect(b.calls.map((c) => [c.loaded, c.total])).toEqual(a.calls.map((c) => [c.loaded, c.total]));
        expect(byPath(b.calls.at(-1).partial)).toEqual(byPath(a.calls.at(-1).partial));
        // Everywhere a linked folder can be made (always on Unix), its sessions are listed.
        if (process.platform !== "win32") expect(linkedExists).toBe(true);
        expect(b.result.some((s) => s.path.includes("--linked--"))).toBe(linkedExists);
        const c = await SessionManager.listAll(CUSTOM);
        const d = await disc.listAll(CUSTOM);
        expect(norm(d)).toEqual(norm(c));
        const e = await progressOf((p) => SessionManager.listAll(BIG, p));
        const f = await progressOf((p) => disc.listAll(BIG, p));
        expect(norm(f.result)).toEqual(norm(e.result));
        expect(shape(f.calls)).toEqual(shape(e.calls));
      });
    }

    it("changed files after a warm index", async () => {
      const p = path.join(CUSTOM, "a-normal.jsonl");
      const before = fs.readFileSync(p);
      fs.appendFileSync(
        p,
        msg("user", "appended", { timestamp: ts(99) }) + "\n" + line({ type: "session_info", name: "renamed" }) + "\n",
      );
      fs.utimesSync(p, PAST + 5, PAST + 5);
      const same = path.join(CUSTOM, "g-info-clear.jsonl");
      const content = fs.readFileSync(same, "utf8").replace('"u"', '"v"'); // same size
      fs.writeFileSync(same, content);
      fs.utimesSync(same, PAST + 7, PAST + 7);
      try {
        expect(norm(await disc.list("/proj/a", CUSTOM))).toEqual(norm(await SessionManager.list("/proj/a", CUSTOM)));
        const info = (await disc.list("/proj/a", CUSTOM)).find((s) => s.id === "normal");
        expect(info.name).toBe("renamed");
      } finally {
        fs.writeFileSync(p, before);
        fs.utimesSync(p, PAST + 1, PAST + 1);
      }
    });

    it("corrupt index is ignored", async () => {
      if (mode === "index") fs.writeFileSync(idx(CUSTOM), "pi-session-index 1\n1\t2\tgarbage");
      expect(norm(await disc.list("/proj/a", CUSTOM))).toEqual(norm(await SessionManager.list("/proj/a", CUSTOM)));
      if (mode === "index") expect(fs.readFileSync(idx(CUSTOM), "utf8")).not.toContain("1\t2\tgarbage");
    });
  });
}

describe("headers, findById, findMostRecentSession, continueRecent", () => {
  it("findById matches the reference", () => {
    for (const id of [
      "normal",
      "huge",
      "late",
      "falsy",
      "crlf",
      "othercwd",
      "nocwd",
      "d2",
      "d1",
      "unreadable",
      "json-ext",
      "missing",
    ]) {
      for (const cwd of ["/proj/a", "/proj/b"]) {
        expect(disc.findById(cwd, id, CUSTOM)).toBe(SessionManager.findById(cwd, id, CUSTOM));
      }
    }
    expect(disc.findById("/proj/a", "normal", path.join(ROOT, "nope"))).toBe(undefined);
  });

  it("findMostRecentSession / continueRecent", () => {
    for (const cwd of [undefined, "/proj/a", "/proj/b", "/x"]) {
      expect(disc.findMostRecentSession(CUSTOM, cwd)).toBe(ref.findMostRecentSession(CUSTOM, cwd));
      expect(disc.findMostRecentSession(BIG, cwd)).toBe(ref.findMostRecentSession(BIG, cwd));
    }
    expect(disc.continueRecentPath("/proj/a", BIG).path).toBe(ref.findMostRecentSession(BIG, "/proj/a"));
    expect(disc.continueRecentPath("/proj/a", CUSTOM).path).toBe(ref.findMostRecentSession(CUSTOM, "/proj/a"));
    expect(disc.findMostRecentSession(path.join(ROOT, "nope"))).toBe(null);
  });

  it("readSessionHeader results and errors", () => {
    const h = disc.readSessionHeader(path.join(CUSTOM, "a-normal.jsonl"));
    expect(h).toEqual(JSON.parse(hdr("normal", { parentSession: "/p/parent.jsonl" })));
    expect(disc.readSessionHeader(path.join(CUSTOM, "f-notheader.jsonl"))).toBe(null);
    expect(disc.readSessionHeader(path.join(CUSTOM, "c-empty.jsonl"))).toBe(null);
    expect(disc.readSessionHeader(path.join(CUSTOM, "j-falsy-first.jsonl")).id).toBe("falsy");
    expect(disc.readSessionHeader(path.join(CUSTOM, "n-id-number.jsonl"))).toBe(null);
    const huge = path.join(CUSTOM, "e-huge-header.jsonl");
    let err;
    try {
      disc.readSessionHeader(huge);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(Error);
    expect(err.name).toBe("SessionHeaderScanLimitError");
    expect(err.message).toBe(`Session header exceeds 1048576-byte scan limit: ${huge}`);
    expect(() => disc.readSessionHeader(path.join(CUSTOM, "nope.jsonl"))).toThrow(/ENOENT/);
    try {
      disc.readSessionHeader(path.join(CUSTOM, "nope.jsonl"));
    } catch (e) {
      expect(e.code).toBe("ENOENT");
      expect(e.syscall).toBe("open");
    }
    expect(() => disc.readSessionHeader(path.join(CUSTOM, "p-dir.jsonl"))).toThrow(/EISDIR/);
    // exactly at the limit, with and without a final newline
    const exact = path.join(ROOT, "exact.jsonl");
    const base = hdr("exact", { cwd: "" });
    const pad = 1024 * 1024 - base.length;
    const line1 = hdr("exact", { cwd: "y".repeat(pad) });
    fs.writeFileSync(exact, line1);
    expect(disc.readSessionHeader(exact).id).toBe("exact");
    fs.writeFileSync(exact, line1 + "\n");
    expect(() => disc.readSessionHeader(exact)).toThrow(/scan limit/);
    fs.writeFileSync(exact, line1.slice(1));
    expect(disc.readSessionHeader(exact)).toBe(null);
    // The binding's answer underneath: a kind from a string union, the header text only when found.
    const native = require("../lib/native.js");
    const a = native.discoveryReadHeader(path.join(CUSTOM, "a-normal.jsonl"));
    expect(Object.keys(a).sort()).toEqual(["header", "kind"]);
    expect(a.kind).toBe("found");
    expect(JSON.parse(a.header)).toEqual(h);
    expect(native.discoveryReadHeader(path.join(CUSTOM, "f-notheader.jsonl"))).toEqual({ kind: "none" });
    expect(native.discoveryReadHeader(huge)).toEqual({ kind: "limit" });
    // A failed open or read throws Node's own fs error (the JS layer has no reader of its own).
    const thrown = (fn) => {
      try {
        fn();
      } catch (e) {
        return e;
      }
      throw new Error("did not throw");
    };
    const shape = (e) => ({ ...e, message: e.message, isError: e instanceof Error });
    const nope = path.join(CUSTOM, "nope.jsonl");
    expect(shape(thrown(() => native.discoveryReadHeader(nope)))).toEqual(shape(thrown(() => fs.openSync(nope, "r"))));
    const dir = path.join(CUSTOM, "p-dir.jsonl");
    const fd = fs.openSync(dir, "r");
    const nodeEisdir = thrown(() => fs.readSync(fd, Buffer.alloc(8)));
    fs.closeSync(fd);
    expect(shape(thrown(() => disc.readSessionHeader(dir)))).toEqual(shape(nodeEisdir));
    // Arguments the binding does not take get Node's argument errors, as openSync gives them.
    expect(thrown(() => disc.readSessionHeader("a\0b")).code).toBe(thrown(() => fs.openSync("a\0b", "r")).code);
    expect(thrown(() => disc.readSessionHeader(42)).code).toBe("ERR_INVALID_ARG_TYPE");
    expect(native.MAX_HEADER_SCAN_BYTES).toBe(1024 * 1024);
  });
});

describe("index: appended files are resumed from their indexed size", () => {
  // Each listing runs in a fresh process (no in-process memo), with the native profile line
  // telling how many files were resumed instead of re-read.
  function listInChild(dir) {
    const code = `require(${JSON.stringify(path.resolve("lib/discovery/index.js"))}).list("/proj/a", ${JSON.stringify(dir)}).then((r) => process.stdout.write(JSON.stringify(r.map((s) => s.path))))`;
    const r = spawnNode(["-e", code], {
      env: { ...process.env, PI_SESSION_NATIVE_PROFILE: "1", PI_SESSION_NATIVE_NO_INDEX: "" },
      encoding: "utf8",
    });
    expect(r.status, r.stderr).toBe(0);
    const m = /resumed so far (\d+)/.exec(r.stderr);
    return { paths: JSON.parse(r.stdout), resumed: m ? Number(m[1]) : NaN };
  }

  it("grown in place: resumed, same results as the reference; rewritten or truncated: re-read", async () => {
    delete process.env.PI_SESSION_NATIVE_NO_INDEX;
    const dir = fs.mkdtempSync(path.join(ROOT, "resume-"));
    const f = path.join(dir, "s.jsonl");
    const big = "word ".repeat(2000);
    const lines = [
      hdr("grow"),
      msg("assistant", big),
      msg("user", [{ type: "text", text: "first \ud83d q" }], { timestamp: ts(7) }),
      line({ type: "session_info", name: "before" }),
    ];
    fs.writeFileSync(f, lines.join("\n") + "\n");
    fs.writeFileSync(path.join(dir, "other.jsonl"), hdr("other") + "\n" + msg("user", "o") + "\n");
    for (const p of [f, path.join(dir, "other.jsonl")]) fs.utimesSync(p, PAST, PAST);
    const same = async () =>
      expect(norm(await disc.list("/proj/a", dir))).toEqual(norm(await SessionManager.list("/proj/a", dir)));

    expect(listInChild(dir).resumed).toBe(0); // writes the index
    // pi appends: a user message, a name clear and a new name, more text.
    fs.appendFileSync(
      f,
      [
        msg("user", "appended", { timestamp: ts(50) }),
        line({ type: "session_info", name: null }),
        msg("assistant", [{ type: "text", text: "more" }], { timestamp: "2024/05/06 07:08" }),
      ].join("\n") + "\n",
    );
    fs.utimesSync(f, PAST + 10, PAST + 10);
    const grown = listInChild(dir);
    expect(grown.resumed).toBe(1);
    expect(grown.paths).toEqual((await SessionManager.list("/proj/a", dir)).map((s) => s.path));
    await same();

    // Still being written (modified just now, so not cached): resumed from the indexed size.
    fs.appendFileSync(f, line({ type: "session_info", name: "live" }) + "\n");
    expect(listInChild(dir).resumed).toBe(1);
    await same();
    expect((await disc.list("/proj/a", dir)).find((s) => s.id === "grow").name).toBe("live");

    // Rewritten in place (same inode) with a different beginning, and longer: read whole.
    fs.utimesSync(f, PAST + 20, PAST + 20);
    listInChild(dir); // index the current state
    const text = fs.readFileSync(f, "utf8");
    fs.writeFileSync(f, text.replace('"grow"', '"grew"') + msg("user", "x") + "\n");
    fs.utimesSync(f, PAST + 30, PAST + 30);
    expect(listInChild(dir).resumed).toBe(0);
    await same();
    expect((await disc.list("/proj/a", dir)).some((s) => s.id === "grew")).toBe(true);

    // Truncated and regrown past the old size with other lines: read whole.
    listInChild(dir);
    fs.writeFileSync(f, [hdr("regrown"), msg("user", "y".repeat(fs.statSync(f).size))].join("\n") + "\n");
    fs.utimesSync(f, PAST + 40, PAST + 40);
    expect(listInChild(dir).resumed).toBe(0);
    await same();
  });
});

describe("a record that cannot become a JS value", () => {
  // PI_SESSION_NATIVE_TEST_UNCONVERTIBLE=<id> makes that session's record fail to convert,
  // as a text past V8's string length limit would. The reference answers null for such a
  // file (its buildSessionInfo catches); the rest of the listing must stand, with and
  // without progress (the streamed record is lost, listed again, and comes back null).
  it("is left out; the other sessions and the progress counts are the reference's", async () => {
    delete process.env.PI_SESSION_NATIVE_NO_INDEX;
    const dir = fs.mkdtempSync(path.join(ROOT, "unconv-"));
    for (let i = 0; i < 25; i++) {
      const id = i === 7 ? "unconv" : `ok${i}`;
      fs.writeFileSync(
        path.join(dir, `s${String(i).padStart(2, "0")}.jsonl`),
        [hdr(id, { timestamp: ts(i) }), msg("user", `q${i}`, { timestamp: ts(i + 1) })].join("\n") + "\n",
      );
    }
    const code = `
      const d = require(${JSON.stringify(path.resolve("lib/discovery/index.js"))});
      (async () => {
        const calls = [];
        const withProgress = await d.list("/proj/a", ${JSON.stringify(dir)}, (l, t) => calls.push([l, t]));
        const plain = await d.list("/proj/a", ${JSON.stringify(dir)});
        process.stdout.write(JSON.stringify({ withProgress: withProgress.map((s) => s.path), plain: plain.map((s) => s.path), calls }));
      })();`;
    for (const index of ["", "1"]) {
      const r = spawnNode(["-e", code], {
        env: { ...process.env, PI_SESSION_NATIVE_TEST_UNCONVERTIBLE: "unconv", PI_SESSION_NATIVE_NO_INDEX: index },
        encoding: "utf8",
      });
      expect(r.status, r.stderr).toBe(0);
      const got = JSON.parse(r.stdout);
      const calls = [];
      const ref = await SessionManager.list("/proj/a", dir, (l, t) => calls.push([l, t]));
      const want = ref.map((s) => s.path).filter((p) => !p.endsWith("s07.jsonl"));
      expect(want.length).toBe(24);
      expect(got.withProgress).toEqual(want);
      expect(got.plain).toEqual(want);
      expect(got.calls).toEqual(calls);
    }
  });
});

describe("abort", () => {
  it("pre-aborted and mid-flight aborts reject with signal.reason", async () => {
    const reason = new Error("stop");
    const ac = new AbortController();
    ac.abort(reason);
    await expect(disc.list("/proj/a", BIG, undefined, ac.signal)).rejects.toBe(reason);
    await expect(SessionManager.list("/proj/a", BIG, undefined, ac.signal)).rejects.toBe(reason);
    await expect(disc.listAll(undefined, ac.signal)).rejects.toBe(reason);
    await expect(SessionManager.listAll(undefined, ac.signal)).rejects.toBe(reason);
    await expect(disc.listAll(BIG, undefined, ac.signal)).rejects.toBe(reason);
    for (const impl of [SessionManager, disc]) {
      const ac2 = new AbortController();
      const p = impl.list("/proj/a", BIG, undefined, ac2.signal);
      ac2.abort(reason);
      await expect(p).rejects.toBe(reason);
      const ac3 = new AbortController();
      const q = impl.listAll(() => {}, ac3.signal);
      queueMicrotask(() => ac3.abort("r3"));
      await expect(q).rejects.toBe("r3");
    }
  });
});

describe("real fixtures", () => {
  const FIX = "/work/shared/fixtures/pi-real";
  it("match the reference", async () => {
    if (!fs.existsSync(FIX)) {
      console.log(`skip: ${FIX} is absent`);
      return;
    }
    delete process.env.PI_SESSION_NATIVE_NO_INDEX;
    const dir = fs.mkdtempSync(path.join(ROOT, "real-"));
    for (const f of fs.readdirSync(FIX).filter((f) => f.endsWith(".jsonl")))
      fs.copyFileSync(path.join(FIX, f), path.join(dir, f));
    for (let i = 0; i < 2; i++) {
      const a = await SessionManager.listAll(dir);
      const b = await disc.listAll(dir);
      expect(norm(b)).toEqual(norm(a));
      expect(b.length).toBeGreaterThan(0);
      for (const s of a) expect(disc.findById("/x", s.id, dir)).toBe(SessionManager.findById("/x", s.id, dir));
    }
    // Settled, indexed, then grown as pi grows them: the listing resumes each file from the
    // index and still equals the reference (active, then settled again).
    const files = fs
      .readdirSync(dir)
      .filter((f) => f.endsWith(".jsonl"))
      .map((f) => path.join(dir, f));
    for (const f of files) fs.utimesSync(f, PAST, PAST);
    expect(norm(await disc.listAll(dir))).toEqual(norm(await SessionManager.listAll(dir)));
    for (const f of files) {
      fs.appendFileSync(
        f,
        [
          msg("user", [{ type: "text", text: "appended \u00e9 \ud83d\ude00" }], {
            timestamp: new Date().toISOString(),
          }),
          line({ type: "session_info", name: " resumed " }),
        ].join("\n") + "\n",
      );
    }
    expect(norm(await disc.listAll(dir))).toEqual(norm(await SessionManager.listAll(dir)));
    for (const f of files) fs.utimesSync(f, PAST + 60, PAST + 60);
    expect(norm(await disc.listAll(dir))).toEqual(norm(await SessionManager.listAll(dir)));
  });
});
