#!/usr/bin/env node
// The pi extension's background index warm-up (extensions/sessions.ts): does it slow pi's
// start or its turns, and does it make the first /sessions fast? The real bundled pi bin
// (pi 1.6.0's dist/bundle/cli.js, rpc mode, `-e extensions/sessions.ts`) with a scripted model
// on 127.0.0.1 that answers at once, warm-up on (PI_SESSION_NATIVE_WARM=1: in rpc mode it is off
// by default) and off (PI_SESSION_NATIVE_WARM=0),
// alternating in one run, on a store of generated sessions whose search index is removed before
// every run (so the warm-up builds it all while the turns are measured).
//
//   node bench/pi-warm.mjs                       1,000 sessions, 5 rounds per side, 6 turns a run
//   node bench/pi-warm.mjs --sessions 10000 --rounds 3
//   node bench/pi-warm.mjs --idle 15000          /sessions sent 15 s after start (after the turns)
//
// Per run: start = spawn until pi answers its first rpc command (get_state); turns = from
// sending a prompt to agent_end: the first sent `--first` ms after start (default 2500; the
// warm-up starts 2 s after session_start, so it is working then), the next ones `--gap` ms
// (default 2000) after the previous turn ended (the warm-up resumes after 3 s of quiet: a gap
// under 3 s never meets it, a longer one does); first /sessions = from sending
// `/sessions <word no session has>` (after the turns, or at `--idle` ms after start) to its
// "No session mentions" notice.
import { existsSync, mkdirSync, readdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { startModelServer, writeAgentConfig } from "../scripts/model-server.mjs";
import { extensionPath, node22, startRpc } from "../__test__/pi-ext/helpers.mjs";
import { filler, writeSessions } from "../__test__/tty-helpers.mjs";
import { median } from "./lib.mjs";

const arg = (name, dflt) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : dflt;
};
const SESSIONS = arg("sessions", 1000);
const ROUNDS = arg("rounds", 5);
const TURNS = arg("turns", 6);
const IDLE = arg("idle", 0);
const GAP = arg("gap", 2000);
const FIRST = arg("first", 2500);
if (!node22) {
  console.error("pi 1.6.0 needs Node >= 22.19: node scripts/node22.mjs --ensure");
  process.exit(2);
}

const here = fileURLToPath(new URL(".", import.meta.url));
const base = join(here, "data", "pi-warm", String(SESSIONS));
const home = join(base, "home");
const agentDir = join(home, ".pi", "agent");
const sessions = join(agentDir, "sessions");
const project = join(base, "project");
const index = join(sessions, ".pi-session-search.sqlite");
if (!existsSync(join(base, "done"))) {
  rmSync(base, { recursive: true, force: true });
  mkdirSync(project, { recursive: true });
  // Ten projects; every session has 4 turns of ~250 words each side and a tool call's worth of text.
  const t0 = Date.now();
  for (let p = 0; p < 10; p++)
    writeSessions(sessions, join(base, `proj${p}`), Math.ceil(SESSIONS / 10), {
      turns: 4,
      text: (i, t) => [
        filler(p * 100_000 + i * 7 + t, 250),
        `edit src/mod${i % 97}/file${t}.ts\n${filler(i * 11 + t, 250)}`,
      ],
    });
  mkdirSync(join(base, "done"));
  console.log(`generated ${SESSIONS} sessions in ${Date.now() - t0} ms: ${base}`);
}

const server = await startModelServer({ maxRequests: 1_000_000 });
writeAgentConfig(agentDir, server.baseUrl);
const env = {
  ...process.env,
  HOME: home,
  PI_CODING_AGENT_DIR: agentDir,
  PI_OFFLINE: "1",
  PI_SKIP_VERSION_CHECK: "1",
  PI_TELEMETRY: "0",
  NO_COLOR: "1",
};
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function run(warm) {
  for (const f of [index, `${index}-wal`, `${index}-shm`]) rmSync(f, { force: true });
  // The project's own sessions (one per run) go away too: every run starts alike.
  for (const d of readdirSync(sessions)) if (d.includes("project")) rmSync(join(sessions, d), { recursive: true });
  const t0 = performance.now();
  const rpc = startRpc(["-e", extensionPath], {
    cwd: project,
    env: { ...env, PI_SESSION_NATIVE_WARM: warm ? "1" : "0" },
    timeoutMs: 300_000,
  });
  await rpc.request({ type: "get_state" });
  const start = performance.now() - t0;
  await sleep(Math.max(0, FIRST - (performance.now() - t0)));
  const turns = [];
  for (let k = 0; k < TURNS; k++) {
    if (k) await sleep(GAP);
    const ends = rpc.records.filter((r) => r.type === "agent_end").length;
    const t = performance.now();
    rpc.send({ type: "prompt", message: `turn ${k}` });
    await rpc.waitFor((r) => r.type === "agent_end" && rpc.records.filter((x) => x.type === "agent_end").length > ends);
    turns.push(performance.now() - t);
  }
  await sleep(Math.max(0, IDLE - (performance.now() - t0)));
  const t = performance.now();
  rpc.send({ type: "prompt", message: "/sessions zzzznotthereanywhere" });
  await rpc.waitFor((r) => r.method === "notify" && /No session mentions/.test(r.message));
  const first = performance.now() - t;
  await rpc.close();
  return { start, turns, first };
}

const res = { on: [], off: [] };
await run(false); // warm-up of the OS caches, not counted
for (let r = 0; r < ROUNDS; r++) {
  for (const warm of r % 2 ? [true, false] : [false, true]) {
    const x = await run(warm);
    res[warm ? "on" : "off"].push(x);
    console.log(
      `round ${r + 1} warm-up ${warm ? "on " : "off"}: start ${x.start.toFixed(0)} ms, turns ${x.turns.map((v) => v.toFixed(0)).join(" ")} ms, first /sessions ${x.first.toFixed(0)} ms`,
    );
  }
}
await server.close();

const row = (label, f) => {
  const on = median(res.on.flatMap(f));
  const off = median(res.off.flatMap(f));
  return `| ${label} | ${off.toFixed(0)} ms | ${on.toFixed(0)} ms | ${(on / off).toFixed(2)}x |`;
};
console.log(
  `\n${SESSIONS} sessions, ${ROUNDS} rounds per side, ${TURNS} turns a run ${GAP} ms apart${IDLE ? `, /sessions ${IDLE} ms after start` : ""} (medians)`,
);
console.log("| | warm-up off | warm-up on | on / off |\n|---|---|---|---|");
console.log(row("pi start (spawn to first rpc answer)", (x) => [x.start]));
console.log(row("first turn (sent while the warm-up works)", (x) => [x.turns[0]]));
console.log(row(`later turns (${GAP} ms after the previous one)`, (x) => x.turns.slice(1)));
console.log(
  row(IDLE ? `first /sessions, ${IDLE / 1000} s after start` : "first /sessions right after the turns", (x) => [
    x.first,
  ]),
);
