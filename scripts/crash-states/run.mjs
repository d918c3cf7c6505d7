#!/usr/bin/env node
// The crash-state test: every workload (workload.mjs) recorded under strace, in each fsync
// mode of ours and once with the reference, its crash states built under both persistence
// models (model.mjs) and checked (check.mjs). Also the same pipeline over the deliberately
// broken traces (every fsync/fdatasync removed), which must report losses.
//
//   node scripts/crash-states/run.mjs                 long run (npm run test:crash): every crash
//                                                     point, up to 64 states per point
//   node scripts/crash-states/run.mjs --cap 4 --stride 2 --index-stride 4 --writer ours-batch
//                     --writer ours-always        bounded (what npm test runs: every crash point
//                                                 but one in 2, one in 8 of the index workload's)
//   node scripts/crash-states/run.mjs --only fork --writer ours-batch --verbose
//   node scripts/crash-states/run.mjs --json out.json
//
// Exit status 1 when a promise of ours is broken (batch/always under both models, never under
// the prefix model) or when a broken trace reports no loss.
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { checker } from "./check.mjs";
import { buildOps, indexUnits, materialize, rng, snapshot, statesAt, withoutSyncs } from "./model.mjs";
import { parseTrace, straceArgs, straceWorks } from "./strace.mjs";
import { WORKLOADS } from "./workload.mjs";

const here = import.meta.dirname;
export const WRITERS = ["ours-batch", "ours-always", "ours-never", "ref"];
export const MODELS = ["prefix", "barrier"];

/** Whether a writer's problems under a model fail the test. */
export const enforced = (writer, model) =>
  writer === "ours-batch" || writer === "ours-always" || (writer === "ours-never" && model === "prefix");

/** Initial sessions: entries per file, and lines already invalid (a torn tail). */
function initialOf(snap) {
  const counts = new Map();
  const invalid = new Map();
  for (const [f, b] of snap.files) {
    if (!f.endsWith(".jsonl")) continue;
    let n = 0;
    const bad = new Set();
    for (const l of b.toString("utf8").split("\n")) {
      if (l === "") continue;
      try {
        if (JSON.parse(l).type !== "session") n++;
      } catch {
        bad.add(l);
      }
    }
    counts.set(f, n);
    invalid.set(f, bad);
  }
  return { counts, invalid };
}

/** Record one workload run under strace: { ops, init, root, initial, workload, writer }. */
export function record(workload, writer, scratch) {
  const root = realpathSync(mkdtempSync(join(scratch, `${workload}-${writer}-`)));
  const node = process.execPath;
  const script = join(here, "workload.mjs");
  const setup = spawnSync(node, [script, "setup", workload, root], { encoding: "utf8" });
  if (setup.status !== 0) throw new Error(`setup ${workload}: ${setup.stderr}`);
  const snap = snapshot(root);
  const marks = `${root}.marks`;
  const trace = `${root}.trace`;
  const impl = writer === "ref" ? "ref" : "ours";
  /** @type {NodeJS.ProcessEnv} */
  const env = { ...process.env, PI_SESSION_NATIVE_FSYNC: writer === "ref" ? "batch" : writer.slice(5) };
  delete env.PI_SESSION_NATIVE_NO_INDEX;
  const r = spawnSync("strace", [...straceArgs(trace), node, script, "run", impl, workload, root, marks], {
    encoding: "utf8",
    env,
  });
  if (r.status !== 0) throw new Error(`run ${workload} ${writer}: exit ${r.status}\n${r.stderr}`);
  const events = parseTrace(readFileSync(trace, "utf8"));
  const { ops, init } = buildOps(events, root, snap, marks);
  rmSync(trace, { force: true });
  return { ops, init, root, initial: initialOf(snap), workload, writer };
}

/** The batch flusher's delays: per append ack, ms until a completed sync of its file (or exit). */
export function syncDelays(ops) {
  const out = [];
  const exit = ops.find((o) => o.kind === "exit");
  for (const o of ops) {
    if (o.kind !== "mark" || !o.text.startsWith("append ")) continue;
    const s = ops.find((x) => x.i > o.i && ((x.kind === "sync" && x.unit === `f${o.ino}`) || x.kind === "exit"));
    out.push({ ms: ((s ?? exit)?.time - o.time) * 1000, byExit: s?.kind === "exit" || s === undefined });
  }
  return out;
}

/**
 * Check every crash state of a recorded run under `model`. Returns
 * { points, states, unique, problems: Map kind -> { promised, unpromised }, examples }.
 */
