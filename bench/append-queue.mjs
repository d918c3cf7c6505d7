#!/usr/bin/env node
// Does the in-memory append queue earn its complexity (issue 26 point 3)? In-memory sessions,
// three implementations in one process, rounds alternating, medians:
//
//   reference  the reference's SessionManager (@earendil-works/pi-coding-agent 1.6.0)
//   queue      the native SessionManager as shipped: an in-memory append is kept in JS
//              (lib/append-queue.js) and the queue is handed to Rust in one
//              `appendFieldsBatch` by the next read; a context over a queue that extends
//              Rust's leaf is built without handing it over
//   plain      the same class with each in-memory append handed to Rust at once, one
//              `appendFields` call (the path persisted sessions take, without the line):
//              a subclass whose `_queue` is that plain path
//
// Workloads (what a user could feel):
//   10k / 100k   N appendMessage calls (~2 KB messages), then getBranch() and
//                buildSessionContext() (the reads pay the queue's hand-over); timed whole,
//                and the appends alone
//   turn loop    1,000 x (appendMessage, buildSessionContext()): pi's turn, over a session
//                that grows from empty
//   turn loop after 10k  the same 1,000 turns after 10,000 messages appended and read
//
//   node bench/append-queue.mjs [--rounds N]     (Node 20)

import { createRequire } from "node:module";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import v8 from "node:v8";
import vm from "node:vm";
import { makeMessages } from "./gen.mjs";

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const REF = join(ROOT, "node_modules/@earendil-works/pi-coding-agent/dist/core/session-manager.js");
const arg = (name, dflt) => (process.argv.includes(name) ? process.argv[process.argv.indexOf(name) + 1] : dflt);
const rounds = Number(arg("--rounds", 7));

const require = createRequire(import.meta.url);
const Queue = require(join(ROOT, "index.js")).SessionManager;
const { plainId } = require(join(ROOT, "lib/entry-ids.js"));
const Ref = (await import(pathToFileURL(REF).href)).SessionManager;

/** The plain path: `_appendEntry`'s native append, for an in-memory entry, at once. */
class Plain extends Queue {
  /** `inMemory` makes a `SessionManager` whatever class it is called on (as the reference's). */
  static inMemory(cwd) {
    // @ts-expect-error the constructor's arguments are internal, not in index.d.ts
    return new Plain(cwd, "", undefined, false);
  }

  _queue(entry, freshId, kind, role) {
    const fields = plainId(entry.id) && (entry.parentId === null || plainId(entry.parentId));
    let i = this._send(entry, fields, kind, role, freshId);
    if (i < 0) {
      entry.id = this._generateIdFrom(1);
      i = this._send(entry, fields, kind, role, false);
    }
    this._cache.appended(i, entry);
    this.leafId = entry.id;
  }
}
{
  // The subclass must really take the plain path: nothing queued, every append in Rust.
  const p = Plain.inMemory("/tmp");
  p.appendMessage({ role: "user", content: "x", timestamp: 1 });
  if (p._q.length !== 0 || p._core.length !== 2)
    throw new Error(`Plain did not hand the append to Rust at once (${p._q.length} queued, ${p._core.length} in Rust)`);
  const q = Queue.inMemory("/tmp");
  q.appendMessage({ role: "user", content: "x", timestamp: 1 });
  if (q._q.length !== 1) throw new Error("the shipped SessionManager did not queue the in-memory append");
}

const pool = makeMessages(10_000);
v8.setFlagsFromString("--expose-gc");
const gc = vm.runInNewContext("gc");

/** N appends, then the reads that follow them; returns [total ms, appends ms, check]. */
function appendsThenRead(SM, n) {
  const sm = SM.inMemory("/tmp/bench");
  const t0 = performance.now();
  for (let i = 0; i < n; i++) sm.appendMessage(pool[i % pool.length]);
  const t1 = performance.now();
  const branch = sm.getBranch();
  const ctx = sm.buildSessionContext();
  const t2 = performance.now();
  return [t2 - t0, t1 - t0, branch.length + ctx.messages.length];
}

/** `turns` x (append, context) after `before` messages appended and read. */
function turnLoop(SM, turns, before) {
  const sm = SM.inMemory("/tmp/bench");
  for (let i = 0; i < before; i++) sm.appendMessage(pool[i % pool.length]);
  sm.buildSessionContext();
  let check = 0;
  const t0 = performance.now();
  for (let i = 0; i < turns; i++) {
    sm.appendMessage(pool[i % pool.length]);
    check += sm.buildSessionContext().messages.length;
  }
  return [performance.now() - t0, undefined, check];
}

const workloads = {
  "10k appends + getBranch + context": (SM) => appendsThenRead(SM, 10_000),
  "100k appends + getBranch + context": (SM) => appendsThenRead(SM, 100_000),
  "turn loop x 1,000 (append, context)": (SM) => turnLoop(SM, 1_000, 0),
  "turn loop x 1,000 after 10k": (SM) => turnLoop(SM, 1_000, 10_000),
};
const sides = { reference: Ref, queue: Queue, plain: Plain };

const samples = {};
for (const w of Object.keys(workloads))
  samples[w] = Object.fromEntries(Object.keys(sides).map((s) => [s, { total: [], appends: [] }]));
const names = Object.keys(sides);
for (const [w, run] of Object.entries(workloads)) {
  const checks = {};
  for (const s of names) checks[s] = run(sides[s])[2]; // warm-up, and the results must agree
  if (new Set(Object.values(checks)).size !== 1)
    console.log(`WARNING result mismatch in ${w}: ${JSON.stringify(checks)}`);
  for (let r = 0; r < rounds; r++) {
    for (const s of r % 2 ? [...names].reverse() : names) {
      gc();
      const [total, appends] = run(sides[s]);
      samples[w][s].total.push(total);
      if (appends !== undefined) samples[w][s].appends.push(appends);
    }
  }
}

const median = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];
const ms = (x) => (x < 10 ? x.toFixed(1) : x.toFixed(0));
console.log(`In-memory append queue vs plain appends, ${rounds} rounds, medians; node ${process.version}`);
console.log(
  "| workload | reference ms | queue ms | plain ms | plain / queue | plain / reference | queue / reference |",
);
console.log("|---|---:|---:|---:|---:|---:|---:|");
for (const w of Object.keys(workloads)) {
  const rows = [["", "total"]];
  if (samples[w].plain.appends.length) rows.push([" (appends alone)", "appends"]);
  for (const [suffix, key] of rows) {
    const [r, q, p] = names.map((s) => median(samples[w][s][key]));
    console.log(
      `| ${w}${suffix} | ${ms(r)} | ${ms(q)} | ${ms(p)} | ${(p / q).toFixed(2)}x | ${(p / r).toFixed(2)}x | ${(q / r).toFixed(2)}x |`,
    );
  }
}
