// Power loss (docs/durability.md, "Power loss"): what strace shows the library doing before a
// crash could strike, and the crash states built from it.
//   - batch mode syncs every file with pending appends at process exit (each once), whatever
//     the way out: process.exit, the end of the event loop, an uncaught exception, a SIGTERM
//     handler that exits (pi's);
//   - a directory the library creates is made durable: the parent of each one created is
//     fsynced, up to the first that existed; not in `never` mode;
//   - a file switch syncs the old file's pending appends before it writes the new file;
//   - the crash-state test (scripts/crash-states/run.mjs), bounded: batch and always, both
//     persistence models, every workload, and the broken traces that must report losses.
// strace missing (or ptrace refused): every test here is skipped, with one line saying so.
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, realpathSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { root } from "./helpers.mjs";
import { parseTrace, straceArgs, straceWorks } from "../scripts/crash-states/strace.mjs";
import { enforced, runAll, summary } from "../scripts/crash-states/run.mjs";
import { WORKLOADS } from "../scripts/crash-states/workload.mjs";

const CHILD = join(root, "scripts", "crash-states", "sync-child.mjs");
const HAVE_STRACE = straceWorks();
if (!HAVE_STRACE)
  console.log("power-loss tests skipped: strace is missing or cannot trace here (apt-get install strace)");

const dirs = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

/** Run the child under strace; its events, with the fd path (-y) of each call's first argument. */
function traced(args, env = {}) {
  const dir = realpathSync(mkdtempSync(join(tmpdir(), "psn-power-")));
  dirs.push(dir);
  const out = join(dir, "trace");
  const work = join(dir, "w");
  const r = spawnSync("strace", [...straceArgs(out), process.execPath, CHILD, args[0], work, ...args.slice(1)], {
    encoding: "utf8",
    env: { ...process.env, PI_SESSION_NATIVE_FSYNC: "batch", ...env },
  });
  const events = parseTrace(readFileSync(out, "utf8")).map((e) => {
    const m = /^-?\d+<(.*)>$/.exec(e.args[0] ?? "");
    const path = m
      ? m[1].replace(/\\x([0-9a-f]{2})/g, (_, h) => String.fromCharCode(Number.parseInt(h, 16)))
      : undefined;
    return { ...e, path };
  });
  return { events, work, status: r.status, stderr: r.stderr };
}

const isWrite = (e) => e.name === "write" || e.name === "writev" || e.name === "pwrite64";
const isSync = (e) => e.name === "fdatasync" || e.name === "fsync";
const sessionFile = (p) => p?.endsWith(".jsonl") && !p.split("/").pop().startsWith(".");

describe.skipIf(!HAVE_STRACE)("batch appends are synced at exit", () => {
  for (const how of ["exit", "natural", "throw", "sigterm"]) {
    it(`${how}: one fdatasync per file with pending appends, after its last write, before exit_group`, () => {
      const { events, status, stderr } = traced(["exit", how]);
      if (how === "throw") expect(stderr).toContain("uncaught, on purpose");
      else expect(status, stderr).toBe(how === "sigterm" ? 143 : 0);
      const exit = events.findIndex((e) => e.name === "exit_group");
      expect(exit).toBeGreaterThan(0);
      const files = [...new Set(events.filter((e) => isWrite(e) && sessionFile(e.path)).map((e) => e.path))];
      expect(files).toHaveLength(3);
      for (const f of files) {
        const last = events.findLastIndex((e) => isWrite(e) && e.path === f);
        const syncs = events.filter((e, i) => i > last && i < exit && isSync(e) && e.path === f);
        // Exactly one per file after its last write: the exit sync (or the flusher's, if a
        // loaded machine stalled the child for 100 ms); a synced file is not synced again.
        expect(syncs.length, `${f}: synced once after its last write, before exit_group`).toBe(1);
      }
      // "quiet" (the first file written) was synced by the flusher during the 400 ms wait,
      // before the other two were written: nothing of it was left for the exit.
      const quiet = files[0];
      const firstOther = events.findIndex((e) => isWrite(e) && sessionFile(e.path) && e.path !== quiet);
      const quietSyncs = events.filter((e) => isSync(e) && e.path === quiet).map((e) => events.indexOf(e));
      expect(quietSyncs.length, "quiet: one sync").toBe(1);
      expect(quietSyncs[0], "quiet: synced before the others were written").toBeLessThan(firstOther);
    });
  }
});

