// The verification corpus: pi's own, unpatched session module (side A) against this package (side B),
// the same operations on both, outputs compared exactly. It decides whether a pi build this package
// has never seen may be served (lib/verify/run.mjs), and runs in CI against the pi releases we ship
// digests for. Four parts:
//   surface   every export of pi's module, every static member of its SessionManager and every
//             public (not `_`-prefixed: TypeScript-private in pi's .d.ts) prototype member exists
//             on ours, with the same kind (method, getter, value)
//   sequences seeded operation sequences (lib/verify/differential.mjs): every public method and
//             free function the module exports, branching, labels, compaction, branch summaries,
//             custom entries, v1/v2 migration, malformed lines, errors thrown, and the files
//             written byte for byte (ids and times mapped)
//   listing   SessionManager.list / listAll over one store both read: the SessionInfo fields,
//             order and progress counts
//   defaults  the default agent and session folders (HOME, PI_CODING_AGENT_DIR)
//   scenarios fixed states where a listing's, lookup's or open's answer depends on the branch taken
//             (lib/verify/scenarios.mjs)
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { DiffError, FIXTURES, fixtureContent, parseSkip, runSequence } from "./differential.mjs";
import { runScenarios } from "./scenarios.mjs";

const SEQUENCE_CONFIG = {
  sequences: 0, // the caller's seeds decide
  persistEvery: 2, // every other sequence writes files, so file bytes are compared often
  fullEvery: 6,
  minOps: 60,
  maxOps: 160,
  keep: false,
  verbose: false,
  reproduce: "pi-native --verify",
};

function memberKind(owner, name) {
  const d = Object.getOwnPropertyDescriptor(owner, name);
  if (!d) return "missing";
  if (d.get || d.set) return "accessor";
  return typeof d.value === "function" ? "method" : "value";
}

