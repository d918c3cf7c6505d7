#!/usr/bin/env node
// Side-by-side benchmark: native SessionManager (./index.js) vs the reference
// (@earendil-works/pi-coding-agent@1.6.0 dist/core/session-manager.js).
//
//   npm run bench                      full suite (1/10/100 MB, store, peak RSS)
//   node bench/run.mjs --quick         1 and 10 MB only, 3 runs (store ops skipped; add --store to include)
//   node bench/run.mjs --only <substr> only operations whose name contains <substr> (repeatable)
//   node bench/run.mjs --big           also open + buildSessionContext on 1 GB (child processes; may fail)
//   --runs N  --warmup N               measured runs (default 5, quick 3) / warm-up runs (default 1)
//   --native <path>                    module exporting SessionManager (default ./index.js)
//   --ref-only                         skip the native implementation
//   --json <file>                      also write raw samples as JSON
//   --only methods|pi-bin|store|core|search   only that suite, each run as a child: per
//                                      method, fresh process each (bench/methods.mjs; with --big the
//                                      1 GB session full of images), the real pi bin, pi vs pi-native
//                                      (bench/pi-bin.mjs), stores of 10,000 sessions (bench/store.mjs),
//                                      the Rust core's scan (cargo, as npm run bench:core), search
//                                      over all sessions (bench/search.mjs). A full run runs
//                                      them all after the library suite; --no-<key> skips one
//   --big (full run)                   is passed on to bench/methods.mjs (1 GB image session) and
//                                      bench/pi-bin.mjs (the picker on 10,000 sessions, ~2 GB of data)
//
// Runs of the two implementations alternate (ref,native / native,ref / ...); the table shows medians.
// Setup (opening a session, copying files, building messages) is not timed unless it is the operation.

