#!/usr/bin/env node
// Every published pi release against this package: installs each from the npm registry into its
// own cached folder, then asks the hook whether it serves that pi as installed, runs
// `pi-native --verify --all` on it (known-good digests verified again) and the end-to-end pi-bin
// suite (__test__/pi-bin) against it.
// A new pi release that breaks us shows up here (the release workflow and a daily scheduled
// workflow run it), not at a user's.
//
//   npm run test:pi-releases -- [options]
//   node scripts/pi-releases.mjs [options]
//
// Options:
//   --versions a,b,…   versions or dist-tags to test (e.g. 1.5.2,latest). Default: every stable
//                      release since 1.3.0 and `latest`, from `npm view`.
//   --since X          first release of the default list (default 1.3.0)
//   --no-e2e           skip the end-to-end suite (install, serve check and verifier only)
//   --no-verify        skip `pi-native --verify`
//   --any-version      run with PI_SESSION_NATIVE_ANY_VERSION=1 (the hook's version override):
//                      a release the hook does not serve as installed is then not a failure,
//                      and the e2e suite runs served
//   --reinstall        install again even when the cached install is intact
//   --json FILE        also write the results as JSON
//   -h, --help
//
// Installs: .tmp/pi-releases/<version>/node_modules/@earendil-works/pi-coding-agent (with
// `npm install --ignore-scripts`; a folder whose installed.json, package version or bin do not
// check out is installed again). Logs of each step: .tmp/pi-releases/logs/<version>-*.log.
//
// Columns: "served" is the hook's answer for that pi as a user gets it (pi-native --version,
// no override); "verify" is `pi-native --verify --all` (exit 0 = ok; "not available" while the
// verifier is not in this checkout, which is not a failure); e2e counts are vitest's.
// Exit code: 0 all good, 1 any failure (install, not served, verifier, an e2e test), 2 usage or
// setup error (no Node >= 22.19, registry not reachable for a tag or the default list).
import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { knownChunkMatches } from "../lib/chunk-signature.mjs";
import { bundleDigest, knownRelease } from "../lib/verify/identity.mjs";
import { findSessionChunk } from "../lib/verify/locate.mjs";
import { findNode22 } from "./node22.mjs";
import { table } from "./pi-suite/judge.mjs";
import {
  e2eCounts,
  FIRST_RELEASE,
  installProblem,
  PI_PACKAGE,
  packageDirOf,
  seconds,
  selectVersions,
  serveStatus,
  verifyVerdict,
} from "./pi-releases/plan.mjs";

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const cacheRoot = join(repoRoot, ".tmp", "pi-releases");
const logDir = join(cacheRoot, "logs");
const launcher = join(repoRoot, "bin", "pi-native.mjs");
const vitestBin = join(repoRoot, "node_modules", "vitest", "vitest.mjs");
const npm = process.platform === "win32" ? "npm.cmd" : "npm";

