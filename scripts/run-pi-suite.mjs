#!/usr/bin/env node
// Run pi's own session tests (from a pi checkout) against this package.
//
//   npm run test:pi-suite -- <pi checkout> [options]
//   node scripts/run-pi-suite.mjs <pi checkout> [options]
//
// <pi checkout> is the root of a clone of https://github.com/earendil-works/pi (or its
// packages/coding-agent directory). Install its dependencies first, at its root:
//   npm ci --ignore-scripts --no-audit --no-fund -w packages/coding-agent --include-workspace-root
// (a plain `npm ci` there fails: packages/web-ui needs xlsx from a CDN outside the npm registry),
// and build the packages pi's extension loader needs (else the tests that load extensions fail in
// every mode; the runner prints the command; workspace packages without a dist/ are otherwise
// served from their src/ by scripts/pi-suite/vitest.config.mjs). Recipe: docs/pi-tests.md.
//
// Selected test files: packages/coding-agent/test/session-manager/** plus every other
// packages/coding-agent/test/**/*.test.ts whose source mentions `src/core/session-manager`.
// A checkout with fewer than 20 of them (pi v0.58.3 has 26) is refused: a run on it would
// prove nothing (see --min-files).
//
// Each file set is run once per mode (separate vitest processes, Node >= 22.19):
//   baseline   pi's own src/core/session-manager.ts (no redirect)
//   reference  redirected to the installed @earendil-works/pi-coding-agent@1.6.0
//              dist/core/session-manager.js (tells version skew between the checkout and 1.6.0
//              apart from bugs of ours)
//   native     redirected to this package (index.mjs)
// Every import of pi's session-manager made from inside the checkout (tests and pi's own src/
// modules such as agent-session.ts) is redirected, whatever its spelling (.ts / .js / extensionless).
//
// Options:
//   --modes a,b,c     modes to run (default baseline,reference,native; reference is dropped
//                     automatically when the 1.6.0 package is not installed)
//   --filter STR      only test files whose path contains STR (repeatable)
//   --direct-only     only files under test/session-manager/ (skip the grep for other importers)
//   --min-files N     refuse a checkout with fewer than N session test files (default 20;
//                     counted before --filter / --direct-only)
//   --json FILE       also write the per-test results and the verdict as JSON
//   --keep            keep vitest's raw JSON reports (printed path)
//   --verbose         show vitest's own output
//
// Exit code: 0 PASS (every test that passes on pi's own code and on 1.6.0 passes natively),
// 1 FAIL (a native-only failure), 2 NOT TESTED (usage or setup error, a checkout with too few
// session tests, the addon does not load, a mode that produced no report, the native mode or
// both comparison modes left out, or nothing passed on pi's own code).
// vitest's own exit code is not shown: it is 1 whenever any test fails in a mode, which on a pi
// checkout is normal (tests that fail on pi's own code too, version skew with 1.6.0).
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { dirname, join, relative, resolve, sep } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { findNode22 } from "./node22.mjs";
import {
  BUILD_COMMAND,
  checkEnoughTests,
  checkInstalled,
  describeCheckout,
  locateCheckout,
  MIN_SESSION_TEST_FILES,
  SetupError,
  selectFiles,
  sessionTestFiles,
} from "./pi-suite/checkout.mjs";
import { collect, judge, modeLine, table } from "./pi-suite/judge.mjs";

const here = dirname(fileURLToPath(import.meta.url));
const repoRoot = resolve(here, "..");
const configFile = join(here, "pi-suite", "vitest.config.mjs");

function usage(code, msg) {
  if (msg) console.error(`run-pi-suite: ${msg}`);
  const text = readFileSync(fileURLToPath(import.meta.url), "utf8").split("\n");
  const end = text.findIndex((l) => l.startsWith("import "));
  console.error(
    text
      .slice(1, end)
      .map((l) => l.replace(/^\/\/ ?/, ""))
      .join("\n"),
  );
  process.exit(code);
}

function notTested(msg) {
  console.error(`run-pi-suite: ${msg}`);
  console.error("RESULT: NOT TESTED (exit 2)");
  process.exit(2);
}

// ---------------------------------------------------------------- arguments
const argv = process.argv.slice(2);
const opts = {
  modes: null,
  filters: [],
  directOnly: false,
  minFiles: MIN_SESSION_TEST_FILES,
  json: null,
  keep: false,
  verbose: false,
};
let checkoutArg = null;
const value = (i, name) => {
  if (argv[i] === undefined) usage(2, `${name} needs a value`);
  return argv[i];
};
for (let i = 0; i < argv.length; i++) {
  const a = argv[i];
  if (a === "--modes")
    opts.modes = value(++i, a)
      .split(",")
      .map((s) => s.trim())
      .filter(Boolean);
  else if (a === "--filter") opts.filters.push(value(++i, a));
  else if (a === "--direct-only") opts.directOnly = true;
  else if (a === "--min-files") {
    opts.minFiles = Number(value(++i, a));
    if (!Number.isInteger(opts.minFiles) || opts.minFiles < 0) usage(2, "--min-files needs a whole number");
  } else if (a === "--json") opts.json = resolve(value(++i, a));
  else if (a === "--keep") opts.keep = true;
  else if (a === "--verbose") opts.verbose = true;
  else if (a === "-h" || a === "--help") usage(0);
  else if (a.startsWith("-")) usage(2, `unknown option ${a}`);
  else if (!checkoutArg) checkoutArg = a;
  else usage(2, `unexpected argument ${a}`);
}
if (!checkoutArg) checkoutArg = process.env.PI_CHECKOUT;
if (!checkoutArg) usage(2, "missing <pi checkout> (or set $PI_CHECKOUT)");

