// /sessions from the list to the hit, in the real bundled pi bin (rpc mode, scripted model):
// the hit shown in its context, "Back to the list", continuing from the hit (pi's leaf moves
// there and the next prompt branches from it), the notice naming session and entry; and facts
// that live only inside tool calls (a path, a command, an identifier) found by /sessions and by
// the search_sessions tool — the last needs the engine that indexes tool calls (the package
// exports warmSearchIndex then) and is skipped, saying so, without it.
import { readFileSync } from "node:fs";
import { afterEach, describe, expect, it } from "vitest";
import { scriptedUsage, startModelServer, writeAgentConfig } from "../../scripts/model-server.mjs";
import {
  SessionManager,
  extensionPath,
  makeSession,
  node22,
  runPi,
  sandbox,
  sessionDirOf,
  shownIdIn,
  startRpc,
  toolMessageText,
} from "./helpers.mjs";
import { createRequire } from "node:module";

const pkg = createRequire(import.meta.url)("../../index.js");
const engineIndexesToolCalls = typeof pkg.warmSearchIndex === "function";
if (!engineIndexesToolCalls)
  console.warn(
    "[sessions-flow] tool-call tests skipped: this build's search engine does not index tool calls (no warmSearchIndex export)",
  );

const cleanups = [];
afterEach(async () => {
  for (const f of cleanups.splice(0).reverse()) await f();
});

async function setup(respond) {
  const sb = sandbox();
  cleanups.push(sb.cleanup);
  const s = await startModelServer({ respond, maxRequests: 20 });
  cleanups.push(() => s.close());
  writeAgentConfig(sb.agentDir, s.baseUrl);
  // The background warm-up would race the searches under test: off here.
  return { sb: { ...sb, env: { ...sb.env, PI_SESSION_NATIVE_WARM: "0" } }, s };
}

const isSelect = (title) => (r) =>
  r.type === "extension_ui_request" && r.method === "select" && r.title.startsWith(title);

/** Entries of a session file, parsed. */
const fileEntries = (path) =>
  readFileSync(path, "utf8")
    .split("\n")
    .filter(Boolean)
    .map((l) => JSON.parse(l));

/** A session whose assistant called tools: planted facts live only in the calls' arguments. */
function toolSession(agentDir, cwd) {
  const sm = SessionManager.create(cwd, sessionDirOf(agentDir, cwd));
  let t = Date.parse("2026-02-01T10:00:00.000Z");
  sm.appendMessage({ role: "user", content: "tidy up the tree code", timestamp: t++ });
  const usage = scriptedUsage();
  sm.appendMessage({
    role: "assistant",
    content: [
      { type: "text", text: "Looking at it." },
      { type: "toolCall", id: "c1", name: "read", arguments: { path: "src/quillwort/session-manager.ts" } },
      { type: "toolCall", id: "c2", name: "bash", arguments: { command: "make frobnicate-widgets" } },
      {
        type: "toolCall",
        id: "c3",
        name: "edit",
        arguments: { path: "src/tree.ts", oldText: "function old() {}", newText: "function idSummaryTreeZq() {}" },
      },
    ],
    api: "openai-completions",
    provider: "scripted",
    model: "scripted-1",
    usage,
    stopReason: "toolUse",
    timestamp: t++,
  });
  for (const [id, name, text] of [
    ["c1", "read", "file contents"],
    ["c2", "bash", "built"],
    ["c3", "edit", "edited"],
  ])
    sm.appendMessage({
      role: "toolResult",
      toolCallId: id,
      toolName: name,
      content: [{ type: "text", text }],
      isError: false,
      timestamp: t++,
    });
  sm.appendMessage({
    role: "assistant",
    content: [{ type: "text", text: "Done." }],
    api: "openai-completions",
    provider: "scripted",
    model: "scripted-1",
    usage,
    stopReason: "stop",
    timestamp: t++,
  });
  return { path: sm.getSessionFile(), id: sm.getSessionId() };
}

