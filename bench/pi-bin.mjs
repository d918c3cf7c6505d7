#!/usr/bin/env node
// What users feel: whole-process wall time and peak RSS of the real, bundled
// pi bin (pi 1.6.0's dist/bundle/cli.js), started plainly and through the one switch
// (bin/pi-native.mjs, PI_CODING_AGENT_BIN = that cli.js), side by side in one run.
//
//   node bench/pi-bin.mjs                  all rows (npm run bench:pi; `node bench/run.mjs --only pi-bin`)
//   node bench/pi-bin.mjs --rounds 9       rounds per row (default 7; --version rows get 3x as many)
//   node bench/pi-bin.mjs --only version --only picker   rows whose key contains a substring
//   node bench/pi-bin.mjs --json out.json  also write every sample
//   node bench/pi-bin.mjs --big            also the rows on 10,000 sessions (keys with "10k"; ~2 GB
//                                          of data generated on first use, ~20 s; the reference's
//                                          picker takes about a minute a run); they also run when
//                                          an --only filter containing "10k" selects them
//                                          (`--only picker10k`, `--only picker10k-warm`)
//   node bench/pi-bin.mjs --big-rounds 3   rounds of the 10k rows (default 3)
//   PI_BENCH_NATIVE_ENV=K=V,K2=V2 node bench/pi-bin.mjs ...   extra environment of the pi-native runs
//                                          (compare a setting: PI_SESSION_NATIVE_PRELOAD=0)
//   node bench/pi-bin.mjs --big-ref-rounds 1   plain `pi` runs in them (default 1: pi 1.6.0's own
//                                          picker took 640 s on 10,000 sessions (not profiled); its
//                                          single run, without warm-up, serves both the cold and the
//                                          warm row, as pi 1.6.0 has no index)
//   node bench/pi-bin.mjs --only picker10k --gen-only   generate the selected rows' data and exit
//
// Rows (keys: version, c10mb, c100mb, session-tiny, session-10mb, session-100mb, picker-cold, picker-warm,
// session-id; with --big: picker10k-cold, picker10k-warm):
//   `pi --version`                 pi's fixed start-up cost: the bundle loads, prints, exits
//   `pi -c -p "<prompt>"`          continue the most recent session of the cwd (a generated
//                                  10 MB / 100 MB pi session) with a scripted model on 127.0.0.1
//                                  that answers at once: the time is pi + its session store
//   `pi --session <path> -p "<prompt>"`  the same sessions named by their file path (the
//                                  headline row): pi opens the file without listing the folder;
//                                  session-tiny: a session of a few entries (4 KB), pi's own
//                                  cost of such a run, the floor under the larger rows
//   `pi -r` picker listing         under tmux: from starting the process until the picker has
//                                  drawn the full list of the current folder (1,000 sessions,
//                                  ~200 MB): the newest session's text is on screen and the header
//                                  says "◉ Current Folder" (no longer "Loading n/m"). Cold = no
//                                  sidecar index (.pi-session-index removed before every run of
//                                  both sides), warm = the index left by the previous native run.
//                                  picker10k: the same on 10,000 sessions (~2 GB, bench/data/pi-bin/
//                                  picker10k), opt-in (--big).
//   `pi --session <unknown id>`    the same store without a TTY: pi reads the headers of the
//                                  folder, then runs SessionManager.list and .listAll looking for
//                                  the id and exits 1 ("No session found"): list + listAll in
//                                  the real bin, timed to process exit
//
// Peak RSS: GNU time's maximum resident set size (`/usr/bin/time -f %M`, ru_maxrss of the child
// from wait4) for whole processes; for the picker (killed after the list is drawn) VmHWM from
// /proc/<pid>/status read when the list is on screen. Without GNU time (`apt-get install time`)
// the whole-process rows fall back to polling VmHWM every 5 ms (can miss growth in the last
// few ms before exit; the table says which method was used).
//
// CPU time (user + system; less moved by other load than wall time on a shared machine): GNU time
// %U + %S, for the picker utime + stime from /proc/<pid>/stat when the list is drawn (10 ms ticks).
//
// Plain and switched runs alternate (plain,switched / switched,plain / ...) after one untimed
// warm-up run of each (which also checks that the switched process served the native module).
// Each side has its own TMPDIR (bench/data/pi-bin/tmp-ref, tmp-native), so each keeps its own
// warm Node compile cache, as a user of either has (piEnv); both are emptied when the run starts.
// Every -c run appends to its session; the file is cut back to its generated size after each
// run. Data is generated once into bench/data/pi-bin (gitignored; ~320 MB, + ~2 GB for picker10k).
import { execFile, spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import {
  appendFileSync,
  closeSync,
  existsSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  readSync,
  realpathSync,
  renameSync,
  rmSync,
  statSync,
  truncateSync,
  utimesSync,
  writeFileSync,
} from "node:fs";
import os from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { findNode22 } from "../scripts/node22.mjs";
import { startModelServer, writeAgentConfig } from "../scripts/model-server.mjs";
import { writeSession } from "./gen.mjs";
import { RSS_METHOD as LIB_RSS_METHOD, num, parseOptions, readHwmKB, runProcess, summary } from "./lib.mjs";

const HERE = dirname(fileURLToPath(import.meta.url));
const ROOT = resolve(HERE, "..");
const PI_PKG = join(ROOT, "node_modules", "@earendil-works", "pi-coding-agent");
const PI_BIN = join(PI_PKG, "dist", "bundle", "cli.js");
const LAUNCHER = join(ROOT, "bin", "pi-native.mjs");
const MARKER = "[pi-session-native] serving session-manager";
const MB = 1024 * 1024;
const DATA_VERSION = 1;

// ---------------------------------------------------------------------------
// args
// ---------------------------------------------------------------------------
const { values: args } = parseOptions(
  {
    rounds: { type: "string" },
    "version-rounds": { type: "string" },
    only: { type: "string", multiple: true },
    data: { type: "string" },
    big: { type: "boolean" },
    "big-rounds": { type: "string" },
    "big-ref-rounds": { type: "string" },
    "gen-only": { type: "boolean" },
    giant: { type: "boolean" },
    "giant-rounds": { type: "string" },
    json: { type: "string" },
  },
  "usage: node bench/pi-bin.mjs [--rounds N] [--version-rounds N] [--only <row>]... [--big [--big-rounds N] [--big-ref-rounds N]] [--giant] [--gen-only] [--data <dir>] [--json <file>]",
);
const ROUNDS = num(args.rounds, 7, "rounds");
const VERSION_ROUNDS = num(args["version-rounds"], ROUNDS * 3, "version-rounds");
const only = (args.only ?? []).map((s) => s.toLowerCase()).filter((s) => s !== "pi-bin" && s !== "pi");
const DATA = resolve(args.data ?? join(ROOT, "bench", "data", "pi-bin"));
const BIG = args.big === true;
/**
 * Rows of the 10,000-session store (keys containing "10k") are long (the reference's picker
 * takes about a minute a run, the data is ~2 GB): they run with --big, or when an --only filter
 * that itself contains "10k" selects them (`--only picker10k`, `--only 10k-warm`).
 */
const optIn = (key, tag, on) =>
  on ? only.length === 0 || only.some((s) => key.includes(s)) : only.some((s) => s.includes(tag) && key.includes(s));
const wanted = (key) =>
  key.includes("giant")
    ? optIn(key, "giant", args.giant === true)
    : key.includes("10k")
      ? BIG
        ? only.length === 0 || only.some((s) => key.includes(s))
        : only.some((s) => s.includes("10k") && key.includes(s))
      : only.length === 0 || only.some((s) => key.includes(s));
const BIG_ROUNDS = num(args["big-rounds"], 3, "big-rounds");
const GIANT_ROUNDS = num(args["giant-rounds"], 3, "giant-rounds");
const BIG_REF_ROUNDS = Math.min(BIG_ROUNDS, num(args["big-ref-rounds"], 1, "big-ref-rounds"));

const node22 = findNode22();
if (!node22) {
  console.error(
    "pi-bin bench: no Node >= 22.19 (pi 1.6.0 needs it). Run `node scripts/node22.mjs --ensure` or set PI_NODE22.",
  );
  process.exit(1);
}
if (!existsSync(PI_BIN)) {
  console.error(`pi-bin bench: ${PI_BIN} missing (devDependency @earendil-works/pi-coding-agent)`);
  process.exit(1);
}

const RSS_METHOD = `${LIB_RSS_METHOD}; picker: VmHWM when the list is drawn`;

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// ---------------------------------------------------------------------------
// data: one root per scenario, <root>/{home,agent,project}
// ---------------------------------------------------------------------------
const encodeCwd = (cwd) => `--${cwd.replace(/^[/\\]/, "").replace(/[/\\:]/g, "-")}--`;
const BASE_MS = Date.UTC(2025, 5, 1, 9, 0, 0);

function detId(seed) {
  const h = createHash("sha256").update(seed).digest("hex");
  return h.slice(0, 8);
}
/** uuid v7-shaped id from a time and a seed (deterministic). */
function uuid7(ms, seed) {
  const t = ms.toString(16).padStart(12, "0");
  const h = createHash("sha256").update(seed).digest("hex");
  return `${t.slice(0, 8)}-${t.slice(8, 12)}-7${h.slice(0, 3)}-${((parseInt(h[3], 16) & 3) | 8).toString(16)}${h.slice(4, 7)}-${h.slice(8, 20)}`;
}
const fileName = (ms, id) => `${new Date(ms).toISOString().replace(/[:.]/g, "-")}_${id}.jsonl`;

/** The last JSONL entry of a file (reads the tail). */
function lastEntry(file) {
  const size = statSync(file).size;
  const n = Math.min(size, 4 * MB);
  const buf = Buffer.alloc(n);
  const fd = openSync(file, "r");
  readSync(fd, buf, 0, n, size - n);
  closeSync(fd);
  const lines = buf
    .toString("utf8")
    .split("\n")
    .filter((l) => l.trim());
  return JSON.parse(lines[lines.length - 1]);
}

function makeRootDirs(root) {
  for (const d of ["home", "agent", "project"]) mkdirSync(join(root, d), { recursive: true });
  return { root, home: join(root, "home"), agent: join(root, "agent"), project: realpathSync(join(root, "project")) };
}

let manifest = { version: DATA_VERSION, sets: {} };
const manifestPath = join(DATA, "manifest.json");
try {
  const m = JSON.parse(readFileSync(manifestPath, "utf8"));
  if (m.version === DATA_VERSION) manifest = m;
} catch {}
/** Writes the manifest merged with the one on disk (another run may have added a set meanwhile). */
const saveManifest = () => {
  try {
    const m = JSON.parse(readFileSync(manifestPath, "utf8"));
    if (m.version === DATA_VERSION) manifest.sets = { ...m.sets, ...manifest.sets };
  } catch {}
  writeFileSync(manifestPath, `${JSON.stringify(manifest, null, 1)}\n`);
};

/**
 * A root whose project folder holds one generated pi session of `bytes` (bench/gen.mjs's writer:
 * user/assistant/toolResult messages, tool calls, thinking, compactions, branches, labels), with a
 * last model_change to the scripted model (as pi writes when the user picks a model), so that
 * `pi -c` resumes it on the scripted provider.
 */
function continueSet(name, bytes) {
  const dirs = makeRootDirs(join(DATA, name));
  const sessDir = join(dirs.agent, "sessions", encodeCwd(dirs.project));
  const rec = manifest.sets[name];
  if (rec && rec.cwd === dirs.project && existsSync(rec.file) && statSync(rec.file).size >= rec.size) {
    truncateSync(rec.file, rec.size);
    return { ...dirs, file: rec.file, size: rec.size };
  }
  rmSync(join(dirs.agent, "sessions"), { recursive: true, force: true });
  mkdirSync(sessDir, { recursive: true });
  const t = performance.now();
  const tmp = join(sessDir, "gen.tmp");
  const res = writeSession(tmp, { seed: `pi-bin-${name}`, targetBytes: bytes, cwd: dirs.project, startMs: BASE_MS });
  const last = lastEntry(tmp);
  const ms = res.lastMs + 60_000;
  appendFileSync(
    tmp,
    `${JSON.stringify({ type: "model_change", id: detId(`${name}-mc`), parentId: last.id, timestamp: new Date(ms).toISOString(), provider: "scripted", modelId: "scripted-1" })}\n`,
  );
  const file = join(sessDir, fileName(BASE_MS, res.sessionId));
  renameSync(tmp, file);
  const size = statSync(file).size;
  manifest.sets[name] = { cwd: dirs.project, file, size, entries: res.entries + 1 };
  saveManifest();
  console.log(
    `  generated ${name}: ${(size / MB).toFixed(1)} MB, ${res.entries + 1} entries, ${((performance.now() - t) / 1000).toFixed(1)} s`,
  );
  return { ...dirs, file, size };
}

const PICKER_MARK = "pibench newest session marker";
/**
 * A root whose project folder holds `n` generated sessions of 120–280 KB plus a newest small one
 * with known text (set "picker": 1,000 sessions, ~200 MB; "picker10k": 10,000, ~2 GB).
 */
function pickerSet(name, n) {
  const dirs = makeRootDirs(join(DATA, name));
  const sessDir = join(dirs.agent, "sessions", encodeCwd(dirs.project));
  const rec = manifest.sets[name];
  if (
    rec &&
    rec.cwd === dirs.project &&
    existsSync(sessDir) &&
    readdirSync(sessDir).filter((f) => f.endsWith(".jsonl")).length === n + 1
  ) {
    return { ...dirs, sessDir, bytes: rec.bytes, sessions: n + 1 };
  }
  rmSync(join(dirs.agent, "sessions"), { recursive: true, force: true });
  mkdirSync(sessDir, { recursive: true });
  const t = performance.now();
  let bytes = 0;
  let x = 0x9e3779b9; // xorshift32: sizes and start times
  const rnd = () => {
    x ^= x << 13;
    x >>>= 0;
    x ^= x >>> 17;
    x ^= x << 5;
    x >>>= 0;
    return x / 4294967296;
  };
  // seeds: the 1,000-session set keeps its historical names (same files as before)
  const seedPrefix = name === "picker" ? "picker" : name;
  for (let i = 0; i < n; i++) {
    const startMs = BASE_MS + Math.floor(rnd() * 60 * 86400_000);
    const targetBytes = 120_000 + Math.floor(rnd() * 160_000);
    const sessionId = uuid7(startMs, `${seedPrefix}-${i}`);
    const file = join(sessDir, fileName(startMs, sessionId));
    const res = writeSession(`${file}.tmp`, {
      seed: `pi-bin-${seedPrefix}-${i}`,
      targetBytes,
      cwd: dirs.project,
      startMs,
      sessionId,
    });
    renameSync(`${file}.tmp`, file);
    utimesSync(file, new Date(res.lastMs), new Date(res.lastMs));
    bytes += statSync(file).size;
    if (n >= 5000 && (i + 1) % 1000 === 0)
      process.stdout.write(`  generating ${name}: ${i + 1}/${n} sessions, ${(bytes / MB).toFixed(0)} MB\r`);
  }
  // the newest session: known first message, newest times and mtime
  const ms = BASE_MS + 90 * 86400_000;
  const sessionId = uuid7(ms, "picker-marker");
  const file = join(sessDir, fileName(ms, sessionId));
  const u = detId("marker-u");
  const a = detId("marker-a");
  const iso = (d) => new Date(ms + d).toISOString();
  const lines = [
    { type: "session", version: 3, id: sessionId, timestamp: iso(0), cwd: dirs.project },
    {
      type: "message",
      id: u,
      parentId: null,
      timestamp: iso(1000),
      message: { role: "user", content: [{ type: "text", text: PICKER_MARK }], timestamp: ms + 1000 },
    },
    {
      type: "message",
      id: a,
      parentId: u,
      timestamp: iso(2000),
      message: {
        role: "assistant",
        content: [{ type: "text", text: "ok" }],
        api: "openai-completions",
        provider: "scripted",
        model: "scripted-1",
        usage: {
          input: 10,
          output: 5,
          cacheRead: 0,
          cacheWrite: 0,
          totalTokens: 15,
          cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 },
        },
        stopReason: "stop",
        timestamp: ms + 2000,
      },
    },
  ];
  writeFileSync(file, lines.map((l) => `${JSON.stringify(l)}\n`).join(""));
  utimesSync(file, new Date(ms + 2000), new Date(ms + 2000));
  bytes += statSync(file).size;
  manifest.sets[name] = { cwd: dirs.project, sessions: n + 1, bytes };
  saveManifest();
  console.log(
    `  generated ${name} store: ${n + 1} sessions, ${(bytes / MB).toFixed(0)} MB, ${((performance.now() - t) / 1000).toFixed(1)} s`,
  );
  return { ...dirs, sessDir, bytes, sessions: n + 1 };
}