// ---------------------------------------------------------------- the checkout
// Checked in the order a new user meets the problems: wrong folder, too old a checkout,
// dependencies not installed. All before any test process starts.
let checkout, agentDir, found, selected;
const gitHead = (dir) => spawnSync("git", ["-C", dir, "rev-parse", "HEAD"], { encoding: "utf8" }).stdout?.trim() || "";
try {
  ({ checkout, agentDir } = locateCheckout(checkoutArg));
  found = sessionTestFiles(agentDir);
  checkEnoughTests(found, opts.minFiles, `${checkout} (${describeCheckout(agentDir, gitHead(agentDir))})`);
  checkInstalled(checkout, agentDir);
  selected = selectFiles(found, opts);
} catch (error) {
  if (error instanceof SetupError) notTested(error.message);
  throw error;
}
const what = describeCheckout(agentDir, gitHead(agentDir));
// pi's extension loader (jiti, outside vite) aliases the pi-* packages to packages/*/dist: without a
// build, every test that loads an extension fails on pi's own code too.
const unbuilt = ["ai", "agent", "tui", "coding-agent"].filter(
  (p) => existsSync(join(checkout, "packages", p, "src")) && !existsSync(join(checkout, "packages", p, "dist")),
);

// vitest: prefer the checkout's own (the version its tests were written for), else ours.
function vitestIn(dir) {
  try {
    const pj = createRequire(join(dir, "package.json")).resolve("vitest/package.json");
    const d = dirname(pj);
    if (existsSync(join(d, "vitest.mjs")))
      return { dir: d, bin: join(d, "vitest.mjs"), version: JSON.parse(readFileSync(pj, "utf8")).version };
  } catch {}
  return null;
}
const vitest = vitestIn(agentDir) ?? vitestIn(repoRoot);
if (!vitest) notTested("no vitest found (neither in the checkout nor in this repo)");

// ---------------------------------------------------------------- modes
function referenceModule() {
  // The package's "exports" do not list ./package.json: look in node_modules directly.
  for (let d = repoRoot; ; d = dirname(d)) {
    const f = join(d, "node_modules", "@earendil-works", "pi-coding-agent", "dist", "core", "session-manager.js");
    if (existsSync(f)) return f;
    if (dirname(d) === d) return null;
  }
}
const targets = { baseline: "", reference: referenceModule(), native: join(repoRoot, "index.mjs") };
let modes = opts.modes ?? ["baseline", "reference", "native"];
for (const m of modes) if (!(m in targets)) usage(2, `unknown mode ${m} (baseline, reference, native)`);
if (targets.reference === null) {
  if (opts.modes?.includes("reference"))
    notTested("@earendil-works/pi-coding-agent is not installed here: no reference mode (run npm ci in this repo)");
  modes = modes.filter((m) => m !== "reference");
  console.error(
    "[pi-suite] note: @earendil-works/pi-coding-agent@1.6.0 is not installed here: no reference mode, so version skew cannot be told apart",
  );
}

const node22 = findNode22();
if (!node22) notTested("no Node >= 22.19 (pi needs it): run `node scripts/node22.mjs --ensure` or set $PI_NODE22");

// A native target that does not load would fail every file; say why once, up front.
if (modes.includes("native")) {
  const probeScript = `try { const m = await import(${JSON.stringify(pathToFileURL(targets.native).href)}); if (typeof m.SessionManager?.create !== "function") throw new Error("index.mjs exports no SessionManager.create"); } catch (e) { console.error(String(e?.message ?? e)); process.exit(1); }`;
  const probe = spawnSync(node22, ["--input-type=module", "-e", probeScript], { encoding: "utf8" });
  if (probe.status !== 0)
    notTested(
      `this package does not load (${targets.native}): build the addon with \`npm run build\`\n  ${(probe.stderr || "").trim().split("\n").slice(0, 3).join("\n  ")}`,
    );
}

