#!/usr/bin/env node
// Store benchmark, not a test. `npm run bench:store [-- --only s10k|s4g] [--regen]`
//
// Two stores, generated once into bench/data/store-scale/<name> (gitignored; `--regen` writes
// them again) with bench/gen.mjs' `writeSession` (pi-like sessions: prompts, thinking, tool
// calls and results, branches, compactions), in 20 project directories, half of the sessions
// in proj0 (the project a user lists most):
//
// - s10k: 10,000 sessions of 120-280 KB (~2 GB);
// - s4g: 10,000 sessions of 250-500 KB plus, in its own project, one text-heavy session of
//   300 MB that is a single user message (~4 GB).
//
// Every figure is one fresh child process (Node 20, the system node) running one call,
// the reference (pi-coding-agent 1.6.0's own SessionManager) and ours side by side, with
// the store in the page cache (read once before). Printed: wall time of the call, the
// process's peak RSS, and the ratios:
//
// - first listing ever: `listAll()` with no `.pi-session-index` (ours writes it);
// - warm: `listAll()`, `list(cwd)` (proj0: 5,000 sessions), pi's `--session <id prefix>`
//   resolution (main.js resolveSessionPath: exact findById, then list(cwd) and a prefix
//   match), exact `findById` (the last file in directory order), `continueRecent(cwd)`
//   (includes opening the ~300 KB session it finds);
// - `listAll()` then every `allMessagesText` read (what pi's picker search does on the
//   first key typed);
// - the index's bytes against the store's bytes.
import { spawn } from "node:child_process";
import {
  closeSync,
  mkdirSync,
  openSync,
  readFileSync,
  readSync,
  readdirSync,
  renameSync,
  rmSync,
  statSync,
  utimesSync,
  writeFileSync,
  writeSync,
} from "node:fs";
import { cpus, loadavg } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { DEFAULT_DATA_DIR, benchSessionName, rng, writeSession } from "./gen.mjs";
import { parseOptions, runNodeJson } from "./lib.mjs";

const SELF = fileURLToPath(import.meta.url);
const ROOT = join(DEFAULT_DATA_DIR, "store-scale");
const GEN = 1;
const N = 10_000;
const PROJECTS = 20;
const BASE_MS = Date.UTC(2026, 0, 1);
const STORES = {
  s10k: { lo: 120_000, span: 160_000, heavy: 0 },
  s4g: { lo: 250_000, span: 250_000, heavy: 300 * 1024 * 1024 },
};
const { values: opts, positionals: args } = parseOptions(
  {
    only: { type: "string" },
    regen: { type: "boolean" },
    "gen-part": { type: "boolean" },
    measure: { type: "boolean" },
  },
  "usage: node bench/store.mjs [--only s10k|s4g] [--regen]",
);

const projDir = (root, k) => join(root, "sessions", `--home-u-proj${k}--`);

function jobOf(name, i) {
  const cfg = STORES[name];
  const r = rng(0x85ebca6b ^ (i * 2654435761));
  const k = i % 2 === 0 ? 0 : 1 + ((i >> 1) % (PROJECTS - 1));
  const startMs = BASE_MS + r(60 * 86400) * 1000;
  const { id, ts } = benchSessionName(r, startMs, i);
  return {
    path: join(projDir(join(ROOT, name), k), `${ts}_${id}.jsonl`),
    seed: `store-scale-${name}-${i}`,
    targetBytes: cfg.lo + r(cfg.span),
    cwd: `/home/u/proj${k}`,
    startMs,
    sessionId: id,
  };
}

/** The text-heavy session: a header and one user message of `bytes` ASCII characters. */
function writeHeavy(path, bytes) {
  mkdirSync(dirname(path), { recursive: true });
  const tmp = `${path}.tmp`;
  const fd = openSync(tmp, "w");
  const at = new Date(BASE_MS + 3600_000).toISOString();
  writeSync(
    fd,
    `${JSON.stringify({ type: "session", version: 3, id: "0199aaaa-0000-7000-8000-00000000beef", timestamp: at, cwd: "/home/u/heavy" })}\n`,
  );
  writeSync(
    fd,
    `{"type":"message","id":"h0000001","parentId":null,"timestamp":"${at}","message":{"role":"user","content":"`,
  );
  const r = rng(12345);
  const words =
    "the session store lists every file and reads its text when the caller asks for it only once per read".split(" ");
  let block = "";
  while (block.length < 1 << 20) block += `${words[r(words.length)]} `;
  for (let done = 0; done < bytes; done += block.length)
    writeSync(fd, block.slice(0, Math.min(block.length, bytes - done)));
  writeSync(fd, `","timestamp":${BASE_MS + 3600_000}}}\n`);
  closeSync(fd);
  renameSync(tmp, path);
}

