#!/usr/bin/env node
// The cost of the exit-time sync in what users feel (issue 41): the 4 KB session row of
// bench/pi-bin.mjs (`pi --session <path> -p "<prompt>"` through the one switch, a scripted
// model on 127.0.0.1), run with the default fsync mode (`batch`, whose exit now fdatasyncs the
// turn's appends: pi exits well within the flusher's 100 ms) and with
// PI_SESSION_NATIVE_FSYNC=never (no fsync at all), alternating, in one run. The difference is
// what syncing the last turn costs `pi -p`; the plain `pi` side is run too, as in pi-bin.mjs.
//
//   node bench/pi-exit-sync.mjs               31 rounds
//   node bench/pi-exit-sync.mjs --rounds 41
import { existsSync, mkdirSync, rmSync, statSync, truncateSync } from "node:fs";
import { join, resolve } from "node:path";
import { findNode22 } from "../scripts/node22.mjs";
import { startModelServer, writeAgentConfig } from "../scripts/model-server.mjs";
import { writeSession } from "./gen.mjs";
import { alternate, fmtRange, mean, num, parseOptions, runProcess, summary } from "./lib.mjs";

const ROOT = resolve(import.meta.dirname, "..");
const DATA = join(ROOT, "bench", "data", "pi-exit-sync");
const PI_BIN = join(ROOT, "node_modules", "@earendil-works", "pi-coding-agent", "dist", "bundle", "cli.js");
const LAUNCHER = join(ROOT, "bin", "pi-native.mjs");

const { values } = parseOptions({ rounds: { type: "string" } }, "node bench/pi-exit-sync.mjs [--rounds N]");
const rounds = num(values.rounds, 31, "rounds");
const node22 = findNode22();
if (!node22) throw new Error("Node 22 is needed: node scripts/node22.mjs --ensure");

rmSync(DATA, { recursive: true, force: true });
const dirs = { home: join(DATA, "home"), agent: join(DATA, "agent"), project: join(DATA, "project") };
for (const d of Object.values(dirs)) mkdirSync(d, { recursive: true });
const sessDir = join(dirs.agent, "sessions", `--${dirs.project.replace(/^\//, "").replace(/[/\\:]/g, "-")}--`);
mkdirSync(sessDir, { recursive: true });
const file = join(sessDir, "2026-01-01T00-00-00-000Z_tiny.jsonl");
writeSession(file, { seed: "pi-exit-sync", targetBytes: 4 * 1024, cwd: dirs.project, startMs: Date.UTC(2026, 0, 1) });
const size = statSync(file).size;

const server = await startModelServer();
writeAgentConfig(dirs.agent, server.baseUrl);

/** Each side keeps its own warm compile cache, as in pi-bin.mjs. */
function env(side) {
  const e = { ...process.env };
  for (const k of Object.keys(e)) if (k.startsWith("PI_") || k === "NODE_OPTIONS") delete e[k];
  const tmp = join(DATA, `tmp-${side}`);
  if (!existsSync(tmp)) mkdirSync(tmp, { recursive: true });
  Object.assign(e, {
    HOME: dirs.home,
    PI_CODING_AGENT_DIR: dirs.agent,
    PI_OFFLINE: "1",
    PI_SKIP_VERSION_CHECK: "1",
    PI_TELEMETRY: "0",
    NO_COLOR: "1",
    TMPDIR: tmp,
  });
  if (side !== "pi") e.PI_CODING_AGENT_BIN = PI_BIN;
  if (side === "never") e.PI_SESSION_NATIVE_FSYNC = "never";
  return e;
}

const sides = ["pi", "batch", "never"];
const samples = Object.fromEntries(sides.map((s) => [s, { ms: [], cpu: [] }]));
const run = async (side) => {
  const argv = side === "pi" ? [PI_BIN] : [LAUNCHER];
  const r = await runProcess(node22, [...argv, "--session", file, "-p", "hello again"], {
    cwd: dirs.project,
    env: env(side),
  });
  truncateSync(file, size);
  if (r.code !== 0) throw new Error(`${side}: exit ${r.code}\n${r.stderr}`);
  return r;
};
try {
  for (const side of sides) await run(side); // warm-ups (compile caches)
  await alternate(sides, rounds, async (side) => {
    const r = await run(side);
    samples[side].ms.push(r.ms);
    samples[side].cpu.push(r.cpuMs);
  });
} finally {
  await server.close();
}
const s = Object.fromEntries(sides.map((k) => [k, summary(samples[k].ms)]));
const c = Object.fromEntries(sides.map((k) => [k, mean(samples[k].cpu)]));
console.log(`pi --session <4 KB> -p, ${rounds} rounds per side, wall ms median (min–max); CPU ms mean`);
for (const k of sides)
  console.log(`  ${k.padEnd(6)} ${fmtRange(s[k])}  mean ${s[k].mean.toFixed(0)}  CPU ${c[k].toFixed(0)}`);
console.log(
  `  batch / never: median ${(s.batch.median / s.never.median).toFixed(3)}x, mean ${(s.batch.mean / s.never.mean).toFixed(3)}x, CPU ${(c.batch / c.never).toFixed(3)}x`,
);
console.log(
  `  batch / pi:    median ${(s.batch.median / s.pi.median).toFixed(3)}x, mean ${(s.batch.mean / s.pi.mean).toFixed(3)}x, CPU ${(c.batch / c.pi).toFixed(3)}x`,
);
rmSync(DATA, { recursive: true, force: true });
