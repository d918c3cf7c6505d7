// Real terminals for tests: a tmux server of its own (socket per test process), panes of a
// given size running a command, the screen read back (`capture-pane`) and every byte written
// to the pane recorded (`pipe-pane`, so a progress line that is erased afterwards is still
// seen); and session stores written straight as JSONL (fast enough for thousands of files).
import { spawnSync } from "node:child_process";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { scriptedAssistant } from "../scripts/model-server.mjs";

export const hasTmux = spawnSync("tmux", ["-V"], { encoding: "utf8" }).status === 0;

/** Single-quoted for sh. */
export const shq = (s) => `'${String(s).replace(/'/g, "'\\''")}'`;

/**
 * A tmux server of its own. `run(name, cmd, {width, height})` starts a pane running `cmd`
 * (sh syntax), recording its raw output to a file; `screen(name)` is the pane's text with
 * wrapped lines joined (so a line wider than the pane shows as one long line) and the
 * scrollback; `raw(name)` is every byte written to it; `waitFor(name, pred)` polls the screen.
 */
export function tmuxServer(tag = "psn-tty") {
  const socket = `${tag}-${process.pid}-${Math.random().toString(36).slice(2, 8)}`;
  const tmux = (...args) =>
    spawnSync("tmux", ["-L", socket, ...args], {
      encoding: "utf8",
      env: { ...process.env, TERM: process.env.TERM || "xterm-256color" },
    });
  const logs = new Map();
  return {
    tmux,
    /** @param {string} name @param {string} cmd @param {{ width?: number, height?: number, logDir?: string }} [options] */
    run(name, cmd, { width = 80, height = 24, logDir } = {}) {
      const r = tmux("new-session", "-d", "-s", name, "-x", String(width), "-y", String(height), cmd);
      if (r.status !== 0) throw new Error(`tmux new-session: ${r.stderr}`);
      if (logDir) {
        const log = join(logDir, `${name}.raw`);
        writeFileSync(log, "");
        tmux("pipe-pane", "-o", "-t", name, `cat >> ${shq(log)}`);
        logs.set(name, log);
      }
    },
    screen(name) {
      return tmux("capture-pane", "-p", "-J", "-S", "-", "-t", name).stdout ?? "";
    },
    raw(name) {
      const log = logs.get(name);
      return log ? readFileSync(log, "utf8") : "";
    },
    async waitFor(name, pred, ms = 60_000, every = 100) {
      const end = Date.now() + ms;
      let sc = "";
      while (Date.now() < end) {
        sc = this.screen(name);
        if (pred(sc)) return sc;
        await new Promise((r) => setTimeout(r, every));
      }
      throw new Error(`timed out; the screen was:\n${sc}`);
    },
    keys(name, ...keys) {
      tmux("send-keys", "-t", name, ...keys);
    },
    text(name, s) {
      tmux("send-keys", "-t", name, "-l", s);
    },
    kill() {
      tmux("kill-server");
    },
  };
}

/**
 * A pane of `width` columns of `server` running `commands` ([label, args] each: `node <bin>
 * <args>`, after a `=== label` line) in `cwd` with PI_CODING_AGENT_DIR=`agentDir`, TZ=UTC and
 * NO_COLOR=1. Resolves once all ran: the screen, its lines per label (trailing blank lines
 * dropped) and the raw bytes written to the pane.
 * @param {ReturnType<typeof tmuxServer>} server
 * @param {string} name
 * @param {{ bin: string, width: number, height?: number, cwd: string, agentDir: string, commands: [string, string][], logDir: string }} options
 */
export async function runCommands(server, name, { bin, width, height = 24, cwd, agentDir, commands, logDir }) {
  const script = join(logDir, `${name}.sh`);
  writeFileSync(
    script,
    [
      `cd ${shq(cwd)}`,
      `export PI_CODING_AGENT_DIR=${shq(agentDir)} TZ=UTC NO_COLOR=1`,
      ...commands.flatMap(([label, args]) => [`echo "=== ${label}"`, `${shq(process.execPath)} ${shq(bin)} ${args}`]),
      'echo "=== done"',
      "sleep 600",
    ].join("\n"),
  );
  server.run(name, `sh ${shq(script)}`, { width, height, logDir });
  const screen = await server.waitFor(name, (sc) => sc.includes("=== done"));
  /** @type {Record<string, string[]>} */
  const sections = {};
  let cur = null;
  for (const line of screen.split("\n")) {
    const m = /^=== (.*)$/.exec(line);
    if (m) {
      cur = m[1];
      sections[cur] = [];
    } else if (cur) sections[cur].push(line);
  }
  for (const k of Object.keys(sections)) while (sections[k].length && !sections[k].at(-1).trim()) sections[k].pop();
  return { screen, sections, raw: server.raw(name) };
}