function genPart(name, part, parts) {
  let bytes = 0;
  for (let i = part; i < N; i += parts) {
    const job = jobOf(name, i);
    mkdirSync(dirname(job.path), { recursive: true });
    const tmp = `${job.path}.tmp`;
    const res = writeSession(tmp, job);
    renameSync(tmp, job.path);
    // The file's mtime is its last entry's time, as when pi wrote it.
    const t = new Date(res.lastMs);
    utimesSync(job.path, t, t);
    bytes += statSync(job.path).size;
  }
  process.stdout.write(JSON.stringify({ bytes }));
}

// --- child: one measurement -------------------------------------------------------------

async function measure(impl, op, root, arg) {
  process.env.PI_CODING_AGENT_DIR = root;
  const SM =
    impl === "ref"
      ? (await import("../node_modules/@earendil-works/pi-coding-agent/dist/core/session-manager.js")).SessionManager
      : (await import("../index.mjs")).SessionManager;
  const cwd = "/home/u/proj0";
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  let n;
  let readMs;
  switch (op) {
    case "listAll":
      n = (await SM.listAll()).length;
      break;
    case "list":
      n = (await SM.list(cwd)).length;
      break;
    case "prefix": {
      // pi's resolveSessionPath(<id prefix>, cwd) (main.js), local match.
      let path = SM.findById(cwd, arg);
      if (!path) path = (await SM.list(cwd)).find((s) => s.id.startsWith(arg))?.path;
      n = path ? 1 : 0;
      break;
    }
    case "findById":
      n = SM.findById(cwd, arg) ? 1 : 0;
      break;
    case "continueRecent":
      n = SM.continueRecent(cwd).getSessionFile() ? 1 : 0;
      break;
    case "readAll": {
      const l = await SM.listAll();
      const t1 = performance.now();
      let chars = 0;
      for (const s of l) chars += s.allMessagesText.length;
      readMs = performance.now() - t1;
      n = chars;
      break;
    }
    default:
      throw new Error(`unknown op ${op}`);
  }
  const ms = performance.now() - t0;
  const c = process.cpuUsage(c0);
  process.stdout.write(
    JSON.stringify({ ms, cpu: (c.user + c.system) / 1000, readMs, n, rss: process.resourceUsage().maxRSS * 1024 }),
  );
}

if (opts["gen-part"]) {
  genPart(args[0], Number(args[1]), Number(args[2]));
  process.exit(0);
}
if (opts.measure) {
  await measure(args[0], args[1], args[2], args[3]);
  process.exit(0);
}

// --- parent -----------------------------------------------------------------------------

const mb = (b) => (b / 1024 / 1024).toFixed(1);
const f1 = (x) => x.toFixed(1);
const f2 = (x) => x.toFixed(2);
const out = (s) => process.stdout.write(`${s}\n`);

function ensureStore(name) {
  const root = join(ROOT, name);
  const manifestPath = join(root, "manifest.json");
  let manifest = null;
  try {
    manifest = JSON.parse(readFileSync(manifestPath, "utf8"));
  } catch {}
  if (opts.regen || manifest?.gen !== GEN) {
    rmSync(root, { recursive: true, force: true });
    mkdirSync(join(root, "sessions"), { recursive: true });
    const parts = Math.max(1, Math.min(2, cpus().length));
    const t0 = performance.now();
    const kids = Array.from({ length: parts }, (_, k) =>
      spawnAsync(process.execPath, [SELF, "--gen-part", name, String(k), String(parts)]),
    );
    const heavy = STORES[name].heavy;
    if (heavy)
      writeHeavy(
        join(
          root,
          "sessions",
          "--home-u-heavy--",
          "2026-01-01T01-00-00-000Z_0199aaaa-0000-7000-8000-00000000beef.jsonl",
        ),
        heavy,
      );
    return Promise.all(kids).then(() => {
      let bytes = 0;
      for (const d of sessionDirs(root)) for (const f of readdirSync(d)) bytes += statSync(join(d, f)).size;
      manifest = { gen: GEN, n: N, bytes, genMs: performance.now() - t0 };
      writeFileSync(manifestPath, JSON.stringify(manifest));
      return { root, manifest };
    });
  }
  return Promise.resolve({ root, manifest });
}

function spawnAsync(cmd, argv) {
  return new Promise((resolve, reject) => {
    const c = spawn(cmd, argv, { stdio: ["ignore", "pipe", "inherit"] });
    let s = "";
    c.stdout.on("data", (d) => (s += d));
    c.on("exit", (code) => (code === 0 ? resolve(s) : reject(new Error(`${argv.join(" ")} exited ${code}`))));
  });
}

function sessionDirs(root) {
  const s = join(root, "sessions");
  return readdirSync(s).map((n) => join(s, n));
}

function removeIndexes(root) {
  for (const d of sessionDirs(root)) rmSync(join(d, ".pi-session-index"), { force: true });
}

function indexBytes(root) {
  let n = 0;
  for (const d of sessionDirs(root)) {
    try {
      n += statSync(join(d, ".pi-session-index")).size;
    } catch {}
  }
  return n;
}

