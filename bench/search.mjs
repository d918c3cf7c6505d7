#!/usr/bin/env node
// Search benchmark, not a test. `node bench/search.mjs [N] [--regen] [--clean] [--before=<checkout>]`
// (N default 1,000; BENCHMARKS.md's figures are for 10,000 sessions, ~2 GB):
//
// - a store of N sessions written by bench/gen.mjs' `writeSession` (pi-like sessions of
//   120-280 KB: prompts, thinking, tool calls and results, branches, compactions), in 20
//   project directories, each with one planted fact appended on its active branch
//   (`planted fact<i>x about the purple walrus number <i> and authz<i>ology`, as a user,
//   assistant or tool-result text), then one assistant turn of tool calls planting fact i in
//   an edit's path and old text (`src/plant<i>x/session-manager.ts`, `idPlant<i>xSummaryTree`)
//   and a bash command (`npm run check-<i>x`); kept in bench/data/search-<N> (gitignored) and
//   reused by later runs (`--regen` writes it again, `--clean` removes it afterwards);
// - with `--before=<checkout>` (another build of this package, e.g. a worktree of the main
//   branch with its addon built): every measure of the search index below made by that
//   build too, on the same store with the same queries, each build in a child process of its
//   own (`--measure=<checkout>`), one after the other in this run, printed side by side with
//   the ratio this / before;
// - the first listing of the same store (`SessionManager.listAll`, listing sidecars removed
//   first, in a child process) against the first build of the search index;
// - query latency p50 / p95 (warm, freshness check included) for words, phrases and prefixes
//   of planted facts, and for common words of the generated text (the ranking's worst case);
// - the same planted queries through the brute-force literal scan of every file (the Rust
//   scan of `pi-session search --literal`);
// - appended turns: each one appended to a session, then the next query times and checks it;
// - index size against the store's bytes and against its searchable text; peak RSS of the
//   process that built the index and queried it (after the build, at the end).
// - the background warm-up (`warmSearchIndex`: one low-priority thread) from no index, in a
//   new process: wall and CPU time (the ratio is of CPU), index size, peak RSS.
import { spawn, spawnSync } from "node:child_process";
import {
  closeSync,
  existsSync,
  mkdirSync,
  openSync,
  readFileSync,
  readSync,
  readdirSync,
  renameSync,
  rmSync,
  statSync,
  truncateSync,
  appendFileSync,
  writeFileSync,
} from "node:fs";
import { cpus, loadavg } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { DEFAULT_DATA_DIR, benchSessionName, rng, writeSession } from "./gen.mjs";
import { num, parseOptions, percentile } from "./lib.mjs";

const SELF = fileURLToPath(import.meta.url);
const GEN = 3; // version of this store layout (3: planted tool calls)
const PROJECTS = 20;
const BASE_MS = Date.UTC(2026, 0, 1);
const { values: opts, positionals: args } = parseOptions(
  {
    regen: { type: "boolean" },
    clean: { type: "boolean" },
    "gen-part": { type: "boolean" },
    before: { type: "string" },
    measure: { type: "string" },
    store: { type: "string" },
  },
  "usage: node bench/search.mjs [N] [--regen] [--clean] [--before=<checkout>] [--store=<agent dir>]",
);
// `--store=<dir>`: an existing store instead of the generated one (`<dir>/sessions/<project>/
// *.jsonl`, e.g. copies of real sessions): no planted facts there, so no planted queries and
// no brute-force scan; everything else is measured the same way.
const STORE = opts.store ? resolve(opts.store) : undefined;
const N = opts["gen-part"] ? Number(args[2]) : num(args[0], 1000, "N");
const root = STORE ?? join(DEFAULT_DATA_DIR, `search-${N}`);
const dir = join(root, "sessions");
const manifestPath = join(root, "manifest.json");

const plantText = (i) => `planted fact${i}x about the purple walrus number ${i} and authz${i}ology`;

function jobOf(i) {
  const r = rng(0x9e3779b9 ^ (i * 2654435761));
  const k = i % PROJECTS;
  const startMs = BASE_MS + r(60 * 86400) * 1000;
  const { id, ts } = benchSessionName(r, startMs, i);
  return {
    path: join(dir, `--home-u-proj${k}--`, `${ts}_${id}.jsonl`),
    seed: `search-${i}`,
    targetBytes: 120_000 + r(160_000),
    cwd: `/home/u/proj${k}`,
    startMs,
    sessionId: id,
  };
}

