#!/usr/bin/env node
// Where the time of 10,000 persisted appendMessage calls goes, native vs reference, in one
// process (rounds alternate; medians). Each row is a workload of its own over the same
// prebuilt ~2 KB messages:
//
//   stringify      build each entry as `_base` does (randomUUID id, ISO timestamp) and
//                  JSON.stringify it: the work both implementations must do
//   + writeSync    ... and write the line on a descriptor kept open (the cheapest
//                  synchronous persistence from JS)
//   + appendFile   ... and appendFileSync(path, line): the reference's write (open, write,
//                  close per call)
//   reference      the reference's SessionManager.appendMessage
//   reference mem  the reference's appendMessage on an in-memory session (no file: it keeps
//                  the object and never serializes it)
//   native mem     native appendMessage on an in-memory session (no file, no serialization;
//                  queued in JS, handed to Rust by the next read, which this row does not
//                  count: bench/run.mjs has a row that does)
//   native never   native, persisted, PI_SESSION_NATIVE_FSYNC=never (no background fsync)
//   native         native, persisted, default fsync policy (batch)
//
//   node bench/append-floor.mjs [--rounds N]     (data: bench/data/single/session-1mb.jsonl)

import { appendFileSync, closeSync, copyFileSync, mkdtempSync, openSync, rmSync, writeSync } from "node:fs";
import { createRequire } from "node:module";
import os from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import v8 from "node:v8";
import vm from "node:vm";
import { DEFAULT_DATA_DIR, generate, makeMessages, singlePath } from "./gen.mjs";

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const REF = join(ROOT, "node_modules/@earendil-works/pi-coding-agent/dist/core/session-manager.js");
const rounds = Number(process.argv[process.argv.indexOf("--rounds") + 1]) || 9;

generate({ quick: true, log: () => {} });
const SOURCE = singlePath(DEFAULT_DATA_DIR, "1mb");
const Ref = (await import(pathToFileURL(REF).href)).SessionManager;
const Native = createRequire(import.meta.url)(join(ROOT, "index.js")).SessionManager;
const msgs = makeMessages(10_000);
v8.setFlagsFromString("--expose-gc");
const gc = vm.runInNewContext("gc");

function withFile(fn) {
  const dir = mkdtempSync(join(os.tmpdir(), "pi-append-floor-"));
  const file = join(dir, "2025-06-01T09-00-00-000Z_01972ab8-2280-7fea-80db-57e26aa706a1.jsonl");
  copyFileSync(SOURCE, file);
  try {
    return fn(dir, file);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

function entries(each) {
  let leaf = null;
  const kept = [];
  const t = performance.now();
  for (const message of msgs) {
    const e = {
      type: "message",
      id: crypto.randomUUID().slice(0, 8),
      parentId: leaf,
      timestamp: new Date().toISOString(),
      message,
    };
    each(JSON.stringify(e));
    kept.push(e);
    leaf = e.id;
  }
  return performance.now() - t;
}

function appendMessages(sm) {
  sm.getLeafId();
  const t = performance.now();
  for (const m of msgs) sm.appendMessage(m);
  return performance.now() - t;
}

function native(fsync) {
  const before = process.env.PI_SESSION_NATIVE_FSYNC;
  process.env.PI_SESSION_NATIVE_FSYNC = fsync;
  try {
    return withFile((dir, file) => appendMessages(Native.open(file, dir)));
  } finally {
    if (before === undefined) delete process.env.PI_SESSION_NATIVE_FSYNC;
    else process.env.PI_SESSION_NATIVE_FSYNC = before;
  }
}

const workloads = {
  stringify: () => entries(() => {}),
  "+ writeSync": () =>
    withFile((_, file) => {
      const fd = openSync(file, "a");
      try {
        return entries((line) => writeSync(fd, `${line}\n`));
      } finally {
        closeSync(fd);
      }
    }),
  "+ appendFile": () => withFile((_, file) => entries((line) => appendFileSync(file, `${line}\n`))),
  reference: () => withFile((dir, file) => appendMessages(Ref.open(file, dir))),
  "reference mem": () => appendMessages(Ref.inMemory(os.tmpdir())),
  "native mem": () => appendMessages(Native.inMemory(os.tmpdir())),
  "native never": () => native("never"),
  native: () => native("batch"),
};

const samples = Object.fromEntries(Object.keys(workloads).map((k) => [k, []]));
// Minor page faults taken while the workload ran (new memory touched: the native rows keep
// each appended line's text in Rust, the reference keeps only the entry objects).
const faults = Object.fromEntries(Object.keys(workloads).map((k) => [k, []]));
const names = Object.keys(workloads);
for (const n of names) workloads[n](); // warm-up
for (let r = 0; r < rounds; r++) {
  for (const n of r % 2 ? [...names].reverse() : names) {
    gc();
    const f0 = process.resourceUsage().minorPageFault;
    samples[n].push(workloads[n]());
    faults[n].push(process.resourceUsage().minorPageFault - f0);
  }
}
const median = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];
const ref = median(samples.reference);
console.log(`appendMessage x 10,000 (~2 KB), ${rounds} rounds, medians; node ${process.version}`);
console.log("| workload | ms | / reference | minor page faults |\n|---|---:|---:|---:|");
for (const n of names)
  console.log(
    `| ${n} | ${median(samples[n]).toFixed(0)} | ${(median(samples[n]) / ref).toFixed(2)}x | ${median(faults[n])} |`,
  );
