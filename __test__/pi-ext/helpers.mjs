// Helpers for the tests that run the real bundled pi bin with this package's pi extension.
import { rpcRecords } from "../pi-bin/rpc-records.mjs";
import { spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, realpathSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { findNode22 } from "../../scripts/node22.mjs";
import { scriptedAssistant } from "../../scripts/model-server.mjs";

export { scriptedAssistant };
import { printedIds } from "../../lib/cli/ids.mjs";

const here = dirname(fileURLToPath(import.meta.url));
export const repoRoot = resolve(here, "../..");
export const piBin = join(repoRoot, "node_modules/@earendil-works/pi-coding-agent/dist/bundle/cli.js");
export const extensionPath = join(repoRoot, "extensions/sessions.ts");
export const node22 = findNode22();

const require = createRequire(import.meta.url);
export const { SessionManager, getDefaultSessionDir } = require("../../index.js");

/** A fresh sandbox: its own HOME, agent dir and project directory. */
export function sandbox(prefix = "pi-ext-") {
  const root = realpathSync(mkdtempSync(join(tmpdir(), prefix)));
  const home = join(root, "home");
  const agentDir = join(home, ".pi", "agent");
  const project = join(root, "project");
  for (const d of [home, agentDir, project]) mkdirSync(d, { recursive: true });
  return {
    root,
    home,
    agentDir,
    project,
    env: {
      ...process.env,
      HOME: home,
      PI_CODING_AGENT_DIR: agentDir,
      PI_OFFLINE: "1",
      PI_SKIP_VERSION_CHECK: "1",
      PI_TELEMETRY: "0",
      NO_COLOR: "1",
    },
    cleanup: () => rmSync(root, { recursive: true, force: true }),
  };
}

/** A session id as the extension and the CLI print it for the store of `agentDir` (a unique prefix). */
export function shownIdIn(agentDir, id) {
  return printedIds([id], { dir: join(agentDir, "sessions") }).get(id);
}

/** pi's session directory of `cwd` inside an agent dir. */
export function sessionDirOf(agentDir, cwd) {
  return getDefaultSessionDir(cwd, agentDir);
}

let clock = Date.parse("2026-01-05T09:00:00.000Z");

/**
 * A persisted session in `cwd`'s directory of the agent dir, made with this package's
 * SessionManager: `turns` is a list of [userText, assistantText]. Returns {path, id}.
 * @param {string} agentDir
 * @param {string} cwd
 * @param {[string, string][]} turns
 * @param {{ name?: string }} [options]
 */
export function makeSession(agentDir, cwd, turns, { name } = {}) {
  const sm = SessionManager.create(cwd, sessionDirOf(agentDir, cwd));
  for (const [user, assistant] of turns) {
    clock += 1000;
    sm.appendMessage({ role: "user", content: user, timestamp: clock });
    clock += 1000;
    sm.appendMessage(scriptedAssistant([{ type: "text", text: assistant }], { timestamp: clock }));
  }
  if (name) sm.appendSessionInfo(name);
  return { path: sm.getSessionFile(), id: sm.getSessionId(), sm };
}

/**
 * Run the real pi bin to completion (stdin /dev/null unless `input`).
 * @param {string[]} args
 * @param {{ cwd?: string, env?: NodeJS.ProcessEnv, input?: string, timeoutMs?: number }} [options]
 */
export function runPi(args, { cwd, env, input, timeoutMs = 60_000 } = {}) {
  return new Promise((resolvePromise, reject) => {
    const child = spawn(node22, [piBin, ...args], {
      cwd,
      env,
      stdio: [input === undefined ? "ignore" : "pipe", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.setEncoding("utf8").on("data", (d) => (stdout += d));
    child.stderr.setEncoding("utf8").on("data", (d) => (stderr += d));
    if (input !== undefined) child.stdin.end(input);
    const timer = setTimeout(() => child.kill("SIGKILL"), timeoutMs);
    child.on("error", reject);
    child.on("close", (code, signal) => {
      clearTimeout(timer);
      resolvePromise({ code, signal, stdout, stderr });
    });
  });
}

/**
 * pi in rpc mode: send(cmd) writes one JSONL record; `records` collects stdout records;
 * waitFor(pred) resolves with the first record (already seen or later) matching pred.
 * @param {string[]} args
 * @param {{ cwd?: string, env?: NodeJS.ProcessEnv, timeoutMs?: number }} [options]
 */
export function startRpc(args, { cwd, env, timeoutMs = 60_000 } = {}) {
  const child = spawn(node22, [piBin, "--mode", "rpc", ...args], { cwd, env, stdio: ["pipe", "pipe", "pipe"] });
  const rpc = rpcRecords(child);
  const { records } = rpc;
  let seq = 0;
  return {
    child,
    records,
    get stderr() {
      return rpc.stderr();
    },
    send(cmd) {
      child.stdin.write(`${JSON.stringify(cmd)}\n`);
    },
    /** Send a command with an id and wait for its response. */
    async request(cmd) {
      const id = `req-${++seq}`;
      const p = this.waitFor((r) => r.type === "response" && r.id === id);
      this.send({ ...cmd, id });
      return p;
    },
    waitFor(pred, ms = timeoutMs) {
      return rpc.waitFor(pred, "an rpc record", ms);
    },
    async close() {
      if (!rpc.exitState()) {
        child.stdin.end();
        const t = setTimeout(() => child.kill("SIGKILL"), 10_000);
        await rpc.exited;
        clearTimeout(t);
      }
      return rpc.exitState();
    },
  };
}

/** Text of a chat-completions `tool` message (string or text parts). */
export function toolMessageText(msg) {
  const c = msg?.content;
  if (typeof c === "string") return c;
  if (Array.isArray(c))
    return c
      .filter((p) => p?.type === "text")
      .map((p) => p.text)
      .join("\n");
  return "";
}