/** The last line of a file (its leaf entry: pi appends, the last entry is the leaf). */
function lastLine(path) {
  const size = statSync(path).size;
  const n = Math.min(size, 1 << 20);
  const buf = Buffer.alloc(n);
  const fd = openSync(path, "r");
  readSync(fd, buf, 0, n, size - n);
  closeSync(fd);
  const lines = buf.toString("utf8").trimEnd().split("\n");
  return JSON.parse(lines[lines.length - 1]);
}

/** A string's strings: itself, or those inside an array or object (a tool call's arguments). */
const strings = (v) =>
  typeof v === "string" ? [v] : v && typeof v === "object" ? Object.values(v).flatMap(strings) : [];

/**
 * UTF-8 bytes of the searchable texts of a file: what the search index indexes
 * (crates/core/src/search/extract.rs): the texts `pi-session search` reads, plus tool calls
 * (name and argument strings), labels and session names.
 */
function textBytes(path) {
  const content = (c) =>
    typeof c === "string"
      ? c
      : Array.isArray(c)
        ? c
            .filter((p) => p?.type === "text")
            .map((p) => p.text ?? "")
            .join("\n")
        : "";
  let n = 0;
  for (const line of readFileSync(path, "utf8").split("\n")) {
    if (!line) continue;
    let e;
    try {
      e = JSON.parse(line);
    } catch {
      continue;
    }
    let t = "";
    if (e.type === "message") {
      const m = e.message ?? {};
      if (m.role === "user" || m.role === "assistant" || m.role === "toolResult") t = content(m.content);
      else if (m.role === "bashExecution") t = `${m.command ?? ""}\n${m.output ?? ""}`;
      if (m.role === "assistant" && Array.isArray(m.content))
        for (const b of m.content) if (b?.type === "toolCall") t += [b.name ?? "", ...strings(b.arguments)].join("\n");
    } else if (e.type === "custom_message") t = content(e.content);
    else if (e.type === "compaction" || e.type === "branch_summary") t = e.summary ?? "";
    else if (e.type === "label") t = e.label ?? "";
    else if (e.type === "session_info") t = e.name ?? "";
    n += Buffer.byteLength(t);
  }
  return n;
}

/** Write sessions i ≡ part (mod parts); print {bytes, text} totals as JSON. */
function genPart(part, parts) {
  let bytes = 0;
  let text = 0;
  for (let i = part; i < N; i += parts) {
    const job = jobOf(i);
    mkdirSync(dirname(job.path), { recursive: true });
    const tmp = `${job.path}.tmp`;
    const res = writeSession(tmp, job);
    const leaf = lastLine(tmp);
    const at = new Date(res.lastMs + 60_000).toISOString();
    const t = plantText(i);
    const kind = i % 3;
    const entry = {
      type: "message",
      id: `f${i.toString(16).padStart(7, "0")}`,
      parentId: leaf.id,
      timestamp: at,
      message:
        kind === 0
          ? { role: "user", content: [{ type: "text", text: t }], timestamp: 0 }
          : kind === 1
            ? {
                role: "assistant",
                content: [{ type: "text", text: `Noted: ${t}.` }],
                api: "x",
                provider: "x",
                model: "x",
                stopReason: "stop",
                timestamp: 0,
              }
            : {
                role: "toolResult",
                toolCallId: "call_planted",
                toolName: "bash",
                content: [{ type: "text", text: `$ grep -r walrus\n${t}\n` }],
                isError: false,
                timestamp: 0,
              },
    };
    // Fact i in tool calls too: an edit (path, identifier) and a bash command.
    const calls = {
      type: "message",
      id: `g${i.toString(16).padStart(7, "0")}`,
      parentId: entry.id,
      timestamp: at,
      message: {
        role: "assistant",
        content: [
          {
            type: "toolCall",
            id: `call_e${i}`,
            name: "edit",
            arguments: {
              path: `src/plant${i}x/session-manager.ts`,
              edits: [{ oldText: `export function idPlant${i}xSummaryTree() {`, newText: "export function tree() {" }],
            },
          },
          { type: "toolCall", id: `call_b${i}`, name: "bash", arguments: { command: `npm run check-${i}x` } },
        ],
        api: "x",
        provider: "x",
        model: "x",
        stopReason: "toolUse",
        timestamp: 0,
      },
    };
    appendFileSync(tmp, `${JSON.stringify(entry)}\n${JSON.stringify(calls)}\n`);
    renameSync(tmp, job.path);
    bytes += statSync(job.path).size;
    text += textBytes(job.path);
  }
  process.stdout.write(JSON.stringify({ bytes, text }));
}

