// Hostile files and terminals (issue 24): the lock, special files, the CLI's output, the
// sidecar index. Every child process runs under a timeout that fails the test (never hangs CI).
import { describe, it, expect } from "vitest";
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import { join } from "node:path";
import { root, tmp, nat } from "./helpers.mjs";

const INDEX = join(root, "index.mjs");
const isRoot = process.getuid?.() === 0;
const user = (content) => ({ role: "user", content, timestamp: 1 });

/** Run an ES module snippet in a child node with `env`; fails on timeout. */
function node(code, env = {}, timeout = 20_000) {
  const r = spawnSync(process.execPath, ["--input-type=module", "-e", code], {
    env: { ...process.env, ...env },
    encoding: "utf8",
    timeout,
  });
  if (r.error) throw new Error(`child failed (${r.error.code ?? r.error.message}): ${r.stderr}`);
  return r;
}

/** A session file with two user messages; returns its path and bytes. */
function session(dir, text = "hello") {
  const sm = nat.SessionManager.create("/tmp/proj", dir);
  sm.appendMessage(user(text));
  sm.appendMessage(user(`${text} again`));
  const file = sm.getSessionFile();
  return { file, bytes: fs.readFileSync(file) };
}

/** Append one message to `file` with the lock on; prints OK or ERR <message>. */
function appendLocked(file) {
  return node(
    `import { SessionManager } from ${JSON.stringify(INDEX)};
     const sm = SessionManager.open(${JSON.stringify(file)});
     try { sm.appendMessage({ role: "user", content: "locked append", timestamp: 1 });
       const st = (await import("node:fs")).statSync(${JSON.stringify(`${file}.lock`)});
       console.log("OK " + (st.mode & 0o777).toString(8));
     } catch (e) { console.log("ERR " + e.message); }`,
    { PI_SESSION_NATIVE_LOCK: "1" },
  );
}

describe("lock file (PI_SESSION_NATIVE_LOCK=1)", () => {
  it("is created 0600 and removed on release", () => {
    const dir = tmp("psn-h-lock-");
    const { file } = session(dir);
    const r = appendLocked(file);
    expect(r.stdout.trim()).toBe("OK 600");
    expect(fs.readFileSync(file, "utf8")).toContain("locked append");
  });

  it("a symlink at the lock path to another file: the target is unchanged", () => {
    const dir = tmp("psn-h-lock-");
    const { file, bytes } = session(dir);
    const precious = join(dir, "precious.txt");
    fs.writeFileSync(precious, "do not touch\n");
    fs.symlinkSync(precious, `${file}.lock`);
    const r = appendLocked(file);
    expect(r.stdout).toMatch(/^ERR Session file .* cannot be locked: .*\.lock is a symbolic link/);
    expect(fs.readFileSync(precious, "utf8")).toBe("do not touch\n");
    expect(fs.readFileSync(file)).toEqual(bytes);
  });

  it("a dangling symlink at the lock path: its target is not created", () => {
    const dir = tmp("psn-h-lock-");
    const { file } = session(dir);
    const target = join(dir, "created-by-attacker");
    fs.symlinkSync(target, `${file}.lock`);
    const r = appendLocked(file);
    expect(r.stdout).toMatch(/^ERR .*symbolic link/);
    expect(fs.existsSync(target)).toBe(false);
  });

  it("a symlink (or a hard link) from the lock path to the session itself: the session is intact", () => {
    for (const mk of [fs.symlinkSync, fs.linkSync]) {
      const dir = tmp("psn-h-lock-");
      const { file, bytes } = session(dir);
      mk(file, `${file}.lock`);
      const r = appendLocked(file);
      expect(r.stdout).toMatch(/^ERR Session file .* cannot be locked/);
      expect(fs.readFileSync(file)).toEqual(bytes);
      expect(nat.SessionManager.open(file).getEntries().length).toBe(2);
    }
  });

  it("a FIFO at the lock path is refused without blocking", () => {
    const dir = tmp("psn-h-lock-");
    const { file, bytes } = session(dir);
    spawnSync("mkfifo", [`${file}.lock`]);
    const r = appendLocked(file);
    expect(r.stdout).toMatch(/^ERR .*not a regular file/);
    expect(fs.readFileSync(file)).toEqual(bytes);
  });

  it("a dead holder's lock file (ours, 0600, a pid) is taken over", () => {
    const dir = tmp("psn-h-lock-");
    const { file } = session(dir);
    fs.writeFileSync(`${file}.lock`, "999999999", { mode: 0o600 });
    const r = appendLocked(file);
    expect(r.stdout.trim()).toBe("OK 600");
  });
});

