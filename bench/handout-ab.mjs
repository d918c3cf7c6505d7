#!/usr/bin/env node
// What a caller of a giant session pays in one process, for several checkouts side by side:
// `SessionManager.open`, `buildSessionContext()`, the first `getBranch()` and `getEntries()`
// (what pi's start-up and TUI footer call), each checkout's own build, in child processes run
// in turn (A B A B ...), with CPU time and peak RSS (VmHWM, Linux).
//
//   node bench/handout-ab.mjs <session.jsonl> <checkout> [<checkout>...] [--rounds N]
//   e.g. node bench/handout-ab.mjs bench/data/single/session-700mb.jsonl /work/wt-before .
//
// Each checkout needs its addon built (`npm run build` there). The session files of
// `bench/run.mjs --giant` are in bench/data/single.
import { execFileSync } from "node:child_process";
import { resolve } from "node:path";
import { parseArgs } from "node:util";

const { values: args, positionals } = parseArgs({
  allowPositionals: true,
  options: { rounds: { type: "string", default: "3" }, child: { type: "boolean" } },
});

if (args.child) {
  const [root, file] = positionals;
  const { readFileSync } = await import("node:fs");
  const { SessionManager } = await import(`${resolve(root)}/index.mjs`);
  const hwm = () => {
    try {
      return Math.round(Number(/VmHWM:\s+(\d+)/.exec(readFileSync("/proc/self/status", "utf8"))?.[1]) / 1024);
    } catch {
      return null;
    }
  };
  const c0 = process.cpuUsage();
  const t = [performance.now()];
  const sm = SessionManager.open(file);
  t.push(performance.now());
  sm.buildSessionContext();
  t.push(performance.now());
  const branch = sm.getBranch();
  t.push(performance.now());
  sm.getEntries();
  t.push(performance.now());
  const c = process.cpuUsage(c0);
  const ms = (k) => Math.round(t[k + 1] - t[k]);
  const out = { open: ms(0), context: ms(1), branch: ms(2), entries: ms(3), total: Math.round(t[4] - t[0]) };
  Object.assign(out, { cpu: Math.round((c.user + c.system) / 1000), hwmMB: hwm(), branchEntries: branch.length });
  console.log(JSON.stringify(out));
  process.exit(0);
}

const [file, ...roots] = positionals;
if (!file || roots.length === 0) {
  console.error("usage: node bench/handout-ab.mjs <session.jsonl> <checkout> [<checkout>...] [--rounds N]");
  process.exit(2);
}
const rounds = Number(args.rounds);
const rows = new Map(roots.map((r) => [r, []]));
for (let i = 0; i < rounds; i++) {
  for (const root of roots) {
    const line = execFileSync(process.execPath, [new URL(import.meta.url).pathname, "--child", root, file], {
      encoding: "utf8",
      maxBuffer: 1 << 20,
    });
    rows.get(root).push(JSON.parse(line.trim().split("\n").pop()));
  }
}
const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor((s.length - 1) / 2)];
};
const keys = ["open", "context", "branch", "entries", "total", "cpu", "hwmMB"];
console.log(`| checkout (median of ${rounds}) | ${keys.join(" | ")} |`);
console.log(`|---|${keys.map(() => "---:").join("|")}|`);
for (const [root, rs] of rows) console.log(`| ${root} | ${keys.map((k) => median(rs.map((r) => r[k]))).join(" | ")} |`);
