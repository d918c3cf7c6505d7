#!/usr/bin/env node
// Wall time of the real bundled pi bin started plainly and through pi-native (a measurement, not
// a test). Runs every command ROUNDS times, interleaved in a random order per round, and prints
// median / mean / min wall time and median CPU time in ms.
//
//   node __test__/pi-bin/startup-times.mjs [rounds=20]
//
// Rows: `pi --version`, `pi-native --version` (in-process: hooks, then pi's bin imported), a
// child-process launcher doing the same (the design pi-native does not use, for comparison),
// `pi -p hello` and `pi-native -p hello` (a new session with the scripted model).
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { cleanup, launcher, makeRoot, node22, piBin, piEnv, registerScript } from "./helpers.mjs";
import { startModelServer } from "../../scripts/model-server.mjs";
import { runProcess, summary } from "../../bench/lib.mjs";

const rounds = Number(process.argv[2] ?? 20);
if (!node22) throw new Error("no Node 22 (scripts/node22.mjs)");
const server = await startModelServer({ maxRequests: 100_000 });
const root = makeRoot("pitime-", server.baseUrl);
const childLauncher = join(root, "child-launcher.mjs");
writeFileSync(
  childLauncher,
  `import { spawn } from "node:child_process";
const c = spawn(process.execPath, ["--import", ${JSON.stringify(registerScript)}, ${JSON.stringify(piBin)}, ...process.argv.slice(2)], { stdio: "inherit" });
for (const s of ["SIGINT", "SIGTERM", "SIGHUP"]) process.on(s, () => c.kill(s));
c.on("exit", (code, signal) => (signal ? process.kill(process.pid, signal) : process.exit(code)));
`,
);

// pi turns on Node's compile cache in os.tmpdir(), one entry per file: the rows that load pi's
// session chunk as it is and those that load it patched get a temp folder each, or they would
// overwrite each other's entry and every run would compile the 2.6 MB chunk afresh (as a user
// who runs only one of them never does).
const asIs = { TMPDIR: mkdtempSync(join(tmpdir(), "psn-startup-as-is-")) };
const patched = { TMPDIR: mkdtempSync(join(tmpdir(), "psn-startup-patched-")) };
// [name, how, argv, extra env]; rows 0/1 and 3/4 are the ratios printed at the end
const rows = [
  ["pi --version", "ref", [piBin, "--version"], asIs],
  ["pi-native --version", "native", [launcher, "--version"], patched],
  ["child-process launcher --version", "ref", [childLauncher, "--version"], patched],
  ["pi -p hello (new session)", "ref", [piBin, "-p", "hello"], asIs],
  ["pi-native -p hello (new session)", "native", [launcher, "-p", "hello"], patched],
  ["node --import lib/register.mjs pi --version", "ref", ["--import", registerScript, piBin, "--version"], patched],
  ["PI_SESSION_NATIVE=0 pi-native --version", "native", [launcher, "--version"], { ...asIs, PI_SESSION_NATIVE: "0" }],
];

async function main() {
  const times = rows.map(() => []);
  const cpus = rows.map(() => []);
  for (const [, how, argv, extra] of rows) await once(how, argv, extra); // warm the compile cache and page cache
  for (let i = 0; i < rounds; i++) {
    // a fresh random order every round: no row always runs right after the same other row
    const order = rows.map((_, j) => j).sort(() => Math.random() - 0.5);
    for (const j of order) {
      const { wall, cpu } = await once(rows[j][1], rows[j][2], rows[j][3]);
      times[j].push(wall);
      cpus[j].push(cpu);
    }
  }
  const stat = summary;
  console.log(`node ${spawnSync(node22, ["--version"], { encoding: "utf8" }).stdout.trim()}, ${rounds} rounds, ms`);
  console.log("| command | wall median | wall mean | wall min | CPU median (user+sys) |\n|---|---:|---:|---:|---:|");
  rows.forEach(([name], j) => {
    const s = stat(times[j]);
    console.log(
      `| ${name} | ${s.median.toFixed(0)} | ${s.mean.toFixed(0)} | ${s.min.toFixed(0)} | ${stat(cpus[j]).median.toFixed(0)} |`,
    );
  });
  const ratio = (a, b, of = times) => (stat(of[a]).median / stat(of[b]).median).toFixed(3);
  console.log(`\npi-native --version / pi --version: wall ${ratio(1, 0)}, CPU ${ratio(1, 0, cpus)}`);
  console.log(`pi-native -p / pi -p (new session): wall ${ratio(4, 3)}, CPU ${ratio(4, 3, cpus)}`);
}

/** One run's wall and CPU time (bench/lib.mjs `runProcess`: GNU time, else /proc polling). */
async function once(how, argv, extra = {}) {
  const env = piEnv(root, how, { env: { PI_SESSION_NATIVE_DEBUG: undefined, ...extra } });
  const r = await runProcess(node22, argv, { cwd: join(root, "project"), env });
  if (r.code !== 0) throw new Error(`${argv.join(" ")} exited ${r.code}: ${r.stderr}`);
  return { wall: r.ms, cpu: r.cpuMs };
}

try {
  await main();
} finally {
  await server.close();
  cleanup();
  for (const { TMPDIR } of [asIs, patched]) rmSync(TMPDIR, { recursive: true, force: true });
}