if (opts["gen-part"]) {
  genPart(Number(args[0]), Number(args[1]));
  process.exit(0);
}

const pct = percentile;
const ms = (t0) => Number(process.hrtime.bigint() - t0) / 1e6;
const mb = (b) => (b / 1024 / 1024).toFixed(1);
const f1 = (x) => x.toFixed(1);
const f2 = (x) => x.toFixed(2);
const load = () =>
  loadavg()
    .map((x) => x.toFixed(2))
    .join(" ");

const files = [];
if (STORE)
  for (const d of readdirSync(dir, { withFileTypes: true }))
    if (d.isDirectory())
      for (const f of readdirSync(join(dir, d.name)).sort()) if (f.endsWith(".jsonl")) files.push(join(dir, d.name, f));
if (!STORE) for (let i = 0; i < N; i++) files.push(jobOf(i).path);
const NF = files.length;

// Remove both indexes: the listing sidecars and the search index.
function removeIndexes() {
  for (const d of [dir, ...readdirSync(dir).map((n) => join(dir, n))]) {
    for (const n of [".pi-session-index", ".pi-session-search.sqlite", ".pi-session-search.sqlite-journal"])
      rmSync(join(d, n), { force: true });
  }
}

const indexSize = () =>
  readdirSync(dir)
    .filter((f) => f.startsWith(".pi-session-search.sqlite"))
    .reduce((n, f) => n + statSync(join(dir, f)).size, 0);

// The planted queries: the same sessions, in the same order, for every build measured.
const planted = {
  words: (i) => `fact${i}x walrus`,
  phrase: (i) => `"purple walrus number ${i}"`,
  prefix: (i) => `authz${i}olo*`,
  "tool path": (i) => `src/plant${i}x/session-manager.ts`,
  "tool identifier part": (i) => `plant${i}xSummary`,
  "tool command": (i) => `"npm run check-${i}x"`,
};
const SAMPLES = 200;
// Common words of the generated text: every session matches; ranked over all of them.
const COMMON = ["session", "error handling", "the test*", '"the session"', "function return", "file", "update the"];
const ROUNDS = 20;

/**
 * `--measure=<checkout>` (a child process): that checkout's first build of the store's
 * search index (no index there before), its size, the query latencies, appended turns, cold
 * queries and peak RSS, as JSON on stdout.
 */