const BIN = join(root, "bin", "pi-session.mjs");
/** Run the CLI; a hang fails the test (spawnSync timeout -> error). */
function cli(args, { env = {}, timeout = 20_000, input } = {}) {
  const agentDir = tmp("psn-h-agent-");
  const r = spawnSync(process.execPath, [BIN, ...args], {
    encoding: "utf8",
    timeout,
    input,
    env: { ...process.env, NO_COLOR: "1", TZ: "UTC", PI_CODING_AGENT_DIR: agentDir, ...env },
  });
  if (r.error) throw new Error(`pi-session ${args.join(" ")} failed: ${r.error.code ?? r.error.message} ${r.stderr}`);
  return { code: r.status, out: r.stdout, err: r.stderr };
}

/** A sessions dir with one real session, a FIFO `*.jsonl` and a `*.jsonl` link to /dev/zero. */
function oddStore() {
  const dir = tmp("psn-h-odd-");
  const { file } = session(dir, "needle text");
  const fifo = join(dir, "2026-01-01T00-00-00-000Z_fifo.jsonl");
  const zero = join(dir, "2026-01-01T00-00-00-000Z_zero.jsonl");
  expect(spawnSync("mkfifo", [fifo]).status).toBe(0);
  fs.symlinkSync("/dev/zero", zero);
  return { dir, file, fifo, zero };
}

describe("special files (FIFO, /dev/zero) never hang, never blow memory", () => {
  it("library: listAll, list, findMostRecentSession, open and continueRecent skip or refuse them", () => {
    const { dir, file, fifo, zero } = oddStore();
    for (const noIndex of ["", "1"]) {
      const r = node(
        `import { SessionManager, findMostRecentSession } from ${JSON.stringify(INDEX)};
         const dir = ${JSON.stringify(dir)};
         const all = await SessionManager.listAll(dir);
         const list = await SessionManager.list("/tmp/proj", dir);
         const recent = findMostRecentSession(dir);
         const errs = [];
         for (const p of [${JSON.stringify(fifo)}, ${JSON.stringify(zero)}]) {
           try { SessionManager.open(p); errs.push("opened"); } catch (e) { errs.push(e.code + " " + e.message); }
         }
         console.log(JSON.stringify({ all: all.map((s) => s.path), list: list.map((s) => s.path), recent, errs,
           rss: process.memoryUsage().rss }));`,
        { PI_SESSION_NATIVE_NO_INDEX: noIndex },
      );
      const out = JSON.parse(r.stdout);
      expect(out.all).toEqual([file]);
      expect(out.list).toEqual([file]);
      expect(out.recent).toBe(file);
      expect(out.errs[0]).toMatch(/^EINVAL EINVAL: not a regular file \(fifo\), open /);
      expect(out.errs[1]).toMatch(/^EINVAL EINVAL: not a regular file \(character device\), open /);
      expect(out.rss).toBeLessThan(1 << 30);
    }
  });

  it("CLI: show, export, check, repair refuse them with one clear line (exit 2)", () => {
    const { fifo, zero } = oddStore();
    for (const p of [fifo, zero]) {
      for (const args of [["show", p], ["show", p, "--tree"], ["export", p, "--format", "md"], ["check", p], ["repair", p], ["repair", p, "--dry-run"]]) {
        const r = cli(args);
        expect(r.code, `${args.join(" ")}: ${r.err}`).toBe(2);
        expect(r.err).toMatch(/not a regular file \((fifo|character device)\)/);
        expect(r.err.trim().split("\n")).toHaveLength(1);
      }
    }
  });

  it("CLI: ls, search, stats and check DIR skip them with one warning each", () => {
    const { dir, file, fifo, zero } = oddStore();
    for (const args of [["ls", dir], ["search", "needle", dir], ["stats", dir], ["check", dir]]) {
      const r = cli(args);
      expect(r.code, `${args.join(" ")}: ${r.err}`).toBe(0);
      const warnings = r.err.trim().split("\n");
      expect(warnings).toEqual([
        `pi-session: ${fifo}: not a regular file (fifo); skipped`,
        `pi-session: ${zero}: not a regular file (character device); skipped`,
      ]);
      if (args[0] !== "stats") expect(r.out).toContain(args[0] === "check" ? file : "needle");
    }
  });

  it("repair through a symlink repairs the target, keeps the link, leaves no backup unless --backup", () => {
    const dir = tmp("psn-h-rep-");
    const { file } = session(dir);
    fs.appendFileSync(file, '{"type":"message","id":"torn');
    const link = join(dir, "link.jsonl");
    fs.symlinkSync(file, link);
    const r = cli(["repair", link, "--json"]);
    expect(r.code, r.err).toBe(0);
    expect(fs.lstatSync(link).isSymbolicLink()).toBe(true);
    expect(fs.readFileSync(file, "utf8").endsWith("\n")).toBe(true);
    expect(fs.readFileSync(file, "utf8")).not.toContain('"torn');
    expect(JSON.parse(r.out)).toMatchObject({ target: file, changed: true, backup: null });
    expect(fs.readdirSync(dir).filter((f) => f.includes(".bak-"))).toEqual([]);
    expect(nat.SessionManager.open(link).getEntries().length).toBe(2);
  });
});
