#!/usr/bin/env node
// appendMessage x 10,000 (~2 KB) on both implementations, alternating in one process for many
// rounds (medians and min ratio): steadier than a few runs when the difference is a few percent.
//
//   node bench/append-rounds.mjs mem    in-memory sessions (SessionManager.inMemory)
//   node bench/append-rounds.mjs file   persisted: a fresh copy of the 1 MB session per round
//   node bench/append-rounds.mjs mem ctx   ... then buildSessionContext() (counts the hand-over
//                                          of the queued in-memory appends to Rust)
//   ROUNDS=60 (default 24; the first 4 are warm-up). PI_SESSION_NATIVE_FSYNC applies as usual.

import { copyFileSync, mkdtempSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import os from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { DEFAULT_DATA_DIR, generate, makeMessages, singlePath } from "./gen.mjs";

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const REF = join(ROOT, "node_modules/@earendil-works/pi-coding-agent/dist/core/session-manager.js");
const mode = process.argv[2] === "file" ? "file" : "mem";
const withContext = process.argv[3] === "ctx";
const rounds = Number(process.env.ROUNDS) || 24;

generate({ quick: true, log: () => {} });
const SOURCE = singlePath(DEFAULT_DATA_DIR, "1mb");
const Native = createRequire(import.meta.url)(join(ROOT, "index.js")).SessionManager;
const Ref = (await import(pathToFileURL(REF).href)).SessionManager;
const msgs = makeMessages(10_000);

function once(SM) {
  let dir;
  let sm;
  if (mode === "mem") sm = SM.inMemory(os.tmpdir());
  else {
    dir = mkdtempSync(join(os.tmpdir(), "pi-append-rounds-"));
    const file = join(dir, "2025-06-01T09-00-00-000Z_01972ab8-2280-7fea-80db-57e26aa706a1.jsonl");
    copyFileSync(SOURCE, file);
    sm = SM.open(file, dir);
  }
  try {
    sm.getLeafId();
    const t = performance.now();
    for (const m of msgs) sm.appendMessage(m);
    if (withContext) sm.buildSessionContext();
    return performance.now() - t;
  } finally {
    if (dir) rmSync(dir, { recursive: true, force: true });
  }
}

const ms = { native: [], reference: [] };
for (let r = 0; r < rounds; r++) {
  const order =
    r % 2
      ? [
          ["native", Native],
          ["reference", Ref],
        ]
      : [
          ["reference", Ref],
          ["native", Native],
        ];
  for (const [name, SM] of order) {
    const t = once(SM);
    if (r >= 4) ms[name].push(t);
  }
}
const median = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];
const n = median(ms.native);
const ref = median(ms.reference);
console.log(
  `appendMessage x 10,000 (${mode})${withContext ? " + buildSessionContext" : ""}, ${rounds - 4} rounds after 4 warm-up, node ${process.version}: ` +
    `native ${n.toFixed(1)} ms, reference ${ref.toFixed(1)} ms, ratio ${(n / ref).toFixed(3)}x ` +
    `(min ratio ${(Math.min(...ms.native) / Math.min(...ms.reference)).toFixed(3)}x)`,
);
