// The resume picker (`pi -r`) of the real bundled pi bin under a real TTY (tmux), unmodified and
// through `pi-native`, side by side on the same session store: the listing of the current folder
// (SessionManager.list) and, after Tab, of all folders (SessionManager.listAll) must render the
// same screen, and so must the session opened from the picker and its /tree; the native process
// must have served the session-manager and mapped the addon.
import { execFileSync } from "node:child_process";
import { chmodSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import {
  cleanup,
  launcher,
  makeRoot,
  mappedAddons,
  markerCount,
  node22,
  piBin,
  piEnv,
  runPiOk,
  sessionFiles,
} from "./helpers.mjs";
import { startModelServer } from "../../scripts/model-server.mjs";

const TIMEOUT = 120_000;
let hasTmux = false;
try {
  execFileSync("tmux", ["-V"], { stdio: "ignore" });
  hasTmux = true;
} catch {
  // no tmux
}
const socket = `pi-bin-e2e-${process.pid}`;
const tmux = (...args) => execFileSync("tmux", ["-L", socket, ...args], { encoding: "utf8" });
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const shq = (s) => `'${String(s).replace(/'/g, `'\\''`)}'`;

/** A shell script that starts pi -r exactly like a user would, stderr to a file. */
function writeRunScript(root, how) {
  const env = piEnv(root, how);
  const exports = [
    "HOME",
    "PI_CODING_AGENT_DIR",
    "PI_OFFLINE",
    "PI_SKIP_VERSION_CHECK",
    "PI_TELEMETRY",
    "PI_CODING_AGENT_BIN",
    "PI_SESSION_NATIVE_DEBUG",
    "PI_SESSION_NATIVE_ANY_VERSION",
    "PATH",
  ]
    .filter((k) => env[k] !== undefined)
    .map((k) => `export ${k}=${shq(env[k])}`);
  const argv = how === "native" ? [node22, launcher, "-r"] : [node22, piBin, "-r"];
  const script = join(root, `run-${how}.sh`);
  writeFileSync(
    script,
    [
      "#!/bin/sh",
      "unset NODE_OPTIONS",
      ...exports,
      "export TERM=xterm-256color",
      `cd ${shq(join(root, "project"))}`,
      `exec ${argv.map(shq).join(" ")} 2>${shq(join(root, `stderr-${how}.txt`))}`,
      "",
    ].join("\n"),
  );
  chmodSync(script, 0o755);
  return script;
}

const capture = (name) =>
  tmux("capture-pane", "-p", "-t", name)
    .split("\n")
    .map((l) => l.trimEnd())
    .join("\n")
    .trimEnd();

/**
 * @param {string} name
 * @param {string} text
 * @param {number} [ms]
 * @param {(screen: string) => boolean} [also]
 */
async function waitScreen(name, text, ms = 30_000, also = () => true) {
  const end = Date.now() + ms;
  let screen = "";
  while (Date.now() < end) {
    screen = capture(name);
    if (screen.includes(text) && also(screen)) return screen;
    await sleep(150);
  }
  throw new Error(`tmux ${name}: "${text}" not on screen after ${ms} ms:\n${screen}`);
}

/** The screen once it shows `text` and has not changed for 500 ms. */
async function waitStable(name, text, ms = 30_000) {
  let last = await waitScreen(name, text, ms);
  const end = Date.now() + ms;
  let since = Date.now();
  while (Date.now() < end) {
    await sleep(100);
    const now = capture(name);
    if (now !== last) {
      last = now;
      since = Date.now();
    } else if (Date.now() - since >= 500) return now;
  }
  throw new Error(`tmux ${name}: screen did not settle:\n${last}`);
}

afterAll(() => {
  try {
    tmux("kill-server");
  } catch {
    // not running
  }
  cleanup();
});

describe.skipIf(!node22 || !hasTmux || process.platform !== "linux")("real pi bin, resume picker under a TTY", () => {
  let root;
  const seen = {};
  beforeAll(async () => {
    const server = await startModelServer({ maxRequests: 10 });
    try {
      root = makeRoot("pitty-", server.baseUrl);
      for (const topic of ["alpha topic", "beta topic", "gamma topic"]) await runPiOk(root, "ref", ["-p", topic]);
      mkdirSync(join(root, "elsewhere"));
      await runPiOk(root, "ref", ["-p", "delta elsewhere"], { cwd: join(root, "elsewhere") });
    } finally {
      await server.close();
    }
    expect(sessionFiles(root)).toHaveLength(4);
    // extended keys on, as pi recommends (otherwise it warns, at a moment of its choosing)
    const conf = join(root, "tmux.conf");
    writeFileSync(conf, "set -g extended-keys on\n");
    for (const how of ["ref", "native"]) {
      const script = writeRunScript(root, how);
      tmux("-f", conf, "new-session", "-d", "-x", "200", "-y", "50", "-s", how, script);
    }
    for (const how of ["ref", "native"]) {
      seen[how] = { pid: Number(tmux("list-panes", "-t", how, "-F", "#{pane_pid}").trim()) };
      seen[how].current = await waitStable(how, "gamma topic");
    }
    for (const how of ["ref", "native"]) seen[how].addons = mappedAddons(seen[how].pid);
    for (const how of ["ref", "native"]) tmux("send-keys", "-t", how, "Tab");
    for (const how of ["ref", "native"]) seen[how].all = await waitStable(how, "delta elsewhere");
    // back to this folder, open the selected session (resume), then /tree in the TUI
    for (const how of ["ref", "native"]) tmux("send-keys", "-t", how, "Tab");
    for (const how of ["ref", "native"])
      await waitScreen(how, "Current Folder", 10_000, (sc) => !sc.includes("delta elsewhere"));
    for (const how of ["ref", "native"]) tmux("send-keys", "-t", how, "Enter");
    for (const how of ["ref", "native"]) seen[how].resumed = await waitStable(how, "ok: gamma topic");
    for (const how of ["ref", "native"]) tmux("send-keys", "-t", how, "/tree");
    for (const how of ["ref", "native"]) await waitScreen(how, "/tree");
    for (const how of ["ref", "native"]) tmux("send-keys", "-t", how, "Enter");
    for (const how of ["ref", "native"]) seen[how].tree = await waitStable(how, "Session Tree");
    for (const how of ["ref", "native"]) {
      seen[how].stderr = readFileSync(join(root, `stderr-${how}.txt`), "utf8");
      tmux("kill-session", "-t", how);
    }
  }, TIMEOUT);

  test("reference picker lists this folder's sessions, then all of them", () => {
    for (const t of ["alpha topic", "beta topic", "gamma topic"]) expect(seen.ref.current).toContain(t);
    expect(seen.ref.current).not.toContain("delta elsewhere");
    expect(seen.ref.all).toContain("delta elsewhere");
    expect(seen.ref.addons).toEqual([]);
    expect(seen.ref.stderr).not.toContain("[pi-session-native]");
  });

  test("pi-native serves the picker process from the native store (marker, addon mapped)", () => {
    expect(markerCount(seen.native.stderr), seen.native.stderr).toBe(1);
    expect(seen.native.addons).toHaveLength(1);
    expect(seen.native.stderr).toContain(`addon ${seen.native.addons[0]}`);
    expect(seen.native.stderr).toContain(`pid ${seen.native.pid};`);
  });

  test("both listings render the same screen", () => {
    expect(seen.native.current).toEqual(seen.ref.current);
    expect(seen.native.all).toEqual(seen.ref.all);
  });

  test("the session picked in the picker opens the same, and /tree shows the same tree", () => {
    expect(seen.ref.resumed).toContain("gamma topic");
    expect(seen.ref.tree).toMatch(/user: gamma topic[\s\S]*assistant: ok: gamma topic/);
    expect(seen.native.resumed).toEqual(seen.ref.resumed);
    expect(seen.native.tree).toEqual(seen.ref.tree);
  });
});
