#!/usr/bin/env node
// Debug helper: run the pi SDK scenario (__test__/pi/sdk-scenario.mjs) for the reference and the
// native SessionManager under Node 22 and print where the normalized reports differ.
//
//   node scripts/run-pi-tests.mjs [--hook] [--keep] [--max N] [--out DIR]
//
//   --hook   run the native side with `--import lib/register.mjs` (pi's own imports are native too)
//   --keep   keep the temp dirs (session files) for inspection
//   --max N  show at most N differences (default 20)
//   --out D  also write reference.json / native.json into D
//
// Exit code: 0 identical, 1 different, 2 a scenario failed. For the full suite use `npm run test:pi`.
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { repoRoot, requireNode22 } from "./node22.mjs";

const args = process.argv.slice(2);
const flag = (name) => args.includes(name);
const opt = (name, dflt) => {
  const i = args.indexOf(name);
  return i >= 0 && args[i + 1] !== undefined ? args[i + 1] : dflt;
};
const hook = flag("--hook");
const keep = flag("--keep");
const max = Number(opt("--max", "20"));
const outDir = opt("--out", undefined);

const node22 = requireNode22();
const scenario = join(repoRoot, "__test__", "pi", "sdk-scenario.mjs");
const register = join(repoRoot, "lib", "register.mjs");

function run(impl, prefix) {
  const dir = realpathSync(mkdtempSync(join(tmpdir(), prefix)));
  const argv = [...(impl === "native" && hook ? ["--import", register] : []), scenario, "--impl", impl, "--dir", dir];
  /** @type {NodeJS.ProcessEnv} */
  const env = { ...process.env, PI_OFFLINE: "1", PI_SKIP_VERSION_CHECK: "1", PI_TELEMETRY: "0" };
  delete env.NODE_OPTIONS;
  try {
    const stdout = execFileSync(node22, argv, {
      env,
      maxBuffer: 256 * 1024 * 1024,
      stdio: ["ignore", "pipe", "inherit"],
    });
    return { dir, report: JSON.parse(stdout.toString("utf8")) };
  } catch {
    console.error(`\n[run-pi-tests] ${impl} scenario failed (dir ${dir})`);
    process.exit(2);
  }
}

function diff(a, b, path, out) {
  if (out.length >= max) return;
  if (Object.is(a, b)) return;
  const ta = Array.isArray(a) ? "array" : a === null ? "null" : typeof a;
  const tb = Array.isArray(b) ? "array" : b === null ? "null" : typeof b;
  if (ta !== tb || (ta !== "object" && ta !== "array")) {
    out.push({ path, reference: a, native: b });
    return;
  }
  if (ta === "array") {
    if (a.length !== b.length) out.push({ path: `${path}.length`, reference: a.length, native: b.length });
    for (let i = 0; i < Math.min(a.length, b.length); i++) diff(a[i], b[i], `${path}[${i}]`, out);
    return;
  }
  for (const k of new Set([...Object.keys(a), ...Object.keys(b)])) {
    if (!(k in a)) out.push({ path: `${path}.${k}`, reference: "<missing>", native: b[k] });
    else if (!(k in b)) out.push({ path: `${path}.${k}`, reference: a[k], native: "<missing>" });
    else diff(a[k], b[k], `${path}.${k}`, out);
    if (out.length >= max) return;
  }
}

const short = (v) => {
  const s = JSON.stringify(v);
  return s && s.length > 300 ? `${s.slice(0, 300)}…` : s;
};

const ref = run("reference", "pi-run-ref-");
const nat = run("native", "pi-run-nat-");
if (outDir) {
  mkdirSync(resolve(outDir), { recursive: true });
  writeFileSync(join(resolve(outDir), "reference.json"), JSON.stringify(ref.report, null, 2));
  writeFileSync(join(resolve(outDir), "native.json"), JSON.stringify(nat.report, null, 2));
}
const strip = ({ impl, hooked, node, root, rawFiles, ...rest }) => rest;
const diffs = [];
diff(strip(ref.report), strip(nat.report), "report", diffs);
console.log(`native hooked into pi: ${nat.report.hooked}`);
if (diffs.length === 0) console.log("reports are identical");
for (const d of diffs) console.log(`${d.path}\n  reference: ${short(d.reference)}\n  native:    ${short(d.native)}`);
if (keep) console.log(`kept: ${ref.dir} ${nat.dir}`);
else for (const d of [ref.dir, nat.dir]) rmSync(d, { recursive: true, force: true });
process.exit(diffs.length === 0 ? 0 : 1);
