#!/usr/bin/env node
// Run pi's own session tests (from a pi checkout) against this package.
//
//   npm run test:pi-suite -- <pi checkout> [options]
//   node scripts/run-pi-suite.mjs <pi checkout> [options]
//
// <pi checkout> is the root of a pi / pi-mono work tree (or its packages/coding-agent directory).
// Its dependencies must be installed (`npm ci --ignore-scripts` at its root is enough: workspace
// packages without a dist/ are served from their src/ by scripts/pi-suite/vitest.config.mjs).
//
// Selected test files: packages/coding-agent/test/session-manager/** plus every other
// packages/coding-agent/test/**/*.test.ts whose source mentions `src/core/session-manager`.
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
//   --json FILE       also write the per-test results as JSON
//   --keep            keep vitest's raw JSON reports (printed path)
//   --verbose         show vitest's own output
//
// Exit code: 0 when every test that passes on the baseline also passes natively, 1 otherwise,
// 2 on a usage / setup error.
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync, statSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { requireNode22 } from "./node22.mjs";

const here = dirname(fileURLToPath(import.meta.url));
const repoRoot = resolve(here, "..");
const configFile = join(here, "pi-suite", "vitest.config.mjs");

// ---------------------------------------------------------------- arguments
const argv = process.argv.slice(2);
const opts = { modes: null, filters: [], directOnly: false, json: null, keep: false, verbose: false };
let checkoutArg = null;
for (let i = 0; i < argv.length; i++) {
	const a = argv[i];
	if (a === "--modes") opts.modes = argv[++i].split(",").map((s) => s.trim()).filter(Boolean);
	else if (a === "--filter") opts.filters.push(argv[++i]);
	else if (a === "--direct-only") opts.directOnly = true;
	else if (a === "--json") opts.json = resolve(argv[++i]);
	else if (a === "--keep") opts.keep = true;
	else if (a === "--verbose") opts.verbose = true;
	else if (a === "-h" || a === "--help") usage(0);
	else if (a.startsWith("-")) usage(2, `unknown option ${a}`);
	else if (!checkoutArg) checkoutArg = a;
	else usage(2, `unexpected argument ${a}`);
}
if (!checkoutArg) checkoutArg = process.env.PI_CHECKOUT;
if (!checkoutArg) usage(2, "missing <pi checkout> (or set $PI_CHECKOUT)");

function usage(code, msg) {
	if (msg) console.error(`run-pi-suite: ${msg}`);
	const text = readFileSync(fileURLToPath(import.meta.url), "utf8").split("\n");
	const end = text.findIndex((l) => l.startsWith("import "));
	console.error(text.slice(1, end).map((l) => l.replace(/^\/\/ ?/, "")).join("\n"));
	process.exit(code);
}

function fail(msg) {
	console.error(`run-pi-suite: ${msg}`);
	process.exit(2);
}

// ---------------------------------------------------------------- locate the checkout
let agentDir = resolve(checkoutArg);
if (!existsSync(agentDir)) fail(`${agentDir} does not exist`);
agentDir = realpathSync(agentDir);
if (existsSync(join(agentDir, "packages", "coding-agent"))) agentDir = join(agentDir, "packages", "coding-agent");
const smSource = join(agentDir, "src", "core", "session-manager.ts");
if (!existsSync(smSource)) fail(`${smSource} not found: not a pi checkout (expected packages/coding-agent/src/core/session-manager.ts)`);
const checkout = resolve(agentDir, "..", "..");
// pi's extension loader (jiti, outside vite) aliases @mariozechner/pi-* to packages/*/dist: without a
// build, every test that loads an extension fails on pi's own code too.
const unbuilt = ["ai", "agent", "tui", "coding-agent"].filter((p) => existsSync(join(checkout, "packages", p, "src")) && !existsSync(join(checkout, "packages", p, "dist")));
const agentPkg = JSON.parse(readFileSync(join(agentDir, "package.json"), "utf8"));
const gitHead = spawnSync("git", ["-C", agentDir, "rev-parse", "HEAD"], { encoding: "utf8" }).stdout?.trim() || "unknown";

