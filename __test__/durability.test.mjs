// Durability: kill -9 at random points, ENOSPC, files that vanish / are replaced / truncated
// while open, concurrent writers, the advisory lock. See docs/durability.md.
import { describe, it, expect } from "vitest";
import { spawn, execFileSync } from "node:child_process";
import * as fs from "node:fs";
import { join } from "node:path";
import { root, tmp, nat, ref } from "./helpers.mjs";

const CHILD = join(root, "scripts", "durability-child.mjs");
const KILLS = Number(process.env.DURABILITY_KILLS ?? 200);
const PARALLEL = 2;
const isRoot = process.getuid?.() === 0;

const user = (content) => ({ role: "user", content, timestamp: 1 });

/** Start the child; resolves when it printed READY. */
function startChild(args, env = {}) {
  const child = spawn(process.execPath, [CHILD, ...args], {
    env: { ...process.env, ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  let err = "";
  const ready = new Promise((resolve, reject) => {
    child.stdout.on("data", (d) => {
      out += d;
      if (out.includes("READY\n")) resolve();
    });
    child.stderr.on("data", (d) => (err += d));
    child.on("exit", (code) => {
      if (!out.includes("READY\n")) reject(new Error(`child exited ${code} before READY: ${err}`));
    });
  });
  const exited = new Promise((resolve) => child.on("close", (code, signal) => resolve({ code, signal })));
  return { child, ready, exited, out: () => out, err: () => err };
}

/**
 * Check a session file: every line JSON, except the unterminated last line (a write cut short
 * by SIGKILL: the kernel stops a large write between pages) and at most `repaired` earlier
 * such lines that a later open terminated with "\n" (the reference's repair).
 */
function checkFile(file, repaired = 0) {
  const text = fs.readFileSync(file, "utf8");
  const lines = text.split("\n");
  const tail = lines.pop(); // "" when the file ends with a newline
  const ids = new Set();
  let header = null;
  let malformed = 0;
  for (const [i, l] of lines.entries()) {
    // A blank line is what a load's repair newline leaves when it caught another writer's
    // line half-written (that writer then finished it): readers skip it, as the reference's.
    if (l === "") continue;
    let o;
    try {
      o = JSON.parse(l);
    } catch {
      if (++malformed > repaired)
        throw new Error(`${file}: line ${i + 1} of ${lines.length} is not JSON: ${l.slice(0, 80)}`);
      continue;
    }
    if (header === null) header = o;
    ids.add(o.id);
  }
  return { ids, header, tail, lines: lines.length, malformed };
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** A small session written to `dir`, re-opened file-backed (as a large one would be). */
function openBacked(dir) {
  const seed = nat.SessionManager.create("/tmp", dir);
  seed.appendMessage(user("one"));
  for (let i = 0; i < 20; i++) seed.appendCustomEntry("k", { i });
  const file = seed.getSessionFile();
  process.env.PI_SESSION_NATIVE_BACKED_MIN = "0";
  try {
    return { sm: nat.SessionManager.open(file, dir, "/tmp"), file };
  } finally {
    delete process.env.PI_SESSION_NATIVE_BACKED_MIN;
  }
}

describe("durability", () => {
  it(`kill -9 during appends and rewrites (${KILLS} kills)`, async () => {
    const t0 = Date.now();
    let kills = 0;
    let acked = 0;
    let torn = 0;
    let stray = 0;
    const repaired = new Map();
    const modes = ["batch", "always", "never"];
    const worker = async (w) => {
      let dir = tmp(`psn-kill-${w}-`);
      for (let k = w; k < KILLS; k += PARALLEL) {
        if (k % 40 < PARALLEL && k >= PARALLEL) {
          fs.rmSync(dir, { recursive: true, force: true });
          dir = tmp(`psn-kill-${w}-`);
        }
        const c = startChild(["kill", dir, String(1000 + k)], { PI_SESSION_NATIVE_FSYNC: modes[k % 3] });
        await c.ready;
        await sleep(Math.floor(Math.random() * 120));
        c.child.kill("SIGKILL");
        const { signal } = await c.exited;
        if (signal !== "SIGKILL") throw new Error(`child ended on its own: ${c.err()}`);
        kills++;
        const byFile = new Map();
        for (const line of c.out().split("\n")) {
          const m = /^A (\S+) (\S+)$/.exec(line);
          if (!m) continue;
          if (!byFile.has(m[1])) byFile.set(m[1], []);
          byFile.get(m[1]).push(m[2]);
        }
        // Every session file in the directory, before anything reopens (repairs) them.
        const state = new Map();
        for (const f of fs.readdirSync(dir)) {
          if (!f.endsWith(".jsonl")) continue;
          const p = join(dir, f);
          if (fs.statSync(p).size === 0) continue; // an empty file the child made itself
          const got = checkFile(p, repaired.get(p) ?? 0);
          if (got.tail !== "") {
            torn++;
            repaired.set(p, (repaired.get(p) ?? 0) + 1);
          }
          state.set(p, got);
        }
        for (const [file, ids] of byFile) {
          const got = state.get(file);
          expect(got?.header?.type, file).toBe("session");
          for (const id of ids) {
            if (!got.ids.has(id)) throw new Error(`${file}: acknowledged entry ${id} missing after kill ${k}`);
          }
          acked += ids.length;
          // The file loads, in ours and in the reference.
          const sm = nat.SessionManager.open(file, dir, "/tmp/psn-kill-cwd");
          expect(sm.getEntries().length).toBeGreaterThanOrEqual(ids.length - 1);
          expect(ref.loadEntriesFromFile(file).length).toBeGreaterThan(0);
        }
        // No temp file survives unless the kill hit between link/rename and its removal.
        stray += fs.readdirSync(dir).filter((f) => f.endsWith(".tmp")).length;
      }
      fs.rmSync(dir, { recursive: true, force: true });
    };
    await Promise.all(Array.from({ length: PARALLEL }, (_, w) => worker(w)));
    console.log(
      `[durability] ${kills} kills, ${acked} acknowledged entries checked, ${torn} torn tails (unacknowledged appends cut by the kill), ${stray} leftover temp files, ${Date.now() - t0} ms`,
    );
    expect(kills).toBe(KILLS);
  }, 600_000);

  it("ENOSPC on a small tmpfs: no partial line, memory consistent, later appends fine", (ctx) => {
    const mnt = tmp("psn-enospc-");
    try {
      execFileSync("mount", ["-t", "tmpfs", "-o", "size=64k", "tmpfs", mnt], { stdio: "ignore" });
    } catch {
      console.warn("[skip] cannot mount a tmpfs (not root?); ENOSPC is covered by the Rust fault-injection unit test");
      fs.rmSync(mnt, { recursive: true, force: true });
      ctx.skip();
      return;
    }
    try {
      // First flush that does not fit: no file at all.
      const big = nat.SessionManager.create("/tmp", mnt);
      let err;
      try {
        big.appendMessage(user("y".repeat(100_000)));
      } catch (e) {
        err = e;
      }
      expect(err?.code).toBe("ENOSPC");
      expect(fs.readdirSync(mnt)).toEqual([]);

      const sm = nat.SessionManager.create("/tmp", mnt);
      sm.appendMessage(user("hello"));
      const file = sm.getSessionFile();
      let failures = 0;
      for (let i = 0; i < 40 && failures < 3; i++) {
        try {
          sm.appendCustomEntry("fill", { i, pad: "z".repeat(5000) });
        } catch (e) {
          expect(e.code).toBe("ENOSPC");
          failures++;
        }
      }
      expect(failures).toBeGreaterThan(0);
      const got = checkFile(file);
      expect(got.tail).toBe("");
      expect(got.lines).toBe(sm.getEntries().length + 1);
      // A branched session that does not fit leaves no partial file either.
      const before = new Set(fs.readdirSync(mnt));
      try {
        sm.createBranchedSession(sm.getLeafId());
      } catch (e) {
        expect(e.code).toBe("ENOSPC");
      }
      for (const f of fs.readdirSync(mnt)) if (!before.has(f)) checkFile(join(mnt, f));
      expect(fs.readdirSync(mnt).filter((f) => f.endsWith(".tmp"))).toEqual([]);
      // Small appends still fit and land on complete lines.
      const sm2 = nat.SessionManager.open(file, mnt, "/tmp");
      const n = sm2.getEntries().length;
      sm2.appendCustomEntry("small", { ok: true });
      const again = checkFile(file);
      expect(again.tail).toBe("");
      expect(again.lines).toBe(n + 2);
    } finally {
      // Lazy: session objects of this test still hold append handles until collected.
      execFileSync("umount", ["-l", mnt]);
      fs.rmSync(mnt, { recursive: true, force: true });
    }
  });

  it("a deleted, renamed or truncated file is rewritten whole from memory", () => {
    for (const how of ["delete", "rename", "truncate", "replace"]) {
      const dir = tmp("psn-vanish-");
      const sm = nat.SessionManager.create("/tmp", dir);
      sm.appendMessage(user("one"));
      sm.appendCustomEntry("k", { n: 1 });
      const file = sm.getSessionFile();
      if (how === "delete") fs.unlinkSync(file);
      if (how === "rename") fs.renameSync(file, `${file}.moved`);
      if (how === "truncate") fs.truncateSync(file, 0);
      if (how === "replace") {
        fs.writeFileSync(`${file}.new`, "junk\n");
        fs.renameSync(`${file}.new`, file);
      }
      sm.appendCustomEntry("k", { n: 2 });
      sm.appendCustomEntry("k", { n: 3 });
      const got = checkFile(file);
      expect(got.header.type, how).toBe("session");
      expect(got.lines, how).toBe(sm.getEntries().length + 1);
      const reopened = nat.SessionManager.open(file, dir, "/tmp");
      expect(reopened.getEntries(), how).toEqual(sm.getEntries());
      if (how === "rename") expect(checkFile(`${file}.moved`).lines).toBe(3);
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it("a file truncated or replaced between open and the first append is rewritten from memory", () => {
    for (const how of ["truncate", "replace", "delete"]) {
      const dir = tmp("psn-first-append-");
      const seed = nat.SessionManager.create("/tmp", dir);
      seed.appendMessage(user("one"));
      for (let i = 0; i < 30; i++) seed.appendCustomEntry("k", { i });
      const file = seed.getSessionFile();
      const sm = nat.SessionManager.open(file, dir, "/tmp");
      const full = fs.readFileSync(file, "utf8");
      if (how === "truncate") fs.truncateSync(file, Math.floor(full.length / 2));
      if (how === "replace") {
        fs.writeFileSync(`${file}.new`, full.split("\n").slice(0, 3).join("\n") + "\n");
        fs.renameSync(`${file}.new`, file);
      }
      if (how === "delete") fs.unlinkSync(file);
      const id = sm.appendCustomEntry("k", { last: true });
      // The whole session is in the file again, the new entry last; nothing of what was
      // loaded is lost to the cut.
      expect(fs.readFileSync(file, "utf8"), how).toBe(`${full}${JSON.stringify(sm.getEntry(id))}\n`);
      expect(nat.SessionManager.open(file, dir, "/tmp").getEntries(), how).toEqual(sm.getEntries());
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it("a file grown by another writer between open and the first append is appended to, as by the reference", () => {
    const dir = tmp("psn-first-append-grown-");
    const seed = nat.SessionManager.create("/tmp", dir);
    seed.appendMessage(user("one"));
    const file = seed.getSessionFile();
    const sm = nat.SessionManager.open(file, dir, "/tmp");
    const other = JSON.stringify({
      type: "custom",
      customType: "other",
      id: "0ther000",
      parentId: null,
      timestamp: "t",
    });
    fs.appendFileSync(file, `${other}\n`);
    const before = fs.readFileSync(file, "utf8");
    const id = sm.appendCustomEntry("k", {});
    expect(fs.readFileSync(file, "utf8")).toBe(`${before}${JSON.stringify(sm.getEntry(id))}\n`);
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it("a large file-backed session truncated before its first append: rebuilt when JS holds the entries, else appended to as found", () => {
    for (const materialized of [true, false]) {
      const dir = tmp("psn-first-append-backed-");
      const { sm, file } = openBacked(dir);
      const full = fs.readFileSync(file, "utf8");
      if (materialized) sm.getEntries();
      fs.truncateSync(file, 100);
      if (materialized) {
        const id = sm.appendCustomEntry("k", { last: true });
        expect(fs.readFileSync(file, "utf8")).toBe(`${full}${JSON.stringify(sm.getEntry(id))}\n`);
      } else {
        // Nothing to rebuild the cut part from: appended to what is left, as the reference,
        // but on a line of its own (never glued onto the cut line).
        const cut = fs.readFileSync(file, "utf8");
        const id = sm.appendCustomEntry("k", { n: 1 });
        expect(fs.readFileSync(file, "utf8")).toBe(`${cut}\n${JSON.stringify(sm.getEntry(id))}\n`);
      }
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it("truncated in place mid-file: appended entries (kept only in the file) come back from their objects", () => {
    const dir = tmp("psn-trunc-mid-");
    const sm = nat.SessionManager.create("/tmp", dir);
    sm.appendMessage(user("one"));
    for (let i = 0; i < 200; i++) sm.appendCustomEntry("k", { i, pad: "é".repeat(i) });
    const file = sm.getSessionFile();
    const before = fs.readFileSync(file, "utf8");
    fs.truncateSync(file, Math.floor(before.length / 3));
    const id = sm.appendCustomEntry("k", { last: true });
    const after = fs.readFileSync(file, "utf8");
    expect(after.startsWith(before)).toBe(true);
    expect(after.slice(before.length)).toBe(`${JSON.stringify(sm.getEntry(id))}\n`);
    expect(nat.SessionManager.open(file, dir, "/tmp").getEntries()).toEqual(sm.getEntries());
    // Later appends go on normally.
    sm.appendCustomEntry("k", { later: true });
    expect(checkFile(file).lines).toBe(sm.getEntries().length + 1);
    // The same through an append that sends its text (a label) rather than its fields.
    const before2 = fs.readFileSync(file, "utf8");
    fs.truncateSync(file, 50);
    const label = sm.appendLabelChange(id, "kept");
    const after2 = fs.readFileSync(file, "utf8");
    expect(after2).toBe(`${before2}${JSON.stringify(sm.getEntry(label))}\n`);
    expect(nat.SessionManager.open(file, dir, "/tmp").getEntries()).toEqual(sm.getEntries());
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it("truncated in place with entries nobody holds (large file, not materialized): the new line goes after what is left, on a line of its own", () => {
    const dir = tmp("psn-trunc-backed-");
    const { sm, file } = openBacked(dir);
    sm.appendCustomEntry("k", { n: 0 });
    fs.truncateSync(file, 100);
    const cut = fs.readFileSync(file, "utf8");
    const one = sm.appendCustomEntry("k", { n: 1 });
    const two = sm.appendCustomEntry("k", { n: 2 });
    expect(fs.readFileSync(file, "utf8")).toBe(
      `${cut}\n${JSON.stringify(sm.getEntry(one))}\n${JSON.stringify(sm.getEntry(two))}\n`,
    );
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it("a vanished file is reported once on stderr", async () => {
    const dir = tmp("psn-vanish-msg-");
    const script = `
      const { SessionManager } = require(${JSON.stringify(join(root, "index.js"))});
      const fs = require("fs");
      const sm = SessionManager.create("/tmp", ${JSON.stringify(dir)});
      sm.appendMessage({ role: "user", content: "x", timestamp: 1 });
      fs.unlinkSync(sm.getSessionFile());
      for (let i = 0; i < 5; i++) sm.appendCustomEntry("k", { i });
    `;
    const res = await new Promise((resolve) => {
      const c = spawn(process.execPath, ["-e", script], { stdio: ["ignore", "pipe", "pipe"] });
      let err = "";
      c.stderr.on("data", (d) => (err += d));
      c.on("close", (code) => resolve({ code, err }));
    });
    expect(res.code).toBe(0);
    const msgs = res.err.split("\n").filter((l) => l.includes("rewrote it from memory"));
    expect(msgs.length).toBe(1);
    expect(msgs[0]).toMatch(/^pi-session-native: session file .* vanished; rewrote it from memory$/);
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it("a file replaced by a directory fails like the reference (EISDIR), memory unchanged", () => {
    const run = (SM) => {
      const dir = tmp("psn-isdir-");
      const sm = SM.create("/tmp", dir);
      sm.appendMessage(user("one"));
      const file = sm.getSessionFile();
      fs.unlinkSync(file);
      fs.mkdirSync(file);
      let err;
      try {
        sm.appendCustomEntry("k", { n: 2 });
      } catch (e) {
        err = e;
      }
      const out = {
        code: err?.code,
        message: err?.message.replace(dir, "<dir>").replace(/[^/]+\.jsonl/, "<f>"),
        n: sm.getEntries().length,
      };
      fs.rmSync(dir, { recursive: true, force: true });
      return out;
    };
    expect(run(nat.SessionManager)).toEqual(run(ref.SessionManager));
  });

  it("read-only directory: appends and rewrites of an existing file still work", (ctx) => {
    if (isRoot) {
      // Root ignores directory permissions: run the scenario as "nobody" in a child process.
      const setpriv = ["/usr/bin/setpriv", "/bin/setpriv"].find((p) => fs.existsSync(p));
      if (!setpriv) {
        console.warn("[skip] running as root without setpriv: a read-only directory does not block root's writes");
        ctx.skip();
        return;
      }
      // "nobody" must be able to read this checkout (a clone inside a 0700 temp dir is not).
      try {
        execFileSync(
          setpriv,
          [
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            process.execPath,
            "-e",
            `require(${JSON.stringify(join(root, "index.js"))})`,
          ],
          { stdio: "ignore" },
        );
      } catch {
        console.warn(
          `[skip] running as root and user "nobody" cannot read ${root}: cannot test a read-only directory without root's override`,
        );
        ctx.skip();
        return;
      }
      const dir = tmp("psn-ro-");
      fs.chmodSync(dir, 0o777);
      const script = join(dir, "ro.cjs");
      fs.writeFileSync(
        script,
        `const fs = require("fs");
const { SessionManager } = require(${JSON.stringify(join(root, "index.js"))});
const dir = ${JSON.stringify(join(dir, "s"))};
fs.mkdirSync(dir);
const sm = SessionManager.create("/tmp", dir);
sm.appendMessage({ role: "user", content: "one", timestamp: 1 });
const file = sm.getSessionFile();
fs.chmodSync(dir, 0o555);
let ok = true;
try { fs.writeFileSync(dir + "/probe", "x"); ok = false; } catch {}
sm.appendCustomEntry("k", { n: 2 });
const sm2 = SessionManager.open(file, dir, "/tmp");
console.log(JSON.stringify({ blocked: ok, entries: sm2.getEntries().length, lines: fs.readFileSync(file, "utf8").trim().split("\\n").length }));
`,
      );
      fs.chmodSync(script, 0o644);
      const out = execFileSync(
        setpriv,
        ["--reuid=65534", "--regid=65534", "--clear-groups", process.execPath, script],
        { encoding: "utf8" },
      );
      const r = JSON.parse(out.trim().split("\n").pop());
      expect(r.blocked).toBe(true); // the directory really is read-only for this user
      expect(r.entries).toBe(2);
      expect(r.lines).toBe(3);
      fs.rmSync(dir, { recursive: true, force: true });
      return;
    }
    const dir = tmp("psn-ro-");
    const sm = nat.SessionManager.create("/tmp", dir);
    sm.appendMessage(user("one"));
    const file = sm.getSessionFile();
    fs.chmodSync(dir, 0o555);
    try {
      sm.appendCustomEntry("k", { n: 2 });
      // Migration-style rewrite falls back to the in-place write when no temp file can be made.
      const sm2 = nat.SessionManager.open(file, dir, "/tmp");
      expect(sm2.getEntries().length).toBe(2);
    } finally {
      fs.chmodSync(dir, 0o755);
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it("a file that grew under us is appended to, never rewritten from memory (another writer's lines survive a load that caught one half-written)", () => {
    const dir = tmp("psn-race-");
    const sm = nat.SessionManager.create("/tmp", dir);
    sm.appendMessage(user("start"));
    const file = sm.getSessionFile();
    // Writer A's line, caught half-written by B's load (B's load repairs it with a newline).
    const line = JSON.stringify({
      type: "custom",
      customType: "c",
      data: { tag: "a", i: 0 },
      id: "aaaa0000",
      parentId: null,
      timestamp: new Date().toISOString(),
    });
    const before = fs.readFileSync(file, "utf8");
    fs.writeFileSync(file, before + line.slice(0, 40));
    const b = nat.SessionManager.open(file);
    // What the race leaves on disk: A's whole line, then B's repair newline (same inode).
    fs.writeFileSync(file, `${before}${line}\n\n`);
    b.appendCustomEntry("c", { tag: "b", i: 0 });
    const lines = fs
      .readFileSync(file, "utf8")
      .split("\n")
      .filter((l) => l.trim());
    const tags = lines
      .map((l) => JSON.parse(l))
      .filter((o) => o.type === "custom")
      .map((o) => o.data.tag);
    expect(tags).toEqual(["a", "b"]);
    expect(
      ref.SessionManager.open(file)
        .getEntries()
        .filter((e) => e.type === "custom"),
    ).toHaveLength(2);
  });

  it("two processes append 10,000 entries each to one file: all present, every line JSON", async () => {
    const dir = tmp("psn-conc-");
    const sm = nat.SessionManager.create("/tmp", dir);
    sm.appendMessage(user("start"));
    const file = sm.getSessionFile();
    const t0 = Date.now();
    const kids = ["a", "b"].map((tag) => startChild(["concurrent", file, tag, "10000"]));
    await Promise.all(kids.map((k) => k.ready));
    const res = await Promise.all(kids.map((k) => k.exited));
    for (const [i, r] of res.entries()) expect(r.code, kids[i].err()).toBe(0);
    const got = checkFile(file);
    expect(got.tail).toBe("");
    const seen = { a: new Set(), b: new Set() };
    for (const l of fs.readFileSync(file, "utf8").trimEnd().split("\n")) {
      if (l === "") continue; // see checkFile
      const o = JSON.parse(l);
      if (o.type === "custom") seen[o.data.tag].add(o.data.i);
    }
    expect(seen.a.size).toBe(10000);
    expect(seen.b.size).toBe(10000);
    console.log(`[durability] 2 x 10,000 concurrent appends in ${Date.now() - t0} ms`);
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it("PI_SESSION_NATIVE_LOCK=1: a second writer fails fast; a dead holder's lock is taken over", async () => {
    const dir = tmp("psn-lock-");
    const sm = nat.SessionManager.create("/tmp", dir);
    sm.appendMessage(user("start"));
    const file = sm.getSessionFile();
    const holder = startChild(["hold", file], { PI_SESSION_NATIVE_LOCK: "1" });
    await holder.ready;
    expect(fs.readFileSync(`${file}.lock`, "utf8")).toBe(String(holder.child.pid));
    const lock = { PI_SESSION_NATIVE_LOCK: "1" };
    const attempt = async () => {
      const c = startChild(["try", file], lock);
      await c.ready;
      await c.exited;
      return { pid: c.child.pid, out: c.out().replace("READY\n", "").trim() };
    };
    try {
      const second = await attempt();
      expect(second.out).toBe(`ERR Error: Session file ${file} is locked by pid ${holder.child.pid} memory-unchanged`);
      holder.child.kill("SIGKILL");
      await holder.exited;
      // The lock file (with the dead pid) is still there; it is taken over.
      expect(fs.readFileSync(`${file}.lock`, "utf8")).toBe(String(holder.child.pid));
      const third = await attempt();
      expect(third.out).toBe("OK");
      expect(checkFile(file).lines).toBe(4);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