function usage(code, msg) {
  if (msg) console.error(`pi-releases: ${msg}`);
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

function setupError(msg) {
  console.error(`pi-releases: ${msg}`);
  process.exit(2);
}

// ---------------------------------------------------------------- arguments
const opts = {
  versions: undefined,
  since: FIRST_RELEASE,
  e2e: true,
  verify: true,
  anyVersion: false,
  reinstall: false,
  json: undefined,
};
const argv = process.argv.slice(2);
for (let i = 0; i < argv.length; i++) {
  const a = argv[i];
  const value = () => {
    if (argv[i + 1] === undefined) usage(2, `${a} needs a value`);
    return argv[++i];
  };
  if (a === "--versions")
    opts.versions = value()
      .split(",")
      .map((s) => s.trim())
      .filter(Boolean);
  else if (a === "--since") opts.since = value();
  else if (a === "--no-e2e") opts.e2e = false;
  else if (a === "--no-verify") opts.verify = false;
  else if (a === "--any-version") opts.anyVersion = true;
  else if (a === "--reinstall") opts.reinstall = true;
  else if (a === "--json") opts.json = resolve(value());
  else if (a === "-h" || a === "--help") usage(0);
  else usage(2, `unknown argument ${a}`);
}
if (opts.versions?.length === 0) usage(2, "--versions needs at least one version");

const node22 = findNode22();
if (!node22) setupError("no Node >= 22.19 (pi needs it): run `node scripts/node22.mjs --ensure` or set $PI_NODE22");
if (opts.e2e && !existsSync(vitestBin)) setupError(`vitest is not installed (${vitestBin}): run npm ci`);

// ---------------------------------------------------------------- which versions
/** `npm view` of pi's versions and dist-tags, only when a tag or the default list needs it. */
function askRegistry() {
  const r = spawnSync(npm, ["view", PI_PACKAGE, "versions", "dist-tags", "--json"], {
    encoding: "utf8",
    shell: process.platform === "win32",
  });
  if (r.status !== 0) setupError(`npm view ${PI_PACKAGE} failed:\n${(r.stderr || r.stdout || "").trim()}`);
  try {
    const data = JSON.parse(r.stdout);
    if (!Array.isArray(data.versions) || typeof data["dist-tags"] !== "object") throw new Error("unexpected shape");
    return data;
  } catch (e) {
    return setupError(`npm view ${PI_PACKAGE} gave an answer this script cannot read (${e.message})`);
  }
}
const needsRegistry = !opts.versions || opts.versions.some((v) => !/^\d+\.\d+\.\d+$/.test(v));
let rows;
try {
  rows = selectVersions(opts.versions, needsRegistry ? askRegistry() : undefined, opts.since);
} catch (e) {
  setupError(e.message);
}

// ---------------------------------------------------------------- steps
/**
 * Runs a command to completion, output captured (and written to `log` when given).
 * @param {string} cmd
 * @param {string[]} args
 * @param {{ env?: NodeJS.ProcessEnv, cwd?: string, log?: string, timeout?: number }} [options]
 * @returns {Promise<{ status: number | null, signal: NodeJS.Signals | null, stdout: string, stderr: string, ms: number }>}
 */
function run(cmd, args, { env = process.env, cwd = repoRoot, log, timeout = 0 } = {}) {
  return new Promise((resolvePromise) => {
    const t0 = Date.now();
    const child = spawn(cmd, args, {
      cwd,
      env,
      stdio: ["ignore", "pipe", "pipe"],
      shell: cmd === npm && process.platform === "win32",
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d) => {
      stdout += d;
    });
    child.stderr.on("data", (d) => {
      stderr += d;
    });
    const timer = timeout ? setTimeout(() => child.kill("SIGKILL"), timeout) : undefined;
    child.on("close", (status, signal) => {
      clearTimeout(timer);
      if (log) writeFileSync(log, `$ ${cmd} ${args.join(" ")}\n--- stdout\n${stdout}\n--- stderr\n${stderr}\n`);
      resolvePromise({ status, signal, stdout, stderr, ms: Date.now() - t0 });
    });
    child.on("error", (error) => {
      clearTimeout(timer);
      resolvePromise({ status: null, signal: null, stdout, stderr: `${stderr}${error.message}`, ms: Date.now() - t0 });
    });
  });
}

/** Installs `version` into its cache folder unless an intact install is there. */
async function install(version) {
  const dir = join(cacheRoot, version);
  const problem = installProblem(dir, version);
  if (!problem && !opts.reinstall) return { ok: true, cached: true, ms: 0, dir };
  // npm installs into a staging folder, renamed into place only when complete: an interrupted
  // run never leaves a folder that looks installed
  const staging = `${dir}.staging`;
  rmSync(staging, { recursive: true, force: true });
  mkdirSync(staging, { recursive: true });
  writeFileSync(
    join(staging, "package.json"),
    `${JSON.stringify({ name: `pi-release-${version}`, private: true, dependencies: { [PI_PACKAGE]: version } }, null, 2)}\n`,
  );
  const r = await run(npm, ["install", "--no-audit", "--no-fund", "--ignore-scripts", "--loglevel=error"], {
    cwd: staging,
    log: join(logDir, `${version}-install.log`),
    timeout: 600_000,
  });
  if (r.status !== 0) {
    rmSync(staging, { recursive: true, force: true });
    // npm's own reason, e.g. "notarget No matching version found for …"
    const why = r.stderr.split("\n").find((l) => /^npm error (?!code )/.test(l));
    return {
      ok: false,
      ms: r.ms,
      dir,
      error: `npm install exited ${r.status ?? r.signal}${why ? `: ${why.slice(10)}` : ""}`,
    };
  }
  writeFileSync(
    join(staging, "installed.json"),
    `${JSON.stringify({ version, installedAt: new Date().toISOString() })}\n`,
  );
  const staged = installProblem(staging, version);
  if (staged) {
    rmSync(staging, { recursive: true, force: true });
    return { ok: false, ms: r.ms, dir, error: `after npm install: ${staged}` };
  }
  rmSync(dir, { recursive: true, force: true });
  renameSync(staging, dir);
  return { ok: true, cached: false, ms: r.ms, dir };
}

/** Environment for pi runs: its own HOME and agent dir, nothing of the caller's pi settings. */
function piEnv(home, bin, extra = {}) {
  const env = { ...process.env };
  for (const k of Object.keys(env)) if (k.startsWith("PI_") || k === "NODE_OPTIONS") delete env[k];
  mkdirSync(join(home, "agent"), { recursive: true });
  return {
    ...env,
    HOME: home,
    PI_CODING_AGENT_DIR: join(home, "agent"),
    PI_CODING_AGENT_BIN: bin,
    PI_OFFLINE: "1",
    PI_SKIP_VERSION_CHECK: "1",
    PI_TELEMETRY: "0",
    NO_COLOR: "1",
    ...extra,
  };
}

/** The hook's answer for this pi as a user gets it: `pi-native --version`, no override. */
async function serveCheck(version, bin, home) {
  const r = await run(node22, [launcher, "--version"], {
    env: piEnv(home, bin, { PI_SESSION_NATIVE_DEBUG: "1" }),
    log: join(logDir, `${version}-serve.log`),
    timeout: 120_000,
  });
  const status = serveStatus(r.stderr);
  const printed = r.stdout.trim();
  if (r.status !== 0 || printed !== version)
    return {
      served: false,
      ok: false,
      text: `pi-native --version: exit ${r.status ?? r.signal}, printed "${printed}"`,
    };
  if (status.served) return { served: true, ok: true, text: "served" };
  return { served: false, ok: opts.anyVersion, text: `not served: ${status.reason}` };
}

/**
 * For a release whose chunk digest is known-good, why the hook's assumed match (every session
 * export bound under its own name, lib/register-hooks.mjs serveChunk) does not hold; else undefined.
 */
function knownChunkProblem(pkgDir) {
  const chunk = findSessionChunk(pkgDir);
  if (!chunk) return undefined;
  const bytes = readFileSync(chunk);
  if (!knownRelease(bundleDigest(bytes))) return undefined;
  const why = knownChunkMatches(bytes);
  return why === true ? undefined : why;
}

const verifierShipped = existsSync(join(repoRoot, "lib", "verify"));
async function verify(version, bin, home) {
  const r = await run(node22, [launcher, "--verify", "--all"], {
    env: piEnv(home, bin),
    log: join(logDir, `${version}-verify.log`),
    timeout: 300_000,
  });
  return verifyVerdict(r, verifierShipped);
}

async function e2e(version, pkgDir) {
  const report = join(logDir, `${version}-e2e.json`);
  rmSync(report, { force: true });
  /** @type {NodeJS.ProcessEnv} */
  const env = { ...process.env, PI_E2E_PI_PACKAGE: pkgDir, PI_NODE22: node22 };
  if (opts.anyVersion) env.PI_SESSION_NATIVE_ANY_VERSION = "1";
  else delete env.PI_SESSION_NATIVE_ANY_VERSION;
  const r = await run(
    process.execPath,
    [vitestBin, "run", "__test__/pi-bin", "--reporter=default", "--reporter=json", `--outputFile.json=${report}`],
    { env, log: join(logDir, `${version}-e2e.log`), timeout: 1_800_000 },
  );
  if (!existsSync(report))
    return {
      ok: false,
      ms: r.ms,
      passed: 0,
      failed: 1,
      skipped: 0,
      failedNames: [`vitest wrote no report (exit ${r.status ?? r.signal})`],
    };
  const counts = e2eCounts(JSON.parse(readFileSync(report, "utf8")));
  return { ok: counts.failed === 0 && r.status === 0, ms: r.ms, ...counts };
}

// ---------------------------------------------------------------- the run
mkdirSync(logDir, { recursive: true });
const results = [];
const started = Date.now();
for (const row of rows) {
  const label = row.labels.length ? `${row.version} (${row.labels.join(", ")})` : row.version;
  const t0 = Date.now();
  console.error(`[pi-releases] ${label}: installing`);
  const result = { version: row.version, labels: row.labels, label, failures: [] };
  results.push(result);
  const inst = await install(row.version);
  result.install = inst.ok ? (inst.cached ? "cached" : seconds(inst.ms)) : `FAILED: ${inst.error}`;
  if (!inst.ok) {
    result.failures.push(`install: ${inst.error} (log: ${join(logDir, `${row.version}-install.log`)})`);
    result.ms = Date.now() - t0;
    continue;
  }
  const pkgDir = packageDirOf(inst.dir);
  const bin = join(pkgDir, "dist", "bundle", "cli.js");
  const home = mkdtempSync(join(tmpdir(), "pi-releases-home-"));
  try {
    console.error(`[pi-releases] ${label}: does the hook serve it?`);
    const serve = await serveCheck(row.version, bin, home);
    result.served = serve.text;
    if (!serve.ok) result.failures.push(`served: ${serve.text}`);
    const known = knownChunkProblem(pkgDir);
    if (known) result.failures.push(`known-good chunk: ${known}`);
    if (opts.verify) {
      console.error(`[pi-releases] ${label}: pi-native --verify`);
      const v = await verify(row.version, bin, home);
      result.verify = v.text;
      if (v.status === "fail")
        result.failures.push(`verify: ${v.text} (log: ${join(logDir, `${row.version}-verify.log`)})`);
    } else result.verify = "skipped";
    if (opts.e2e) {
      console.error(`[pi-releases] ${label}: end-to-end suite (__test__/pi-bin)`);
      const r = await e2e(row.version, pkgDir);
      result.e2e = r;
      for (const name of r.failedNames) result.failures.push(`e2e: ${name}`);
      if (!r.ok && r.failedNames.length === 0)
        result.failures.push(`e2e: vitest exited non-zero (log: ${join(logDir, `${row.version}-e2e.log`)})`);
    }
  } finally {
    rmSync(home, { recursive: true, force: true });
  }
  result.ms = Date.now() - t0;
}

// ---------------------------------------------------------------- report
const cell = (text, max = 60) => (text.length > max ? `${text.slice(0, max - 1)}…` : text);
const headers = ["pi", "install", "served (no override)", "verify", "e2e passed", "failed", "skipped", "time"];
const tableRows = results.map((r) => [
  r.label,
  cell(r.install ?? "-", 40),
  cell(r.served ?? "-"),
  cell(r.verify ?? "-"),
  r.e2e ? r.e2e.passed : "-",
  r.e2e ? r.e2e.failed : "-",
  r.e2e ? r.e2e.skipped : "-",
  seconds(r.ms ?? 0),
]);
console.log(
  `\npi releases against pi-session-native (${opts.anyVersion ? "PI_SESSION_NATIVE_ANY_VERSION=1" : "no override"}; e2e ${opts.e2e ? "run" : "skipped"}; logs in ${logDir})`,
);
console.log(table(headers, tableRows));
const failed = results.filter((r) => r.failures.length);
const SHOWN = 8; // failures listed per release; the rest are in its logs
for (const r of failed) {
  console.log(`\n${r.label}:`);
  for (const f of r.failures.slice(0, SHOWN)) console.log(`  - ${f}`);
  if (r.failures.length > SHOWN)
    console.log(`  … and ${r.failures.length - SHOWN} more (${join(logDir, `${r.version}-e2e.log`)})`);
}
console.log(
  `\ntotal ${seconds(Date.now() - started)}; ${failed.length ? `FAIL (${failed.map((r) => r.version).join(", ")})` : "PASS"}`,
);
if (opts.json) writeFileSync(opts.json, `${JSON.stringify({ options: opts, results }, null, 2)}\n`);
process.exit(failed.length ? 1 : 0);