export async function checkRun(rec, model, { cap, stride, indexStride = 1, seed, scratch, broken = false }) {
  const ops = broken ? withoutSyncs(rec.ops) : rec.ops;
  const run = { ...rec, ops };
  const units = indexUnits(ops);
  const check = checker(run, rec.writer, model, scratch);
  const rand = rng(seed);
  const seen = new Map();
  const out = {
    points: 0,
    states: 0,
    unique: 0,
    violating: 0,
    lossy: 0,
    unopenable: 0,
    mixed: 0,
    problems: new Map(),
    examples: [],
  };
  const points = [];
  const step = rec.workload === "index" ? stride * indexStride : stride;
  for (let k = 0; k <= ops.length; k += step) points.push(k);
  if (points[points.length - 1] !== ops.length) points.push(ops.length);
  for (const k of points) {
    out.points++;
    for (const choice of statesAt(ops, units, k, model, cap, rand)) {
      const state = materialize(ops, rec.init, rec.root, choice);
      out.states++;
      // The same files are judged again at another crash point (what was promised by then
      // differs); the checker reads each distinct state once.
      const key = `${state.key} ${k}`;
      if (seen.has(key)) continue;
      seen.set(key, true);
      const problems = await check(state, k);
      for (const p of problems) {
        const c = out.problems.get(p.kind) ?? { promised: 0, unpromised: 0 };
        if (p.promised) c.promised++;
        else c.unpromised++;
        out.problems.set(p.kind, c);
        if (p.promised && out.examples.length < 5) out.examples.push({ k, ...p });
      }
      // Per state: a broken promise; an acknowledged write or initial entry lost (promised
      // or not); a session that does not open; a whole-file write neither old nor new.
      const has = (f) => problems.some(f);
      if (has((p) => p.promised)) out.violating++;
      if (has((p) => p.kind.startsWith("lost-"))) out.lossy++;
      if (has((p) => p.kind === "open-failed")) out.unopenable++;
      if (has((p) => p.kind === "mixed-whole-file")) out.mixed++;
    }
  }
  out.unique = check.distinct();
  return out;
}

function parseArgs(argv) {
  const o = {
    cap: 64,
    stride: 1,
    indexStride: 1,
    seed: 41,
    only: [],
    writers: [],
    json: undefined,
    verbose: false,
    keep: false,
  };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === "--cap") o.cap = Number(argv[++i]);
    else if (a === "--stride") o.stride = Number(argv[++i]);
    else if (a === "--index-stride") o.indexStride = Number(argv[++i]);
    else if (a === "--seed") o.seed = Number(argv[++i]);
    else if (a === "--only") o.only.push(argv[++i]);
    else if (a === "--writer") o.writers.push(argv[++i]);
    else if (a === "--json") o.json = argv[++i];
    else if (a === "--verbose") o.verbose = true;
    else if (a === "--keep") o.keep = true;
    else throw new Error(`unknown argument ${a}`);
  }
  return o;
}

/** The whole test; resolves { rows, failures, total }. */
export async function runAll(opts) {
  opts = { cap: 64, stride: 1, indexStride: 1, seed: 41, only: [], writers: [], ...opts };
  const scratch = realpathSync(mkdtempSync(join(tmpdir(), "psn-crash-")));
  // Crash states are written out thousands of times: in memory where there is a tmpfs (100x
  // faster than a disk file system here). Recordings stay on the real temp dir.
  const states = realpathSync(mkdtempSync(join(existsSync("/dev/shm") ? "/dev/shm" : scratch, "psn-crash-states-")));
  const rows = [];
  const failures = [];
  let total = 0;
  const workloads = opts.only.length ? WORKLOADS.filter((w) => opts.only.includes(w)) : WORKLOADS;
  const writers = opts.writers.length ? opts.writers : WRITERS;
  try {
    for (const workload of workloads) {
      for (const writer of writers) {
        const rec = record(workload, writer, scratch);
        const delays = writer === "ours-batch" ? syncDelays(rec.ops) : [];
        for (const model of MODELS) {
          const r = await checkRun(rec, model, { ...opts, scratch: states });
          total += r.states;
          const promised = [...r.problems].filter(([, c]) => c.promised > 0);
          const row = {
            workload,
            writer,
            model,
            ops: rec.ops.length,
            ...r,
            broken: false,
            /** @type {number | undefined} */ maxSyncDelayMs: undefined,
            /** @type {string | undefined} */ why: undefined,
          };
          rows.push(row);
          if (enforced(writer, model) && promised.length) failures.push(row);
          if (opts.verbose || (enforced(writer, model) && promised.length)) print(row);
          if (delays.length && model === "barrier") row.maxSyncDelayMs = Math.max(...delays.map((d) => d.ms));
        }
        // The broken trace: the same run without its fsyncs must lose something it promised.
        if (writer === "ours-batch" || writer === "ours-always") {
          const b = await checkRun(rec, "barrier", { ...opts, scratch: states, broken: true });
          total += b.states;
          const row = {
            workload,
            writer,
            model: "barrier",
            ops: rec.ops.length,
            ...b,
            broken: true,
            maxSyncDelayMs: undefined,
            why: undefined,
          };
          rows.push(row);
          const lost = [...b.problems].some(([, c]) => c.promised > 0);
          if (!lost) failures.push({ ...row, why: "the broken trace reported no loss" });
          if (opts.verbose) print(row);
        }
        if (!opts.keep) rmSync(rec.root, { recursive: true, force: true });
      }
    }
  } finally {
    rmSync(states, { recursive: true, force: true });
    if (!opts.keep) rmSync(scratch, { recursive: true, force: true });
  }
  return { rows, failures, total };
}

