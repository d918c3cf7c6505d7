// The real bundled pi bin in rpc mode (`--mode rpc`) with a scripted model, unmodified ("ref")
// and through `pi-native` ("native"): a prompt, a new session and a prompt in it, a switch back
// to the first session, a fork from its first user message and a prompt in the fork. The live
// native process must have this package's addon mapped (/proc/<pid>/maps); its command
// responses and session files must match the reference after ids, times and paths are mapped.
import { existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import {
  cleanup,
  FAILSAFE,
  makeRoot,
  mappedAddons,
  markerCount,
  node22,
  normalizedSessions,
  normalizerFor,
  piAtLeast,
  readJsonl,
  sessionFiles,
  startRpc,
} from "./helpers.mjs";
import { startModelServer } from "../../scripts/model-server.mjs";

const TIMEOUT = 180_000;
const linux = process.platform === "linux";

// The session_start events the probe extension records: startup, then one per new_session,
// switch_session and fork. pi before 1.6.0 ran extensions' session_start handlers twice for the
// new session after each of those RPC commands (fixed in 1.6.0, see its CHANGELOG: "Fixed RPC
// `new_session`, `switch_session`, `fork` and `clone` running extension `session_start` ...
// handlers twice"), with the same session both times; that is pi's, with or without us.
const SESSION_STARTS = piAtLeast("1.6.0")
  ? ["startup", "new", "resume", "fork"]
  : ["startup", "new", "new", "resume", "resume", "fork", "fork"];

// An extension that records, at every session_start, what ctx.sessionManager is.
const probeExtension = (log) => `
import { appendFileSync } from "node:fs";
export default function (pi) {
	pi.on("session_start", async (event, ctx) => {
		const sm = ctx.sessionManager;
		const served = globalThis[Symbol.for("pi-session-native.hooks")]?.patch;
		appendFileSync(${JSON.stringify(log)}, JSON.stringify({
			reason: event.reason,
			native: Boolean(served && sm instanceof served.SessionManager),
			entries: sm.getEntries().length,
			branch: sm.getBranch().length,
		}) + "\\n");
	});
}
`;

async function rpcSequence(how) {
  const server = await startModelServer({ maxRequests: 20 });
  // keep few recent tokens, so a manual compaction of this short session has something to summarize
  const root = makeRoot(`pirpc-${how.padEnd(6, "-")}-`, server.baseUrl, { compaction: { keepRecentTokens: 1 } });
  const probeLog = join(root, "probe.jsonl");
  writeFileSync(join(root, "probe.js"), probeExtension(probeLog));
  const rpc = startRpc(root, how, ["-e", join(root, "probe.js")]);
  const transcript = [];
  const cmd = async (command) => {
    const { res } = await rpc.send(command);
    if (!res.success) throw new Error(`${command.type} failed: ${JSON.stringify(res)}\nstderr:\n${rpc.stderr()}`);
    transcript.push({ command, data: res.data });
    return res.data;
  };
  try {
    await rpc.prompt("first rpc");
    const first = (await cmd({ type: "get_state" })).sessionFile;
    const addons = linux ? mappedAddons(rpc.child.pid) : [];
    await cmd({ type: "new_session" });
    await rpc.prompt("second rpc");
    const second = (await cmd({ type: "get_state" })).sessionFile;
    await cmd({ type: "switch_session", sessionPath: first });
    const afterSwitch = (await cmd({ type: "get_state" })).sessionFile;
    const { messages } = await cmd({ type: "get_fork_messages" });
    const fork = await cmd({ type: "fork", entryId: messages[0].entryId });
    await rpc.prompt("after fork");
    const third = (await cmd({ type: "get_state" })).sessionFile;
    await rpc.prompt("one more before compaction");
    const compaction = await cmd({ type: "compact" });
    await rpc.prompt("after compact");
    await cmd({ type: "get_entries" });
    await cmd({ type: "get_tree" });
    const exit = await rpc.close();
    return {
      root,
      baseUrl: server.baseUrl,
      pid: rpc.child.pid,
      exit,
      stderr: rpc.stderr(),
      addons,
      paths: { first, second, afterSwitch, third },
      fork,
      compaction,
      probes: existsSync(probeLog) ? readJsonl(probeLog) : [],
      messages,
      transcript,
      requests: server.requests,
      files: sessionFiles(root),
      texts: rpc.records
        .filter((r) => r.type === "message_end" && r.message?.role === "assistant")
        .map((r) => r.message.content.map((c) => c.text ?? "").join("")),
    };
  } finally {
    if (rpc.child.exitCode === null) rpc.child.kill("SIGKILL");
    await server.close();
  }
}

function normalizedRun(run) {
  const norm = normalizerFor(run.root, [run.baseUrl]);
  for (const f of run.files) norm.registerEntries(readJsonl(f));
  return {
    files: normalizedSessions(run.root, run.files, norm),
    transcript: norm.value(run.transcript),
    requests: norm.value(run.requests),
    texts: run.texts,
  };
}

afterAll(cleanup);

describe.skipIf(!node22)("real pi bin, rpc mode: reference vs pi-native", () => {
  let ref;
  let nat;
  beforeAll(async () => {
    [ref, nat] = await Promise.all([rpcSequence("ref"), rpcSequence("native")]);
  }, TIMEOUT);

  test("reference: prompt, new session, switch back, fork, prompt in the fork", () => {
    expect(ref.exit).toEqual({ code: 0, signal: null });
    expect(ref.texts).toEqual([
      "ok: first rpc",
      "ok: second rpc",
      "ok: after fork",
      "ok: one more before compaction",
      "ok: after compact",
    ]);
    expect(typeof ref.compaction.summary).toBe("string");
    expect(readJsonl(ref.paths.third).some((e) => e.type === "compaction")).toBe(true);
    // startup, new, resume (switch), fork: ctx.sessionManager is pi's own class here
    expect(ref.probes.map((p) => p.reason)).toEqual(SESSION_STARTS);
    expect(ref.probes.every((p) => p.native === false)).toBe(true);
    expect(ref.paths.afterSwitch).toBe(ref.paths.first);
    expect(new Set([ref.paths.first, ref.paths.second, ref.paths.third]).size).toBe(3);
    expect(ref.fork).toMatchObject({ cancelled: false, text: "first rpc" });
    expect(ref.files).toHaveLength(3);
    const entries = ref.transcript.find((t) => t.command.type === "get_entries").data.entries;
    // forking at the first user message branches off before it: the fork starts with "after fork"
    expect(
      entries.filter((e) => e.type === "message" && e.message.role === "user").map((e) => e.message.content[0].text),
    ).toEqual(["after fork", "one more before compaction", "after compact"]);
    expect(readJsonl(ref.paths.third)[0]).toMatchObject({ type: "session", parentSession: ref.paths.first });
    expect(ref.stderr).not.toContain("[pi-session-native]");
    if (linux) expect(ref.addons).toEqual([]);
  });

  test("the live pi-native process served the bundle's session-manager and has the addon mapped", () => {
    expect(nat.exit).toEqual({ code: 0, signal: null });
    expect(markerCount(nat.stderr), nat.stderr).toBe(1);
    expect(nat.stderr).not.toContain(FAILSAFE);
    if (linux) {
      expect(nat.addons.length, `maps of pid ${nat.pid}`).toBe(1);
      expect(nat.stderr).toContain(`addon ${nat.addons[0]}`);
    }
  });

  test("extensions' ctx.sessionManager is the native class at startup, new, resume and fork", () => {
    expect(nat.probes.map((p) => p.reason)).toEqual(SESSION_STARTS);
    for (const p of nat.probes) expect(p.native, JSON.stringify(p)).toBe(true);
    expect(nat.probes.map(({ entries, branch }) => ({ entries, branch }))).toEqual(
      ref.probes.map(({ entries, branch }) => ({ entries, branch })),
    );
  });

  test("responses, session files and model traffic match the reference", () => {
    const a = normalizedRun(nat);
    const b = normalizedRun(ref);
    expect(a.texts).toEqual(b.texts);
    expect(a.transcript).toEqual(b.transcript);
    expect(a.files.map((f) => f.path)).toEqual(b.files.map((f) => f.path));
    for (let i = 0; i < b.files.length; i++)
      expect(a.files[i].lines, `session file #${i + 1}`).toEqual(b.files[i].lines);
    expect(a.requests).toEqual(b.requests);
  });
});