function removeIndexes(agentDir) {
  const base = join(agentDir, "sessions");
  if (!existsSync(base)) return;
  for (const d of readdirSync(base)) {
    for (const f of readdirSync(join(base, d)))
      if (f.startsWith(".pi-session-index")) rmSync(join(base, d, f), { force: true });
  }
}

// ---------------------------------------------------------------------------
// running pi
// ---------------------------------------------------------------------------
/**
 * PI_BENCH_NATIVE_ENV="K=V,K2=V2": extra environment of the pi-native runs, to compare a
 * setting side by side (`PI_BENCH_NATIVE_ENV=PI_SESSION_NATIVE_PRELOAD=0`).
 */
const NATIVE_ENV = Object.fromEntries(
  (process.env.PI_BENCH_NATIVE_ENV ?? "")
    .split(",")
    .filter((kv) => kv.includes("="))
    .map((kv) => [kv.slice(0, kv.indexOf("=")), kv.slice(kv.indexOf("=") + 1)]),
);

/** Environment of one run: nothing inherited that changes pi or the hook. */
function piEnv(dirs, how, debug = false) {
  const env = { ...process.env };
  for (const k of Object.keys(env)) if (k.startsWith("PI_") || k === "NODE_OPTIONS") delete env[k];
  Object.assign(env, {
    HOME: dirs.home,
    PI_CODING_AGENT_DIR: dirs.agent,
    PI_OFFLINE: "1",
    PI_SKIP_VERSION_CHECK: "1",
    PI_TELEMETRY: "0",
    NO_COLOR: "1",
  });
  if (how === "native") env.PI_CODING_AGENT_BIN = PI_BIN;
  if (how === "native") Object.assign(env, NATIVE_ENV);
  if (debug) env.PI_SESSION_NATIVE_DEBUG = "1";
  // pi turns on Node's compile cache (module.enableCompileCache(), in os.tmpdir()), whose entries
  // are keyed by file: with one folder, plain and switched runs overwrite each other's entry for
  // the session chunk (pi's bytes vs. the patched ones), so every run of both sides compiled the
  // 2.6 MB chunk afresh (~100 ms each, hiding the switch's cost). A user runs one or the other:
  // each side gets its own temp folder, as each kind of user has a warm cache of its own.
  env.TMPDIR = tmpDirOf(how);
  return env;
}
const tmpDirs = new Map();
function tmpDirOf(how) {
  if (!tmpDirs.has(how)) {
    // emptied at the start of every run: both caches are then made by the same runs (the first
    // row's warm-ups), as V8 keeps in a cache the functions compiled by the run that wrote it
    const dir = join(DATA, `tmp-${how}`);
    rmSync(dir, { recursive: true, force: true });
    mkdirSync(dir, { recursive: true });
    tmpDirs.set(how, dir);
  }
  return tmpDirs.get(how);
}
/** PI_BENCH_CPU_PROF=<dir>: every run writes a V8 CPU profile there (`node --cpu-prof`), to see where the time goes. */
const PROF = process.env.PI_BENCH_CPU_PROF ? ["--cpu-prof", `--cpu-prof-dir=${process.env.PI_BENCH_CPU_PROF}`] : [];
const piArgv = (how, args) => [...PROF, how === "native" ? LAUNCHER : PI_BIN, ...args];