describe.skipIf(!node22)("/sessions takes the user to the hit (real pi bin, rpc)", () => {
  it("shows the hit in its context, goes back to the list, continues from the hit; the next prompt branches there", async () => {
    const { sb, s } = await setup();
    const deep = makeSession(sb.agentDir, sb.project, [
      ["plan the migration", "the zanzibar plan is ready"],
      ["step two", "done two"],
      ["step three", "done three"],
    ]);
    const entries = deep.sm.getEntries();
    const hitEntry = entries[1];
    const rpc = startRpc(["-e", extensionPath], { cwd: sb.project, env: sb.env });
    cleanups.push(() => rpc.close());
    await rpc.request({ type: "get_state" });

    rpc.send({ type: "prompt", id: "p1", message: "/sessions zanzibar" });
    const list = await rpc.waitFor(isSelect("Sessions mentioning"));
    expect(list.options).toHaveLength(1);
    // The hit is not in the title: the snippet is shown.
    expect(list.options[0]).toMatch(/^1\. plan the migration — the zanzibar plan is ready {2}/);
    rpc.send({ type: "extension_ui_response", id: list.id, value: list.options[0] });

    const where = await rpc.waitFor(isSelect("plan the migration"));
    expect(where.title.split("\n")[0]).toMatch(/^plan the migration · \S+project · \d{4}-/);
    expect(where.title.split("\n").slice(2)).toEqual([
      "  user: plan the migration",
      "▶ assistant: the zanzibar plan is ready",
      "  user: step two",
      "  assistant: done two",
      "  user: step three",
    ]);
    expect(where.options).toEqual([
      "Continue from the latest entry",
      `Continue from the hit (assistant, entry ${hitEntry.id})`,
      "Back to the list",
    ]);
    // Back: the same list again.
    rpc.send({ type: "extension_ui_response", id: where.id, value: "Back to the list" });
    const list2 = await rpc.waitFor((r) => isSelect("Sessions mentioning")(r) && r.id !== list.id);
    expect(list2.options).toEqual(list.options);
    rpc.send({ type: "extension_ui_response", id: list2.id, value: list2.options[0] });
    const where2 = await rpc.waitFor((r) => isSelect("plan the migration")(r) && r.id !== where.id);
    rpc.send({ type: "extension_ui_response", id: where2.id, value: where2.options[1] });
    await rpc.waitFor((r) => r.type === "response" && r.id === "p1");

    const note = await rpc.waitFor((r) => r.method === "notify" && /Switched to session/.test(r.message));
    expect(note.message).toBe(
      `Switched to session "plan the migration" (${shownIdIn(sb.agentDir, deep.id)}, ${sb.project}) at the hit (assistant, entry ${hitEntry.id})`,
    );
    const state = await rpc.request({ type: "get_state" });
    expect(state.data.sessionFile).toBe(deep.path);
    // The switch raised no extension error (the command used to read its stale ctx after it).
    expect(rpc.records.filter((r) => r.type === "extension_error")).toEqual([]);
    // The context is the path to the hit: the two messages up to it.
    const msgs = await rpc.request({ type: "get_messages" });
    expect(msgs.data.messages.map((m) => m.role)).toEqual(["user", "assistant"]);

    // Continuing: the next prompt's entry hangs off the hit, the later turns stay as a branch.
    rpc.send({ type: "prompt", id: "p2", message: "carry on from the plan" });
    await rpc.waitFor((r) => r.type === "agent_end");
    await rpc.waitFor((r) => r.type === "response" && r.id === "p2");
    await rpc.close();
    const after = fileEntries(deep.path);
    const asked = after.find(
      (e) =>
        e.type === "message" && e.message.role === "user" && JSON.stringify(e.message.content).includes("carry on"),
    );
    // pi records its system prompt (a "system" message) and may record a model or thinking
    // level change first: the nearest conversation message above is the hit.
    const byId = new Map(after.map((e) => [e.id, e]));
    let up = byId.get(asked.parentId);
    const between = [];
    while (up && !(up.type === "message" && up.message.role !== "system")) {
      between.push(up.message?.role ?? up.type);
      up = byId.get(up.parentId);
    }
    expect(up?.id, JSON.stringify(between)).toBe(hitEntry.id);
    expect(
      between.every((t) => ["system", "model_change", "thinking_level_change"].includes(t)),
      JSON.stringify(between),
    ).toBe(true);
    // The later turns are still there, on the branch the hit started.
    expect(after.filter((e) => e.parentId === hitEntry.id)).toHaveLength(2);
    expect(s.requests).toHaveLength(1);
  });

  it("a session that mentions it only off its latest branch: offered marked, its hit view says so, continuing goes there", async () => {
    const { sb } = await setup();
    const deep = makeSession(sb.agentDir, sb.project, [
      ["plan the ledger work", "the plan"],
      ["read the file", "the reconcile-ledger script needs a flag"],
    ]);
    const entries = deep.sm.getEntries();
    const offHit = entries[3];
    // Continue from the first answer: the second turn is now off the latest branch.
    deep.sm.branch(entries[1].id);
    deep.sm.appendMessage({ role: "user", content: "something else", timestamp: Date.now() });
    const rpc = startRpc(["-e", extensionPath], { cwd: sb.project, env: sb.env });
    cleanups.push(() => rpc.close());
    rpc.send({ type: "prompt", id: "p1", message: "/sessions reconcile-ledger" });
    const list = await rpc.waitFor(isSelect("Sessions mentioning"));
    expect(list.title).toBe('Sessions mentioning "reconcile-ledger" only on other branches than their latest (1 of 1)');
    expect(list.options).toHaveLength(1);
    expect(list.options[0]).toMatch(/^1\. \[other branch\] plan the ledger work — the reconcile-ledger script/);
    rpc.send({ type: "extension_ui_response", id: list.id, value: list.options[0] });
    const where = await rpc.waitFor(isSelect("plan the ledger work"));
    expect(where.title.split("\n")[1]).toBe("The hit is on another branch than the session's latest entry.");
    expect(where.title).toContain("▶ assistant: the reconcile-ledger script needs a flag");
    const fromHit = `Continue from the hit (assistant, entry ${offHit.id}, on its branch)`;
    expect(where.options).toEqual(["Continue from the latest entry", fromHit, "Back to the list"]);
    rpc.send({ type: "extension_ui_response", id: where.id, value: fromHit });
    await rpc.waitFor((r) => r.type === "response" && r.id === "p1");
    const msgs = await rpc.request({ type: "get_messages" });
    expect(msgs.data.messages.map((m) => m.role)).toEqual(["user", "assistant", "user", "assistant"]);
    expect(JSON.stringify(msgs.data.messages.at(-1))).toContain("reconcile-ledger script");
    expect(rpc.records.filter((r) => r.type === "extension_error")).toEqual([]);
  });

  it("a hit in a user message: continuing puts the leaf just before it", async () => {
    const { sb } = await setup();
    const deep = makeSession(sb.agentDir, sb.project, [
      ["first question", "first answer"],
      ["the quetzal question", "an answer"],
      ["later", "later answer"],
    ]);
    const hitEntry = deep.sm.getEntries()[2];
    const rpc = startRpc(["-e", extensionPath], { cwd: sb.project, env: sb.env });
    cleanups.push(() => rpc.close());
    rpc.send({ type: "prompt", id: "p1", message: "/sessions quetzal" });
    const list = await rpc.waitFor(isSelect("Sessions mentioning"));
    rpc.send({ type: "extension_ui_response", id: list.id, value: list.options[0] });
    const where = await rpc.waitFor(isSelect("first question"));
    expect(where.options[1]).toBe(`Continue from the hit (user, entry ${hitEntry.id})`);
    rpc.send({ type: "extension_ui_response", id: where.id, value: where.options[1] });
    const note = await rpc.waitFor((r) => r.method === "notify" && /Switched to session/.test(r.message));
    expect(note.message).toMatch(new RegExp(`just before the hit \\(user, entry ${hitEntry.id}\\)$`));
    expect(rpc.records.filter((r) => r.type === "extension_error")).toEqual([]);
    const msgs = await rpc.request({ type: "get_messages" });
    expect(msgs.data.messages.map((m) => m.content?.[0]?.text ?? m.content)).toEqual([
      "first question",
      "first answer",
    ]);
  });
});