async function measure(checkout) {
  const entry = new URL(`file://${join(checkout, "index.mjs")}`).href;
  const { searchSessions } = await import(entry);
  const c0 = process.cpuUsage();
  const t0 = process.hrtime.bigint();
  await searchSessions("warmup", { sessionDir: dir });
  const build = ms(t0);
  // CPU time of every thread of this process (parsers, writer, main): on a shared machine
  // the ratio that moves least with the load.
  const c1 = process.cpuUsage(c0);
  const buildCpu = (c1.user + c1.system) / 1000;
  const rssAfterBuild = process.resourceUsage().maxRSS * 1024;
  const bytes = indexSize();
  const rnd = rng(42);
  const rows = [];
  for (const [kind, q] of Object.entries(STORE ? {} : planted)) {
    const lat = [];
    let found = 0;
    const missed = [];
    for (let j = 0; j < SAMPLES; j++) {
      const i = rnd(N);
      const s = process.hrtime.bigint();
      const hits = await searchSessions(q(i), { sessionDir: dir, limit: 20 });
      lat.push(ms(s));
      if (hits.some((h) => h.sessionPath === files[i] && h.onActiveBranch)) found++;
      else missed.push(i);
    }
    rows.push({ kind, lat, found, missed });
  }
  const common = [];
  for (let j = 0; j < 70; j++) {
    const s = process.hrtime.bigint();
    await searchSessions(COMMON[j % COMMON.length], { sessionDir: dir, limit: 20 });
    common.push(ms(s));
  }
  // Appended turns: append, then the next query must find it.
  const appended = [];
  let appendedFound = 0;
  for (let j = 0; j < ROUNDS; j++) {
    const i = rnd(NF);
    const p = files[i];
    const leaf = lastLine(p);
    const word = `zebracorn${j}q`;
    appendFileSync(
      p,
      `${JSON.stringify({ type: "message", id: `e${j.toString(16).padStart(7, "0")}`, parentId: leaf.id, timestamp: new Date().toISOString(), message: { role: "user", content: `freshly appended ${word}`, timestamp: 0 } })}\n`,
    );
    const s = process.hrtime.bigint();
    const hits = await searchSessions(word, { sessionDir: dir });
    appended.push(ms(s));
    if (hits.length === 1 && hits[0].sessionPath === p && hits[0].onActiveBranch) appendedFound++;
  }
  const rss = process.resourceUsage().maxRSS * 1024;
  // A query in a new process (as each `pi-session search` is): load the addon, open and
  // check the index, load its file table, stat every file (no watch yet), query.
  const cold = [];
  for (let j = 0; j < 5; j++) {
    const r = spawnSync(
      process.execPath,
      [
        "--input-type=module",
        "-e",
        `const t0 = performance.now(); const { searchSessions } = await import(${JSON.stringify(entry)});
         const t1 = performance.now(); await searchSessions("fact${j}x walrus", { sessionDir: ${JSON.stringify(dir)} });
         console.log(JSON.stringify({ load: t1 - t0, query: performance.now() - t1 }));`,
      ],
      { encoding: "utf8" },
    );
    if (r.status === 0) cold.push(JSON.parse(r.stdout));
  }
  // The background warm-up pi's extension runs while pi is idle (`warmSearchIndex`: one
  // low-priority thread, issue 43's third pass), cold, in a new process.
  removeIndexes();
  const w = spawnSync(
    process.execPath,
    [
      "--input-type=module",
      "-e",
      `const { warmSearchIndex } = await import(${JSON.stringify(entry)});
       if (typeof warmSearchIndex !== "function") process.exit(0);
       const c = process.cpuUsage(); const t = performance.now();
       await warmSearchIndex({ sessionDir: ${JSON.stringify(dir)} });
       const ms = performance.now() - t; const cu = process.cpuUsage(c);
       console.log(JSON.stringify({ ms, cpu: (cu.user + cu.system) / 1000, rss: process.resourceUsage().maxRSS * 1024 }));`,
    ],
    { encoding: "utf8" },
  );
  const warm = w.status === 0 && w.stdout.trim() ? { ...JSON.parse(w.stdout), bytes: indexSize() } : null;
  return { build, buildCpu, bytes, rows, common, appended, appendedFound, cold, rssAfterBuild, rss, warm };
}

if (opts.measure) {
  process.stdout.write(JSON.stringify(await measure(opts.measure)));
  process.exit(0);
}

// --- store
let manifest = null;
try {
  manifest = JSON.parse(readFileSync(manifestPath, "utf8"));
} catch {}
if (STORE)
  manifest = {
    n: NF,
    bytes: files.reduce((n, p) => n + statSync(p).size, 0),
    text: files.reduce((n, p) => n + textBytes(p), 0),
  };