function problemsText(problems) {
  return [...problems]
    .map(([k, c]) => `${k} ${c.promised}${c.unpromised ? ` (+${c.unpromised} unpromised)` : ""}`)
    .join(", ");
}

function print(row) {
  const p = problemsText(row.problems) || "none";
  console.log(
    `${row.workload.padEnd(8)} ${row.writer.padEnd(11)} ${row.model.padEnd(7)}${row.broken ? " BROKEN" : ""}: ` +
      `${row.ops} ops, ${row.points} points, ${row.states} states (${row.unique} distinct), ${row.violating} violating, ` +
      `${row.lossy} lossy, ${row.unopenable} unopenable, ${row.mixed} mixed; problems: ${p}` +
      (row.maxSyncDelayMs !== undefined
        ? `; slowest batch sync ${row.maxSyncDelayMs.toFixed(0)} ms after its append`
        : ""),
  );
  for (const e of row.examples) console.log(`    e.g. k=${e.k} ${e.kind} ${e.file}: ${e.detail}`);
}

/** A summary table: per writer and model, states checked and problems. */
export function summary(rows) {
  const lines = [];
  for (const writer of WRITERS)
    for (const model of MODELS) {
      for (const broken of [false, true]) {
        const rs = rows.filter((r) => r.writer === writer && r.model === model && r.broken === broken);
        if (!rs.length) continue;
        const states = rs.reduce((s, r) => s + r.states, 0);
        const unique = rs.reduce((s, r) => s + r.unique, 0);
        const problems = new Map();
        for (const r of rs)
          for (const [k, c] of r.problems) {
            const t = problems.get(k) ?? { promised: 0, unpromised: 0 };
            t.promised += c.promised;
            t.unpromised += c.unpromised;
            problems.set(k, t);
          }
        const bad = rs.filter((r) => [...r.problems].some(([, c]) => c.promised > 0)).map((r) => r.workload);
        const sum = (key) => rs.reduce((n, r) => n + r[key], 0);
        const perState =
          `${sum("violating")} violating, ${sum("lossy")} losing acknowledged data, ` +
          `${sum("unopenable")} with a session that does not open, ${sum("mixed")} with a mixed whole file`;
        lines.push(
          `${writer.padEnd(11)} ${model.padEnd(7)}${broken ? " broken" : "       "} ${String(states).padStart(6)} states ` +
            `(${String(unique).padStart(6)} distinct): ${perState}; problems: ${problemsText(problems) || "none"}` +
            (bad.length ? `  [${bad.join(" ")}]` : ""),
        );
      }
    }
  return lines.join("\n");
}

if (process.argv[1] === import.meta.filename) {
  const opts = parseArgs(process.argv.slice(2));
  if (!straceWorks()) {
    console.log("crash-states: strace is missing or cannot trace here; nothing checked");
    process.exit(0);
  }
  const t0 = Date.now();
  const { rows, failures, total } = await runAll(opts);
  console.log(summary(rows));
  const delays = rows.filter((r) => r.maxSyncDelayMs !== undefined).map((r) => r.maxSyncDelayMs);
  console.log(
    `${total} crash states in ${((Date.now() - t0) / 1000).toFixed(1)} s; slowest batch sync after an append: ` +
      `${delays.length ? Math.max(...delays).toFixed(0) : "-"} ms`,
  );
  if (opts.json) {
    const plain = rows.map((r) => ({ ...r, problems: Object.fromEntries(r.problems) }));
    writeFileSync(opts.json, JSON.stringify(plain, null, 1));
  }
  for (const f of failures)
    console.log(
      `FAIL ${f.workload} ${f.writer} ${f.model}${f.broken ? " broken" : ""}: ${f.why ?? problemsText(f.problems)}`,
    );
  process.exit(failures.length ? 1 : 0);
}