describe.skipIf(!node22 || !engineIndexesToolCalls)(
  "facts inside tool calls (needs the engine indexing tool calls)",
  () => {
    it("continuing from a tool-call hit keeps the call's results: the model gets them, never a missing result", async () => {
      const { sb, s } = await setup();
      const tools = toolSession(sb.agentDir, sb.project);
      const byRole = (role) => fileEntries(tools.path).filter((e) => e.type === "message" && e.message.role === role);
      const callEntry = byRole("assistant")[0];
      const results = byRole("toolResult");
      // A hit on the call (its command), and a hit on the first of the results ("file contents"),
      // each from a fresh pi (the session pi is in is not searched).
      let rpc;
      for (const [query, hitId] of [
        ["frobnicate-widgets", callEntry.id],
        ['"file contents"', results[0].id],
      ]) {
        await rpc?.close();
        rpc = startRpc(["-e", extensionPath], { cwd: sb.project, env: sb.env });
        const current = rpc;
        cleanups.push(() => current.close());
        rpc.send({ type: "prompt", id: "s", message: `/sessions ${query}` });
        const list = await rpc.waitFor(isSelect("Sessions mentioning"));
        expect(list.options).toHaveLength(1);
        rpc.send({ type: "extension_ui_response", id: list.id, value: list.options[0] });
        const where = await rpc.waitFor(isSelect("tidy up the tree code"));
        const fromHit = where.options.find((o) => o.startsWith("Continue from the hit"));
        expect(fromHit).toContain(`entry ${hitId}`);
        rpc.send({ type: "extension_ui_response", id: where.id, value: fromHit });
        await rpc.waitFor((r) => r.type === "response" && r.id === "s");
        const note = await rpc.waitFor((r) => r.method === "notify" && /Switched to session/.test(r.message));
        // The leaf is the turn's last result: the call and its three results are the context.
        expect(note.message).toMatch(
          new RegExp(
            `after the hit's tool results \\(tool (call|result), entry ${hitId}; 3 results, up to entry ${results[2].id}\\)$`,
          ),
        );
        const msgs = await rpc.request({ type: "get_messages" });
        expect(msgs.data.messages.map((m) => m.role)).toEqual([
          "user",
          "assistant",
          "toolResult",
          "toolResult",
          "toolResult",
        ]);
        expect(rpc.records.filter((r) => r.type === "extension_error")).toEqual([]);
      }

      rpc.send({ type: "prompt", id: "p", message: "carry on from there" });
      await rpc.waitFor((r) => r.type === "agent_end");
      await rpc.close();
      // What the model got: the call and each of its results, no stand-in for a missing one.
      const sent = s.requests[0].messages;
      const toolMsgs = sent.filter((m) => m.role === "tool");
      expect(toolMsgs.map(toolMessageText)).toEqual(["file contents", "built", "edited"]);
      expect(JSON.stringify(sent)).not.toContain("No result provided");
    });

    it("/sessions and search_sessions find a path, a command and an identifier that only tool calls hold", async () => {
      const queries = ["quillwort/session-manager.ts", "frobnicate-widgets", "idSummaryTreeZq"];
      const { sb, s } = await setup((_body, index) =>
        index === 0
          ? { toolCalls: queries.map((query) => ({ name: "search_sessions", arguments: { query } })) }
          : { text: "found them" },
      );
      const tools = toolSession(sb.agentDir, sb.project);
      makeSession(sb.agentDir, sb.project, [["unrelated", "nothing here"]]);

      const rpc = startRpc(["-e", extensionPath], { cwd: sb.project, env: sb.env });
      cleanups.push(() => rpc.close());
      for (const [i, q] of queries.entries()) {
        rpc.send({ type: "prompt", id: `q${i}`, message: `/sessions ${q}` });
        const list = await rpc.waitFor((r) => isSelect("Sessions mentioning")(r) && r.title.includes(q));
        expect(list.options, q).toHaveLength(1);
        expect(list.options[0]).toMatch(/^1\. tidy up the tree code/);
        rpc.send({ type: "extension_ui_response", id: list.id, cancelled: true });
        await rpc.waitFor((r) => r.type === "response" && r.id === `q${i}`);
      }
      await rpc.close();

      const r = await runPi(["-e", extensionPath, "-p", "find the earlier tree work"], {
        cwd: sb.project,
        env: sb.env,
      });
      expect(r.code, r.stderr).toBe(0);
      const results = s.requests[1].messages.filter((m) => m.role === "tool").map(toolMessageText);
      expect(results).toHaveLength(3);
      for (const text of results) expect(text).toContain(`session ${tools.id}`);
    });
  },
);
