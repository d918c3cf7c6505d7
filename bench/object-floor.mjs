#!/usr/bin/env node
// The floor under a giant session's first `getBranch()` (issue 39): what making the objects
// pi's start-up reads costs V8 itself, side by side with what pi-native and the reference
// pay, in one run. Not a test.
//
//   node bench/object-floor.mjs <session.jsonl> [--rounds N] [--no-ref]
//   e.g. node bench/object-floor.mjs bench/data/single/session-700mb.jsonl --rounds 3
//
// Three kinds of child process, taking turns:
// - `floor`: the branch's entries as pi-native hands them out before any heavy value is read
//   (every own data property, at every depth: `type`, ids, `timestamp`, the message's
//   `role`, `model`, `usage`..., not `content`), rebuilt from flat arrays prepared before the
//   clock starts: one object literal per layout, compiled once (`new Function`), interned
//   short strings shared, numbers from a Float64Array (ids and timestamps are slices of one string: views, not copies,
//   and that string is not counted). No Rust, no JSON, no lazy keys, no bookkeeping: nothing but the
//   allocations of the objects themselves. Prints the build's time, V8's collections during
//   it, and the heap the objects hold after a full collection (bytes an entry).
// - `native`: pi-native's `open`, `buildSessionContext()`, first `getBranch()`, with the same
//   heap measure around `getBranch()`.
// - `ref` (unless `--no-ref`): the reference package, the same three calls.
//
// The dump the floor rebuilds from is written once per run by a `native` child (a temporary
// file, removed at the end).
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { PerformanceObserver } from "node:perf_hooks";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";

const SELF = fileURLToPath(import.meta.url);
const ROOT = resolve(SELF, "../..");
const { values: args, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    rounds: { type: "string", default: "3" },
    "no-ref": { type: "boolean" },
    child: { type: "string" },
    dump: { type: "string" },
  },
});

/** Collect twice (a weak callback may free more in the second) and give V8's heap in use. */
function settledHeap() {
  globalThis.gc();
  globalThis.gc();
  return process.memoryUsage().heapUsed;
}

/** Time `fn` with V8's collections during it (PerformanceObserver `gc` entries). */
async function timed(fn) {
  let gcMs = 0;
  const obs = new PerformanceObserver((list) => {
    for (const e of list.getEntries()) gcMs += e.duration;
  });
  obs.observe({ entryTypes: ["gc"] });
  const t0 = performance.now();
  const value = fn();
  const ms = performance.now() - t0;
  // Entries are delivered asynchronously.
  await new Promise((r) => setTimeout(r, 20));
  obs.disconnect();
  return { value, ms, gcMs };
}

/** The own data properties of an entry object and of the objects under it (not accessors: heavy keys unread). */
function shellOf(o) {
  const out = {};
  for (const k of Object.keys(o)) {
    const d = Object.getOwnPropertyDescriptor(o, k);
    if (d.get !== undefined) continue;
    const v = d.value;
    out[k] = v !== null && typeof v === "object" && !Array.isArray(v) ? shellOf(v) : v;
  }
  return out;
}

/** Keys whose string values are shared short names (pi-native interns them too). */
const SHARED = new Set(["type", "role", "api", "provider", "model", "stopReason", "customType", "toolName", "kind"]);

/** Flat arrays and one compiled builder per layout for `shells` (the floor's input). */
function prepare(shells) {
  const layouts = new Map();
  const layoutOf = new Array(shells.length);
  const strings = [];
  const starts = [0];
  const nums = [];
  const refs = [];
  const arrays = [];
  const shared = [];
  const sharedIds = new Map();
  let len = 0;
  const kind = (k, v) => {
    if (v !== null && typeof v === "object" && !Array.isArray(v)) return v;
    if (typeof v === "string") return SHARED.has(k) ? "shared" : "string";
    if (typeof v === "number") return "number";
    if (Array.isArray(v)) return "array";
    return JSON.stringify(v); // true, false, null: constants of the layout
  };
  const keyOf = (o) =>
    JSON.stringify(Object.entries(o).map(([k, v]) => [k, typeof kind(k, v) === "object" ? keyOf(v) : kind(k, v)]));
  const walk = (o) => {
    for (const [k, v] of Object.entries(o)) {
      const t = kind(k, v);
      if (typeof t === "object") walk(v);
      else if (t === "shared") {
        if (!sharedIds.has(v)) {
          sharedIds.set(v, shared.length);
          shared.push(v);
        }
        refs.push(sharedIds.get(v));
      } else if (t === "string") {
        strings.push(v);
        len += v.length;
        starts.push(len);
      } else if (t === "number") nums.push(v);
      else if (t === "array") arrays.push(v);
    }
  };
  const compile = (sample) => {
    let s = 0;
    let r = 0;
    let n = 0;
    let a = 0;
    const expr = (o) =>
      `{${Object.entries(o)
        .map(([k, v]) => {
          const q = JSON.stringify(k);
          const t = kind(k, v);
          if (typeof t === "object") return `${q}: ${expr(v)}`;
          // A slice of 13+ characters is a view into the pool (40 bytes, no copy): cheaper
          // than the copy a caller's own string is, and the pool is not counted, so the
          // floor stays below what any real hand-out costs.
          if (t === "string") return `${q}: P.slice(S[o + ${s}], S[o + ${++s}])`;
          if (t === "shared") return `${q}: T[R[r + ${r++}]]`;
          if (t === "number") return `${q}: F[f + ${n++}]`;
          // Small arrays left in a shell (a short content, tool arguments): made before
          // the clock starts, so not counted either.
          if (t === "array") return `${q}: A[x + ${a++}]`;
          return `${q}: ${t}`;
        })
        .join(", ")}}`;
    const body = expr(sample);
    return {
      build: new Function("T", "R", "r", "P", "S", "o", "F", "f", "A", "x", `return ${body};`),
      ns: s,
      nr: r,
      nn: n,
      na: a,
    };
  };
  for (let i = 0; i < shells.length; i++) {
    const key = keyOf(shells[i]);
    let L = layouts.get(key);
    if (L === undefined) {
      L = compile(shells[i]);
      layouts.set(key, L);
    }
    layoutOf[i] = L;
    walk(shells[i]);
  }
  return {
    layoutOf,
    layouts: layouts.size,
    P: strings.join(""),
    S: Uint32Array.from(starts),
    F: Float64Array.from(nums),
    R: Uint32Array.from(refs),
    T: shared,
    A: arrays,
  };
}

