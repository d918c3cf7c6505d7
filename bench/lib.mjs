// The benchmarks' shared harness: command-line options (node:util parseArgs), statistics
// over samples, table formatting, and a child-process runner that records wall time, CPU
// time (user + system) and peak RSS of the whole child.
//
// CPU and peak RSS of a child come from GNU time (`/usr/bin/time -f "%M %U %S"`, the
// kernel's rusage of the child at exit) when it is installed, else from polling
// /proc/<pid>/status (VmHWM) and /proc/<pid>/stat (utime + stime) every 5 ms while it runs
// (Linux; the last poll before exit, so the CPU time may miss the last few milliseconds).
// `RSS_METHOD` says which one a run used.

import { spawn, spawnSync } from "node:child_process";
import { readFileSync, rmSync } from "node:fs";
import os from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";

// ---------------------------------------------------------------------------------------
// options
// ---------------------------------------------------------------------------------------

/**
 * `parseArgs` of `process.argv` with `options` (node:util's format: `{ runs: { type:
 * "string" }, only: { type: "string", multiple: true }, quick: { type: "boolean" } }`),
 * positionals allowed. An unknown option prints `usage` (the script's header) and exits 2.
 * Returns `{ values, positionals }`; numeric options are read with `num`.
 * @param {import("node:util").ParseArgsConfig["options"]} options
 * @returns {{ values: Record<string, any>, positionals: string[] }}
 */
export function parseOptions(options, usage = "", argv = process.argv.slice(2)) {
  try {
    return parseArgs({ args: argv, options, allowPositionals: true, strict: true });
  } catch (e) {
    console.error(`${e.message}${usage ? `\n\n${usage}` : ""}`);
    process.exit(2);
  }
}

/** A numeric option: `dflt` when absent; exits 2 on a value that is not a number. */
export function num(value, dflt, name = "option") {
  if (value === undefined) return dflt;
  const n = Number(value);
  if (!Number.isFinite(n)) {
    console.error(`--${name} must be a number, got ${JSON.stringify(value)}`);
    process.exit(2);
  }
  return n;
}

// ---------------------------------------------------------------------------------------
// statistics and formatting
// ---------------------------------------------------------------------------------------

const sorted = (xs) => [...xs].sort((a, b) => a - b);

/** The median (mean of the middle two for an even count); undefined for no samples. */
export function median(xs) {
  if (xs.length === 0) return undefined;
  const s = sorted(xs);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

export function mean(xs) {
  return xs.length === 0 ? undefined : xs.reduce((a, b) => a + b, 0) / xs.length;
}

/** The `p`-th percentile (0-100): the sample at rank floor(n * p / 100), the largest at most. */
export function percentile(xs, p) {
  const s = sorted(xs);
  return s[Math.min(s.length - 1, Math.floor((s.length * p) / 100))];
}

/** `{ median, mean, min, max, n }` of the samples. */
export function summary(xs) {
  const s = sorted(xs);
  return { median: median(s), mean: mean(s), min: s[0], max: s[s.length - 1], n: s.length };
}

/** A time in ms with 3 significant-ish digits ("" / `none` when undefined). */
export function fmtMs(ms, none = "") {
  if (ms === undefined || Number.isNaN(ms)) return none;
  return ms >= 100 ? ms.toFixed(0) : ms >= 10 ? ms.toFixed(1) : ms >= 1 ? ms.toFixed(2) : ms.toFixed(3);
}

/** `a / b` as "0.42x" ("" / `none` when either is missing or b is not positive). */
export function fmtRatio(a, b, none = "") {
  return a !== undefined && b !== undefined && b > 0 ? `${(a / b).toFixed(2)}x` : none;
}

/** "median (min–max)" of a summary, rounded to whole units. */
export function fmtRange(s) {
  return `${s.median.toFixed(0)} (${s.min.toFixed(0)}–${s.max.toFixed(0)})`;
}

/** Run `fn` for `rounds` rounds over `impls` in alternating order (a,b / b,a / ...). */
export async function alternate(impls, rounds, fn) {
  for (let r = 0; r < rounds; r++) {
    const order = r % 2 === 0 ? impls : [...impls].reverse();
    for (const impl of order) await fn(impl, r);
  }
}

// ---------------------------------------------------------------------------------------
// child processes
// ---------------------------------------------------------------------------------------

/** GNU time, if installed (it reports the child's rusage at exit). */
export const GNU_TIME = (() => {
  for (const t of ["/usr/bin/time", "/bin/time"]) {
    const r = spawnSync(t, ["-f", "%M", "true"], { encoding: "utf8" });
    if (r.status === 0 && /^\d+\s*$/.test(r.stderr.trim().split("\n").pop() ?? "")) return t;
  }
  return undefined;
})();

export const RSS_METHOD = GNU_TIME
  ? "peak RSS and CPU of whole processes: GNU time %M %U %S (rusage at exit)"
  : "peak RSS and CPU of whole processes: /proc VmHWM and utime+stime polled every 5 ms";

const TICK_MS = 1000 / (Number(spawnSync("getconf", ["CLK_TCK"], { encoding: "utf8" }).stdout) || 100);

/** Peak RSS of a live process in kB (/proc/<pid>/status VmHWM). */
export function readHwmKB(pid) {
  try {
    const m = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
    return m ? Number(m[1]) : undefined;
  } catch {
    return undefined;
  }
}

/** user + system CPU time of a live process from /proc/<pid>/stat (clock ticks). */
function readCpuMs(pid) {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return (Number(f[11]) + Number(f[12])) * TICK_MS; // fields 14 and 15
  } catch {
    return undefined;
  }
}

