// /sessions in pi's interactive TUI, under a real terminal (tmux, its own server socket): the
// selection list is drawn, Enter switches, and pi's /session shows the chosen session.
import { spawnSync } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { startModelServer, writeAgentConfig } from "../../scripts/model-server.mjs";
import { extensionPath, makeSession, node22, piBin, sandbox } from "./helpers.mjs";

const hasTmux = spawnSync("tmux", ["-V"], { encoding: "utf8" }).status === 0;
const socket = `pi-ext-test-${process.pid}`;
const tmux = (...args) =>
  spawnSync("tmux", ["-L", socket, ...args], {
    encoding: "utf8",
    env: { ...process.env, TERM: process.env.TERM || "xterm-256color" },
  });
const shq = (s) => `'${String(s).replace(/'/g, "'\\''")}'`;

async function waitForPane(pred, ms = 45_000) {
  const end = Date.now() + ms;
  let screen = "";
  while (Date.now() < end) {
    screen = tmux("capture-pane", "-p", "-J", "-t", "t").stdout ?? "";
    if (pred(screen)) return screen;
    await new Promise((r) => setTimeout(r, 150));
  }
  throw new Error(`timed out; the screen was:\n${screen}`);
}

const cleanups = [];
afterEach(async () => {
  for (const f of cleanups.splice(0).reverse()) await f();
});

describe.skipIf(!node22 || !hasTmux)("/sessions in the interactive TUI (tmux)", () => {
  it("lists the matches, switches on Enter, /session shows the chosen file", async () => {
    const sb = sandbox();
    cleanups.push(sb.cleanup);
    const other = join(sb.root, "other-project");
    mkdirSync(other);
    makeSession(sb.agentDir, sb.project, [["fix the Needle parser", "done"]], { name: "parser work" });
    const target = makeSession(sb.agentDir, other, [["hello", `the needle \u001b]0;pwned\u0007 here`]]);
    const s = await startModelServer({ maxRequests: 5 });
    cleanups.push(() => s.close());
    writeAgentConfig(sb.agentDir, s.baseUrl);

    const keep = ["HOME", "PI_CODING_AGENT_DIR", "PI_OFFLINE", "PI_SKIP_VERSION_CHECK", "PI_TELEMETRY"];
    const script = join(sb.root, "run.sh");
    writeFileSync(
      script,
      `cd ${shq(sb.project)} && exec env ${keep.map((k) => `${k}=${shq(sb.env[k])}`).join(" ")} TERM=xterm-256color ${shq(node22)} ${shq(piBin)} -e ${shq(extensionPath)}\n`,
    );
    expect(tmux("new-session", "-d", "-s", "t", "-x", "140", "-y", "45", `bash ${shq(script)}`).status).toBe(0);
    cleanups.push(() => tmux("kill-server"));

    // The footer's first line is the cwd once the editor is up.
    const footerIs = (sc, dir) => sc.split("\n").some((l) => l.trim() === dir);
    await waitForPane((sc) => footerIs(sc, sb.project));
    tmux("send-keys", "-t", "t", "-l", "/sessions needle");
    await new Promise((r) => setTimeout(r, 300));
    tmux("send-keys", "-t", "t", "Enter");
    const list = await waitForPane((sc) => sc.includes('Sessions mentioning "needle" (2 of 2)'));
    expect(list).toMatch(/→ 1\. hello — the needle here/);
    expect(list).toMatch(/2\. parser work — fix the Needle parser/);
    expect(list).not.toContain("pwned");

    tmux("send-keys", "-t", "t", "Enter");
    await waitForPane((sc) => footerIs(sc, other) && !sc.includes("Sessions mentioning"));
    tmux("send-keys", "-t", "t", "-l", "/session");
    await new Promise((r) => setTimeout(r, 300));
    tmux("send-keys", "-t", "t", "Enter");
    const info = await waitForPane((sc) => sc.includes("Session Info") && /ID: \S+/.test(sc));
    expect(info).toContain(`ID: ${target.id}`);
    expect(s.requests).toHaveLength(0);
  });
});