if (args.child === "floor") {
  // In a function of its own: the parsed dump must not stay in a register of this frame.
  const load = () => prepare(JSON.parse(readFileSync(args.dump, "utf8")));
  const { layoutOf, layouts, P, S, F, R, T, A } = load();
  const before = settledHeap();
  const {
    value: objs,
    ms,
    gcMs,
  } = await timed(() => {
    const out = new Array(layoutOf.length);
    let o = 0;
    let r = 0;
    let f = 0;
    let x = 0;
    for (let i = 0; i < layoutOf.length; i++) {
      const L = layoutOf[i];
      out[i] = L.build(T, R, r, P, S, o, F, f, A, x);
      o += L.ns;
      r += L.nr;
      f += L.nn;
      x += L.na;
    }
    return out;
  });
  const held = settledHeap() - before;
  console.log(JSON.stringify({ entries: objs.length, layouts, branchMs: ms, gcMs, bytesPerEntry: held / objs.length }));
  process.exit(0);
}

if (args.child === "native" || args.child === "ref") {
  const [file] = positionals;
  const mod =
    args.child === "native"
      ? await import(`${ROOT}/index.mjs`)
      : await import(`${ROOT}/node_modules/@earendil-works/pi-coding-agent/dist/core/session-manager.js`);
  const t0 = performance.now();
  const sm = mod.SessionManager.open(file);
  const t1 = performance.now();
  sm.buildSessionContext();
  const t2 = performance.now();
  const before = settledHeap();
  const { value: branch, ms, gcMs } = await timed(() => sm.getBranch());
  // The reference's entries exist since `open`: its branch holds only the array.
  const held = settledHeap() - before;
  if (args.dump) writeFileSync(args.dump, JSON.stringify(branch.map(shellOf)));
  console.log(
    JSON.stringify({
      entries: branch.length,
      openMs: t1 - t0,
      contextMs: t2 - t1,
      branchMs: ms,
      gcMs,
      bytesPerEntry: held / branch.length,
    }),
  );
  process.exit(0);
}

const [file] = positionals;
if (!file) {
  console.error("usage: node bench/object-floor.mjs <session.jsonl> [--rounds N] [--no-ref]");
  process.exit(2);
}
const dir = mkdtempSync(join(tmpdir(), "psn-floor-"));
const dump = join(dir, "shells.json");
const run = (kind, extra = []) =>
  JSON.parse(
    execFileSync(
      process.execPath,
      ["--expose-gc", "--max-old-space-size=16384", SELF, "--child", kind, ...extra, resolve(file)],
      { encoding: "utf8", maxBuffer: 1 << 20, stdio: ["ignore", "pipe", "inherit"] },
    )
      .trim()
      .split("\n")
      .pop(),
  );
try {
  run("native", ["--dump", dump]);
  const kinds = args["no-ref"] ? ["floor", "native"] : ["floor", "native", "ref"];
  const rows = new Map(kinds.map((k) => [k, []]));
  for (let i = 0; i < Number(args.rounds); i++)
    for (const k of kinds) rows.get(k).push(run(k, k === "floor" ? ["--dump", dump] : []));
  const median = (xs) => {
    const s = xs.filter((x) => x !== undefined).sort((a, b) => a - b);
    return s.length === 0 ? undefined : s[Math.floor((s.length - 1) / 2)];
  };
  const cols = ["openMs", "contextMs", "branchMs", "gcMs", "bytesPerEntry"];
  const fmt = (x) => (x === undefined ? "" : Math.round(x).toLocaleString("en-US"));
  console.log(
    `${file}: ${rows.get("native")[0].entries.toLocaleString("en-US")} branch entries, medians of ${args.rounds}`,
  );
  console.log(
    `| | open ms | context ms | first getBranch() ms | of it V8 GC ms | heap B an entry | open + context + getBranch ms |`,
  );
  console.log("|---|---:|---:|---:|---:|---:|---:|");
  const med = {};
  for (const [k, rs] of rows) {
    med[k] = Object.fromEntries(cols.map((c) => [c, median(rs.map((r) => r[c]))]));
    const m = med[k];
    const total = k === "floor" ? undefined : m.openMs + m.contextMs + m.branchMs;
    console.log(`| ${k} | ${cols.map((c) => fmt(m[c])).join(" | ")} | ${fmt(total)} |`);
  }
  const n = med.native;
  const lower = n.openMs + n.contextMs + med.floor.branchMs;
  console.log(
    `pi-native's open and context with the floor's objects: ${fmt(lower)} ms` +
      (med.ref
        ? `, ${(lower / (med.ref.openMs + med.ref.contextMs + med.ref.branchMs)).toFixed(2)}x of the reference`
        : "") +
      (med.ref
        ? `; pi-native now ${((n.openMs + n.contextMs + n.branchMs) / (med.ref.openMs + med.ref.contextMs + med.ref.branchMs)).toFixed(2)}x`
        : ""),
  );
} finally {
  rmSync(dir, { recursive: true, force: true });
}