// ---------------------------------------------------------------- run vitest per mode
const work = mkdtempSync(join(tmpdir(), "pi-suite-"));
function runMode(mode) {
  const out = join(work, `${mode}.json`);
  /** @type {NodeJS.ProcessEnv} */
  const env = {
    ...process.env,
    PI_SUITE_AGENT_DIR: agentDir,
    PI_SUITE_CHECKOUT: checkout,
    PI_SUITE_TARGET: targets[mode],
    PI_SUITE_FILES: JSON.stringify(selected),
    PI_SUITE_VITEST: vitest.dir,
    // Keep pi offline and quiet: no version check, no telemetry.
    PI_OFFLINE: "1",
    PI_SKIP_VERSION_CHECK: "1",
    PI_TELEMETRY: "0",
    CI: "1",
    FORCE_COLOR: "0",
    NO_COLOR: "1",
  };
  delete env.NODE_OPTIONS;
  delete env.VITEST;
  const args = [
    vitest.bin,
    "run",
    "--config",
    configFile,
    "--root",
    agentDir,
    "--reporter=json",
    `--outputFile=${out}`,
  ];
  if (opts.verbose) args.push("--reporter=default");
  process.stderr.write(`[pi-suite] ${mode}: running ${selected.length} files ...\n`);
  const t0 = Date.now();
  const r = spawnSync(node22, args, {
    cwd: agentDir,
    env,
    encoding: "utf8",
    maxBuffer: 512 * 1024 * 1024,
    stdio: ["ignore", opts.verbose ? "inherit" : "pipe", opts.verbose ? "inherit" : "pipe"],
  });
  const seconds = (Date.now() - t0) / 1000;
  let report = null;
  if (existsSync(out)) {
    try {
      report = JSON.parse(readFileSync(out, "utf8"));
    } catch {}
  }
  // vitest exits 1 whenever any test fails, which on a pi checkout is always (tests that need
  // credentials or a build): its code is not the verdict. Only a missing report is reported here.
  if (!report)
    console.error(
      `[pi-suite] ${mode}: vitest produced no report (exit ${r.status ?? r.signal})\n${(r.stderr || "").slice(-4000)}`,
    );
  return { report, seconds };
}

const runs = Object.fromEntries(modes.map((m) => [m, runMode(m)]));
const reports = Object.fromEntries(modes.map((m) => [m, runs[m].report]));

// ---------------------------------------------------------------- judge and print
const sources = new Map(selected.map((rel) => [rel, readFileSync(join(agentDir, rel), "utf8")]));
const relOf = (name) => relative(agentDir, name).split(sep).join("/");
const results = collect({ modes, selected, reports, relOf, sources });
const needsBuild = (rel) =>
  unbuilt.length > 0 &&
  /extensions\/loader|discoverAndLoadExtensions|DefaultResourceLoader/.test(sources.get(rel) ?? "");
const j = judge({ modes, selected, reports, results, sources, needsBuild });

console.log(`\npi checkout: ${checkout}`);
console.log(
  `  ${what}; ${found.files.length} session test files (${found.direct.length} under test/session-manager/), ${selected.length} selected`,
);
console.log(
  `vitest ${vitest.version} (${relative(repoRoot, vitest.dir).startsWith("..") ? "checkout" : "this repo"}), node ${spawnSync(node22, ["--version"], { encoding: "utf8" }).stdout.trim()}`,
);
if (unbuilt.length)
  console.log(
    `note: packages/{${unbuilt.join(",")}}/dist missing (checkout not built): tests that load extensions fail in every mode; to build, in ${checkout}:\n  ${BUILD_COMMAND}`,
  );
console.log(`modes: ${modes.map((m) => `${m}${targets[m] ? ` -> ${targets[m]}` : " (pi's own)"}`).join(", ")}\n`);
console.log("Cells: passed/run (+skipped). Per file:\n");
console.log(
  table(
    ["file", "tests", ...modes, "verdict"],
    j.files.map((f) => [f.rel.replace(/^test\//, ""), f.tests, ...modes.map((m) => f.cells[m]), f.verdict]),
  ),
);
if (j.tests.length) {
  console.log("\nPer test (only tests that do not pass in every mode):\n");
  console.log(
    table(
      ["file", "test", ...modes, "attribution", "first error"],
      j.tests.map((t) => [t.rel.replace(/^test\//, ""), t.name, ...modes.map((m) => t.statuses[m]), t.verdict, t.why]),
    ),
  );
}
console.log("\nPer mode:");
for (const m of modes)
  console.log(
    `  ${reports[m] ? modeLine(m, j.perMode[m], runs[m].seconds) : `${m}: vitest produced no report (${runs[m].seconds.toFixed(1)}s)`}`,
  );
console.log(`\n${j.result}`);

if (opts.json) {
  const out = {
    checkout,
    package: what,
    sessionTestFiles: found.files.length,
    selected,
    modes,
    targets,
    perMode: Object.fromEntries(
      modes.map((m) => [m, { ...j.perMode[m], seconds: runs[m].seconds, report: !!reports[m] }]),
    ),
    result: {
      exitCode: j.exitCode,
      line: j.result,
      nativeOnly: j.nativeOnly,
      compared: j.compared,
      byVerdict: j.byVerdict,
      problems: j.problems,
    },
    files: Object.fromEntries(
      [...results].map(([rel, e]) => [rel, { file: e.file, tests: Object.fromEntries(e.tests) }]),
    ),
  };
  writeFileSync(opts.json, JSON.stringify(out, null, 2));
  console.log(`JSON: ${opts.json}`);
}
if (opts.keep) console.log(`raw vitest reports: ${work}`);
else rmSync(work, { recursive: true, force: true });
process.exit(j.exitCode);
