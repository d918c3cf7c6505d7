// The real bundled pi bin (dist/bundle/cli.js; 1.6.0 or PI_E2E_PI_PACKAGE's) in print mode with a scripted model, run
// unmodified ("ref") and through the one switch (`pi-native`, "native"), side by side:
//
//   1. -p "hello there"                       new session
//   2. -c -p "please read notes"              continue it (the model calls the read tool)
//   3. --session <file> -p "by path"          open it by path
//   4. --fork <file> -p "forked message"      fork it into a new file
//   5. --export <file> <out.html>             export (no model)
//
// Native runs must print the serving marker once per process and name the addon the process
// mapped; session files, answers and exported HTML must match the reference after ids,
// timestamps and temp paths are mapped.
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import {
  addonInMarker,
  cleanup,
  FAILSAFE,
  makeRoot,
  MARKER,
  markerCount,
  node22,
  normalizedSessions,
  normalizerFor,
  piVersion,
  readJsonl,
  repoRoot,
  runPi,
  runPiOk,
  sessionFiles,
} from "./helpers.mjs";
import { lastUserText, startModelServer, writeAgentConfig } from "../../scripts/model-server.mjs";

const TIMEOUT = 180_000;

// deterministic from the request alone: "read notes" -> a read tool call, otherwise an echo
function respond(body) {
  const last = body.messages[body.messages.length - 1];
  if (last?.role === "user" && lastUserText(body).includes("read notes")) {
    return { text: "reading", toolCalls: [{ id: "call_read_1", name: "read", arguments: { path: "notes.txt" } }] };
  }
  return { text: `ok: ${lastUserText(body)} (${last?.role})` };
}

async function runSequence(how) {
  const server = await startModelServer({ respond, maxRequests: 50 });
  try {
    const root = makeRoot(`pibin-${how.padEnd(6, "-")}-`, server.baseUrl);
    const steps = [];
    const step = async (args) => {
      const r = await runPiOk(root, how, args);
      steps.push(r);
      return r;
    };
    await step(["-p", "hello there"]);
    await step(["-c", "-p", "please read notes"]);
    const [first] = sessionFiles(root);
    if (!first) throw new Error(`no session file under ${root}`);
    await step(["--session", first, "-p", "by path"]);
    await step(["--fork", first, "-p", "forked message"]);
    const html = join(root, "out.html");
    await step(["--export", first, html]);
    return { root, steps, first, html, files: sessionFiles(root), requests: server.requests };
  } finally {
    await server.close();
  }
}

function runNormalizer(run) {
  const norm = normalizerFor(run.root);
  for (const f of run.files) norm.registerEntries(readJsonl(f));
  return norm;
}

/** The exported page with this run's ids, times and paths mapped (its session data is base64 JSON). */
function normalizedHtml(run) {
  const norm = runNormalizer(run);
  const html = readFileSync(run.html, "utf8");
  const m = /(<script id="session-data" type="application\/json">)([A-Za-z0-9+/=]+)(<\/script>)/.exec(html);
  if (!m) throw new Error(`${run.html}: no session-data script`);
  const data = norm.value(JSON.parse(Buffer.from(m[2], "base64").toString("utf8")));
  return { page: norm.value(html.replace(m[2], "<DATA>")), data };
}

afterAll(cleanup);

test("node 22 binary is available", () => {
  expect(node22, "no Node >= 22.19: run `node scripts/node22.mjs --ensure` or set PI_NODE22").toBeTruthy();
});