/** user + system CPU time of a live process from /proc/<pid>/stat (clock ticks, 10 ms). */
const TICK_MS = 1000 / (Number(spawnSync("getconf", ["CLK_TCK"], { encoding: "utf8" }).stdout) || 100);
function readCpuMs(pid) {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return (Number(f[11]) + Number(f[12])) * TICK_MS; // fields 14 and 15
  } catch {
    return undefined;
  }
}

/** One whole process, stdin /dev/null: { ms, rssMB, cpuMs, code, stdout, stderr } (bench/lib.mjs `runProcess`). */
async function runOnce(dirs, how, piArgs, { debug = false, timeout = 600_000 } = {}) {
  const r = await runProcess(node22, piArgv(how, piArgs), { cwd: dirs.project, env: piEnv(dirs, how, debug), timeout });
  return {
    ms: r.ms,
    rssMB: r.rssMB,
    cpuMs: r.cpuMs,
    code: r.signal ? 128 : r.code,
    stdout: r.stdout,
    stderr: r.stderr,
  };
}

// tmux: one server for the whole run, one session per picker run
const TMUX_SOCKET = `pi-bin-bench-${process.pid}`;
const tmux = (...args) =>
  new Promise((res, rej) =>
    execFile("tmux", ["-L", TMUX_SOCKET, ...args], { encoding: "utf8" }, (e, out) => (e ? rej(e) : res(out))),
  );