/** Read every file once, so that both sides find the store in the page cache. */
function warmCache(root) {
  const buf = Buffer.allocUnsafe(4 << 20);
  for (const d of sessionDirs(root)) {
    for (const f of readdirSync(d)) {
      const fd = openSync(join(d, f), "r");
      while (readSync(fd, buf, 0, buf.length, null) > 0);
      closeSync(fd);
    }
  }
}

/** One call in a fresh child (`--measure`): `{ ms, cpu, readMs, n, rss }` as the child measured them. */
function run(impl, op, root, arg = "") {
  const env = { ...process.env };
  delete env.PI_SESSION_NATIVE_PROFILE;
  return runNodeJson(SELF, ["--measure", "--", impl, op, root, arg], { env });
}

const only = opts.only;
const names = Object.keys(STORES).filter((n) => !only || n === only);
/** @type {[string, { root: string, manifest: any }][]} */
const stores = [];
for (const name of names) stores.push([name, await ensureStore(name)]);

out(`store benchmark: node ${process.version}, ${cpus().length} cores, load ${loadavg().map(f2).join(" ")}`);
for (const [name, { root, manifest }] of stores) {
  const proj0 = projDir(root, 0);
  const names0 = readdirSync(proj0).filter((f) => f.endsWith(".jsonl"));
  // The last file in directory order: exact findById reads every header before it.
  const lastId = names0.at(-1).slice(25, -6);
  // A prefix of a session in proj0 that is not a whole id (exact findById misses).
  const prefix = names0[Math.floor(names0.length / 2)].slice(25, 25 + 18);
  out(
    `\n### ${name}: ${N.toLocaleString("en")} sessions${STORES[name].heavy ? " + one 300 MB single-message session" : ""}, ${mb(manifest.bytes)} MB (proj0: ${names0.length} sessions)\n`,
  );
  warmCache(root);
  removeIndexes(root);
  const rows = [];
  const row = (what, ref, nat) => {
    rows.push({ what, ref, nat });
    out(
      `| ${what} | ${f1(ref.ms)} ms (${f1(ref.cpu)}) | ${f1(nat.ms)} ms (${f1(nat.cpu)}) | ${f2(nat.ms / ref.ms)}x | ${mb(ref.rss)} MB | ${mb(nat.rss)} MB | ${f2(nat.rss / ref.rss)}x |`,
    );
  };
  out(`load average before: ${loadavg().map(f2).join(" ")}\n`);
  out(
    "| call (fresh process each; wall, CPU ms in parentheses) | reference | native | time ratio | ref peak RSS | native peak RSS | RSS ratio |",
  );
  out("|---|---:|---:|---:|---:|---:|---:|");
  const refAll = await run("ref", "listAll", root);
  const first = await run("native", "listAll", root);
  if (first.n !== refAll.n) throw new Error(`listAll: ${first.n} sessions, reference ${refAll.n}`);
  row("first listing ever, `listAll()` (no index)", refAll, first);
  const idx = indexBytes(root);
  const warm = await run("native", "listAll", root);
  row("warm `listAll()` (from the index)", refAll, warm);
  const refList = await run("ref", "list", root);
  const natList = await run("native", "list", root);
  if (natList.n !== refList.n) throw new Error(`list: ${natList.n} sessions, reference ${refList.n}`);
  row(`warm \`list(cwd)\` (${refList.n} sessions)`, refList, natList);
  const refPrefix = await run("ref", "prefix", root, prefix);
  const natPrefix = await run("native", "prefix", root, prefix);
  if (natPrefix.n !== 1 || refPrefix.n !== 1) throw new Error("prefix not found");
  row("warm `--session <id prefix>` (findById + list + match)", refPrefix, natPrefix);
  const refFind = await run("ref", "findById", root, lastId);
  const natFind = await run("native", "findById", root, lastId);
  if (natFind.n !== 1 || refFind.n !== 1) throw new Error("findById: not found");
  row("warm `findById(cwd, id)` (last in directory order)", refFind, natFind);
  const refRecent = await run("ref", "continueRecent", root);
  const natRecent = await run("native", "continueRecent", root);
  row("warm `continueRecent(cwd)` (opens the session)", refRecent, natRecent);
  const refRead = await run("ref", "readAll", root);
  const natRead = await run("native", "readAll", root);
  if (refRead.n !== natRead.n) throw new Error(`readAll: ${natRead.n} chars, reference ${refRead.n}`);
  row(
    `warm \`listAll()\` + every \`allMessagesText\` read (${(refRead.n / 1e6).toFixed(1)} M chars; native read part ${f1(natRead.readMs)} ms)`,
    refRead,
    natRead,
  );
  out(`\nload average after: ${loadavg().map(f2).join(" ")}`);
  out(
    `index: ${mb(idx)} MB for ${mb(manifest.bytes)} MB of sessions = ${((100 * idx) / manifest.bytes).toFixed(2)}% of the store's bytes`,
  );
}
