// A new user's path in one go (issue 42's "done means"), in a real terminal (tmux): pi started by
// pi-native with the extension, /sessions on a cold store, a tool-call hit, "Continue from the
// hit", a prompt to the scripted model (which must get every call's result), /new, /sessions for
// something now only on another branch, then the CLI: `search --all`, `show <the id it printed>`,
// a typo'd command. No extension error, no ambiguous id, no silent dead end.
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { scriptedUsage, startModelServer, writeAgentConfig } from "../../scripts/model-server.mjs";
import { hasTmux, runCommands, shq, tmuxServer } from "../tty-helpers.mjs";
import { SessionManager, extensionPath, node22, piBin, repoRoot, sandbox, sessionDirOf } from "./helpers.mjs";

const engineIndexesToolCalls =
  typeof (await import("node:module")).createRequire(import.meta.url)("../../index.js").warmSearchIndex === "function";

const cleanups = [];
afterEach(async () => {
  for (const f of cleanups.splice(0).reverse()) await f();
});

const usage = scriptedUsage();
const assistant = (content, stopReason = "stop") => ({
  role: "assistant",
  content,
  api: "openai-completions",
  provider: "scripted",
  model: "scripted-1",
  usage,
  stopReason,
  timestamp: 2,
});

/** The billing session: read, edit and a shell script as tool calls, each with its result, then more turns. */
function billingSession(agentDir, cwd) {
  const sm = SessionManager.create(cwd, sessionDirOf(agentDir, cwd));
  sm.appendMessage({ role: "user", content: "fix the rounding of invoices", timestamp: 1 });
  const call = sm.appendMessage(
    assistant(
      [
        { type: "text", text: "Reading the code first." },
        { type: "toolCall", id: "c1", name: "read", arguments: { path: "src/billing/invoiceRounding.ts" } },
        { type: "toolCall", id: "c2", name: "bash", arguments: { command: "./scripts/reconcile-ledger.sh" } },
      ],
      "toolUse",
    ),
  );
  for (const [id, name, text] of [
    ["c1", "read", "export const round = (x) => x"],
    ["c2", "bash", "ledger ok"],
  ])
    sm.appendMessage({
      role: "toolResult",
      toolCallId: id,
      toolName: name,
      content: [{ type: "text", text }],
      isError: false,
      timestamp: 3,
    });
  sm.appendMessage(assistant([{ type: "text", text: "Rounding now uses banker's rounding; quetzalcoatl passes." }]));
  return { id: sm.getSessionId(), path: sm.getSessionFile(), call };
}

describe.skipIf(!node22 || !hasTmux || !engineIndexesToolCalls)("a new user's path (tmux, pi-native)", () => {
  it("cold /sessions, tool-call hit, continue, prompt, another branch, the CLI with the printed id", async () => {
    const sb = sandbox();
    cleanups.push(sb.cleanup);
    const billing = join(sb.root, "billing");
    mkdirSync(billing);
    const session = billingSession(sb.agentDir, billing);
    for (let i = 0; i < 5; i++)
      SessionManager.create(billing, sessionDirOf(sb.agentDir, billing)).appendMessage({
        role: "user",
        content: `unrelated work ${i}`,
        timestamp: 1,
      });
    const model = await startModelServer({ maxRequests: 5 });
    cleanups.push(() => model.close());
    writeAgentConfig(sb.agentDir, model.baseUrl);
    const server = tmuxServer("psn-journey");
    cleanups.push(() => server.kill());
    const keep = ["HOME", "PI_CODING_AGENT_DIR", "PI_OFFLINE", "PI_SKIP_VERSION_CHECK", "PI_TELEMETRY"];
    const env = `${keep.map((k) => `${k}=${shq(sb.env[k])}`).join(" ")} PI_SESSION_NATIVE_WARM=0 TERM=xterm-256color`;
    server.run(
      "pi",
      `cd ${shq(sb.project)} && exec env ${env} PI_CODING_AGENT_BIN=${shq(piBin)} ${shq(node22)} ${shq(join(repoRoot, "bin", "pi-native.mjs"))} -e ${shq(extensionPath)}`,
      { width: 120, height: 40 },
    );
    // pi wraps long lines itself: the text is matched with its whitespace runs as one space
    const flat = (sc) => sc.replace(/\s+/g, " ");
    const screen = () => flat(server.screen("pi"));
    const waitFor = (pred, ms) => server.waitFor("pi", (sc) => pred(flat(sc)), ms);
    const type = async (text) => {
      server.text("pi", text);
      await new Promise((r) => setTimeout(r, 300));
      server.keys("pi", "Enter");
    };
    await waitFor((sc) => sc.includes("sessions: native"));

    // A cold /sessions for the shell script, which only a tool call names.
    await type("/sessions reconcile-ledger");
    await waitFor((sc) => sc.includes('Sessions mentioning "reconcile-ledger"'));
    server.keys("pi", "Enter");
    await waitFor((sc) => sc.includes("Continue from the hit (tool call"));
    server.keys("pi", "Down");
    await new Promise((r) => setTimeout(r, 200));
    server.keys("pi", "Enter");
    await waitFor((sc) => sc.includes("after the hit's tool results"));
    // (the editor takes keys again once the dialog has closed)
    await new Promise((r) => setTimeout(r, 1000));
    await type("carry on with the ledger");
    await waitFor((sc) => sc.includes("ok: carry on with the ledger"));
    // The model got both results; no stand-in for a missing one.
    const sent = JSON.stringify(model.requests[0].messages);
    expect(sent).toContain("ledger ok");
    expect(sent).toContain("export const round");
    expect(sent).not.toContain("No result provided");

    // In a new session, the last answer of that session is now off its latest branch.
    await type("/new");
    await new Promise((r) => setTimeout(r, 500));
    await type("/sessions quetzalcoatl");
    const list = await waitFor((sc) => sc.includes('"quetzalcoatl" only on other branches'));
    expect(list).toMatch(/→ 1\. \[other branch\] fix the rounding of/);
    server.keys("pi", "Escape");
    await new Promise((r) => setTimeout(r, 300));
    expect(screen()).not.toMatch(/Extension "command:sessions" error|ctx is stale/);

    // The CLI: the id search prints is taken by show; a typo gets a suggestion.
    const cli = join(repoRoot, "bin", "pi-session.mjs");
    const found = await runCommands(server, "cli", {
      bin: cli,
      width: 100,
      cwd: sb.project,
      agentDir: sb.agentDir,
      logDir: sb.root,
      commands: [["search", "search invoiceRounding --all"]],
    });
    const printed = /^(\S+) {2}fix the rounding/m.exec(found.sections.search.join("\n"))?.[1];
    expect(printed && session.id.startsWith(printed), found.sections.search.join("\n")).toBe(true);
    const used = await runCommands(server, "cli2", {
      bin: cli,
      width: 100,
      cwd: sb.project,
      agentDir: sb.agentDir,
      logDir: sb.root,
      commands: [
        ["show", `show ${printed}`],
        ["typo", "serch invoiceRounding"],
      ],
    });
    expect(used.sections.show[0]).toBe(`Session  ${session.id}`);
    expect(used.sections.typo.map((l) => l.trim()).join(" ")).toContain("did you mean 'search'?");
  });
});