let seq = 0;

/**
 * Run `cmd args` to its end: `{ ms, cpuMs, rssMB, code, signal, stdout, stderr }`. `ms` is
 * spawn to exit; `cpuMs` and `rssMB` are the whole child's (see the header). Options:
 * `cwd`, `env`, `timeout` (ms, then SIGKILL; default 10 min), `stdin` ("ignore" or "inherit").
 * @param {string} cmd
 * @param {string[]} args
 * @param {{ cwd?: string, env?: NodeJS.ProcessEnv, timeout?: number, stdin?: "ignore" | "inherit" }} [options]
 * @returns {Promise<{ ms: number, cpuMs: number, rssMB: number, code: number | null, signal: NodeJS.Signals | null, stdout: string, stderr: string }>}
 */
export function runProcess(cmd, args, { cwd, env, timeout = 600_000, stdin = "ignore" } = {}) {
  return new Promise((resolvePromise, reject) => {
    const timeFile = join(os.tmpdir(), `pi-bench-${process.pid}-${++seq}.time`);
    const [c, cargs] = GNU_TIME ? [GNU_TIME, ["-f", "%M %U %S", "-o", timeFile, cmd, ...args]] : [cmd, args];
    const t0 = process.hrtime.bigint();
    const child = spawn(c, cargs, { cwd, env, stdio: [stdin, "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d) => (stdout += d));
    child.stderr.on("data", (d) => (stderr += d));
    let polledKB = 0;
    let polledCpu = Number.NaN;
    const poll = GNU_TIME
      ? undefined
      : setInterval(() => {
          const kb = readHwmKB(child.pid);
          if (kb) polledKB = Math.max(polledKB, kb);
          const cpu = readCpuMs(child.pid);
          if (cpu !== undefined) polledCpu = cpu;
        }, 5);
    const killer = setTimeout(() => child.kill("SIGKILL"), timeout);
    child.on("error", reject);
    child.on("close", (code, signal) => {
      const ms = Number(process.hrtime.bigint() - t0) / 1e6;
      clearTimeout(killer);
      if (poll) clearInterval(poll);
      let kb = polledKB || Number.NaN;
      let cpuMs = polledCpu;
      if (GNU_TIME) {
        try {
          const [m, u, s] = readFileSync(timeFile, "utf8").trim().split("\n").pop().split(" ").map(Number);
          kb = m;
          cpuMs = (u + s) * 1000;
        } catch {
          kb = Number.NaN;
          cpuMs = Number.NaN;
        }
        rmSync(timeFile, { force: true });
      }
      resolvePromise({ ms, cpuMs, rssMB: kb / 1024, code, signal, stdout, stderr });
    });
  });
}

/**
 * Run a Node script that prints one JSON object as its last stdout line; returns that
 * object with the runner's `{ wallMs, cpuMs, rssMB }` added. Throws with the exit status
 * and the last stderr line when the child fails.
 * @param {string} script
 * @param {string[]} [args]
 * @param {{ node?: string, nodeArgs?: string[], cwd?: string, env?: NodeJS.ProcessEnv, timeout?: number, stdin?: "ignore" | "inherit" }} [options]
 */
export async function runNodeJson(script, args = [], options = {}) {
  const { node = process.execPath, nodeArgs = [], ...opts } = options;
  const r = await runProcess(node, [...nodeArgs, script, ...args], opts);
  if (r.code === 0) {
    const line = r.stdout.trim().split("\n").pop();
    return { ...JSON.parse(line), wallMs: r.ms, cpuMs: r.cpuMs, rssMB: r.rssMB };
  }
  const why = r.signal ? `killed by ${r.signal}` : `exit ${r.code}`;
  const tail = r.stderr.trim().split("\n").filter(Boolean).slice(-2).join(" / ");
  throw new Error(`${why}${tail ? `: ${tail.slice(0, 200)}` : ""}`);
}