// vitest: prefer the checkout's own (the version its tests were written for), else ours.
function vitestIn(dir) {
	try {
		const req = createRequire(join(dir, "package.json"));
		const pj = req.resolve("vitest/package.json");
		const d = dirname(pj);
		if (existsSync(join(d, "vitest.mjs"))) return { dir: d, bin: join(d, "vitest.mjs"), version: JSON.parse(readFileSync(pj, "utf8")).version };
	} catch {}
	return null;
}
const vitest = vitestIn(agentDir) ?? vitestIn(repoRoot);
if (!vitest) fail("no vitest found (neither in the checkout nor in this repo)");
if (!existsSync(join(checkout, "node_modules")) && !existsSync(join(agentDir, "node_modules"))) {
	fail(`the checkout has no node_modules: run \`npm ci --ignore-scripts\` (or npm install --ignore-scripts) in ${checkout}`);
}

const targets = {
	baseline: "",
	reference: (() => {
		// The package's "exports" do not list ./package.json: look in node_modules directly.
		for (let d = repoRoot; ; d = dirname(d)) {
			const f = join(d, "node_modules", "@earendil-works", "pi-coding-agent", "dist", "core", "session-manager.js");
			if (existsSync(f)) return f;
			if (dirname(d) === d) return null;
		}
	})(),
	native: join(repoRoot, "index.mjs"),
};
let modes = opts.modes ?? ["baseline", "reference", "native"];
for (const m of modes) if (!(m in targets)) fail(`unknown mode ${m} (baseline, reference, native)`);
if (targets.reference === null) {
	if (opts.modes?.includes("reference")) fail("@earendil-works/pi-coding-agent is not installed: no reference mode");
	modes = modes.filter((m) => m !== "reference");
}

// ---------------------------------------------------------------- select the test files
function walk(dir, out = []) {
	for (const name of readdirSync(dir)) {
		if (name === "node_modules" || name.startsWith(".")) continue;
		const p = join(dir, name);
		const st = statSync(p);
		if (st.isDirectory()) walk(p, out);
		else if (/\.test\.[cm]?[jt]sx?$/.test(name)) out.push(p);
	}
	return out;
}
const testDir = join(agentDir, "test");
const SM_IMPORT = /src\/core\/session-manager/;
const selected = [];
for (const file of walk(testDir).sort()) {
	const rel = relative(agentDir, file);
	const direct = rel.startsWith(join("test", "session-manager") + "/");
	if (!direct && (opts.directOnly || !SM_IMPORT.test(readFileSync(file, "utf8")))) continue;
	if (opts.filters.length && !opts.filters.some((f) => rel.includes(f))) continue;
	selected.push(rel);
}
if (!selected.length) fail("no test files selected");

// ---------------------------------------------------------------- run vitest per mode
const node22 = requireNode22();
const work = mkdtempSync(join(tmpdir(), "pi-suite-"));

function runMode(mode) {
	const out = join(work, `${mode}.json`);
	const env = {
		...process.env,
		PI_SUITE_AGENT_DIR: agentDir,
		PI_SUITE_CHECKOUT: checkout,
		PI_SUITE_TARGET: targets[mode],
		PI_SUITE_FILES: JSON.stringify(selected),
		PI_SUITE_VITEST: vitest.dir,
		// Keep pi offline and quiet: no version check, no telemetry, no real config dir.
		PI_OFFLINE: "1",
		PI_SKIP_VERSION_CHECK: "1",
		PI_TELEMETRY: "0",
		CI: "1",
		FORCE_COLOR: "0",
		NO_COLOR: "1",
	};
	delete env.NODE_OPTIONS;
	delete env.VITEST;
	const args = [vitest.bin, "run", "--config", configFile, "--root", agentDir, "--reporter=json", `--outputFile=${out}`];
	if (opts.verbose) args.push("--reporter=default");
	const t0 = Date.now();
	process.stderr.write(`[pi-suite] ${mode}: ${selected.length} files ...`);
	const r = spawnSync(node22, args, { cwd: agentDir, env, encoding: "utf8", maxBuffer: 512 * 1024 * 1024, stdio: ["ignore", opts.verbose ? "inherit" : "pipe", opts.verbose ? "inherit" : "pipe"] });
	process.stderr.write(` ${((Date.now() - t0) / 1000).toFixed(1)}s (exit ${r.status})\n`);
	if (!existsSync(out)) {
		console.error(`[pi-suite] ${mode}: vitest produced no report\n${(r.stderr || "").slice(-4000)}`);
		return { mode, report: null, stderr: r.stderr || "" };
	}
	return { mode, report: JSON.parse(readFileSync(out, "utf8")), stderr: r.stderr || "" };
}