/** pi's `--<cwd>--` directory name. */
export const encodeCwd = (cwd) => `--${cwd.replace(/^[/\\]/, "").replace(/[/\\:]/g, "-")}--`;

let seq = 0;
const hex = (n, w) => n.toString(16).padStart(w, "0");

/**
 * Write `count` sessions of `cwd` under `sessionsRoot` (pi's layout), each with `turns` user /
 * assistant pairs from `text(i, t)` → [user, assistant]; times one minute apart from `start`.
 * Returns their paths and ids, oldest first.
 * @param {string} sessionsRoot
 * @param {string} cwd
 * @param {number} count
 * @param {{ turns?: number, text?: (i: number, t: number) => [string, string], start?: number, name?: (i: number) => string | undefined }} [options]
 */
export function writeSessions(
  sessionsRoot,
  cwd,
  count,
  { turns = 2, text, start = Date.parse("2026-01-01T08:00:00Z"), name } = {},
) {
  const dir = join(sessionsRoot, encodeCwd(cwd));
  mkdirSync(dir, { recursive: true });
  const out = [];
  for (let i = 0; i < count; i++) {
    const n = ++seq;
    const id = `019c${hex(n, 4)}-0000-7000-8000-${hex(n, 12)}`;
    let t = start + n * 60_000;
    const iso = () => new Date(t).toISOString();
    /** @type {Record<string, unknown>[]} */
    const lines = [{ type: "session", version: 3, id, timestamp: iso(), cwd }];
    let parent = null;
    for (let k = 0; k < turns; k++) {
      const [u, a] = text ? text(i, k) : [`question ${k} of session ${i}`, `answer ${k} of session ${i}`];
      const uid = hex(n * 1000 + k * 2, 8);
      const aid = hex(n * 1000 + k * 2 + 1, 8);
      t += 1000;
      lines.push({
        type: "message",
        id: uid,
        parentId: parent,
        timestamp: iso(),
        message: { role: "user", content: u, timestamp: t },
      });
      t += 1000;
      lines.push({
        type: "message",
        id: aid,
        parentId: uid,
        timestamp: iso(),
        message: scriptedAssistant([{ type: "text", text: a }], { timestamp: t }),
      });
      parent = aid;
    }
    const nm = name?.(i);
    if (nm)
      lines.push({ type: "session_info", id: hex(n * 1000 + 999, 8), parentId: parent, timestamp: iso(), name: nm });
    const file = join(dir, `${new Date(start + n * 60_000).toISOString().replace(/[:.]/g, "-")}_${id}.jsonl`);
    writeFileSync(file, `${lines.map((l) => JSON.stringify(l)).join("\n")}\n`);
    out.push({ path: file, id });
  }
  return out;
}

const WORDS = Array.from({ length: 50_000 }, (_, i) => `w${i.toString(36)}`);

/** Filler text: `words` pseudo-random words (deterministic per seed), for stores that take a while to index. */
export function filler(seed, words = 400) {
  let x = (seed * 2654435761 + 1) % 2147483648;
  const out = new Array(words);
  for (let i = 0; i < words; i++) {
    x = (x * 1103515245 + 12345) % 2147483648;
    out[i] = WORDS[x % WORDS.length];
  }
  return out.join(" ");
}

/**
 * One session of about `megabytes` MB under `sessionsRoot` (pi's layout, project `cwd`): a chain
 * of user messages of ~1 KB, written in one go. Returns its path and id.
 * @param {string} sessionsRoot
 * @param {string} cwd
 * @param {number} megabytes
 */
export function writeLargeSession(sessionsRoot, cwd, megabytes) {
  const dir = join(sessionsRoot, encodeCwd(cwd));
  mkdirSync(dir, { recursive: true });
  const n = ++seq;
  const id = `019d${hex(n, 4)}-0000-7000-8000-${hex(n, 12)}`;
  const ts = "2026-01-02T08:00:00.000Z";
  const lines = [JSON.stringify({ type: "session", version: 3, id, timestamp: ts, cwd })];
  const words = filler(n, 150);
  const count = Math.ceil((megabytes * 1e6) / 1100);
  for (let k = 0; k < count; k++)
    lines.push(
      JSON.stringify({
        type: "message",
        id: hex(k + 1, 8),
        parentId: k ? hex(k, 8) : null,
        timestamp: ts,
        message: { role: "user", content: `entry ${k} ${words}`, timestamp: 1 },
      }),
    );
  const file = join(dir, `2026-01-02T08-00-00-000Z_${id}.jsonl`);
  writeFileSync(file, `${lines.join("\n")}\n`);
  return { path: file, id };
}