describe.skipIf(!HAVE_STRACE)("new folders are made durable", () => {
  it("the parent of every directory created is fsynced, up to the first that existed", () => {
    const { events, work, status, stderr } = traced(["mkdir"]);
    expect(status, stderr).toBe(0);
    const made = events
      .filter((e) => e.name === "mkdir" && e.ret === 0)
      .map((e) => JSON.parse(`"${e.args[0].slice(1, -1).replace(/\\x/g, "\\u00")}"`));
    expect(made).toEqual([work, join(work, "a"), join(work, "a", "b"), join(work, "a", "b", "c")]);
    const syncedDirs = events.filter((e) => e.name === "fsync").map((e) => e.path);
    // Each created directory's entry lives in its parent: all four parents, the first existing
    // ancestor (the temp dir) included; then the session file's own directory after its rename.
    for (const d of [dirs.at(-1), work, join(work, "a"), join(work, "a", "b")]) expect(syncedDirs).toContain(d);
    const lastMkdir = events.findLastIndex((e) => e.name === "mkdir");
    const firstFileWrite = events.findIndex((e) => isWrite(e) && e.path?.includes("/c/"));
    const parentSyncs = events.filter((e, i) => i > lastMkdir && i < firstFileWrite && e.name === "fsync");
    expect(parentSyncs).toHaveLength(4);
  });

  it("`never` mode fsyncs no directory", () => {
    const { events, status } = traced(["mkdir"], { PI_SESSION_NATIVE_FSYNC: "never" });
    expect(status).toBe(0);
    expect(events.filter(isSync)).toHaveLength(0);
  });
});

describe.skipIf(!HAVE_STRACE)("a file switch syncs the old file's pending appends first", () => {
  for (const which of ["branch", "new", "setfile", "fork"]) {
    it(which, () => {
      const { events, status, stderr } = traced(["switch", which]);
      expect(status, stderr).toBe(0);
      const old = events.find((e) => isWrite(e) && sessionFile(e.path))?.path;
      expect(old).toBeDefined();
      const lastOldWrite = events.findLastIndex((e) => isWrite(e) && e.path === old);
      // The new file's first write: its temp file (whole-file write) in any directory.
      const firstNew = events.findIndex(
        (e, i) => i > lastOldWrite && isWrite(e) && e.path !== old && e.path?.includes(".jsonl"),
      );
      expect(firstNew, "the new file is written").toBeGreaterThan(lastOldWrite);
      const synced = events.findIndex(
        (e, i) => i > lastOldWrite && i < firstNew && e.name === "fdatasync" && e.path === old,
      );
      expect(synced, `fdatasync of ${old} before the new file's first write`).toBeGreaterThan(lastOldWrite);
    });
  }
});

describe.skipIf(!HAVE_STRACE)("crash states (bounded; npm run test:crash for the long run)", () => {
  it("batch and always keep every promise under both models; the broken traces lose", async () => {
    const t0 = Date.now();
    const { rows, failures, total } = await runAll({
      cap: 4,
      stride: 2,
      indexStride: 4,
      writers: ["ours-batch", "ours-always"],
    });
    console.log(`${summary(rows)}\n${total} crash states in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
    expect(failures.map((f) => `${f.workload} ${f.writer} ${f.model}${f.broken ? " broken" : ""}`)).toEqual([]);
    // Every workload ran under both models for both writers, and was checked on real states.
    expect(WORKLOADS).toEqual(["appends", "migrate", "branch", "fork", "switch", "torn", "index"]);
    for (const w of WORKLOADS)
      for (const writer of ["ours-batch", "ours-always"])
        for (const model of ["prefix", "barrier"]) {
          const row = rows.find((r) => r.workload === w && r.writer === writer && r.model === model && !r.broken);
          expect(row?.unique, `${w} ${writer} ${model}`).toBeGreaterThan(3);
          expect(enforced(writer, model)).toBe(true);
        }
    // The broken traces (fsyncs removed) lose promised entries in every workload.
    const broken = rows.filter((r) => r.broken);
    expect(broken).toHaveLength(2 * WORKLOADS.length);
    for (const r of broken)
      expect(
        [...r.problems].some(([, c]) => c.promised > 0),
        `${r.workload} ${r.writer}`,
      ).toBe(true);
  });
});
