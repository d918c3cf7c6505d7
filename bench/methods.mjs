#!/usr/bin/env node
// Per-method figures, each in a fresh process: the native SessionManager
// (./index.js) and the reference (@earendil-works/pi-coding-agent@1.6.0
// dist/core/session-manager.js) side by side in one run, on the 10 MB and 100 MB bench sessions.
//
//   node bench/methods.mjs                 10 MB and 100 MB, 5 runs (npm run bench:methods;
//                                          also `node bench/run.mjs --only methods`, and a full
//                                          `npm run bench` runs it after the library suite)
//   node bench/methods.mjs --runs 9        fresh processes per scenario and side (default 5)
//   node bench/methods.mjs --sizes 100mb   which bench/data/single sessions (default 10mb,100mb)
//   node bench/methods.mjs --only branch   scenarios whose key contains a substring (repeatable):
//                                          context, projection, branch, stringify, entries, tree, pi
//   node bench/methods.mjs --big           also the 1 GB session full of base64 images
//                                          (generated on first use by bench/gen.mjs
//                                          --images, ~2 min): open + buildSessionContext() +
//                                          getBranch(), time and peak RSS, --big-runs N each
//                                          (default 1); only that row: --only images --big
//   node bench/methods.mjs --node current  children run under this node (default: Node 22 from
//                                          scripts/node22.mjs, pi's runtime; else this node)
//   node bench/methods.mjs --native <path> module exporting SessionManager (default ./index.js)
//   node bench/methods.mjs --json <file>   also write every sample
//
// Every sample is one child process: it loads one implementation, opens the session (timed:
// the `open` row is the median over every child of that side) and runs one scenario:
//   context     buildSessionContext()
//   projection  buildSessionProjection()
//   branch      getBranch() six times (1st, 2nd, 6th shown; pi calls it 6-9 times at start-up),
//               then reads every branch entry's `message` (what a caller walking the branch
//               pays after getBranch(): `for (const e of branch) e.message...`)
//   stringify   getBranch(), then JSON.stringify(getBranch()) (a whole-branch read)
//   entries     the first getEntries()
//   tree        the first getTree()
//   pi          buildSessionContext() then the first getBranch(): peak RSS (VmHWM) after them
//   images      (--big) the pi scenario on the 1 GB image session
// Sides alternate (reference first in even runs, native first in odd ones) after one untimed
// warm-up child of each per session (page cache). Nothing forces a GC: a collection caused by
// one call and run in the next is part of what the caller feels.
import { spawnSync } from "node:child_process";
import { readFileSync, statSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import os from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { findNode22 } from "../scripts/node22.mjs";
import { DEFAULT_DATA_DIR, generate, generateImages, singlePath } from "./gen.mjs";
import { fmtMs, fmtRatio, median, num, parseOptions, runNodeJson } from "./lib.mjs";

const HERE = dirname(fileURLToPath(import.meta.url));
const ROOT = resolve(HERE, "..");
const REF_PATH = join(ROOT, "node_modules/@earendil-works/pi-coding-agent/dist/core/session-manager.js");
const MB = 1024 * 1024;

const { values: args } = parseOptions(
  {
    child: { type: "string" },
    runs: { type: "string" },
    big: { type: "boolean" },
    "big-runs": { type: "string" },
    only: { type: "string", multiple: true },
    sizes: { type: "string" },
    native: { type: "string" },
    node: { type: "string" },
    json: { type: "string" },
  },
  "usage: node bench/methods.mjs [--runs N] [--sizes 10mb,100mb] [--only <scenario>]... [--big [--big-runs N]] [--node current|<path>] [--native <path>] [--json <file>]",
);

function vmHWM() {
  try {
    const m = /VmHWM:\s+(\d+) kB/.exec(readFileSync("/proc/self/status", "utf8"));
    if (m) return Number(m[1]) / 1024;
  } catch {}
  return process.resourceUsage().maxRSS / 1024;
}

// ---------------------------------------------------------------------------
// child: one implementation, one session, one scenario
// ---------------------------------------------------------------------------
if (args.child !== undefined) {
  const spec = JSON.parse(args.child);
  let SM;
  if (spec.impl === "native") {
    const mod = spec.nativePath.endsWith(".mjs")
      ? await import(pathToFileURL(spec.nativePath).href)
      : createRequire(import.meta.url)(spec.nativePath);
    SM = mod.SessionManager ?? mod.default?.SessionManager;
  } else SM = (await import(pathToFileURL(REF_PATH).href)).SessionManager;
  const baseMB = vmHWM();
  const ms = {};
  const cpu = {}; // user + system CPU ms of the whole process (every thread: GC helpers, Rust)
  const n = {};
  const time = (key, f) => {
    const c0 = process.cpuUsage();
    const t0 = performance.now();
    const v = f();
    ms[key] = performance.now() - t0;
    const c = process.cpuUsage(c0);
    cpu[key] = (c.user + c.system) / 1000;
    return v;
  };
  const sm = time("open", () => SM.open(spec.file));
  const openPeakMB = vmHWM();
  let keep;
  switch (spec.scenario) {
    case "context":
      keep = time("context", () => sm.buildSessionContext());
      n.messages = keep.messages.length;
      break;
    case "projection":
      keep = time("projection", () => sm.buildSessionProjection());
      n.messages = keep.messages.length;
      break;
    case "branch": {
      const b = [];
      for (let i = 1; i <= 6; i++) b.push(time(`branch${i}`, () => sm.getBranch()));
      n.branch = b[0].length;
      n.same = b[5].every((e, i) => e === b[0][i]); // the same entry objects on repeated calls
      n.parts = time("readMessages", () => {
        let parts = 0;
        for (const e of b[5]) {
          const m = e.message;
          if (m) parts += typeof m.content === "string" ? 1 : Array.isArray(m.content) ? m.content.length : 0;
        }
        return parts;
      });
      keep = b;
      break;
    }
    case "stringify": {
      const b = time("branch1", () => sm.getBranch());
      n.chars = time("stringify", () => JSON.stringify(sm.getBranch()).length);
      keep = b;
      break;
    }
    case "entries":
      keep = time("entries", () => sm.getEntries());
      n.entries = keep.length;
      break;
    case "tree":
      keep = time("tree", () => sm.getTree());
      n.roots = keep.length;
      break;
    case "pi":
    case "images": {
      const ctx = time("context", () => sm.buildSessionContext());
      const b = time("branch1", () => sm.getBranch());
      n.messages = ctx.messages.length;
      n.branch = b.length;
      keep = [ctx, b];
      break;
    }
    default:
      throw new Error(`unknown scenario ${spec.scenario}`);
  }
  globalThis.__keep = [sm, keep];
  process.stdout.write(`${JSON.stringify({ ms, cpu, n, baseMB, openPeakMB, peakMB: vmHWM() })}\n`);
  process.exit(0);
}

// ---------------------------------------------------------------------------
// parent
// ---------------------------------------------------------------------------
const RUNS = num(args.runs, 5, "runs");
const BIG = args.big === true;
const BIG_RUNS = num(args["big-runs"], 1, "big-runs");
const only = (args.only ?? []).map((s) => s.toLowerCase()).filter((s) => s !== "methods");
const SIZES = (args.sizes ?? "10mb,100mb").split(",").filter(Boolean);
const nativePath = resolve(ROOT, args.native ?? "index.js");
const nodeOpt = args.node;
const NODE = nodeOpt === "current" ? process.execPath : nodeOpt ? resolve(nodeOpt) : (findNode22() ?? process.execPath);
const NODE_VERSION = spawnSync(NODE, ["--version"], { encoding: "utf8" }).stdout.trim();
const SCENARIOS = ["context", "projection", "branch", "stringify", "entries", "tree", "pi"];
const wanted = (key) => only.length === 0 || only.some((s) => key.includes(s));

/** One child process of this script (`--child`): its JSON answer. */
function runChild(impl, spec, { nodeArgs = [], timeout = 600_000 } = {}) {
  return runNodeJson(fileURLToPath(import.meta.url), ["--child", JSON.stringify({ impl, nativePath, ...spec })], {
    node: NODE,
    nodeArgs,
    timeout,
  });
}

const fmt = (v) => fmtMs(v, "—");
const ratio = (a, b) => fmtRatio(a, b, "—");

async function main() {
  const startLoad = os.loadavg();
  const t0 = Date.now();
  console.log(
    `methods bench: fresh process per sample, node ${NODE_VERSION} (${NODE === process.execPath ? "this node" : NODE}); ${os.cpus().length} CPUs; load ${startLoad.map((l) => l.toFixed(2)).join(" ")}`,
  );
  const scenarios = SCENARIOS.filter(wanted);
  if (scenarios.length) generate({ quick: !SIZES.includes("100mb"), log: () => {} });
  const sides = ["ref", "native"];
  const out = [];
  const all = { sizes: {} };

  for (const size of scenarios.length ? SIZES : []) {
    const file = singlePath(DEFAULT_DATA_DIR, size);
    /** @type {Record<string, Record<string, any[]>>} scenario -> side -> [result] */
    const samples = {};
    for (const sc of scenarios) samples[sc] = { ref: [], native: [] };
    console.log(`  ${size} (${(statSync(file).size / MB).toFixed(0)} MB):`);
    for (const how of sides) await runChild(how, { file, scenario: scenarios[0] }); // warm-up: page cache
    for (let i = 0; i < RUNS; i++) {
      for (const sc of scenarios)
        for (const how of i % 2 ? [...sides].reverse() : sides)
          samples[sc][how].push(await runChild(how, { file, scenario: sc }));
      process.stdout.write(`    run ${i + 1}/${RUNS}\r`);
    }
    process.stdout.write("\n");
    all.sizes[size] = samples;
    // rows: [label, side -> wall ms, side -> CPU ms]; f(t) reads one child's timing map (ms or cpu)
    const pick = (sc, f, k = "ms") =>
      Object.fromEntries(sides.map((h) => [h, samples[sc] ? median(samples[sc][h].map((x) => f(x[k]))) : undefined]));
    const every = (f, k = "ms") =>
      Object.fromEntries(sides.map((h) => [h, median(scenarios.flatMap((sc) => samples[sc][h].map((x) => f(x[k]))))]));
    /** @type {[string, any, any][]} */
    const rows = [
      [
        `\`SessionManager.open\` (every child, N=${RUNS * scenarios.length})`,
        every((t) => t.open),
        every((t) => t.open, "cpu"),
      ],
    ];
    const add = (sc, label, f) => samples[sc] && rows.push([label, pick(sc, f), pick(sc, f, "cpu")]);
    add("context", "`buildSessionContext()` (after open)", (t) => t.context);
    add("projection", "`buildSessionProjection()` (after open)", (t) => t.projection);
    add("branch", "1st `getBranch()` (after open)", (t) => t.branch1);
    add("branch", "2nd `getBranch()`", (t) => t.branch2);
    add("branch", "6th `getBranch()`", (t) => t.branch6);
    add("branch", "read every branch entry's `message` (after 6 `getBranch()`)", (t) => t.readMessages);
    add("stringify", "`JSON.stringify(getBranch())` (after the 1st `getBranch()`)", (t) => t.stringify);
    add("entries", "1st `getEntries()` (after open)", (t) => t.entries);
    add("tree", "1st `getTree()` (after open)", (t) => t.tree);
    add("pi", "1st `getBranch()` after `buildSessionContext()`", (t) => t.branch1);
    add("branch", "**open + 1st `getBranch()`** (target ≤ 0.2x)", (t) => t.open + t.branch1);
    add("pi", "open + `buildSessionContext()` + 1st `getBranch()`", (t) => t.open + t.context + t.branch1);
    /** @type {[string, any][]} */
    const mem = [];
    mem.push([`peak RSS after open (every child)`, every((v) => v, "openPeakMB")]);
    if (samples.pi) mem.push(["**peak RSS after open + context + 1st `getBranch()`**", pick("pi", (v) => v, "peakMB")]);
    if (samples.branch)
      mem.push(["peak RSS after open + 6 `getBranch()` + reading every `message`", pick("branch", (v) => v, "peakMB")]);
    const base = median(scenarios.flatMap((sc) => samples[sc].ref.map((s) => s.baseMB)));
    const baseN = median(scenarios.flatMap((sc) => samples[sc].native.map((s) => s.baseMB)));
    // the two sides must have seen the same session
    const warn = [];
    for (const sc of scenarios) {
      const a = JSON.stringify(samples[sc].ref[0].n);
      const b = JSON.stringify(samples[sc].native[0].n);
      if (a !== b) warn.push(`WARNING ${sc}: reference ${a}, native ${b}`);
    }
    out.push("");
    out.push(`**${size}** (${scenarios.map((sc) => `${sc}: ${JSON.stringify(samples[sc].ref[0].n)}`).join("; ")})`);
    out.push("");
    out.push(
      `| ${size}, fresh process each, median of ${RUNS} | reference wall ms | native wall ms | ratio | reference CPU ms | native CPU ms | ratio |`,
    );
    out.push("|---|---:|---:|---:|---:|---:|---:|");
    for (const [label, v, c] of rows)
      out.push(
        `| ${label} | ${fmt(v.ref)} | ${fmt(v.native)} | ${ratio(v.native, v.ref)} | ${fmt(c.ref)} | ${fmt(c.native)} | ${ratio(c.native, c.ref)} |`,
      );
    out.push(`| **memory** (VmHWM of the child) | reference MB | native MB | ratio | | | |`);
    for (const [label, v] of mem)
      out.push(`| ${label} | ${fmt(v.ref)} | ${fmt(v.native)} | ${ratio(v.native, v.ref)} | | | |`);
    out.push(`| (RSS after loading the module, before open) | ${fmt(base)} | ${fmt(baseN)} | | | | |`);
    for (const w of warn) out.push(w);
    console.log(
      out
        .slice(out.lastIndexOf("") + 1)
        .join("\n")
        .replace(/^/gm, "    "),
    );
  }

  if (BIG && (only.length === 0 || wanted("images"))) {
    const img = generateImages({ log: (s) => console.log(s) });
    console.log(
      `  1 GB image session: ${(img.size / MB).toFixed(0)} MB, ${img.entries} entries, ${img.images} images (${(img.imageBytes / MB).toFixed(0)} MB base64)`,
    );
    const res = { ref: [], native: [] };
    const notes = [];
    for (const how of sides) await runChild(how, { file: img.file, scenario: "context" }, { timeout: 1_800_000 });
    for (let i = 0; i < BIG_RUNS; i++) {
      for (const how of i % 2 ? [...sides].reverse() : sides) {
        try {
          res[how].push(await runChild(how, { file: img.file, scenario: "images" }, { timeout: 1_800_000 }));
        } catch (e) {
          // V8's default heap limit may not hold the reference's 1 GB of parsed entries
          notes.push(`${how} with the default heap: ${e.message}`);
          try {
            res[how].push({
              ...(await runChild(
                how,
                { file: img.file, scenario: "images" },
                { nodeArgs: ["--max-old-space-size=16384"], timeout: 1_800_000 },
              )),
              heap: "--max-old-space-size=16384",
            });
          } catch (e2) {
            notes.push(`${how} with --max-old-space-size=16384: ${e2.message}`);
          }
        }
      }
    }
    const m = (how, f) => median(res[how].map(f));
    const row = (label, f, unit = "ms") => {
      const cells = `| ${label} | ${fmt(m("ref", f))} ${unit} | ${fmt(m("native", f))} ${unit} | ${ratio(m("native", f), m("ref", f))} |`;
      if (unit !== "ms") return `${cells} | | |`;
      const g = (s) => f({ ...s, ms: s.cpu });
      return `${cells} ${fmt(m("ref", g))} | ${fmt(m("native", g))} | ${ratio(m("native", g), m("ref", g))} |`;
    };
    out.push("");
    out.push(
      `**1 GB session full of images** (${(img.size / MB).toFixed(0)} MB, ${img.entries} entries, ${img.images} base64 images = ${(img.imageBytes / MB).toFixed(0)} MB; fresh process each, median of ${BIG_RUNS})`,
    );
    out.push("");
    out.push("| 1 GB, images | reference | native | ratio | reference CPU ms | native CPU ms | ratio |");
    out.push("|---|---:|---:|---:|---:|---:|---:|");
    out.push(row("`SessionManager.open`", (s) => s.ms.open));
    out.push(row("`buildSessionContext()`", (s) => s.ms.context));
    out.push(row("1st `getBranch()`", (s) => s.ms.branch1));
    out.push(
      row("**open + context + 1st `getBranch()`** (target ≤ 0.10x)", (s) => s.ms.open + s.ms.context + s.ms.branch1),
    );
    out.push(row("peak RSS after open", (s) => s.openPeakMB, "MB"));
    out.push(row("**peak RSS after open + context + `getBranch()`** (target < 300 MB)", (s) => s.peakMB, "MB"));
    for (const how of sides)
      if (res[how].some((s) => s.heap)) out.push(`(${how}: needed ${res[how].find((s) => s.heap).heap})`);
    for (const n of notes) out.push(`NOTE ${n}`);
    if (res.ref[0] && res.native[0] && JSON.stringify(res.ref[0].n) !== JSON.stringify(res.native[0].n))
      out.push(`WARNING: reference ${JSON.stringify(res.ref[0].n)}, native ${JSON.stringify(res.native[0].n)}`);
    all.images = { file: img, res, notes };
  }

  const endLoad = os.loadavg();
  console.log("");
  console.log(
    `${new Date().toISOString().slice(0, 10)}, node ${NODE_VERSION}, ${os.cpus().length} CPUs, load ${startLoad[0].toFixed(2)} → ${endLoad[0].toFixed(2)} (1-min avg, start → end), ${((Date.now() - t0) / 1000).toFixed(0)} s`,
  );
  console.log(out.join("\n"));
  const jsonOut = args.json;
  if (jsonOut)
    writeFileSync(
      jsonOut,
      `${JSON.stringify({ date: new Date().toISOString(), node: NODE_VERSION, load: { start: startLoad, end: endLoad }, ...all }, null, 1)}\n`,
    );
}

await main();