const shq = (s) => `'${String(s).replace(/'/g, `'\\''`)}'`;
const hasTmux = spawnSync("tmux", ["-V"]).status === 0;

function pickerScript(dirs, how, debug, piArgs = ["-r"], tag = "picker") {
  const env = piEnv(dirs, how, debug);
  const keys = [
    "HOME",
    "PI_CODING_AGENT_DIR",
    "PI_OFFLINE",
    "PI_SKIP_VERSION_CHECK",
    "PI_TELEMETRY",
    "PI_CODING_AGENT_BIN",
    "PI_SESSION_NATIVE_DEBUG",
    ...Object.keys(NATIVE_ENV),
    "PATH",
    "TMPDIR",
  ];
  const script = join(dirs.root, `${tag}-${how}${debug ? "-debug" : ""}.sh`);
  writeFileSync(
    script,
    [
      "#!/bin/sh",
      "unset NODE_OPTIONS",
      ...keys.filter((k) => env[k] !== undefined).map((k) => `export ${k}=${shq(env[k])}`),
      "export TERM=xterm-256color",
      `cd ${shq(dirs.project)}`,
      `exec ${[node22, ...piArgv(how, piArgs)].map(shq).join(" ")} 2>${shq(join(dirs.root, `${tag}-stderr-${how}.txt`))}`,
      "",
    ].join("\n"),
    { mode: 0o755 },
  );
  return script;
}

let seq = 0;

/** The giant sessions of --giant (`writeSession`, compactions every ~0.5-1 MB) and their rows. */
const GIANTS = [
  { key: "giant700", mb: 700 },
  { key: "giant1500", mb: 1500 },
];
const GIANT_ROWS = ["session", "c", "tui"];
/** The TUI has drawn its footer: the line with the context use and the model (`scripted-1`). */
const footerDrawn = (screen) => /scripted-1/.test(screen);

/**
 * Runs `script` in a fresh tmux window of `cols`x`rows` until `ready(screen)`:
 * { ms, rssMB, cpuMs, screen, pid }, peak RSS and CPU read when it is ready (the process is then
 * killed). `what` names the run in the timeout error.
 */
async function screenUntil(script, [cols, rows], ready, timeout, what) {
  const name = `p${++seq}`;
  const t0 = process.hrtime.bigint();
  const pid = Number(
    (
      await tmux(
        "new-session",
        "-d",
        "-x",
        String(cols),
        "-y",
        String(rows),
        "-s",
        name,
        "-P",
        "-F",
        "#{pane_pid}",
        script,
      )
    ).trim(),
  );
  const end = Date.now() + timeout;
  let screen = "";
  try {
    for (;;) {
      screen = await tmux("capture-pane", "-p", "-t", name);
      if (ready(screen)) break;
      if (Date.now() > end) throw new Error(`${what} after ${timeout} ms:\n${screen}`);
      await sleep(10);
    }
    const ms = Number(process.hrtime.bigint() - t0) / 1e6;
    return { ms, rssMB: readHwmKB(pid) / 1024, cpuMs: readCpuMs(pid), screen, pid };
  } finally {
    await tmux("kill-session", "-t", name).catch(() => {});
    // wait for the process to be gone before the next run
    for (let i = 0; i < 200 && existsSync(`/proc/${pid}`); i++) await sleep(10);
  }
}

/** `pi -r` in a fresh tmux window until the full current-folder list is drawn: { ms, rssMB, cpuMs, screen }. */
async function pickerOnce(dirs, how, { debug = false, timeout = 120_000 } = {}) {
  if (dirs.sessions > 2000) timeout = Math.max(timeout, 2_400_000); // pi's own picker: ~15 min on 10,000 under load
  const drawn = (screen) => screen.includes(PICKER_MARK) && screen.includes("◉ Current Folder");
  return screenUntil(pickerScript(dirs, how, debug), [200, 50], drawn, timeout, `picker (${how}): list not drawn`);
}

/** pi's TUI resuming `dirs.file` (`pi --session <file>`, no prompt) at 160x45, until `ready(screen)`. */
async function tuiOnce(dirs, how, ready, { debug = false, timeout = 600_000 } = {}) {
  const script = pickerScript(dirs, how, debug, ["--session", dirs.file], "tui");
  return screenUntil(script, [160, 45], ready, timeout, `tui (${how}): not ready`);
}

// ---------------------------------------------------------------------------
// rows
// ---------------------------------------------------------------------------
const PROMPT = "Where did we leave off? One line.";
const rows = [];

const stat = summary;

/**
 * Runs `once(how)` alternately: one untimed warm-up of each (checked by `check(how, result)`),
 * then `rounds` rounds, plain first in even rounds, switched first in odd ones.
 * For rows where one plain run takes minutes (the picker on 10,000 sessions): `refRounds` runs
 * the plain side in the first refRounds rounds only and without a warm-up (its first run is
 * checked as a warm-up would be), and `refFrom` takes the plain samples of an earlier row instead
 * of running it again (the reference has no index: its cold and warm pickers are the same run).
 * @param {string} key
 * @param {string} label
 * @param {number} rounds
 * @param {(how: string, warm: boolean) => any} once
 * @param {{ before?: (how: string, warmUp: boolean) => unknown, check?: (how: string, r: any, timed?: boolean) => void, refRounds?: number, refFrom?: string }} [options]
 */
async function measure(key, label, rounds, once, { before, check, refRounds = rounds, refFrom } = {}) {
  if (!wanted(key)) return;
  process.stdout.write(`  ${label}: `);
  const samples = { ref: [], native: [] };
  const fromRow = refFrom && rows.find((r) => r.key === refFrom);
  if (fromRow) samples.ref = fromRow.samples.ref;
  const refSkipped = refRounds < rounds || fromRow;
  for (const how of refSkipped ? ["native"] : ["ref", "native"]) {
    await before?.(how, true);
    const r = await once(how, true);
    check?.(how, r);
  }
  for (let i = 0; i < rounds; i++) {
    for (const how of i % 2 ? ["native", "ref"] : ["ref", "native"]) {
      if (how === "ref" && (fromRow || i >= refRounds)) continue;
      await before?.(how, false);
      const r = await once(how, refSkipped && how === "ref" && i === 0);
      check?.(how, r, !(refSkipped && how === "ref" && i === 0));
      samples[how].push({ ms: r.ms, cpuMs: r.cpuMs, rssMB: r.rssMB });
    }
    process.stdout.write(".");
  }
  if (!samples.ref.length) throw new Error(`${key}: no plain samples (refFrom ${refFrom} not measured?)`);
  const row = {
    key,
    label,
    rounds: samples.ref.length === rounds ? rounds : `${samples.ref.length} / ${rounds}`,
    refShared: fromRow ? refFrom : undefined,
    samples,
  };
  for (const how of ["ref", "native"]) {
    row[how] = {
      ms: stat(samples[how].map((s) => s.ms)),
      cpuMs: stat(samples[how].map((s) => s.cpuMs)),
      rssMB: stat(samples[how].map((s) => s.rssMB)),
    };
  }
  rows.push(row);
  const f = (s) => `${s.median.toFixed(0)} (${s.min.toFixed(0)}–${s.max.toFixed(0)})`;
  console.log(
    ` pi ${f(row.ref.ms)} ms, cpu ${row.ref.cpuMs.median.toFixed(0)} ms, ${f(row.ref.rssMB)} MB | pi-native ${f(row.native.ms)} ms, cpu ${row.native.cpuMs.median.toFixed(0)} ms, ${f(row.native.rssMB)} MB`,
  );
}

const served = (how, r) => {
  const n = r.stderr.split(MARKER).length - 1;
  if (how === "native" && n !== 1)
    throw new Error(`switched run did not serve the native session manager (marker ${n}x):\n${r.stderr}`);
  if (how === "ref" && n !== 0) throw new Error(`plain run printed the marker:\n${r.stderr}`);
};
const ok = (how, r) => {
  if (r.code !== 0) throw new Error(`pi (${how}) exited ${r.code}\nstdout:\n${r.stdout}\nstderr:\n${r.stderr}`);
};

async function main() {
  const startLoad = os.loadavg();
  const t0 = Date.now();
  const piVersion = JSON.parse(readFileSync(join(PI_PKG, "package.json"), "utf8")).version;
  const nodeVersion = spawnSync(node22, ["--version"], { encoding: "utf8" }).stdout.trim();
  console.log(
    `pi-bin bench: pi ${piVersion} (dist/bundle/cli.js) under node ${nodeVersion}; ${os.cpus().length} CPUs; load ${startLoad.map((l) => l.toFixed(2)).join(" ")}`,
  );
  console.log(`  ${RSS_METHOD}`);
  mkdirSync(DATA, { recursive: true });

  const needTiny = wanted("session-tiny");
  const needC10 = wanted("c10mb") || wanted("session-10mb");
  const needC100 = wanted("c100mb") || wanted("session-100mb");
  const needPicker = wanted("picker-cold") || wanted("picker-warm") || wanted("session-id");
  const needPicker10k = wanted("picker10k-cold") || wanted("picker10k-warm");
  const tiny = needTiny ? continueSet("tiny", 4 * 1024) : undefined;
  const c10 = needC10 ? continueSet("c10mb", 10 * MB) : undefined;
  const c100 = needC100 ? continueSet("c100mb", 100 * MB) : undefined;
  const picker = needPicker ? pickerSet("picker", 1000) : undefined;
  const picker10k = needPicker10k ? pickerSet("picker10k", 10_000) : undefined;
  /** Giant sessions (opt-in, --giant). */
  const giants = GIANTS.filter(({ key }) => GIANT_ROWS.some((r) => wanted(`${key}-${r}`))).map(({ key, mb }) => ({
    key,
    mb,
    set: continueSet(key, mb * MB),
  }));
  if (picker10k)
    console.log(`  picker10k store: ${picker10k.sessions} sessions, ${(picker10k.bytes / MB).toFixed(0)} MB`);
  const verDirs = makeRootDirs(join(DATA, "version"));
  if (args["gen-only"]) return;

  const server = await startModelServer({ maxRequests: 100_000 });
  for (const d of [tiny, c10, c100, picker, picker10k, verDirs, ...giants.map((g) => g.set)])
    if (d) writeAgentConfig(d.agent, server.baseUrl);
  try {
    // --version: the switch's fixed cost (the hook is installed, pi's bundle is imported)
    await measure("version", "`pi --version`", VERSION_ROUNDS, (how) => runOnce(verDirs, how, ["--version"]), {
      check: (how, r) => {
        ok(how, r);
        if (r.stdout.trim() !== piVersion) throw new Error(`--version printed ${r.stdout}`);
      },
    });

    /** Checks of a run that resumed `set.file` and answered the prompt (the file grew by the new turn). */
    const resumed = (set) => (how, r, timed) => {
      ok(how, r);
      if (!timed) served(how, r);
      if (!r.stdout.includes(`ok: ${PROMPT}`)) throw new Error(`unexpected answer (${how}): ${r.stdout}\n${r.stderr}`);
      // pi continued this very file: it grew by the new turn, and no new session was made
      const files = readdirSync(dirname(set.file)).filter((f) => f.endsWith(".jsonl"));
      if (files.length !== 1 || statSync(set.file).size <= set.size)
        throw new Error(`pi did not continue ${set.file} (${files.join(", ")})`);
      truncateSync(set.file, set.size);
    };
    /** @type {[string, typeof c10, string][]} */
    const continued = [
      ["c10mb", c10, "10"],
      ["c100mb", c100, "100"],
    ];
    for (const [key, set, mb] of continued) {
      if (!set) continue;
      await measure(
        key,
        `\`pi -c -p\`, ${mb} MB session`,
        ROUNDS,
        (how, warm) => runOnce(set, how, ["-c", "-p", PROMPT], { debug: warm }),
        {
          before: () => truncateSync(set.file, set.size),
          check: resumed(set),
        },
      );
    }
    // `pi --session <path> -p`: the session named by its path (the headline row). pi
    // opens it directly (no listing of the folder), so this is open + pi's own use of the session.
    // session-tiny: the same run on a session of a few entries, pi's own cost of a prompt run
    // (start-up, agent runtime, the model round trip): the floor under every session row.
    /** @type {[string, typeof c10, string][]} */
    const named = [
      ["session-tiny", tiny, "4 KB"],
      ["session-10mb", c10, "10 MB"],
      ["session-100mb", c100, "100 MB"],
    ];
    for (const [key, set, mb] of named) {
      if (!set) continue;
      await measure(
        key,
        `\`pi --session <path> -p\`, ${mb} session`,
        ROUNDS,
        (how, warm) => runOnce(set, how, ["--session", set.file, "-p", PROMPT], { debug: warm }),
        {
          before: () => truncateSync(set.file, set.size),
          check: resumed(set),
        },
      );
    }

    // Giant sessions (--giant): what users with sessions of hundreds of MB feel (issue 39).
    for (const { key: k, mb, set } of giants) {
      /** @type {[string, string, string[]][]} */
      const giantRows = [
        ["session", `\`pi --session <path> -p\`, ${mb} MB session`, ["--session", set.file, "-p", PROMPT]],
        ["c", `\`pi -c -p\`, ${mb} MB session`, ["-c", "-p", PROMPT]],
      ];
      for (const [row, label, argv] of giantRows) {
        await measure(`${k}-${row}`, label, GIANT_ROUNDS, (how, warm) => runOnce(set, how, argv, { debug: warm }), {
          before: () => truncateSync(set.file, set.size),
          check: resumed(set),
        });
      }
      if (!wanted(`${k}-tui`)) continue;
      if (!hasTmux) {
        console.log("  TUI rows skipped: no tmux");
        continue;
      }
      await tmux("new-session", "-d", "-s", "keepalive", "sleep", "100000").catch(() => {});
      await measure(
        `${k}-tui`,
        `pi's TUI resuming a ${mb} MB session (\`pi --session <path>\`, 160x45), until the footer is drawn`,
        GIANT_ROUNDS,
        (how, warm) => tuiOnce(set, how, footerDrawn, { debug: warm }),
        {
          check: (how, _r, timed) => {
            if (!timed) served(how, { stderr: readFileSync(join(set.root, `tui-stderr-${how}.txt`), "utf8") });
          },
        },
      );
    }

    if (giants.length && hasTmux) await tmux("kill-server").catch(() => {});

    /** @type {[string, typeof picker, string, number][]} */
    const pickerRowsAll = [
      ["picker", picker, "1,000", ROUNDS],
      ["picker10k", picker10k, "10,000", BIG_ROUNDS],
    ];
    const pickerRows = pickerRowsAll.filter(([k, set]) => set && (wanted(`${k}-cold`) || wanted(`${k}-warm`)));
    if (pickerRows.length && hasTmux) {
      await tmux("new-session", "-d", "-s", "keepalive", "sleep", "100000");
      try {
        for (const [k, set, n, rounds] of pickerRows) {
          const check = (how, _r, timed) => {
            if (!timed) {
              const stderr = readFileSync(join(set.root, `picker-stderr-${how}.txt`), "utf8");
              served(how, { stderr });
            }
          };
          // 10,000 sessions: one plain run (minutes), shared by the cold and warm rows
          const big = k === "picker10k" ? { refRounds: BIG_REF_ROUNDS } : {};
          await measure(
            `${k}-cold`,
            `\`pi -r\` picker, ${n} sessions, cold (no sidecar index)`,
            rounds,
            (how, warm) => pickerOnce(set, how, { debug: warm }),
            {
              before: () => removeIndexes(set.agent),
              check,
              ...big,
            },
          );
          await measure(
            `${k}-warm`,
            `\`pi -r\` picker, ${n} sessions, warm (sidecar index)`,
            rounds,
            (how, warm) => pickerOnce(set, how, { debug: warm }),
            {
              check,
              ...big,
              ...(k === "picker10k" && wanted(`${k}-cold`) ? { refFrom: `${k}-cold` } : {}),
            },
          );
        }
      } finally {
        await tmux("kill-server").catch(() => {});
      }
    } else if (pickerRows.length) {
      console.log("  picker rows skipped: no tmux");
    }

    if (picker) {
      await measure(
        "session-id",
        "`pi --session <unknown id>` (list + listAll, no TTY), warm",
        ROUNDS,
        (how, warm) => runOnce(picker, how, ["--session", "ffffffff", "-p", "x"], { debug: warm }),
        {
          check: (how, r, timed) => {
            if (r.code !== 1 || !r.stderr.includes("No session found matching"))
              throw new Error(`--session (${how}) exited ${r.code}:\n${r.stderr}`);
            if (!timed) served(how, r);
          },
        },
      );
    }
  } finally {
    await server.close();
  }

  // table
  const endLoad = os.loadavg();
  const f0 = (s) => `${s.median.toFixed(0)} (${s.min.toFixed(0)}–${s.max.toFixed(0)})`;
  const ratio = (a, b) => `${(a.median / b.median).toFixed(2)}x`;
  const out = [];
  out.push("");
  out.push(
    `${new Date().toISOString().slice(0, 10)}, pi ${piVersion} bundle, node ${nodeVersion}, ${os.cpus().length} CPUs, load ${startLoad[0].toFixed(2)} → ${endLoad[0].toFixed(2)} (1-min avg, start → end), ${((Date.now() - t0) / 1000).toFixed(0)} s; median (min–max) of N alternating runs each`,
  );
  out.push("");
  out.push(
    "| | N | `pi` wall ms | `pi-native` wall ms | ratio | `pi` CPU ms | `pi-native` CPU ms | ratio | `pi` peak RSS MB | `pi-native` peak RSS MB | ratio |",
  );
  out.push("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
  for (const r of rows) {
    const c = (x) => x.median.toFixed(0);
    out.push(
      `| ${r.label} | ${r.rounds} | ${f0(r.ref.ms)} | ${f0(r.native.ms)} | ${ratio(r.native.ms, r.ref.ms)} | ${c(r.ref.cpuMs)} | ${c(r.native.cpuMs)} | ${ratio(r.native.cpuMs, r.ref.cpuMs)} | ${f0(r.ref.rssMB)} | ${f0(r.native.rssMB)} | ${ratio(r.native.rssMB, r.ref.rssMB)} |`,
    );
  }
  out.push("");
  out.push(`(wall: spawn to exit, picker: spawn to list drawn; CPU: user+sys median, 10 ms ticks; ${RSS_METHOD})`);
  for (const r of rows)
    if (r.refShared)
      out.push(
        `(${r.label}: the \`pi\` figures are the runs of ${r.refShared}: pi 1.6.0 has no index, its cold and warm pickers are the same work)`,
      );
  if (rows.some((r) => typeof r.rounds === "string"))
    out.push(
      "(N = `pi` runs / `pi-native` runs: one plain picker run on 10,000 sessions takes minutes; --big-ref-rounds N for more)",
    );
  console.log(out.join("\n"));
  const jsonOut = args.json;
  if (jsonOut) {
    writeFileSync(
      jsonOut,
      `${JSON.stringify({ date: new Date().toISOString(), pi: piVersion, node: nodeVersion, cpus: os.cpus().length, load: { start: startLoad, end: endLoad }, rssMethod: RSS_METHOD, rows }, null, 1)}\n`,
    );
  }
}

await main();
