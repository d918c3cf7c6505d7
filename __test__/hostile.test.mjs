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