import { spawnSync } from "node:child_process";
import {
  existsSync,
  renameSync,
  appendFileSync,
  copyFileSync,
  cpSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { createRequire } from "node:module";
import os from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import v8 from "node:v8";
import vm from "node:vm";
import {
  DEFAULT_DATA_DIR,
  generate,
  makeMessages,
  singlePath,
  storeDir,
  storeProjectCwd,
  writeSession,
} from "./gen.mjs";
import { fmtMs, fmtRatio, median, num, parseOptions, runNodeJson } from "./lib.mjs";

const HERE = dirname(fileURLToPath(import.meta.url));
const ROOT = resolve(HERE, "..");
const DATA = DEFAULT_DATA_DIR;
const REF_PATH = join(ROOT, "node_modules/@earendil-works/pi-coding-agent/dist/core/session-manager.js");
const MB = 1024 * 1024;

// list/listAll resolve ~/.pi/agent from PI_CODING_AGENT_DIR at call time; children inherit it.
process.env.PI_CODING_AGENT_DIR = storeDir(DATA);

// ---------------------------------------------------------------------------
// args
// ---------------------------------------------------------------------------
const { values: args } = parseOptions(
  {
    child: { type: "string" },
    quick: { type: "boolean" },
    store: { type: "boolean" },
    big: { type: "boolean" },
    giant: { type: "boolean" },
    runs: { type: "string" },
    warmup: { type: "string" },
    only: { type: "string", multiple: true },
    native: { type: "string" },
    "ref-only": { type: "boolean" },
    json: { type: "string" },
    "no-methods": { type: "boolean" },
    "no-pi-bin": { type: "boolean" },
    "no-search": { type: "boolean" },
    "no-store": { type: "boolean" },
    "no-core": { type: "boolean" },
  },
  "usage: node bench/run.mjs [--quick] [--store] [--big] [--giant] [--runs N] [--warmup N] [--only <substr>]... [--native <path>] [--ref-only] [--json <file>] [--no-methods] [--no-pi-bin] [--no-store] [--no-core] [--no-search]",
);
const flag = (f) => args[f.replace(/^--/, "")] === true;

// ---------------------------------------------------------------------------
// implementations
// ---------------------------------------------------------------------------
async function loadRef() {
  return (await import(pathToFileURL(REF_PATH).href)).SessionManager;
}
async function loadNative(path) {
  // CommonJS by default (index.js); an .mjs path is imported (handy for testing the runner).
  const mod = path.endsWith(".mjs") ? await import(pathToFileURL(path).href) : createRequire(import.meta.url)(path);
  const SM = mod.SessionManager ?? mod.default?.SessionManager;
  if (typeof SM !== "function") throw new Error(`${path} does not export SessionManager`);
  if (typeof SM.open !== "function") throw new Error(`${path}: SessionManager.open is not a function`);
  return SM;
}
const nativePath = resolve(ROOT, args.native ?? "index.js");

let gc = () => {};
try {
  v8.setFlagsFromString("--expose-gc");
  gc = vm.runInNewContext("gc");
} catch {}

function tmpDir() {
  return mkdtempSync(join(os.tmpdir(), "pi-bench-"));
}
function vmHWM() {
  try {
    const m = /VmHWM:\s+(\d+) kB/.exec(readFileSync("/proc/self/status", "utf8"));
    if (m) return Number(m[1]) / 1024;
  } catch {}
  return process.resourceUsage().maxRSS / 1024; // kB on Linux
}

// ---------------------------------------------------------------------------
// child mode: cold list/listAll, peak RSS, 1 GB open
// ---------------------------------------------------------------------------
if (args.child !== undefined) {
  const spec = JSON.parse(args.child);
  const SM = spec.impl === "native" ? await loadNative(spec.nativePath) : await loadRef();
  const baseMB = process.memoryUsage().rss / MB;
  let out;
  if (spec.op === "list") {
    const t0 = performance.now();
    const r = await SM.list(spec.cwd);
    out = { ms: performance.now() - t0, n: r.length };
  } else if (spec.op === "listAll") {
    const t0 = performance.now();
    const r = await SM.listAll();
    out = { ms: performance.now() - t0, n: r.length, baseMB, peakMB: vmHWM() };
    globalThis.__keep = r;
  } else if (spec.op === "openContext") {
    const t0 = performance.now();
    const sm = SM.open(spec.file);
    const ctx = sm.buildSessionContext();
    const ms = performance.now() - t0;
    out = { ms, n: ctx.messages.length, baseMB, peakMB: vmHWM() };
    globalThis.__keep = [sm, ctx];
  } else if (spec.op === "openContextFirstBranch" || spec.op === "openFirstTree") {
    // Issue 39's in-process rows: open + context + the first whole-branch hand-out, or open +
    // the first getTree(); each step timed, wall and CPU (this process's threads).
    const cpu = () => {
      const u = process.cpuUsage();
      return (u.user + u.system) / 1000;
    };
    const t0 = performance.now();
    const c0 = cpu();
    const sm = SM.open(spec.file);
    const openMs = performance.now() - t0;
    let n;
    if (spec.op === "openFirstTree") n = sm.getTree().length;
    else {
      sm.buildSessionContext();
      n = sm.getBranch().length;
    }
    out = { ms: performance.now() - t0, cpuMs: cpu() - c0, openMs, n, baseMB, peakMB: vmHWM() };
    globalThis.__keep = sm;
  } else if (spec.op === "openContextBranch") {
    // What pi does at start-up: open, the context twice, the branch six times.
    const t0 = performance.now();
    const sm = SM.open(spec.file);
    const ctx = [sm.buildSessionContext(), sm.buildSessionContext()];
    let branch;
    for (let i = 0; i < 6; i++) branch = sm.getBranch();
    const ms = performance.now() - t0;
    out = { ms, n: branch.length, baseMB, peakMB: vmHWM() };
    globalThis.__keep = [sm, ctx, branch];
  }
  process.stdout.write(`${JSON.stringify(out)}\n`);
  process.exit(0);
}

/** One child process of this script (`--child`): its JSON answer. */
function runChild(impl, spec, timeout = 600_000) {
  return runNodeJson(fileURLToPath(import.meta.url), ["--child", JSON.stringify({ impl, nativePath, ...spec })], {
    nodeArgs: spec.nodeArgs ?? [],
    timeout,
    env: { ...process.env, ...(spec.env ?? {}) },
  });
}

// ---------------------------------------------------------------------------
// workloads
// ---------------------------------------------------------------------------
const quick = flag("--quick");
const withStore = !quick || flag("--store");
const big = flag("--big");
const RUNS = num(args.runs, quick ? 3 : 5, "runs");
const WARMUP = num(args.warmup, 1, "warmup");
const only = args.only ?? [];
// Benchmarks in their own scripts, run as child processes: per method in fresh processes
// (bench/methods.mjs), the real pi bin, plain vs pi-native (bench/pi-bin.mjs), stores of
// 10,000 sessions (bench/store.mjs), the Rust core's scan (`npm run bench:core`'s test) and
// search over all sessions (bench/search.mjs): together, every table of BENCHMARKS.md.
// `--only <key>` runs only that one; a full run (no --only, not --quick / --ref-only) runs
// them all after the library suite; --no-<key> skips one.
const SUITES = [
  { key: "methods", script: "methods.mjs", title: "Per method, fresh process each (bench/methods.mjs)", big: true },
  {
    key: "pi-bin",
    script: "pi-bin.mjs",
    title: "Through the real pi bin: pi vs pi-native (bench/pi-bin.mjs)",
    big: true,
  },
  { key: "store", script: "store.mjs", title: "Stores of 10,000 sessions (bench/store.mjs)" },
  {
    key: "core",
    title: "Core (Rust, no Node): crates/core/src/jsonl.rs scan_throughput on the 100 MB session",
    command: [
      "cargo",
      ["test", "--release", "-p", "pi-session-core", "--lib", "scan_throughput", "--", "--ignored", "--nocapture"],
    ],
    env: { SCAN_FILE: singlePath(DATA, "100mb") },
    // Run alone (`--only core`), it makes the bench data first, as npm run bench:core does.
    prepare: () => generate({ log: (s) => console.log(s) }),
  },
  { key: "search", script: "search.mjs", title: "Search over all sessions (bench/search.mjs)" },
];
const isSuite = (s) => SUITES.some((x) => x.key === s.toLowerCase());
const suitesOnly = only.length > 0 && only.every(isSuite);
const suitesToRun = SUITES.filter(
  (x) =>
    (suitesOnly && only.some((s) => s.toLowerCase() === x.key)) ||
    (!suitesOnly &&
      !flag(`--no-${x.key}`) &&
      !quick &&
      !flag("--ref-only") &&
      (only.length === 0 || only.some((s) => s.toLowerCase() === x.key))),
);
function runSuite(suite, extra = []) {
  if (suitesOnly) suite.prepare?.();
  const [cmd, cargs] = suite.command ?? [process.execPath, [join(HERE, suite.script), ...extra]];
  const r = spawnSync(cmd, cargs, { stdio: "inherit", cwd: ROOT, env: { ...process.env, ...suite.env } });
  if (r.error) console.log(`  not run: ${r.error.message}`);
  return r.status ?? 1;
}
if (suitesOnly) {
  const argv = process.argv.slice(2);
  const rest = argv.filter((a, i) => !(a === "--only" || (i > 0 && argv[i - 1] === "--only")));
  let code = 0;
  for (const suite of suitesToRun) code ||= runSuite(suite, suitesToRun.length === 1 ? rest : []);
  process.exit(code);
}
const S = quick ? "10mb" : "100mb";
const SL = quick ? "10 MB" : "100 MB";
const file = (name) => singlePath(DATA, name);
const LIST_PROJECT = 9; // a store dir with 100 x ~200 KB sessions (proj0-2 also hold the 50-200 MB ones)

const ops = [];
const op = (o) => ops.push(o);
for (const [n, label] of [["1mb", "1 MB"], ["10mb", "10 MB"], ...(quick ? [] : [["100mb", "100 MB"]])])
  op({ name: `SessionManager.open ${label}`, run: (SM) => SM.open(file(n)), check: (sm) => sm.getLeafId() });
op({
  name: `open + buildSessionContext() ${SL}`,
  run: (SM) => SM.open(file(S)).buildSessionContext(),
  check: (ctx) => `${ctx.messages.length} msgs, ${ctx.thinkingLevel}, ${ctx.model?.modelId}`,
});
op({
  name: `first getEntries() ${SL}`,
  setup: (SM) => SM.open(file(S)),
  run: (_SM, sm) => sm.getEntries(),
  check: (e) => e.length,
});
// The comparable full-materialization flow: the reference parses everything in open(), we
// parse lazily on the first getEntries(); compare the sums.
op({ name: `open + first getEntries() ${SL}`, run: (SM) => SM.open(file(S)).getEntries(), check: (e) => e.length });
op({
  name: `open + first getTree() ${SL}`,
  run: (SM) => SM.open(file(S)).getTree(),
  check: (t) => `${t.length} roots`,
});
op({ name: `open + getBranch() ${SL}`, run: (SM) => SM.open(file(S)).getBranch(), check: (b) => b.length });
op({
  name: `open + buildSessionContext() + first getBranch() ${SL}`,
  run: (SM) => {
    const sm = SM.open(file(S));
    sm.buildSessionContext();
    return sm.getBranch();
  },
  check: (b) => b.length,
});
op({
  name: `repeated getEntries() ${SL} (per call)`,
  perCall: 20,
  setup: (SM) => {
    const sm = SM.open(file(S));
    sm.getEntries();
    return sm;
  },
  run: (_SM, sm) => {
    let e;
    for (let i = 0; i < 20; i++) e = sm.getEntries();
    return e;
  },
  check: (e) => e.length,
});
op({
  name: `first getTree() ${SL}`,
  setup: (SM) => SM.open(file(S)),
  run: (_SM, sm) => sm.getTree(),
  check: (t) => `${t.length} roots`,
});
op({
  name: `getBranch() ${SL}`,
  setup: (SM) => SM.open(file(S)),
  run: (_SM, sm) => sm.getBranch(),
  check: (b) => b.length,
});
op({
  name: "appendMessage x 10,000 (~2 KB, persisted)",
  setup: (SM) => {
    const dir = tmpDir();
    const f = join(dir, "2025-06-01T09-00-00-000Z_01972ab8-2280-7fea-80db-57e26aa706a1.jsonl");
    copyFileSync(file("1mb"), f);
    const sm = SM.open(f, dir);
    sm.getLeafId();
    return { dir, sm, msgs: makeMessages(10_000) };
  },
  run: (_SM, c) => {
    for (const m of c.msgs) c.sm.appendMessage(m);
    return c.sm;
  },
  check: (sm) => sm.getEntryCount?.() ?? sm.getEntries().length,
  teardown: (c) => rmSync(c.dir, { recursive: true, force: true }),
});
/** A fresh in-memory session and 10,000 ~2 KB messages to append to it. */
const inMemorySetup = (SM) => {
  const sm = SM.inMemory("/home/u/bench");
  sm.getLeafId();
  return { sm, msgs: makeMessages(10_000) };
};
op({
  name: "appendMessage x 10,000 (~2 KB, in-memory session)",
  setup: inMemorySetup,
  run: (_SM, c) => {
    for (const m of c.msgs) c.sm.appendMessage(m);
    return c.sm;
  },
  check: (sm) => sm.getEntries().length,
});
op({
  // The native in-memory appends are queued in JS and handed to Rust by the next read
  // (lib/session-manager.js `_flush`): this row counts that hand-over too.
  name: "appendMessage x 10,000 (in-memory) + buildSessionContext",
  setup: inMemorySetup,
  run: (_SM, c) => {
    for (const m of c.msgs) c.sm.appendMessage(m);
    return c.sm.buildSessionContext();
  },
  check: (ctx) => ctx.messages.length,
});
op({
  name: "createBranchedSession(leaf) 10 MB",
  setup: (SM) => {
    const dir = tmpDir();
    const sm = SM.open(file("10mb"), dir);
    return { dir, sm, leaf: sm.getLeafId() };
  },
  run: (_SM, c) => c.sm.createBranchedSession(c.leaf),
  check: (_p, c) => c.sm.getEntries().length,
  teardown: (c) => rmSync(c.dir, { recursive: true, force: true }),
});
op({
  name: "SessionManager.forkFrom 10 MB",
  setup: () => ({ dir: tmpDir() }),
  run: (SM, c) => SM.forkFrom(file("10mb"), "/home/u/forked", c.dir),
  check: (sm) => sm.getEntries().length,
  teardown: (c) => rmSync(c.dir, { recursive: true, force: true }),
});
op({
  name: `pi-like resume ${SL} (open+context+getEntries+getSessionName)`,
  run: (SM) => {
    const sm = SM.open(file(S));
    const ctx = sm.buildSessionContext();
    const entries = sm.getEntries();
    const name = sm.getSessionName();
    return { ctx, entries, name };
  },
  check: (r) => `${r.ctx.messages.length} msgs, ${r.entries.length} entries, ${JSON.stringify(r.name)}`,
});
if (withStore) {
  const cwd = storeProjectCwd(LIST_PROJECT);
  op({
    name: `SessionManager.list (cold) proj${LIST_PROJECT}: 100 sessions`,
    child: { op: "list", cwd },
    check: (r) => r.n,
  });
  op({
    name: `SessionManager.list (warm) proj${LIST_PROJECT}: 100 sessions`,
    run: (SM) => SM.list(cwd),
    check: (r) => r.length,
  });
  // pi appends to the session it works in; the next /resume lists that directory again.
  // On a copy of proj1 (101 sessions, one of 125 MB; timestamps kept so the index may cache
  // them), each run lists the directory (untimed: the previous /resume), appends one ~2 KB
  // message to the 125 MB session (untimed) and lists the directory again (timed).
  let grownDir;
  const grownCwd = storeProjectCwd(1);
  op({
    name: "SessionManager.list after an append to its 125 MB session (proj1: 101 sessions)",
    setup: async (SM) => {
      if (!grownDir) {
        const root = tmpDir();
        process.on("exit", () => rmSync(root, { recursive: true, force: true }));
        grownDir = join(root, "proj1");
        cpSync(join(storeDir(DATA), "sessions", "--home-u-proj1--"), grownDir, {
          recursive: true,
          preserveTimestamps: true,
        });
        rmSync(join(grownDir, ".pi-session-index"), { force: true });
      }
      await SM.list(grownCwd, grownDir);
      const big = readdirSync(grownDir)
        .map((f) => join(grownDir, f))
        .filter((f) => f.endsWith(".jsonl"))
        .sort((a, b) => statSync(b).size - statSync(a).size)[0];
      const [m] = makeMessages(1);
      appendFileSync(
        big,
        `${JSON.stringify({ type: "message", id: Math.random().toString(16).slice(2, 10), parentId: null, timestamp: new Date().toISOString(), message: m })}\n`,
      );
      return SM;
    },
    run: (SM) => SM.list(grownCwd, grownDir),
    check: (r) => r.length,
  });
  op({ name: "SessionManager.listAll (cold) store: 1,003 sessions", child: { op: "listAll" }, check: (r) => r.n });
  op({
    name: "SessionManager.listAll (warm) store: 1,003 sessions",
    run: (SM) => SM.listAll(),
    check: (r) => r.length,
  });
}

// ---------------------------------------------------------------------------
// main
// ---------------------------------------------------------------------------
const fmt = (ms) => fmtMs(ms);

console.log("pi-session-native benchmark");
generate({ big, quick: Boolean(quick && !withStore), log: (s) => console.log(s) });

const impls = [{ key: "ref", label: "reference", SM: await loadRef() }];
let nativeNote = "";
if (!flag("--ref-only")) {
  try {
    impls.push({ key: "native", label: "native", SM: await loadNative(nativePath) });
  } catch (e) {
    nativeNote = `native module not loadable (${String(e.message).split("\n")[0]}) -- reference-only figures`;
  }
} else nativeNote = "--ref-only: native skipped";
const hasNative = impls.length > 1;

const cpu = os.cpus();
console.log(
  `date ${new Date().toISOString()} | node ${process.version} | ${os.platform()} ${os.release()} | ${cpu[0]?.model?.trim()} x${cpu.length} | ${(os.totalmem() / 2 ** 30).toFixed(0)} GiB`,
);
console.log(`runs ${RUNS} measured + ${WARMUP} warm-up per op, alternating; medians${quick ? " (--quick)" : ""}`);
if (nativeNote) console.log(`NOTE: ${nativeNote}`);
console.log("");

const results = [];
const selected = ops.filter(
  (o) => only.length === 0 || only.some((s) => o.name.toLowerCase().includes(s.toLowerCase())),
);

for (const o of selected) {
  const samples = Object.fromEntries(impls.map((i) => [i.key, []]));
  const errors = {};
  const checks = {};
  for (let it = 0; it < WARMUP + RUNS; it++) {
    const order = it % 2 === 0 ? impls : [...impls].reverse();
    for (const impl of order) {
      if (errors[impl.key]) continue;
      try {
        let ms, value, ctx;
        if (o.child) {
          value = await runChild(impl.key, o.child);
          ms = value.ms;
        } else {
          gc();
          ctx = o.setup ? await o.setup(impl.SM) : undefined;
          gc();
          const t0 = performance.now();
          value = await o.run(impl.SM, ctx);
          ms = (performance.now() - t0) / (o.perCall ?? 1);
        }
        if (it === 0 && o.check) checks[impl.key] = String(o.check(value, ctx));
        if (o.teardown) o.teardown(ctx);
        value = ctx = undefined;
        if (it >= WARMUP) samples[impl.key].push(ms);
      } catch (e) {
        errors[impl.key] = String(e?.message ?? e)
          .split("\n")[0]
          .slice(0, 120);
      }
    }
  }
  const r = { name: o.name, samples, errors, checks };
  for (const i of impls) r[i.key] = samples[i.key].length ? median(samples[i.key]) : undefined;
  results.push(r);
  const cell = (k) => (errors[k] ? `ERROR` : fmt(r[k]));
  console.log(
    `  ${o.name}: ref ${cell("ref")} ms${hasNative ? ` | native ${cell("native")} ms ${fmtRatio(r.native, r.ref)}` : ""}`,
  );
  for (const [k, msg] of Object.entries(errors)) console.log(`    ${k} error: ${msg}`);
  if (hasNative && checks.ref !== undefined && checks.native !== undefined && checks.ref !== checks.native)
    console.log(`    WARNING result mismatch: ref=${checks.ref} native=${checks.native}`);
}

// peak RSS in separate processes
const rss = [];
const rssJobs = [];
if (only.length === 0 || only.some((s) => "peak rss".includes(s.toLowerCase())))
  rssJobs.push({ name: `peak RSS: open + buildSessionContext() ${SL}`, file: file(S), runs: quick ? 1 : 3 });
if (only.length === 0 || only.some((s) => "peak rss getbranch".includes(s.toLowerCase())))
  rssJobs.push({
    name: `peak RSS: open + buildSessionContext() x2 + getBranch() x6 ${SL}`,
    op: "openContextBranch",
    file: file(S),
    runs: quick ? 1 : 3,
  });
// --giant (issue 39): open + context + first getBranch() and open + first getTree(), each in a
// fresh child process per run, at 10 MB, 100 MB and 700 MB (generated on first use).
if (flag("--giant")) {
  const giantFile = singlePath(DATA, "700mb");
  if (!existsSync(giantFile)) {
    console.log("  generating the 700 MB session (bench/data/single/session-700mb.jsonl)...");
    const res = writeSession(`${giantFile}.tmp`, {
      seed: "single-700mb",
      targetBytes: 700 * MB,
      cwd: "/home/u/bench",
      startMs: Date.UTC(2025, 5, 1, 9),
    });
    renameSync(`${giantFile}.tmp`, giantFile);
    console.log(`  ${res.entries} entries`);
  }
  for (const [name, label] of [
    ["10mb", "10 MB"],
    ["100mb", "100 MB"],
    ["700mb", "700 MB"],
  ]) {
    rssJobs.push({
      name: `open + buildSessionContext() + first getBranch() ${label} (child process)`,
      op: "openContextFirstBranch",
      file: file(name),
      runs: 3,
      timed: true,
    });
    rssJobs.push({
      name: `open + first getTree() ${label} (child process)`,
      op: "openFirstTree",
      file: file(name),
      runs: 3,
      timed: true,
    });
  }
}
if (big && (only.length === 0 || only.some((s) => "1 gb big".includes(s.toLowerCase()))))
  rssJobs.push({ name: "open + buildSessionContext() 1 GB (child process)", file: file("1gb"), runs: 1, timed: true });
if (withStore && (only.length === 0 || only.some((s) => "peak rss listall".includes(s.toLowerCase()))))
  rssJobs.push({
    name: "peak RSS: listAll store, 1,003 sessions (fresh process, no index)",
    op: "listAll",
    env: { PI_SESSION_NATIVE_NO_INDEX: "1" },
    runs: quick ? 1 : 3,
  });
for (const job of rssJobs) {
  const row = { name: job.name, timed: job.timed === true, errors: {} };
  for (const impl of impls) {
    const got = [];
    for (let i = 0; i < job.runs; i++) {
      try {
        got.push(await runChild(impl.key, { op: job.op ?? "openContext", file: job.file, env: job.env }, 1_800_000));
      } catch (e) {
        row.errors[impl.key] = String(e.message).slice(0, 160);
        break;
      }
    }
    if (got.length)
      row[impl.key] = {
        peakMB: median(got.map((g) => g.peakMB)),
        baseMB: median(got.map((g) => g.baseMB)),
        ms: median(got.map((g) => g.ms)),
        cpuMs: got.every((g) => g.cpuMs !== undefined) ? median(got.map((g) => g.cpuMs)) : undefined,
      };
  }
  rss.push(row);
  const c = (k) =>
    row.errors[k]
      ? `ERROR (${row.errors[k]})`
      : row[k]
        ? `${row[k].peakMB.toFixed(0)} MB peak (${row[k].ms.toFixed(0)} ms${row[k].cpuMs === undefined ? "" : `, cpu ${row[k].cpuMs.toFixed(0)} ms`})`
        : "";
  console.log(`  ${job.name}: ref ${c("ref")}${hasNative ? ` | native ${c("native")}` : ""}`);
}

// table
const nativeCol = (v, err) => (err ? "ERROR" : hasNative ? fmt(v) : "—");
const lines = [];
if (results.length) {
  lines.push("");
  lines.push("| operation | reference ms | native ms | ratio (native/reference) |");
  lines.push("|---|---:|---:|---:|");
}
for (const r of results)
  lines.push(
    `| ${r.name} | ${r.errors.ref ? "ERROR" : fmt(r.ref)} | ${nativeCol(r.native, r.errors.native)} | ${hasNative ? fmtRatio(r.native, r.ref) : "—"} |`,
  );
if (rss.length) {
  lines.push("");
  lines.push("| memory (separate child process per run; VmHWM) | reference | native | ratio (native/reference) |");
  lines.push("|---|---:|---:|---:|");
  for (const r of rss) {
    const c = (k) =>
      r.errors[k]
        ? `ERROR: ${r.errors[k]}`
        : r[k]
          ? `${r[k].peakMB.toFixed(0)} MB${r.timed ? `, ${r[k].ms.toFixed(0)} ms${r[k].cpuMs === undefined ? "" : ` (cpu ${r[k].cpuMs.toFixed(0)} ms)`}` : ""}`
          : k === "native" && !hasNative
            ? "—"
            : "";
    lines.push(
      `| ${r.name} | ${c("ref")} | ${c("native")} | ${r.ref && r.native ? `${fmtRatio(r.native.peakMB, r.ref.peakMB)}${r.timed ? ` RSS, ${fmtRatio(r.native.ms, r.ref.ms)} wall${r.native.cpuMs === undefined ? "" : `, ${fmtRatio(r.native.cpuMs, r.ref.cpuMs)} cpu`}` : ""}` : "—"} |`,
    );
  }
  const base = rss.find((r) => r.ref)?.ref?.baseMB;
  if (base) lines.push(`\n(baseline RSS of a child after loading the reference module: ${base.toFixed(0)} MB)`);
}
if (!hasNative) lines.push(`\nnative: not measured — ${nativeNote}`);
console.log(lines.join("\n"));

const jsonOut = args.json;
if (jsonOut)
  writeFileSync(
    jsonOut,
    `${JSON.stringify({ date: new Date().toISOString(), node: process.version, quick, runs: RUNS, warmup: WARMUP, nativeNote, results, rss }, null, 1)}\n`,
  );

for (const suite of suitesToRun) {
  console.log(`\n# ${suite.title}`);
  const code = runSuite(suite, big && suite.big ? ["--big"] : []);
  if (code) process.exitCode = code;
}