const runs = {};
for (const m of modes) runs[m] = runMode(m);

// ---------------------------------------------------------------- classify
const sources = new Map(selected.map((rel) => [rel, readFileSync(join(agentDir, rel), "utf8")]));
const firstLine = (msg) =>
	String(msg ?? "")
		.replace(/\u001b\[[0-9;]*m/g, "")
		.split("\n")
		.map((l) => l.trim())
		.find((l) => l) ?? "";

// A file-level error (the file did not load / a hook failed): why?
function fileError(message) {
	const m = String(message ?? "");
	let x;
	if ((x = m.match(/Failed to (?:load|resolve) (?:url|import) ["']?([^\s"']+)/i))) return { kind: "missing-module", detail: `module not in this checkout: ${x[1]}` };
	if ((x = m.match(/Cannot find (?:module|package) ['"]([^'"]+)['"]/))) return { kind: "missing-module", detail: `module not in this checkout: ${x[1]}` };
	if ((x = m.match(/does not provide an export named ['"]?(\w+)/))) return { kind: "missing-export", detail: `API not in this implementation: export ${x[1]}` };
	if ((x = m.match(/No "exports" main defined|ERR_PACKAGE_PATH_NOT_EXPORTED[^\n]*/))) return { kind: "missing-module", detail: `module not in this checkout: ${x[0]}` };
	return { kind: "file-error", detail: firstLine(m) };
}

// Why a single test failed, from its message and the test source line it points at.
function testReason(rel, failure) {
	const msg = String(failure ?? "").replace(/\u001b\[[0-9;]*m/g, "");
	let x;
	if ((x = msg.match(/(?:TypeError: )?([\w$.[\]"']+) is not a function/))) return { kind: "missing-api", detail: `API not in this implementation: ${x[1]}()` };
	if (/ENOTFOUND|ECONNREFUSED|EAI_AGAIN|fetch failed|getaddrinfo|network/i.test(msg)) return { kind: "network", detail: `needs network: ${firstLine(msg)}` };
	if (/API[_ ]?KEY|No API key|401|Unauthorized/i.test(msg)) return { kind: "credentials", detail: `needs API credentials: ${firstLine(msg)}` };
	// Private state: the failing line (or any line of the test) reads `obj["field"]` / `(obj as any).field`.
	const base = rel.split("/").pop().replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
	const loc = msg.match(new RegExp(`${base}:(\\d+):\\d+`));
	if (loc) {
		const line = (sources.get(rel) ?? "").split("\n")[Number(loc[1]) - 1] ?? "";
		const priv = line.match(/\w+\[\s*["'](\w+)["']\s*\]|\(\s*\w+ as any\s*\)\.(\w+)/);
		if (priv) return { kind: "private-field", detail: `reads private state ${priv[1] ?? priv[2]} (line ${loc[1]}: ${line.trim()})` };
		return { kind: "assertion", detail: `${firstLine(msg)} (line ${loc[1]}: ${line.trim()})` };
	}
	return { kind: "assertion", detail: firstLine(msg) };
}

// Guess why a file skips its own tests (describe.skipIf(!process.env.X) ...).
function skipReason(rel) {
	const src = sources.get(rel) ?? "";
	const keys = [...new Set([...src.matchAll(/process\.env\.([A-Z0-9_]*(?:API_KEY|TOKEN|OAUTH|KEY)[A-Z0-9_]*)/g)].map((m) => m[1]))];
	if (keys.length) return `needs API credentials / network (${keys.join(", ")})`;
	const conds = [...src.matchAll(/skipIf\(\s*!\s*([A-Z_][A-Z0-9_]*)\s*\)/g)].map((m) => m[1]);
	if (conds.some((c) => /API_KEY|AUTH|TOKEN|KEY/.test(c))) return `needs API credentials / network (${[...new Set(conds)].join(", ")})`;
	if (/skipIf\([^)]*platform/.test(src)) return "platform-specific";
	return "skipped by the test itself";
}

// results[rel] = { tests: Map(name -> {mode -> {status, reason}}), file: {mode -> {status, reason}} }
const results = new Map(selected.map((rel) => [rel, { tests: new Map(), file: {} }]));
for (const m of modes) {
	const report = runs[m].report;
	if (!report) {
		for (const rel of selected) results.get(rel).file[m] = { status: "error", reason: { kind: "runner", detail: "vitest produced no report" } };
		continue;
	}
	for (const tr of report.testResults ?? []) {
		const rel = relative(agentDir, tr.name);
		const entry = results.get(rel);
		if (!entry) continue;
		const hasTests = (tr.assertionResults ?? []).length > 0;
		if (tr.status === "failed" && tr.message && !hasTests) entry.file[m] = { status: "error", reason: fileError(tr.message) };
		else if (tr.status === "failed" && tr.message) entry.file[m] = { status: "error", reason: fileError(tr.message) };
		else entry.file[m] = { status: tr.status };
		for (const a of tr.assertionResults ?? []) {
			const name = a.fullName || [...(a.ancestorTitles ?? []), a.title].join(" > ");
			if (!entry.tests.has(name)) entry.tests.set(name, {});
			const status = a.status === "passed" ? "pass" : a.status === "failed" ? "fail" : "skip";
			const r = { status };
			if (status === "fail") r.reason = testReason(rel, (a.failureMessages ?? []).join("\n"));
			if (status === "skip") r.reason = { kind: "skipped", detail: skipReason(rel) };
			entry.tests.get(name)[m] = r;
		}
	}
	for (const rel of selected) {
		const e = results.get(rel);
		if (!e.file[m]) e.file[m] = { status: "error", reason: { kind: "runner", detail: "file missing from vitest's report" } };
	}
}

// Attribution of a test (or file) that fails natively, given the other modes.
function verdict(row) {
	const b = row.baseline?.status;
	const r = row.reference?.status;
	const n = row.native?.status;
	if (!row.native) return b === "pass" ? "ok" : b ?? "-";
	if (n === "pass") return b && b !== "pass" ? "native passes, baseline does not" : "ok";
	if (n === "skip") return "skip";
	if (b && b !== "pass") return row.needsBuild ? "environment: unbuilt checkout (extension loader needs packages/*/dist)" : "environment/checkout (fails on pi's own code too)";
	if (r && r !== "pass") return "version skew (1.6.0's own session-manager fails it too)";
	if (!row.reference) return "differs from the checkout's pi (run the reference mode to rule out version skew)";
	const kind = row.native.reason?.kind;
	if (kind === "private-field") return "test reads private state";
	if (kind === "missing-api" || kind === "missing-export") return "API not in 1.6.0 / this package";
	return "NATIVE DIFFERENCE";
}

const needsBuild = (rel) => unbuilt.length > 0 && /extensions\/loader|discoverAndLoadExtensions|DefaultResourceLoader/.test(sources.get(rel) ?? "");

// ---------------------------------------------------------------- print
const cell = (s) => (s === undefined ? "-" : s);
function counts(tests, m) {
	let p = 0, f = 0, s = 0;
	for (const row of tests.values()) {
		const st = row[m]?.status;
		if (st === "pass") p++;
		else if (st === "fail") f++;
		else if (st === "skip") s++;
	}
	return { p, f, s };
}
function fileCell(e, m) {
	const fs = e.file[m];
	if (!fs) return "-";
	if (fs.status === "error" && e.tests.size === 0) return `ERROR (${fs.reason.kind})`;
	const { p, f, s } = counts(e.tests, m);
	const base = `${p}/${p + f}${s ? ` +${s} skip` : ""}`;
	return fs.status === "error" ? `${base} ERROR` : f ? `${base} FAIL` : base;
}

function table(headers, rows) {
	const w = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => String(r[i]).length)));
	const line = (r) => `| ${r.map((c, i) => String(c).padEnd(w[i])).join(" | ")} |`;
	return [line(headers), `|${w.map((n) => "-".repeat(n + 2)).join("|")}|`, ...rows.map(line)].join("\n");
}

console.log(`\npi checkout: ${checkout}`);
console.log(`  ${agentPkg.name}@${agentPkg.version}, commit ${gitHead}`);
console.log(`vitest ${vitest.version} (${relative(repoRoot, vitest.dir).startsWith("..") ? "checkout" : "this repo"}), node ${spawnSync(node22, ["--version"], { encoding: "utf8" }).stdout.trim()}`);
if (unbuilt.length) console.log(`note: packages/{${unbuilt.join(",")}}/dist missing (checkout not built): tests that load extensions fail in every mode; build the checkout to run them`);
console.log(`modes: ${modes.map((m) => `${m}${targets[m] ? ` -> ${targets[m]}` : " (pi's own)"}`).join(", ")}\n`);
console.log("Cells: passed/run (+skipped). Per file:\n");

const fileRows = [];
const failRows = [];
let regressions = 0;
for (const [rel, e] of results) {
	const fileRow = Object.fromEntries(modes.map((m) => [m, e.file[m]?.status === "error" && e.tests.size === 0 ? { status: "error", reason: e.file[m].reason } : { status: counts(e.tests, m).f || e.file[m]?.status === "error" ? "fail" : "pass" }]));
	let v = verdict(fileRow);
	const skipOnly = modes.every((m) => { const c = counts(e.tests, m); return c.p + c.f === 0 && c.s > 0; });
	if (skipOnly) v = `skip: ${skipReason(rel)}`;
	else if (fileRow.native?.status === "error") v = `${e.file.native.reason.detail}${fileRow.baseline?.status === "error" ? " (baseline too)" : ""}`;
	else if (e.tests.size) {
		const vs = new Set([...e.tests.values()].map((t) => verdict({ ...t, needsBuild: needsBuild(rel) })).filter((x) => x !== "ok" && x !== "skip"));
		v = vs.size ? [...vs].join("; ") : "ok";
	}
	fileRows.push([rel.replace(/^test\//, ""), e.tests.size, ...modes.map((m) => fileCell(e, m)), v]);
	for (const [name, row0] of e.tests) {
		const row = { ...row0, needsBuild: needsBuild(rel) };
		const vd = verdict(row);
		if (vd === "ok" || vd === "skip") continue;
		if (vd === "NATIVE DIFFERENCE" || vd.startsWith("differs from the checkout")) regressions++;
		const why = (row.native?.status === "fail" ? row.native : row.reference?.status === "fail" ? row.reference : row.baseline)?.reason?.detail ?? "";
		failRows.push([rel.replace(/^test\//, ""), name, ...modes.map((m) => cell(row[m]?.status)), vd, why.length > 160 ? `${why.slice(0, 157)}...` : why]);
	}
	if (fileRow.native?.status === "error" && fileRow.baseline?.status !== "error") regressions++;
}
console.log(table(["file", "tests", ...modes, "verdict"], fileRows));
if (failRows.length) {
	console.log("\nPer test (only tests that do not pass in every mode):\n");
	console.log(table(["file", "test", ...modes, "attribution", "first error"], failRows));
}
const tot = (m) => [...results.values()].reduce((acc, e) => { const c = counts(e.tests, m); return { p: acc.p + c.p, f: acc.f + c.f, s: acc.s + c.s }; }, { p: 0, f: 0, s: 0 });
console.log(`\nTotals: ${modes.map((m) => { const t = tot(m); return `${m} ${t.p} passed, ${t.f} failed, ${t.s} skipped`; }).join(" | ")}`);
console.log(regressions ? `${regressions} test(s)/file(s) pass on pi's own code${modes.includes("reference") ? " and on 1.6.0's session-manager" : ""} but fail natively (NATIVE DIFFERENCE)` : "No native-only failures.");

if (opts.json) {
	const out = {
		checkout, commit: gitHead, package: `${agentPkg.name}@${agentPkg.version}`, modes, targets,
		files: Object.fromEntries([...results].map(([rel, e]) => [rel, { file: e.file, tests: Object.fromEntries(e.tests) }])),
	};
	writeFileSync(opts.json, JSON.stringify(out, null, 2));
	console.log(`JSON: ${opts.json}`);
}
if (opts.keep) console.log(`raw vitest reports: ${work}`);
else rmSync(work, { recursive: true, force: true });
process.exit(regressions ? 1 : 0);