describe.skipIf(!node22)("real pi bin, print mode: reference vs pi-native", () => {
  let ref;
  let nat;
  beforeAll(async () => {
    [ref, nat] = await Promise.all([runSequence("ref"), runSequence("native")]);
  }, TIMEOUT);

  test("reference: answers, continues, opens by path, forks, exports", () => {
    expect(ref.steps.slice(0, 4).map((s) => s.stdout.trim())).toEqual([
      "ok: hello there (user)",
      "ok: please read notes (tool)",
      "ok: by path (user)",
      "ok: forked message (user)",
    ]);
    for (const s of ref.steps) expect(s.stderr).not.toContain("[pi-session-native]");
    expect(ref.files).toHaveLength(2);
    const [orig, fork] = ref.files.map(readJsonl);
    expect(fork[0]).toMatchObject({ type: "session", parentSession: ref.first });
    expect(orig.some((e) => e.type === "message" && e.message.role === "toolResult")).toBe(true);
    expect(fork.slice(1, orig.length).map((e) => e.id)).toEqual(orig.slice(1).map((e) => e.id));
    expect(existsSync(ref.html)).toBe(true);
    expect(ref.requests).toHaveLength(5); // 4 prompts + the follow-up after the tool result
  });

  test("every pi-native process served the bundle's session-manager once, with the addon mapped", () => {
    for (const s of nat.steps) {
      expect(markerCount(s.stderr), `stderr of pi ${s.args.join(" ")}:\n${s.stderr}`).toBe(1);
      expect(s.stderr).not.toContain(FAILSAFE);
      const line = s.stderr.slice(s.stderr.indexOf(MARKER)).split("\n")[0];
      expect(line).toContain(` (pi ${piVersion}; `);
      expect(line).toMatch(/dist\/bundle\/chunks\/[^ ]+\.js \(pi /);
      expect(line).toContain("SessionManager");
      expect(line).toContain("buildSessionContext");
      // from the one-file bundle of index.js and lib/ (scripts/bundle-js.mjs; made before the tests)
      expect(line).toContain(` from ${join(repoRoot, "lib", "bundle.cjs")}; `);
      const addon = addonInMarker(s.stderr);
      expect(addon, line).toBeTruthy();
      expect(addon.startsWith(repoRoot) || addon.includes("pi-session-native"), addon).toBe(true);
    }
  });

  test("answers, session files and model traffic match the reference", () => {
    const out = (run) => run.steps.map((s) => s.stdout.trim().split(run.root).join("<ROOT>"));
    expect(out(nat)).toEqual(out(ref));
    // what the model was sent (system prompt, history, tools) is the same
    expect(runNormalizer(nat).value(nat.requests)).toEqual(runNormalizer(ref).value(ref.requests));
    const a = normalizedSessions(nat.root, nat.files);
    const b = normalizedSessions(ref.root, ref.files);
    expect(a.map((f) => f.path)).toEqual(b.map((f) => f.path));
    for (let i = 0; i < b.length; i++) expect(a[i].lines, `session file #${i + 1}`).toEqual(b[i].lines);
  });

  test("--export writes the same page", () => {
    expect(existsSync(nat.html)).toBe(true);
    const a = normalizedHtml(nat);
    const b = normalizedHtml(ref);
    expect(a.data.entries.length).toBeGreaterThan(5);
    expect(a.data).toEqual(b.data);
    expect(a.page).toEqual(b.page);
  });

  test(
    "reference pi continues a pi-native session like its own, and vice versa",
    async () => {
      // one server per root: the server numbers its replies (responseId)
      const servers = await Promise.all([0, 1].map(() => startModelServer({ respond, maxRequests: 10 })));
      try {
        writeAgentConfig(join(nat.root, "agent"), servers[0].baseUrl);
        writeAgentConfig(join(ref.root, "agent"), servers[1].baseUrl);
        const [a, b] = await Promise.all([
          runPiOk(nat.root, "ref", ["--session", nat.first, "-p", "crossing over"]),
          runPiOk(ref.root, "native", ["--session", ref.first, "-p", "crossing over"]),
        ]);
        expect(a.stdout.trim()).toBe("ok: crossing over (user)");
        expect(b.stdout.trim()).toBe("ok: crossing over (user)");
        expect(markerCount(b.stderr)).toBe(1);
        expect(a.stderr).not.toContain("[pi-session-native]");
        // both files now hold the same history, each written half by one implementation
        const x = normalizedSessions(nat.root, [nat.first]);
        const y = normalizedSessions(ref.root, [ref.first]);
        expect(x[0].lines).toEqual(y[0].lines);
      } finally {
        await Promise.all(servers.map((sv) => sv.close()));
      }
    },
    TIMEOUT,
  );

  test(
    "the NODE_OPTIONS recipe (absolute path) serves pi from any directory; PI_SESSION_NATIVE=0 and no debug are silent",
    async () => {
      const server = await startModelServer({ respond, maxRequests: 10 });
      try {
        const root = makeRoot("pibin-opts---", server.baseUrl);
        // cwd outside this package: a bare `--import pi-session-native/register` would not resolve here
        const on = await runPi(root, "options", ["-p", "hello there"], { cwd: join(root, "home") });
        expect(on.code, on.stderr).toBe(0);
        expect(on.stdout.trim()).toBe("ok: hello there (user)");
        expect(markerCount(on.stderr), on.stderr).toBe(1);
        const off = await runPi(root, "options", ["-c", "-p", "again"], {
          env: { PI_SESSION_NATIVE: "0", PI_SESSION_NATIVE_DEBUG: undefined },
        });
        expect(off.code, off.stderr).toBe(0);
        expect(off.stderr).not.toContain("[pi-session-native]");
        const quiet = await runPi(root, "native", ["-c", "-p", "quiet"], {
          env: { PI_SESSION_NATIVE_DEBUG: undefined },
        });
        expect(quiet.code, quiet.stderr).toBe(0);
        expect(quiet.stdout.trim()).toBe("ok: quiet (user)");
        expect(quiet.stderr).not.toContain("[pi-session-native]");
      } finally {
        await server.close();
      }
    },
    TIMEOUT,
  );
});