else if (opts.regen || manifest?.gen !== GEN || manifest?.n !== N) {
  rmSync(root, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  const parts = Math.max(1, Math.min(2, cpus().length));
  const t0 = process.hrtime.bigint();
  const kids = Array.from(
    { length: parts },
    (_, k) =>
      new Promise((resolve, reject) => {
        const c = spawn(process.execPath, [SELF, "--gen-part", String(k), String(parts), String(N)], {
          stdio: ["ignore", "pipe", "inherit"],
        });
        let out = "";
        c.stdout.on("data", (d) => (out += d));
        c.on("exit", (code) =>
          code === 0 ? resolve(JSON.parse(out)) : reject(new Error(`generator ${k} exited ${code}`)),
        );
      }),
  );
  const res = await Promise.all(kids);
  manifest = {
    gen: GEN,
    n: N,
    bytes: res.reduce((a, r) => a + r.bytes, 0),
    text: res.reduce((a, r) => a + r.text, 0),
    genMs: ms(t0),
  };
  writeFileSync(manifestPath, JSON.stringify(manifest));
}

const distinct = new Set(files).size;
if (!STORE && (distinct !== N || !files.every((p) => existsSync(p))))
  throw new Error(`store incomplete: ${distinct} distinct paths, N = ${N}; run with --regen`);

// The appended turns of a measure are cut off again (the store stays as generated).
const sizes = new Map();
for (const p of files) sizes.set(p, statSync(p).size);
const restore = () => {
  for (const [p, size] of sizes) if (statSync(p).size !== size) truncateSync(p, size);
};
restore();
removeIndexes();
const loadBefore = load();

// --- first listing (child process, no sidecar; all projects like the index): what a pi user
// already waits for in /resume's "all" view.
const listing = spawnSync(
  process.execPath,
  [
    "--input-type=module",
    "-e",
    `import { SessionManager } from ${JSON.stringify(new URL("../index.mjs", import.meta.url).href)};
     const c = process.cpuUsage(); const t = performance.now(); const l = await SessionManager.listAll();
     const ms = performance.now() - t; const cu = process.cpuUsage(c);
     console.log(JSON.stringify({ ms, cpu: (cu.user + cu.system) / 1000, n: l.length, rss: process.resourceUsage().maxRSS * 1024 }));`,
  ],
  // listAll() lists <agentDir>/sessions/*/ (listAll(dir) would list one flat directory).
  { encoding: "utf8", env: { ...process.env, PI_CODING_AGENT_DIR: root } },
);
if (listing.status !== 0) throw new Error(listing.stderr);
const list = JSON.parse(listing.stdout);
removeIndexes();

// The same first listing by pi's own SessionManager (the reference, pi 1.6.0), for scale.
const REF = new URL("../node_modules/@earendil-works/pi-coding-agent/dist/core/session-manager.js", import.meta.url)
  .href;
const refListing = spawnSync(
  process.execPath,
  [
    "--input-type=module",
    "-e",
    `import { SessionManager } from ${JSON.stringify(REF)};
     const t = performance.now(); const l = await SessionManager.listAll();
     console.log(JSON.stringify({ ms: performance.now() - t, n: l.length }));`,
  ],
  { encoding: "utf8", env: { ...process.env, PI_CODING_AGENT_DIR: root }, maxBuffer: 1 << 20 },
);
const ref = refListing.status === 0 ? JSON.parse(refListing.stdout) : null;

// Settle past the index's one-second "recently modified" window (files written just now).
await new Promise((r) => setTimeout(r, 1100));

/** One build's measures, in a child process (no index before it; the store restored after). */
function measureIn(checkout) {
  removeIndexes();
  const r = spawnSync(
    process.execPath,
    [SELF, String(N), `--measure=${checkout}`, ...(STORE ? [`--store=${STORE}`] : [])],
    {
      encoding: "utf8",
      maxBuffer: 1 << 26,
    },
  );
  restore();
  if (r.status !== 0) throw new Error(`measure of ${checkout} failed: ${r.stderr}`);
  return JSON.parse(r.stdout);
}

const self = fileURLToPath(new URL("..", import.meta.url));
const before = opts.before ? measureIn(opts.before) : null;
// The listing's page cache is warm for both builds (the listing read every file).
const after = measureIn(self);
removeIndexes();

// Brute force: the literal scan of every file, same planted facts.
const { searchFiles } = await import("../lib/cli/search.mjs");
const rnd = rng(7);
const scan = [];
const scanList = files.map((path) => ({ path, id: "" }));
const literal = {
  words: (i) => `fact${i}x`,
  phrase: (i) => `purple walrus number ${i}`,
  prefix: (i) => `authz${i}olo`,
};
const SCANS = N >= 5000 ? 3 : 10;
for (const [kind, q] of Object.entries(STORE ? {} : literal)) {
  const lat = [];
  let found = 0;
  for (let j = 0; j < SCANS; j++) {
    const i = rnd(N);
    const s = process.hrtime.bigint();
    const hits = searchFiles(scanList, { query: q(i), icase: true, limit: 20 });
    lat.push(ms(s));
    if (hits.some((h) => h.path === files[i])) found++;
  }
  scan.push({ kind, lat, found });
}
const loadAfter = load();

// --- report
const lines = [];
const out = (l) => lines.push(l);
out(
  `Search benchmark: ${NF} sessions${STORE ? ` of ${STORE}` : `, ${PROJECTS} projects`}, store ${mb(manifest.bytes)} MB of which searchable text ${mb(manifest.text)} MB`,
);
out(
  `(load average 1/5/15 min before ${loadBefore}, after ${loadAfter}; ${cpus().length} CPUs; Node ${process.version})`,
);
out("");
out(
  `| measure | ${before ? `before (${opts.before}) | ` : ""}this build (${self}) |${before ? " this / before |" : ""}`,
);
out(`|---|${before ? "---|---|" : ""}---|`);
const row = (name, b, a, ratio) =>
  out(
    `| ${name} | ${before ? `${b} | ` : ""}${a} |${before ? ` ${ratio === undefined ? "" : `${f2(ratio)}×`} |` : ""}`,
  );
const both = (f) => [before ? f(before) : "", f(after)];
row(`first listing, \`SessionManager.listAll\` (no sidecar)`, `${f1(list.ms)} ms`, `${f1(list.ms)} ms`);
if (ref) row("first listing by pi 1.6.0's own `SessionManager.listAll`", `${f1(ref.ms)} ms`, `${f1(ref.ms)} ms`);
row("first index build", ...both((m) => `${f1(m.build)} ms`), before && after.build / before.build);
row("first index build / first listing", ...both((m) => `${f2(m.build / list.ms)}×`));
row(
  "first index build CPU time (all threads) / first listing's",
  ...both((m) => `${f1(m.buildCpu)} ms / ${f1(list.cpu)} ms = ${f2(m.buildCpu / list.cpu)}×`),
  before && after.buildCpu / before.buildCpu,
);
row("index size", ...both((m) => `${mb(m.bytes)} MB`), before && after.bytes / before.bytes);
row("index size / store bytes", ...both((m) => `${((100 * m.bytes) / manifest.bytes).toFixed(1)}%`));
row("index size / store's searchable text", ...both((m) => `${((100 * m.bytes) / manifest.text).toFixed(1)}%`));
for (const [k, r] of after.rows.entries()) {
  const fmt = (x) =>
    `${f2(pct(x.lat, 50))} / ${f2(pct(x.lat, 95))} / ${f2(Math.max(...x.lat))} ms (found ${x.found}/${SAMPLES})`;
  row(
    `query ${r.kind} (planted), p50 / p95 / max`,
    before ? fmt(before.rows[k]) : "",
    fmt(r),
    before && pct(r.lat, 95) / pct(before.rows[k].lat, 95),
  );
}
const fmtLat = (x) => `${f2(pct(x, 50))} / ${f2(pct(x, 95))} / ${f2(Math.max(...x))} ms`;
row(
  `query common words (${COMMON.length} queries matching most sessions), p50 / p95 / max`,
  ...both((m) => fmtLat(m.common)),
  before && pct(after.common, 95) / pct(before.common, 95),
);
const coldFmt = (m) =>
  m.cold.length
    ? `${f1(
        pct(
          m.cold.map((c) => c.query),
          50,
        ),
      )} / ${f1(Math.max(...m.cold.map((c) => c.query)))} ms`
    : "n/a";
row("cold query (new process: open the index, stat every file, query), p50 / max", ...both(coldFmt));
row(
  "appended turn → next query finds it, p50 / p95 / max",
  ...both(
    (m) =>
      `${f1(pct(m.appended, 50))} / ${f1(pct(m.appended, 95))} / ${f1(Math.max(...m.appended))} ms (found ${m.appendedFound}/${ROUNDS})`,
  ),
);
if (after.warm)
  row(
    "background warm-up (`warmSearchIndex`, cold, new process): wall / CPU / index size / peak RSS",
    ...both((m) =>
      m.warm ? `${f1(m.warm.ms)} ms / ${f1(m.warm.cpu)} ms / ${mb(m.warm.bytes)} MB / ${mb(m.warm.rss)} MB` : "",
    ),
    before?.warm && after.warm.cpu / before.warm.cpu,
  );
row(
  "peak RSS of the indexing process: after the build / at the end",
  ...both((m) => `${mb(m.rssAfterBuild)} / ${mb(m.rss)} MB`),
  before && after.rssAfterBuild / before.rssAfterBuild,
);
out(
  `| peak RSS of the first listing (child) | ${before ? `${mb(list.rss)} MB | ` : ""}${mb(list.rss)} MB |${before ? " |" : ""}`,
);
for (const r of scan)
  out(
    `| brute-force literal scan, ${r.kind}, p50 / max | ${before ? "| " : ""}${f1(pct(r.lat, 50))} / ${f1(Math.max(...r.lat))} ms (found ${r.found}/${r.lat.length}) |${before ? " |" : ""}`,
  );
for (const [name, m] of [
  ["before", before],
  ["this build", after],
]) {
  const misses = (m?.rows ?? [])
    .filter((r) => r.missed.length)
    .map((r) => `${r.kind}: ${r.missed.slice(0, 10).join(", ")}`);
  if (misses.length) out(`\nMISSED planted facts by ${name} (session numbers): ${misses.join("; ")}`);
}
console.log(`\n${lines.join("\n")}`);
if (opts.clean) rmSync(root, { recursive: true, force: true });
