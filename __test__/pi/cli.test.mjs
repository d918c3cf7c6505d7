// End-to-end through the real `pi` CLI (dist/cli.js, print mode) with a faux provider registered
// by an extension written at runtime. vitest runs this under Node 20; pi runs under Node 22.
//
//   reference: node22 dist/cli.js -e faux-ext.js ...                       (no hook)
//   native:    node22 --import lib/register.mjs dist/cli.js -e faux-ext.js ...
//
// Sequence per implementation (fresh PI_CODING_AGENT_DIR each):
//   1. --provider faux --model faux-1 -n "CLI session" -p "hello there"   (new session)
//   2. -c -p "please read notes"                                          (continue; read tool call)
//   3. --session <id> -p "third message"                                  (open by id)
//   4. --fork <id> -p "forked message"                                    (fork into a new file)
//   5. -c -p "continue the fork"                                          (most recent = fork)
import { readdirSync, readFileSync, rmSync, writeFileSync, mkdirSync, existsSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { Normalizer } from "./normalize.mjs";
import {
  nativeAvailable,
  nativeProbe,
  node22,
  piCli,
  piEnv,
  registerScript,
  repoRoot,
  runNode22,
  tempDir,
} from "./helpers.mjs";

const TIMEOUT = 240_000;
const MARKER = "[pi-session-native] serving session-manager";
const fauxModule = pathToFileURL(
  join(repoRoot, "node_modules", "@earendil-works", "pi-ai", "dist", "providers", "faux.js"),
).href;

const dirs = [];
const keep = process.env.PI_E2E_KEEP === "1";
afterAll(() => {
  if (keep) console.log(`[pi e2e] kept temp dirs:\n  ${dirs.join("\n  ")}`);
  else for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

// The extension answers every request deterministically from the request itself and logs the
// context it received (JSONL at $FAUX_LOG). "read notes" in the last user message triggers a read
// tool call; the follow-up request (after the tool result) gets an echo.
const EXTENSION = `
import { appendFileSync } from "node:fs";
import { fauxAssistantMessage, fauxProvider, fauxText, fauxToolCall } from ${JSON.stringify(fauxModule)};

export default function (pi) {
	const faux = fauxProvider({
		api: "faux",
		provider: "faux",
		models: [
			{ id: "faux-1", name: "Faux One", reasoning: true },
			{ id: "faux-2", name: "Faux Two", reasoning: true },
		],
	});
	const text = (m) =>
		typeof m.content === "string" ? m.content : m.content.filter((c) => c.type === "text").map((c) => c.text).join("\\n");
	const respond = (context, options, state, model) => {
		faux.appendResponses([respond]);
		const msgs = context.messages;
		const last = msgs[msgs.length - 1];
		if (process.env.FAUX_LOG) {
			appendFileSync(process.env.FAUX_LOG, JSON.stringify({ model: model.id, reasoning: options?.reasoning ?? null, messages: msgs }) + "\\n");
		}
		if (last.role === "user" && text(last).includes("read notes")) {
			return fauxAssistantMessage(
				[fauxText("reading"), fauxToolCall("read", { path: "notes.txt" }, { id: "call_read_" + state.callCount })],
				{ stopReason: "toolUse" },
			);
		}
		const lastUser = [...msgs].reverse().find((m) => m.role === "user");
		return fauxAssistantMessage("echo[" + model.id + "] " + last.role + ": " + (lastUser ? text(lastUser) : ""));
	};
	faux.setResponses([respond]);
	pi.registerProvider(faux.provider);
}
`;

function readJsonl(file) {
  return readFileSync(file, "utf8")
    .split("\n")
    .filter((l) => l.trim())
    .map((l) => JSON.parse(l));
}

function sessionFiles(root) {
  const base = join(root, "agent", "sessions");
  if (!existsSync(base)) return [];
  const out = [];
  for (const d of readdirSync(base))
    for (const f of readdirSync(join(base, d))) if (f.endsWith(".jsonl")) out.push(join(base, d, f));
  return out.sort(); // file names start with the creation timestamp
}

const sessionIdOf = (file) => file.slice(file.lastIndexOf("_") + 1, -".jsonl".length);

/**
 * @param {string} root
 * @param {string[]} args
 * @param {{ hook?: boolean, debug?: boolean }} [options]
 */
async function pi(root, args, { hook, debug = hook } = {}) {
  const argv = [...(hook ? ["--import", registerScript] : []), piCli, "-e", join(root, "faux-ext.js"), ...args];
  const env = piEnv({
    PI_CODING_AGENT_DIR: join(root, "agent"),
    HOME: join(root, "home"),
    FAUX_LOG: join(root, "faux.log"),
    ...(debug ? { PI_SESSION_NATIVE_DEBUG: "1" } : {}),
  });
  const r = await runNode22(argv, { cwd: join(root, "project"), env });
  return { args, ...r };
}

/** Runs the 5-step CLI sequence in a fresh root; returns raw results. */
async function runSequence(prefix, { hook }) {
  const root = tempDir(prefix);
  dirs.push(root);
  for (const d of ["agent", "project", "home"]) mkdirSync(join(root, d), { recursive: true });
  writeFileSync(join(root, "project", "notes.txt"), "alpha\nbeta\ngamma\n");
  writeFileSync(join(root, "faux-ext.js"), EXTENSION);
  // A stored credential marks the faux provider as configured synchronously at registration.
  // Without it, restoring the session's model on -c/--session races pi's async availability
  // refresh ("No models available").
  writeFileSync(join(root, "agent", "auth.json"), JSON.stringify({ faux: { type: "api_key", key: "faux-test-key" } }));

  const steps = [];
  const step = async (args) => {
    const r = await pi(root, args, { hook });
    steps.push(r);
    if (r.code !== 0)
      throw new Error(`pi ${args.join(" ")} exited ${r.code}\nstdout:\n${r.stdout}\nstderr:\n${r.stderr}`);
    return r;
  };
  await step(["--provider", "faux", "--model", "faux-1", "-n", "CLI session", "-p", "hello there"]);
  await step(["-c", "-p", "please read notes"]);
  const [first] = sessionFiles(root);
  if (!first) throw new Error(`no session file written under ${root}/agent/sessions`);
  const id = sessionIdOf(first);
  await step(["--session", id, "-p", "third message"]);
  await step(["--fork", id, "-p", "forked message"]);
  await step(["-c", "-p", "continue the fork"]);
  return { root, id, steps, files: sessionFiles(root) };
}

function normalizeRun(run) {
  const encodedRoot = run.root.replace(/^[/\\]/, "").replace(/[/\\:]/g, "-");
  const norm = new Normalizer([run.root, encodedRoot]);
  const files = run.files.map((f) => ({ path: f, lines: readJsonl(f) }));
  for (const f of files) norm.registerEntries(f.lines);
  const log = existsSync(join(run.root, "faux.log")) ? readJsonl(join(run.root, "faux.log")) : [];
  return {
    stdout: run.steps.map((s) => s.stdout.trim()),
    files: norm.value(files),
    contexts: norm.value(log),
  };
}

function expectSameRun(actual, expected) {
  expect(actual.stdout, "print-mode output").toEqual(expected.stdout);
  expect(actual.files.map((f) => f.path)).toEqual(expected.files.map((f) => f.path));
  for (let i = 0; i < expected.files.length; i++) {
    expect(actual.files[i].lines, `session file #${i + 1}`).toEqual(expected.files[i].lines);
  }
  expect(actual.contexts, "contexts received by the model").toEqual(expected.contexts);
}

test("node 22 binary is available", () => {
  expect(node22, "no Node >= 22.19: run `node scripts/node22.mjs --ensure` or set PI_NODE22").toBeTruthy();
});

describe("pi CLI (print mode) with a faux provider", () => {
  let ref;
  let refNorm;
  beforeAll(async () => {
    ref = await runSequence("pi-cli-ref-", { hook: false });
    refNorm = normalizeRun(ref);
  }, TIMEOUT);

  test("reference: answers, continues, opens by id and forks", () => {
    expect(refNorm.stdout).toEqual([
      "echo[faux-1] user: hello there",
      "echo[faux-1] toolResult: please read notes",
      "echo[faux-1] user: third message",
      "echo[faux-1] user: forked message",
      "echo[faux-1] user: continue the fork",
    ]);
    for (const s of ref.steps) expect(s.stderr).not.toContain(MARKER);
    expect(ref.files).toHaveLength(2);
    const [orig, fork] = ref.files.map(readJsonl);
    expect(orig[0]).toMatchObject({ type: "session", id: ref.id, cwd: join(ref.root, "project") });
    expect(fork[0]).toMatchObject({ type: "session", parentSession: ref.files[0] });
    // parent chain is linear and complete in both files
    for (const lines of [orig, fork]) {
      const entries = lines.slice(1);
      for (const [i, e] of entries.entries()) expect(e.parentId).toBe(i === 0 ? null : entries[i - 1].id);
    }
    const userTexts = (lines) =>
      lines.filter((e) => e.type === "message" && e.message.role === "user").map((e) => e.message.content[0].text);
    expect(userTexts(orig)).toEqual(["hello there", "please read notes", "third message"]);
    expect(userTexts(fork)).toEqual([
      "hello there",
      "please read notes",
      "third message",
      "forked message",
      "continue the fork",
    ]);
    expect(orig.some((e) => e.type === "session_info" && e.name === "CLI session")).toBe(true);
    expect(orig.some((e) => e.type === "message" && e.message.role === "toolResult")).toBe(true);
    // the fork keeps the original's entries (same ids) and appends its own
    expect(fork.slice(1, orig.length).map((e) => e.id)).toEqual(orig.slice(1).map((e) => e.id));
    expect(refNorm.contexts.length).toBe(6); // 5 prompts + 1 follow-up after the tool result
  });

  test(
    "reference run is deterministic after normalization",
    async () => {
      const again = normalizeRun(await runSequence("pi-cli-rf2-", { hook: false }));
      expectSameRun(again, refNorm);
    },
    TIMEOUT,
  );

  describe.skipIf(!nativeAvailable)(
    `native via --import lib/register.mjs${nativeAvailable ? "" : ` (skipped: ${nativeProbe.reason})`}`,
    () => {
      let nat;
      // biome-ignore lint/suspicious/noDuplicateTestHooks: this hook is in the nested describe.skipIf(...)(...) block, which Biome does not recognise as a describe.
      beforeAll(async () => {
        nat = await runSequence("pi-cli-nat-", { hook: true });
      }, TIMEOUT);

      test("every pi process reports the redirect exactly once", () => {
        for (const s of nat.steps) {
          expect(s.stderr.split(MARKER).length - 1, `stderr of pi ${s.args.join(" ")}:\n${s.stderr}`).toBe(1);
        }
      });

      test("native sessions, output and model contexts match the reference", () => {
        expectSameRun(normalizeRun(nat), refNorm);
      });

      test(
        "reference CLI continues a native-written session like a reference-written one",
        async () => {
          const refCont = await pi(ref.root, ["-c", "-p", "reference continues"], { hook: false });
          const natCont = await pi(nat.root, ["-c", "-p", "reference continues"], { hook: false });
          expect(natCont.code, natCont.stderr).toBe(0);
          expect(natCont.stdout.trim()).toBe(refCont.stdout.trim());
          const a = normalizeRun({ ...nat, steps: [], files: sessionFiles(nat.root) });
          const b = normalizeRun({ ...ref, steps: [], files: sessionFiles(ref.root) });
          expect(a.files).toEqual(b.files);
          expect(a.contexts).toEqual(b.contexts);
        },
        TIMEOUT,
      );

      test(
        "without PI_SESSION_NATIVE_DEBUG the hook is silent",
        async () => {
          const r = await pi(nat.root, ["-c", "-p", "quiet please"], { hook: true, debug: false });
          expect(r.code, r.stderr).toBe(0);
          expect(r.stderr).not.toContain(MARKER);
        },
        TIMEOUT,
      );
    },
  );
});
