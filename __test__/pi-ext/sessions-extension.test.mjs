// The package's pi extension (extensions/sessions.ts: /sessions and the search_sessions
// tool) and an extension importing this package by name, inside the real bundled pi bin
// (`dist/bundle/cli.js` of @earendil-works/pi-coding-agent 1.6.0, under Node >= 22.19),
// with a scripted OpenAI-compatible model on 127.0.0.1.
import { existsSync, mkdirSync, readdirSync, realpathSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { startModelServer, writeAgentConfig } from "../../scripts/model-server.mjs";
import {
  SessionManager,
  extensionPath,
  makeSession,
  node22,
  repoRoot,
  runPi,
  sandbox,
  sessionDirOf,
  shownIdIn,
  startRpc,
  toolMessageText,
} from "./helpers.mjs";

const cleanups = [];
afterEach(async () => {
  for (const f of cleanups.splice(0).reverse()) await f();
});

function setup() {
  const sb = sandbox();
  cleanups.push(sb.cleanup);
  return sb;
}

async function server(respond) {
  const s = await startModelServer({ respond, maxRequests: 20 });
  cleanups.push(() => s.close());
  return s;
}

const ESC = "\u001b";

describe.skipIf(!node22)("pi extension of pi-session-native in the real pi bin", () => {
  it("search_sessions: the model calls the tool and gets bounded paths, ids and snippets of this project's past sessions", async () => {
    const sb = setup();
    const other = join(sb.root, "other-project");
    mkdirSync(other);
    // Oldest first: modified times follow the message timestamps.
    const long = makeSession(sb.agentDir, sb.project, [
      ["a long log", `${"x".repeat(3000)} zebra-marker ${"y".repeat(3000)}`],
    ]);
    const many = makeSession(
      sb.agentDir,
      sb.project,
      Array.from({ length: 30 }, (_, i) => [`step ${i}: look at needle ${i}`, `needle ${i} checked`]),
    );
    const elsewhere = makeSession(sb.agentDir, other, [["needle in another project", "not this project"]]);
    const newest = makeSession(
      sb.agentDir,
      sb.project,
      [["fix the Needle parser", `done: ${ESC}[31mneedle${ESC}[0m is red now ${ESC}]0;title\u0007 and a bell \u0007`]],
      { name: "parser work" },
    );
    const newestEntries = newest.sm.getEntries().filter((e) => e.type === "message");

    const s = await server((_body, index) => {
      if (index === 0) {
        return {
          toolCalls: [
            { name: "search_sessions", arguments: { query: "NEEDLE", limit: 3 } },
            { name: "search_sessions", arguments: { query: "zebra-marker" } },
          ],
        };
      }
      return { text: "searched the sessions" };
    });
    writeAgentConfig(sb.agentDir, s.baseUrl);

    const t0 = Date.now();
    const r = await runPi(["-e", extensionPath, "-p", "find the needle work from before"], {
      cwd: sb.project,
      env: sb.env,
    });
    const ms = Date.now() - t0;
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain("searched the sessions");
    expect(s.requests).toHaveLength(2);

    // The tool is offered to the model with its schema.
    const tool = s.requests[0].tools?.find((t) => t.function?.name === "search_sessions");
    expect(tool, JSON.stringify(s.requests[0].tools?.map((t) => t.function?.name))).toBeTruthy();
    expect(Object.keys(tool.function.parameters.properties).sort()).toEqual(["limit", "query"]);

    const toolMsgs = s.requests[1].messages.filter((m) => m.role === "tool");
    expect(toolMsgs).toHaveLength(2);
    const [needle, zebra] = toolMsgs.map(toolMessageText);

    // Bounded: 3 matching lines at most (limit), a note that output was limited.
    const hitLines = needle.split("\n").filter((l) => l.startsWith("  - entry "));
    expect(hitLines).toHaveLength(3);
    expect(needle).toContain("[Output limited to 3 matching lines");
    expect(needle.length).toBeLessThan(12_000);
    // Newest session first, with its id, path and both matching entries.
    expect(needle).toContain(`session ${newest.id}`);
    expect(needle).toContain('"parser work"');
    expect(needle).toContain(`path: ${newest.path}`);
    expect(needle).toContain(`entry ${newestEntries[0].id} (user): fix the Needle parser`);
    // Escape sequences removed, the stray BEL shown as a control picture.
    expect(needle).toContain(`entry ${newestEntries[1].id} (assistant): done: needle is red now and a bell \u2407`);
    expect(needle).not.toMatch(/[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/);
    // Then the 30-turn session, cut after one line (limit 3), with a "more" marker.
    expect(needle).toContain(`session ${many.id}`);
    expect(needle).toContain("(more matches in this session)");
    // Only this project; the current session (which holds the prompt) is not searched.
    expect(needle).not.toContain(elsewhere.path);
    expect(needle).not.toContain("another project");
    const current = readdirSync(sessionDirOf(sb.agentDir, sb.project))
      .map((f) => join(sessionDirOf(sb.agentDir, sb.project), f))
      .filter((p) => p.endsWith(".jsonl") && ![long.path, many.path, newest.path].includes(p));
    expect(current).toHaveLength(1);
    expect(needle).not.toContain(current[0]);
    // One index, the engine's, at pi's sessions root; none of its own for the project.
    expect(existsSync(join(sb.agentDir, "sessions", ".pi-session-search.sqlite"))).toBe(true);
    expect(existsSync(join(sessionDirOf(sb.agentDir, sb.project), ".pi-session-search.sqlite"))).toBe(false);
    expect(needle).toMatch(
      /Search of past sessions of .* for "NEEDLE" \(all words; "phrases", prefix\*, case-insensitive\): 2\+? matching sessions? of 3 searched\./,
    );

    // A 6,000-character line gives a snippet of at most 200 characters around the match.
    const zebraHit = zebra.split("\n").find((l) => l.startsWith("  - entry "));
    expect(zebra).toContain(`path: ${long.path}`);
    const snip = zebraHit.slice(zebraHit.indexOf("): ") + 3);
    expect(snip).toContain("zebra-marker");
    expect(snip.startsWith("…") && snip.endsWith("…")).toBe(true);
    expect(snip.length).toBeLessThanOrEqual(202);
    console.log(`[pi-ext] tool run: ${ms} ms`);
  });

  it("/sessions <text> in rpc mode (package dir, its pi manifest): select dialog, then pi switches to the chosen session", async () => {
    const sb = setup();
    const other = join(sb.root, "other-project");
    mkdirSync(other);
    const alpha = makeSession(sb.agentDir, sb.project, [["alpha: the needle is in the parser", "ok"]], {
      name: "alpha work",
    });
    const beta = makeSession(sb.agentDir, other, [["beta", `the NEEDLE in ${ESC}[1mbold${ESC}[0m`]]);
    makeSession(sb.agentDir, other, [["gamma", "nothing to see"]]);
    const s = await server();
    writeAgentConfig(sb.agentDir, s.baseUrl);

    const rpc = startRpc(["-e", repoRoot], { cwd: sb.project, env: sb.env });
    cleanups.push(() => rpc.close());
    const before = await rpc.request({ type: "get_state" });
    expect(before.success, JSON.stringify(before)).toBe(true);
    expect(before.data.sessionFile).not.toBe(beta.path);

    const commands = await rpc.request({ type: "get_commands" });
    expect(commands.data.commands.map((c) => c.name)).toContain("sessions");

    rpc.send({ type: "prompt", id: "p1", message: "/sessions needle" });
    const ask = await rpc.waitFor((r) => r.type === "extension_ui_request" && r.method === "select");
    expect(ask.title).toMatch(/^Sessions mentioning "needle" \(2 of 3\)/);
    expect(ask.options).toHaveLength(2);
    // Newest first: beta (other project), then alpha; title, snippet, cwd and date on one line;
    // escape sequences removed.
    expect(ask.options[0]).toMatch(/^1\. beta — the NEEDLE in bold {2}\S*other-project {2}\d{4}-\d\d-\d\d \d\d:\d\d$/);
    expect(ask.options[1]).toMatch(/^2\. alpha work — alpha: the needle is in the parser {2}\S*project {2}\d{4}-/);
    for (const o of ask.options) expect(o).not.toMatch(/[\u0000-\u001f]/);
    // The footer said what was going on, and was cleared before the list.
    const statuses = rpc.records.filter((r) => r.method === "setStatus" && r.statusKey === "sessions");
    expect(statuses[0].statusText).toBe('Searching sessions for "needle"…');
    expect(statuses.at(-1).statusText).toBeUndefined();

    rpc.send({ type: "extension_ui_response", id: ask.id, value: ask.options[0] });
    // The hit in its context: the entries around it, the hit marked; it is beta's latest entry.
    const where = await rpc.waitFor(
      (r) => r.type === "extension_ui_request" && r.method === "select" && r.id !== ask.id,
    );
    expect(where.title.split("\n").slice(2)).toEqual(["  user: beta", "▶ assistant: the NEEDLE in bold"]);
    expect(where.options).toEqual(["Continue from the latest entry", "Back to the list"]);
    rpc.send({ type: "extension_ui_response", id: where.id, value: where.options[0] });
    const done = await rpc.waitFor((r) => r.type === "response" && r.id === "p1");
    expect(done.success, JSON.stringify(done)).toBe(true);
    const note = await rpc.waitFor(
      (r) => r.type === "extension_ui_request" && r.method === "notify" && /Switched to session/.test(r.message),
    );
    const betaLeaf = SessionManager.open(beta.path).getLeafId();
    expect(note.message).toBe(
      `Switched to session "beta" (${shownIdIn(sb.agentDir, beta.id)}, ${other}) at its latest entry ${betaLeaf}`,
    );

    const after = await rpc.request({ type: "get_state" });
    expect(after.data.sessionFile).toBe(beta.path);
    expect(after.data.sessionId).toBe(beta.id);
    const msgs = await rpc.request({ type: "get_messages" });
    expect(JSON.stringify(msgs.data.messages)).toContain("the NEEDLE in");
    expect(alpha.path).not.toBe(after.data.sessionFile);
    expect(s.requests).toHaveLength(0); // a command, no model call

    // In the replacement session the command still works and leaves out the current session.
    rpc.send({ type: "prompt", id: "p2", message: "/sessions needle" });
    const again = await rpc.waitFor(
      (r) =>
        r.type === "extension_ui_request" &&
        r.method === "select" &&
        r.title.startsWith("Sessions mentioning") &&
        r.id !== ask.id,
    );
    expect(again.options).toHaveLength(1);
    expect(again.options[0]).toMatch(/^1\. alpha work — /);
    // A /sessions while one runs is refused with a note.
    rpc.send({ type: "prompt", id: "p3", message: "/sessions other words" });
    const refused = await rpc.waitFor((r) => r.method === "notify" && /still searching/.test(r.message));
    expect(refused.message).toBe('/sessions is still searching for "needle"; its list comes next');
    await rpc.waitFor((r) => r.type === "response" && r.id === "p3");
    rpc.send({ type: "extension_ui_response", id: again.id, cancelled: true });
    await rpc.waitFor((r) => r.type === "response" && r.id === "p2");
    expect((await rpc.request({ type: "get_state" })).data.sessionFile).toBe(beta.path);
    await rpc.close();
  });

  it("/sessions <text> with a cancelled dialog stays in the session; no match notifies", async () => {
    const sb = setup();
    makeSession(sb.agentDir, sb.project, [["the needle", "ok"]]);
    const s = await server();
    writeAgentConfig(sb.agentDir, s.baseUrl);
    const rpc = startRpc(["-e", extensionPath], { cwd: sb.project, env: sb.env });
    cleanups.push(() => rpc.close());
    const before = await rpc.request({ type: "get_state" });

    rpc.send({ type: "prompt", id: "p1", message: "/sessions needle" });
    const ask = await rpc.waitFor((r) => r.type === "extension_ui_request" && r.method === "select");
    rpc.send({ type: "extension_ui_response", id: ask.id, cancelled: true });
    await rpc.waitFor((r) => r.type === "response" && r.id === "p1");
    expect((await rpc.request({ type: "get_state" })).data.sessionFile).toBe(before.data.sessionFile);

    rpc.send({ type: "prompt", id: "p2", message: "/sessions no-such-text-anywhere" });
    const note = await rpc.waitFor((r) => r.type === "extension_ui_request" && r.method === "notify");
    expect(note.message).toBe('No session mentions "no-such-text-anywhere" (1 searched, every branch)');
    rpc.send({ type: "prompt", id: "p3", message: '/sessions "token bucket"' });
    const phrase = await rpc.waitFor((r) => r.method === "notify" && r.message.includes("token"));
    expect(phrase.message).toBe('No session mentions "token bucket" (1 searched, every branch)');
    await rpc.waitFor((r) => r.type === "response" && r.id === "p2");
    await rpc.close();
  });

  it("/sessions <text> in print mode reports the matches on stderr without calling the model", async () => {
    const sb = setup();
    const a = makeSession(sb.agentDir, sb.project, [["Where is the Needle?", "in the haystack"]], { name: "haystack" });
    const s = await server();
    writeAgentConfig(sb.agentDir, s.baseUrl);
    const r = await runPi(["-e", extensionPath, "-p", "/sessions needle"], { cwd: sb.project, env: sb.env });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toContain('sessions matching "needle": 1 of 1');
    expect(r.stderr).toContain(a.path);
    expect(r.stderr).toMatch(/ user: Where is the Needle\?/);
    expect(s.requests).toHaveLength(0);
  });

  it("an extension in another project that has pi-session-native in its node_modules imports it by name", async () => {
    const sb = setup();
    mkdirSync(join(sb.project, "node_modules"));
    symlinkSync(repoRoot, join(sb.project, "node_modules", "pi-session-native"), "dir");
    mkdirSync(join(sb.project, "ext"));
    const ext = join(sb.project, "ext", "native-list.ts");
    writeFileSync(
      ext,
      `import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";
import { SessionManager } from "pi-session-native";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";

export default function (pi: ExtensionAPI) {
	pi.registerCommand("native-list", {
		description: "list this project's sessions with pi-session-native",
		handler: async (_args, ctx) => {
			const infos = await SessionManager.list(ctx.cwd);
			// Linux: the mapped files of the process; elsewhere the addons in require's cache.
			const maps = process.platform === "linux" ? readFileSync("/proc/self/maps", "utf8") : Object.keys(createRequire(import.meta.url).cache).join("\\n");
			process.stderr.write("NATIVE-LIST " + JSON.stringify({
				ids: infos.map((s) => s.id),
				first: infos.map((s) => s.firstMessage),
				resolved: createRequire(import.meta.url).resolve("pi-session-native"),
				addon: maps.split("\\n").filter((l) => l.includes("pi-session-native") && l.includes(".node")).length > 0,
			}) + "\\n");
		},
	});
}
`,
    );
    const one = makeSession(sb.agentDir, sb.project, [["first session", "ok"]]);
    const two = makeSession(sb.agentDir, sb.project, [["second session", "ok"]]);
    const s = await server();
    writeAgentConfig(sb.agentDir, s.baseUrl);
    const r = await runPi(["-e", ext, "-p", "/native-list"], { cwd: sb.project, env: sb.env });
    expect(r.code, r.stderr).toBe(0);
    const line = r.stderr.split("\n").find((l) => l.startsWith("NATIVE-LIST "));
    expect(line, r.stderr).toBeTruthy();
    const got = JSON.parse(line.slice("NATIVE-LIST ".length));
    expect(got.ids).toEqual([two.id, one.id]);
    expect(got.first).toEqual(["second session", "first session"]);
    expect(realpathSync(got.resolved)).toBe(join(realpathSync(repoRoot), "index.js"));
    expect(got.addon).toBe(true);
  });

  it("pi install <clone> adds the package: /sessions works without -e", async () => {
    const sb = setup();
    const a = makeSession(sb.agentDir, sb.project, [["installed needle", "ok"]]);
    const s = await server();
    writeAgentConfig(sb.agentDir, s.baseUrl);
    const inst = await runPi(["install", repoRoot], { cwd: sb.project, env: sb.env });
    expect(inst.code, inst.stderr + inst.stdout).toBe(0);
    const list = await runPi(["list"], { cwd: sb.project, env: sb.env });
    expect(list.stdout + list.stderr).toContain(repoRoot);
    const r = await runPi(["-p", "/sessions needle"], { cwd: sb.project, env: sb.env });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toContain(a.path);
    expect(existsSync(join(sb.agentDir, "settings.json"))).toBe(true);
    expect(SessionManager).toBeTruthy();
  });
});
