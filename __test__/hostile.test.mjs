// Hostile files and terminals: the lock, special files, the CLI's output, the
// sidecar index. Every child process runs under a timeout that fails the test (never hangs CI).
// POSIX only (FIFOs, /dev/zero, symlinks, uids): skipped on Windows.
import { describe, it, expect } from "vitest";
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import { join } from "node:path";
import { root, tmp, nat, ref } from "./helpers.mjs";

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
  if (r.error)
    throw new Error(
      `child failed (${/** @type {NodeJS.ErrnoException} */ (r.error).code ?? r.error.message}): ${r.stderr}`,
    );
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

describe.skipIf(process.platform === "win32")("lock file (PI_SESSION_NATIVE_LOCK=1)", () => {
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

// HOSTILE_CLI_BIN: run these tests against another checkout's CLI (to see them fail before a fix).
const BIN = process.env.HOSTILE_CLI_BIN ?? join(root, "bin", "pi-session.mjs");
/**
 * Run the CLI; a hang fails the test (spawnSync timeout -> error).
 * @param {string[]} args
 * @param {{ env?: NodeJS.ProcessEnv, timeout?: number, input?: string }} [options]
 */
function cli(args, { env = {}, timeout = 20_000, input } = {}) {
  const agentDir = tmp("psn-h-agent-");
  const r = spawnSync(process.execPath, [BIN, ...args], {
    encoding: "utf8",
    timeout,
    input,
    env: { ...process.env, NO_COLOR: "1", TZ: "UTC", PI_CODING_AGENT_DIR: agentDir, ...env },
  });
  if (r.error)
    throw new Error(
      `pi-session ${args.join(" ")} failed: ${/** @type {NodeJS.ErrnoException} */ (r.error).code ?? r.error.message} ${r.stderr}`,
    );
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

describe.skipIf(process.platform === "win32")("special files (FIFO, /dev/zero) never hang, never blow memory", () => {
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
      for (const args of [
        ["show", p],
        ["show", p, "--tree"],
        ["export", p, "--format", "md"],
        ["check", p],
        ["repair", p],
        ["repair", p, "--dry-run"],
      ]) {
        const r = cli(args);
        expect(r.code, `${args.join(" ")}: ${r.err}`).toBe(2);
        expect(r.err).toMatch(/not a regular file \((fifo|character device)\)/);
        expect(r.err.trim().split("\n")).toHaveLength(1);
      }
    }
  });

  it("CLI: ls, search, stats and check DIR skip them with one warning each", () => {
    const { dir, file, fifo, zero } = oddStore();
    // (search --literal lists the files, and warns, like ls; the ranked search's index skips them silently, below)
    for (const args of [
      ["ls", dir],
      ["search", "needle", dir, "--literal"],
      ["stats", dir],
      ["check", dir],
    ]) {
      const r = cli(args);
      expect(r.code, `${args.join(" ")}: ${r.err}`).toBe(0);
      const warnings = r.err.trim().split("\n");
      expect(warnings).toEqual([
        `pi-session: ${fifo}: not a regular file (fifo); skipped`,
        `pi-session: ${zero}: not a regular file (character device); skipped`,
      ]);
      if (args[0] !== "stats") expect(r.out).toContain(args[0] === "check" ? file : "needle");
    }
    const ranked = cli(["search", "needle", dir, "--json"]);
    expect(ranked.code, ranked.err).toBe(0);
    expect([...new Set(JSON.parse(ranked.out).map((h) => h.sessionPath))]).toEqual([file]);
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

// Every class of terminal escape an attacker can put in session text (and in a file name).
const EVIL = {
  osc: "\x1b]0;pwned-title\x07",
  clear: "\x1b[2J",
  link: "\x1b]8;;http://evil.example\x07click\x1b]8;;\x07",
  move: "\x1b[5A",
  bg: "\x1b[41;1m",
  cr: "\rOVERWRITE",
  csi8: "\x9b2J",
  c1: "\x85\x90\x9d",
  del: "\x7f",
  bidi: "\u202Eevil\u202C\u2066x\u2069\u200e\u200f\u061c",
  bs: "\b\b\x00",
};
const EVIL_TEXT = `needle ${Object.values(EVIL).join(" ")} end`;
// Every character the sanitiser must never let through (newline and tab excepted).
const UNSAFE = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/;

/** A sessions dir whose one session carries EVIL text everywhere: cwd, name, messages, model, label, file name. */
function evilStore() {
  const dir = tmp("psn-h-evil-");
  const sm = nat.SessionManager.create(`/tmp/p${EVIL.osc}`, dir);
  const u = sm.appendMessage(user(EVIL_TEXT));
  sm.appendMessage({
    role: "assistant",
    content: [{ type: "text", text: `reply ${EVIL_TEXT}` }],
    api: "x",
    provider: `prov${EVIL.bg}`,
    model: `model${EVIL.csi8}`,
    usage: {
      input: 1,
      output: 1,
      cacheRead: 0,
      cacheWrite: 0,
      totalTokens: 2,
      cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 },
    },
    stopReason: "stop",
    timestamp: 2,
  });
  sm.appendSessionInfo(`name ${EVIL.clear}${EVIL.bidi}`);
  const lab = sm.appendLabelChange(u, `label${EVIL.osc}`);
  const file = join(dir, `2026-01-01T00-00-00-000Z_evil${EVIL.osc}${EVIL.bidi}.jsonl`);
  fs.renameSync(sm.getSessionFile(), file);
  // check reports problems quoting session text: a label on a missing entry, a torn tail.
  fs.appendFileSync(
    file,
    `${JSON.stringify({ type: "label", id: "l2", parentId: lab, timestamp: "2026-01-01T00:00:00.000Z", targetId: `gone${EVIL.clear}${EVIL.csi8}`, label: `x${EVIL.bidi}` })}\n`,
  );
  fs.appendFileSync(file, `{"torn":"${EVIL.bidi}`);
  return { dir, file };
}

const COMMANDS = (dir, file) => [
  ["ls", dir],
  ["show", file],
  ["show", file, "--tree"],
  ["show", file, "--context"],
  ["search", "needle", dir],
  ["search", "needle", dir, "--literal"],
  ["export", file, "--format", "md"],
  ["check", file],
  ["check", dir],
  ["stats", dir],
  ["repair", file, "--dry-run"],
];

/** SGR parameters the CLI itself uses (bold, dim, colours, resets). */
const OWN_SGR = new Set(["1", "2", "22", "31", "32", "33", "34", "35", "36", "39"]);

describe.skipIf(process.platform === "win32")(
  "CLI output: escape sequences in session text are shown, never obeyed",
  () => {
    it("piped: no control, C1 or bidi character reaches stdout or stderr; each shown visibly", () => {
      const { dir, file } = evilStore();
      for (const args of COMMANDS(dir, file)) {
        const r = cli(args);
        expect(r.code, `${args.join(" ")}: ${r.err}`).toBeLessThan(2);
        for (const [name, s] of [
          ["stdout", r.out],
          ["stderr", r.err],
        ]) {
          const m = UNSAFE.exec(s);
          expect(
            m,
            `${args[0]} ${args.slice(2).join(" ")} ${name}: raw U+${m?.[0].codePointAt(0).toString(16)} in ${JSON.stringify(s.slice(Math.max(0, (m?.index ?? 0) - 40), (m?.index ?? 0) + 20))}`,
          ).toBe(null);
        }
        const all = r.out + r.err;
        expect(all, args.join(" ")).toMatch(/\\e|<U\+202E>|\\x9b/);
      }
      const shown = cli(["export", file, "--format", "md"]).out;
      for (const v of [
        "\\e]0;pwned-title\\a",
        "\\e[2J",
        "\\e]8;;http://evil.example\\aclick",
        "\\e[5A",
        "\\x9b2J",
        "\\x85\\x90\\x9d",
        "\\x7f",
        "<U+202E>evil<U+202C><U+2066>x<U+2069><U+200E><U+200F><U+061C>",
        "\\b\\b\\0",
      ]) {
        expect(shown).toContain(v);
      }
    });

    it("--json: every C0/C1/bidi control is \\u-escaped, and the values round-trip", () => {
      const { dir, file } = evilStore();
      for (const args of [
        ["ls", dir],
        ["show", file],
        ["search", "needle", dir],
        ["search", "needle", dir, "--literal"],
        ["check", file],
        ["stats", dir],
        ["repair", file, "--dry-run"],
      ]) {
        const r = cli([...args, "--json"]);
        expect(r.code, `${args.join(" ")}: ${r.err}`).toBeLessThan(2);
        const m = UNSAFE.exec(r.out);
        expect(m, `${args[0]} --json: raw U+${m?.[0].codePointAt(0).toString(16)}`).toBe(null);
        const data = JSON.parse(r.out);
        if (args[0] === "ls") expect(data[0].name).toBe(`name ${EVIL.clear}${EVIL.bidi}`);
        if (args[0] === "search") expect(data[0].text ?? data[0].snippet).toContain(EVIL.csi8);
      }
    });

    it("on a terminal (script(1) pty, colour on): only the CLI's own SGR colours, session escapes shown dim", () => {
      const have = spawnSync("script", ["--version"], { encoding: "utf8" });
      if (have.status !== 0) {
        console.warn("[skip] util-linux script(1) not found: TTY test skipped");
        return;
      }
      const { dir, file } = evilStore();
      const q = (s) => `'${s.replace(/'/g, "'\\''")}'`;
      for (const args of COMMANDS(dir, file)) {
        const cmd = [process.execPath, BIN, ...args].map(q).join(" ");
        const r = spawnSync("script", ["-qec", cmd, "/dev/null"], {
          encoding: "utf8",
          timeout: 20_000,
          env: {
            ...process.env,
            NO_COLOR: "",
            TERM: "xterm-256color",
            TZ: "UTC",
            PI_CODING_AGENT_DIR: tmp("psn-h-agent-"),
          },
        });
        if (r.error)
          throw new Error(`script ${args.join(" ")}: ${/** @type {NodeJS.ErrnoException} */ (r.error).code}`);
        // The progress line on stderr (same pty) is ours: "\r" + erase-line.
        const out = r.stdout.replace(/\r\n/g, "\n").replace(/\r\x1b\[K/g, "");
        // Every escape sequence left is an SGR of ours; nothing else unsafe remains.
        const sgrs = [...out.matchAll(/\x1b\[([0-9;]*)m/g)].map((x) => x[1]);
        for (const p of sgrs) expect(OWN_SGR.has(p), `${args.join(" ")}: SGR ${p}`).toBe(true);
        const rest = out.replace(/\x1b\[[0-9;]*m/g, "");
        const m = UNSAFE.exec(rest);
        expect(
          m,
          `${args[0]} ${args.slice(2).join(" ")} on a TTY: raw U+${m?.[0].codePointAt(0).toString(16)} near ${JSON.stringify(rest.slice(Math.max(0, (m?.index ?? 0) - 40), (m?.index ?? 0) + 20))}`,
        ).toBe(null);
        // Shown, in the dim style.
        expect(out, args.join(" ")).toMatch(/\x1b\[2m(\\e|<U\+202E>|\\x9b)\x1b\[22m/);
      }
    });
  },
);

const IDX = ".pi-session-index";
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** listAll(dir) in a child (a hang fails the test), as comparable JSON; `env` for the child. */
/**
 * A copy of the package (entry points, lib/, the built addon) in a world-readable folder, for a
 * child that runs as another user: the repository itself may sit below a folder only its owner
 * can enter (a `mktemp -d` clone is 0700).
 */
let readableCopy;
function readablePackage() {
  if (readableCopy) return readableCopy;
  const dir = tmp("psn-h-pkg-");
  fs.chmodSync(dir, 0o755);
  for (const f of ["index.js", "index.mjs", "package.json", "lib"])
    fs.cpSync(join(root, f), join(dir, f), { recursive: true });
  for (const f of fs.readdirSync(root).filter((f) => /^pi-session-native\..+\.node$/.test(f)))
    fs.copyFileSync(join(root, f), join(dir, f));
  readableCopy = join(dir, "index.mjs");
  return readableCopy;
}

function listChild(dir, env = {}, prefix = []) {
  const entry = prefix.length ? readablePackage() : INDEX;
  const code = `import { SessionManager } from ${JSON.stringify(entry)};
    const l = await SessionManager.listAll(${JSON.stringify(dir)});
    console.log(JSON.stringify({ l: l.map((s) => ({ ...s, created: s.created.toISOString(), modified: s.modified.toISOString() })), rss: process.memoryUsage().rss }));`;
  const r = spawnSync(
    prefix[0] ?? process.execPath,
    [...prefix.slice(1), ...(prefix.length ? [process.execPath] : []), "--input-type=module", "-e", code],
    {
      env: { ...process.env, ...env },
      encoding: "utf8",
      timeout: 30_000,
    },
  );
  if (r.error || r.status !== 0)
    throw new Error(
      `listAll child: ${/** @type {NodeJS.ErrnoException | undefined} */ (r.error)?.code ?? r.status} ${r.stderr}`,
    );
  return JSON.parse(r.stdout);
}
const plain = (l) =>
  JSON.parse(
    JSON.stringify(l.map((s) => ({ ...s, created: s.created.toISOString(), modified: s.modified.toISOString() }))),
  );

/** A store of `n` settled sessions (older than the index's 1 s rule) with distinct texts. */
async function settledStore(n = 4, bytes = 200) {
  const dir = tmp("psn-h-idx-");
  for (let i = 0; i < n; i++) {
    const sm = nat.SessionManager.create(`/tmp/proj${i}`, dir);
    sm.appendMessage(user(`first ${i} ${"x".repeat(bytes)}`));
    sm.appendMessage(user(`second ${i} ${"y".repeat(bytes)}`));
    sm.appendSessionInfo(`name ${i}`);
  }
  await sleep(1100);
  return dir;
}

describe.skipIf(process.platform === "win32")(
  "sidecar index: hostile files, damage and stale stamps are never served",
  () => {
    it("a FIFO, a /dev/zero symlink or a 3 GiB sparse file at the index path: no hang, no memory blow-up, same listing", async () => {
      const dir = await settledStore(3);
      const expected = listChild(dir, { PI_SESSION_NATIVE_NO_INDEX: "1" }).l;
      const idx = join(dir, IDX);
      const make = {
        fifo: () => expect(spawnSync("mkfifo", [idx]).status).toBe(0),
        devzero: () => fs.symlinkSync("/dev/zero", idx),
        sparse: () => {
          fs.writeFileSync(idx, "pi-session-index 4\n");
          fs.truncateSync(idx, 3 * 1024 ** 3);
        },
      };
      for (const [what, mk] of Object.entries(make)) {
        fs.rmSync(idx, { force: true });
        mk();
        const t0 = Date.now();
        const r = listChild(dir);
        expect(r.l, what).toEqual(expected);
        expect(r.rss, what).toBeLessThan(512 * 1024 * 1024);
        expect(Date.now() - t0, what).toBeLessThan(15_000);
        // Replaced by a regular 0600 index of ours (rename: the link itself, not /dev/zero).
        const st = fs.lstatSync(idx);
        expect(st.isFile(), what).toBe(true);
        expect(st.mode & 0o777, what).toBe(0o600);
      }
    });

    it("an index owned by another user is not used (and is replaced by our own)", async () => {
      if (!isRoot) return console.warn("[skip] not root: cannot chown the index to another uid");
      const dir = await settledStore(2);
      listChild(dir);
      const idx = join(dir, IDX);
      expect(fs.statSync(idx).mode & 0o777).toBe(0o600);
      fs.chownSync(idx, 65534, 65534);
      // Nothing changed: an accepted index would not be rewritten and would stay 65534's.
      listChild(dir);
      expect(fs.statSync(idx).uid).toBe(0);
    });

    it("0600 sessions are not listed for a user who cannot read them, even from that user's own index", async () => {
      if (!isRoot || spawnSync("setpriv", ["--version"]).status !== 0)
        return console.warn("[skip] needs root and setpriv");
      const dir = await settledStore(2);
      fs.chmodSync(dir, 0o755);
      const files = fs
        .readdirSync(dir)
        .filter((f) => f.endsWith(".jsonl"))
        .sort();
      fs.chmodSync(join(dir, files[0]), 0o600);
      fs.chmodSync(join(dir, files[1]), 0o644);
      listChild(dir); // root's index: both records
      // The index handed to the other user (as if written by them): records of both files.
      fs.chownSync(join(dir, IDX), 65534, 65534);
      const as = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"];
      const other = listChild(dir, {}, as);
      const text = JSON.stringify(other.l);
      expect(other.l.map((s) => s.path)).toEqual([join(dir, files[1])]);
      const hidden = nat.SessionManager.open(join(dir, files[0])).getHeader().cwd;
      expect(text).not.toContain(hidden);
    });

    it("every single-bit flip of the index is ignored or repaired, never served", async () => {
      const dir = await settledStore(3, 40);
      const expected = plain(await nat.SessionManager.listAll(dir));
      const idx = join(dir, IDX);
      const good = fs.readFileSync(idx);
      const bits = good.length * 8;
      // Every bit of a small index, one in-process listing per flip. Each listing goes through
      // a fresh alias (symlink) of the directory: the listing process remembers records by
      // path, so the same path would be answered from that memory, not from the index.
      const aliases = tmp("psn-h-alias-");
      let served = 0;
      for (let bit = 0; bit < bits; bit++) {
        const b = Buffer.from(good);
        b[bit >> 3] ^= 1 << (bit & 7);
        fs.writeFileSync(idx, b);
        const alias = join(aliases, `d${bit}`);
        fs.symlinkSync(dir, alias);
        const got = plain(await nat.SessionManager.listAll(alias)).map((s) => ({
          ...s,
          path: s.path.replace(alias, dir),
        }));
        if (JSON.stringify(got) !== JSON.stringify(expected)) {
          served++;
          expect(got, `bit ${bit} of ${bits}`).toEqual(expected);
        }
      }
      expect(served).toBe(0);
      expect(good.subarray(0, 19).toString()).toBe("pi-session-index 6\n");
      // The intact index is really what answers such a listing: it is used as is (an ignored
      // or partly dropped index is rewritten by the listing).
      fs.writeFileSync(idx, good);
      const ino = fs.statSync(idx).ino;
      fs.symlinkSync(dir, join(aliases, "intact"));
      await nat.SessionManager.listAll(join(aliases, "intact"));
      expect(fs.statSync(idx).ino).toBe(ino);
      // A damaged record is repaired (the index rewritten whole).
      const b = Buffer.from(good);
      b[good.length - 5] ^= 1;
      fs.writeFileSync(idx, b);
      fs.symlinkSync(dir, join(aliases, "damaged"));
      await nat.SessionManager.listAll(join(aliases, "damaged"));
      expect(fs.readFileSync(idx)).toEqual(good);
      console.log(`[hostile] ${bits} single-bit flips of a ${good.length}-byte index: none served`);
    });

    it("a same-size edit with the mtime put back is noticed", async () => {
      const dir = await settledStore(2);
      await nat.SessionManager.listAll(dir); // index built, records exact
      const f = fs
        .readdirSync(dir)
        .filter((x) => x.endsWith(".jsonl"))
        .map((x) => join(dir, x))[0];
      const st = fs.statSync(f, { bigint: true });
      const stampCopy = join(tmp("psn-h-stamp-"), "stamp");
      fs.writeFileSync(stampCopy, "");
      expect(spawnSync("touch", ["-m", "-r", f, stampCopy]).status).toBe(0);
      const text = fs.readFileSync(f, "utf8");
      const edited = text.replace(/"first (\d)/, '"FIRST $1');
      expect(edited.length).toBe(text.length);
      fs.writeFileSync(f, edited);
      // mtime put back to the nanosecond (size, mtime and inode as indexed; only ctime moved).
      expect(spawnSync("touch", ["-m", "-r", stampCopy, f]).status).toBe(0);
      const now = fs.statSync(f, { bigint: true });
      expect([now.mtimeNs, now.size, now.ino]).toEqual([st.mtimeNs, st.size, st.ino]);
      const got = plain(await nat.SessionManager.listAll(dir));
      const want = plain(await ref.SessionManager.listAll(dir));
      expect(got).toEqual(want);
      expect(got.find((s) => s.path === f).firstMessage).toMatch(/^FIRST/);
    });

    it("a same-size edit in the middle of a file younger than a second is noticed", async () => {
      const dir = tmp("psn-h-idx-");
      const sm = nat.SessionManager.create("/tmp/young", dir);
      sm.appendMessage(user(`head ${"a".repeat(9000)}`));
      sm.appendMessage(user(`middle-word ${"b".repeat(9000)}`));
      sm.appendMessage(user(`tail ${"c".repeat(9000)}`));
      const f = sm.getSessionFile();
      await nat.SessionManager.listAll(dir); // young: kept as a resume base
      const text = fs.readFileSync(f, "utf8");
      fs.writeFileSync(f, text.replace("middle-word", "MIDDLE-WORD"));
      const got = plain(await nat.SessionManager.listAll(dir));
      expect(got[0].allMessagesText).toContain("MIDDLE-WORD");
      expect(got).toEqual(plain(await ref.SessionManager.listAll(dir)));
    });
  },
);

describe.skipIf(process.platform === "win32")(
  "a session changed under an open manager (file-backed, PI_SESSION_NATIVE_BACKED_MIN=1)",
  () => {
    for (const how of ["truncated mid-line", "overwritten in place, same size"]) {
      it(`${how}: the next append starts a line of its own, reads of lost texts fail with EIO naming the file`, () => {
        const dir = tmp("psn-h-changed-");
        const r = node(
          `import * as fs from "node:fs";
         import { SessionManager } from ${JSON.stringify(INDEX)};
         const a = SessionManager.create("/tmp/p", ${JSON.stringify(dir)});
         for (let i = 0; i < 6; i++) a.appendMessage({ role: "user", content: "message " + i + " " + "z".repeat(100), timestamp: i });
         const file = a.getSessionFile();
         const sm = SessionManager.open(file);
         const text = fs.readFileSync(file, "utf8");
         if (${JSON.stringify(how)}.startsWith("truncated")) fs.truncateSync(file, text.length - 60);
         else { const b = Buffer.from(text); b.fill(0x41, b.length - 80); fs.writeFileSync(file, b); }
         sm.appendMessage({ role: "user", content: "after", timestamp: 9 });
         let ctx;
         try { sm.buildSessionContext(); ctx = "ok"; } catch (e) { ctx = e.name + " " + e.code + " " + e.message; }
         console.log(JSON.stringify({ file, ctx }));`,
          { PI_SESSION_NATIVE_BACKED_MIN: "1" },
        );
        const { file, ctx } = JSON.parse(r.stdout);
        expect(ctx).toMatch(
          new RegExp(`^Error EIO EIO: i/o error, read '${file.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}'`),
        );
        // The appended entry is whole and readable by the reference and by us.
        const lines = fs.readFileSync(file, "utf8").split("\n");
        expect(lines.at(-1)).toBe("");
        expect(JSON.parse(lines.at(-2)).message.content).toBe("after");
        const refEntries = ref.SessionManager.open(file).getEntries();
        expect(refEntries.at(-1).message.content).toBe("after");
        expect(nat.SessionManager.open(file).getEntries().at(-1).message.content).toBe("after");
      });
    }
  },
);