/** Names pi has that we lack, or have as another kind of member. */
export function surfaceDifferences(ref, impl) {
  const out = [];
  for (const name of Object.keys(ref)) {
    if (!(name in impl)) out.push(`export ${name} is missing`);
    else if (typeof ref[name] !== typeof impl[name])
      out.push(`export ${name} is a ${typeof impl[name]}, pi's is a ${typeof ref[name]}`);
  }
  if (ref.CURRENT_SESSION_VERSION !== undefined && ref.CURRENT_SESSION_VERSION !== impl.CURRENT_SESSION_VERSION)
    out.push(`CURRENT_SESSION_VERSION is ${impl.CURRENT_SESSION_VERSION}, pi's is ${ref.CURRENT_SESSION_VERSION}`);
  const A = ref.SessionManager;
  const B = impl.SessionManager;
  if (typeof A !== "function" || typeof B !== "function") return out;
  for (const name of Object.getOwnPropertyNames(A)) {
    if (["length", "name", "prototype"].includes(name)) continue;
    const [ka, kb] = [memberKind(A, name), memberKind(B, name)];
    if (ka !== kb)
      out.push(`static SessionManager.${name} is ${kb === "missing" ? "missing" : `a ${kb}, pi's a ${ka}`}`);
  }
  for (const name of Object.getOwnPropertyNames(A.prototype)) {
    if (name === "constructor" || name.startsWith("_")) continue;
    const [ka, kb] = [memberKind(A.prototype, name), memberKind(B.prototype, name)];
    if (ka !== kb) out.push(`SessionManager#${name} is ${kb === "missing" ? "missing" : `a ${kb}, pi's a ${ka}`}`);
  }
  return out;
}

/** A SessionInfo as plain, comparable data (Dates as times; paths relative to the store). */
function infoData(info, root) {
  const rel = (p) => (typeof p === "string" && p.startsWith(root) ? `<store>${p.slice(root.length)}` : p);
  const out = {};
  for (const key of Object.keys(info)) {
    const v = info[key];
    out[key] = v instanceof Date ? `Date(${v.getTime()})` : key === "path" || key === "parentSessionPath" ? rel(v) : v;
  }
  return out;
}

function firstDifference(a, b) {
  const ja = JSON.stringify(a) ?? "undefined";
  const jb = JSON.stringify(b) ?? "undefined";
  if (ja === jb) return undefined;
  let i = 0;
  while (i < ja.length && ja[i] === jb[i]) i++;
  const from = Math.max(0, i - 60);
  return `at character ${i}: pi ${ja.slice(from, i + 100)} | ours ${jb.slice(from, i + 100)}`;
}

async function listed(call) {
  const calls = [];
  const infos = await call((loaded, total) => calls.push([loaded, total]));
  return { infos, calls };
}

/** A store of sessions both sides list: files written by pi's own SessionManager plus hand-made fixtures. */
function makeStore(ref, root) {
  const cwdA = "/verify/project-a";
  const cwdB = "/verify/project b/ünï";
  const projectDir = path.join(root, "--verify-project-a--");
  fs.mkdirSync(projectDir, { recursive: true });
  const t0 = Date.parse("2026-01-02T03:04:05.000Z");
  let k = 0;
  const touch = (file) => {
    k++;
    const when = new Date(t0 + k * 60_000);
    fs.utimesSync(file, when, when);
  };
  for (let s = 0; s < 4; s++) {
    const sm = ref.SessionManager.create(s === 3 ? cwdB : cwdA, projectDir);
    const u = sm.appendMessage({ role: "user", content: `question ${s} about the parser`, timestamp: t0 + s });
    sm.appendMessage({
      role: "assistant",
      content: [{ type: "text", text: `answer ${s}` }],
      provider: "p",
      model: "m",
      timestamp: t0 + s + 1,
    });
    if (s === 1) sm.appendSessionInfo("  named session  ");
    if (s === 2) {
      sm.branch(u);
      sm.appendMessage({ role: "user", content: [{ type: "text", text: "branch text" }], timestamp: t0 + 9 });
    }
    touch(sm.getSessionFile());
  }
  for (const kind of FIXTURES) {
    const file = path.join(projectDir, `2026-01-01T00-00-00-000Z_fixture-${kind}.jsonl`);
    fs.writeFileSync(file, fixtureContent(kind, cwdA));
    touch(file);
  }
  fs.writeFileSync(path.join(projectDir, "notes.txt"), "not a session\n");
  return { cwdA, cwdB, projectDir };
}

async function listingCheck(ref, impl, tmp) {
  const root = path.join(tmp, "store");
  const { cwdA, projectDir } = makeStore(ref, root);
  /** @type {[string, (m: any, p: any) => Promise<any[]>][]} */
  const cases = [
    ["list(cwd, dir)", (m, p) => m.SessionManager.list(cwdA, projectDir, p)],
    ["list(other cwd, dir)", (m, p) => m.SessionManager.list("/verify/elsewhere", projectDir, p)],
    ["listAll(dir)", (m, p) => m.SessionManager.listAll(root, p)],
  ];
  for (const [name, call] of cases) {
    const a = await listed((p) => call(ref, p));
    const b = await listed((p) => call(impl, p));
    const da = a.infos.map((i) => infoData(i, root));
    const db = b.infos.map((i) => infoData(i, root));
    const diff = firstDifference(da, db);
    if (diff) return `${name}: the sessions listed differ ${diff}`;
    const last = (calls) => JSON.stringify(calls.at(-1) ?? null);
    if (last(a.calls) !== last(b.calls))
      return `${name}: the last progress call differs: pi ${last(a.calls)}, ours ${last(b.calls)}`;
  }
  return undefined;
}

async function defaultsCheck(ref, impl, tmp) {
  const saved = {
    HOME: process.env.HOME,
    USERPROFILE: process.env.USERPROFILE,
    AGENT: process.env.PI_CODING_AGENT_DIR,
  };
  const restore = () => {
    for (const [k, v] of [
      ["HOME", saved.HOME],
      ["USERPROFILE", saved.USERPROFILE],
      ["PI_CODING_AGENT_DIR", saved.AGENT],
    ]) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  };
  try {
    const home = path.join(tmp, "home");
    fs.mkdirSync(home, { recursive: true });
    process.env.HOME = home;
    process.env.USERPROFILE = home;
    for (const agentDir of [undefined, path.join(tmp, "agent-dir")]) {
      if (agentDir === undefined) delete process.env.PI_CODING_AGENT_DIR;
      else process.env.PI_CODING_AGENT_DIR = agentDir;
      const where = agentDir ? "PI_CODING_AGENT_DIR set" : "HOME only";
      const a = ref.SessionManager.create("/verify/default-cwd");
      const b = impl.SessionManager.create("/verify/default-cwd");
      const dirs = [a.getSessionDir(), b.getSessionDir()];
      if (dirs[0] !== dirs[1]) return `default session folder (${where}): pi ${dirs[0]}, ours ${dirs[1]}`;
      const uses = [a.usesDefaultSessionDir(), b.usesDefaultSessionDir()];
      if (uses[0] !== uses[1]) return `usesDefaultSessionDir() (${where}): pi ${uses[0]}, ours ${uses[1]}`;
      const fa = path.dirname(a.getSessionFile() ?? "");
      const fb = path.dirname(b.getSessionFile() ?? "");
      if (fa !== fb) return `session file folder (${where}): pi ${fa}, ours ${fb}`;
    }
    return undefined;
  } finally {
    restore();
  }
}

/**
 * Runs the corpus. `ref`: pi's module namespace (unpatched); `impl`: ours. Returns
 * `{ ok, checks: [{ name, ok, detail, ms }], failure }` where `failure` is the first failed check.
 * @param {{ ref: any, impl: any, seeds?: number, onCheck?: (check: any) => void }} options
 */
export async function runCorpus({ ref, impl, seeds = 40, onCheck }) {
  const checks = [];
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "pi-session-native-verify-"));
  const record = (name, detail, started) => {
    const check = { name, ok: !detail, detail, ms: Math.round(performance.now() - started) };
    checks.push(check);
    onCheck?.(check);
    return check.ok;
  };
  try {
    let t = performance.now();
    const missing = surfaceDifferences(ref, impl);
    if (!record("API surface", missing.length ? missing.join("; ") : undefined, t)) return finish();

    // the cheap checks first: a pi that differs is told in a fraction of a second
    t = performance.now();
    if (!record("list / listAll", await listingCheck(ref, impl, tmp), t)) return finish();

    t = performance.now();
    if (!record("default folders", await defaultsCheck(ref, impl, tmp), t)) return finish();

    t = performance.now();
    if (!record("scenarios", await runScenarios({ ref, impl, tmp, compare: firstDifference }), t)) return finish();

    t = performance.now();
    let detail;
    const skip = parseSkip({});
    for (let seed = 0; seed < seeds && !detail; seed++) {
      try {
        runSequence(seed, { ref, impl, implName: "pi-session-native" }, SEQUENCE_CONFIG, skip);
      } catch (error) {
        if (!(error instanceof DiffError)) throw error;
        detail = String(error.message)
          .split("\n")
          .filter((l) => !l.startsWith("Temp dir:") && !l.startsWith("Reproduce:"))
          .slice(0, 8)
          .join("\n");
      }
    }
    record(`operation sequences (${seeds} seeds)`, detail, t);
    return finish();
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }

  function finish() {
    const failure = checks.find((c) => !c.ok);
    return { ok: !failure, checks, failure };
  }
}
