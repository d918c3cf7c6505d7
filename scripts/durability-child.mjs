// Child process for the durability tests (__test__/durability.test.mjs).
// Reports on fd 1 (a pipe: synchronous writes on Linux), one line per event:
//   READY                      started, about to write
//   A <file> <id>              append of <id> to <file> returned (acknowledged)
// Modes:
//   kill <dir> <seed>          endless loop of appends, first flushes, branched rewrites,
//                              empty-file header rewrites; the parent kills it with SIGKILL
//   concurrent <file> <tag> <n>  append n custom entries to an existing session file
//   hold <file>                open, append one entry (taking the lock if enabled), wait
//   try <file>                 open, append one entry, report OK or ERR <error>
import { writeSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);
const { SessionManager } = require("../index.js");

const say = (s) => writeSync(1, `${s}\n`);
const [mode, ...args] = process.argv.slice(2);

function rng(seed) {
  let x = BigInt(seed) | 1n;
  return (n) => {
    x ^= x >> 12n;
    x ^= (x << 25n) & 0xffffffffffffffffn;
    x ^= x >> 27n;
    return Number(((x * 0x2545f4914f6cdd1dn) & 0xffffffffffffffffn) % BigInt(n));
  };
}

if (mode === "kill") {
  const [dir, seed] = args;
  const r = rng(seed);
  const cwd = "/tmp/psn-kill-cwd";
  say("READY");
  let round = 0;
  for (;;) {
    round++;
    let sm;
    const pick = r(10);
    if (pick < 3) {
      // Resume the most recent file (after a kill: the torn-tail path).
      sm = SessionManager.continueRecent(cwd, dir);
    } else if (pick < 4) {
      // Empty file: opening writes a header (rewrite).
      const f = join(dir, `empty-${process.pid}-${round}.jsonl`);
      writeFileSync(f, "");
      sm = SessionManager.open(f, dir, cwd);
    } else {
      sm = SessionManager.create(cwd, dir);
    }
    sm.appendModelChange("prov", "model");
    const n = 5 + r(40);
    const ids = [];
    for (let i = 0; i < n; i++) {
      const big = "x".repeat(r(4) === 0 ? r(40_000) : r(300));
      // Assistant turns without model/usage fields: only the bytes on disk matter here.
      const message = /** @type {import("../index.js").Message} */ ({
        role: i % 2 ? "assistant" : "user",
        content: `${i} ${big}`,
        timestamp: Date.now(),
      });
      const id = sm.appendMessage(message);
      ids.push(id);
      say(`A ${sm.getSessionFile()} ${id}`);
    }
    if (r(3) === 0 && ids.length > 2) {
      // Branched session: a whole-file write of the path to a new file.
      sm.createBranchedSession(ids[r(ids.length)]);
      const file = sm.getSessionFile();
      for (const e of sm.getBranch()) say(`A ${file} ${e.id}`);
      const id = sm.appendCustomEntry("after-branch", { round });
      say(`A ${file} ${id}`);
    }
  }
} else if (mode === "concurrent") {
  const [file, tag, n] = args;
  const sm = SessionManager.open(file);
  say("READY");
  for (let i = 0; i < Number(n); i++) sm.appendCustomEntry("c", { tag, i });
  say("DONE");
} else if (mode === "hold") {
  const [file] = args;
  const sm = SessionManager.open(file);
  sm.appendCustomEntry("hold", { pid: process.pid });
  // The lock lives as long as the session object: keep it reachable.
  globalThis.heldSession = sm;
  say("READY");
  setInterval(() => {}, 1000);
} else if (mode === "try") {
  const [file] = args;
  const sm = SessionManager.open(file);
  const n = sm.getEntries().length;
  say("READY");
  try {
    sm.appendCustomEntry("try", { pid: process.pid });
    say("OK");
  } catch (e) {
    say(`ERR ${String(e)} ${sm.getEntries().length === n ? "memory-unchanged" : "memory-changed"}`);
  }
} else {
  console.error(`unknown mode ${mode}`);
  process.exit(2);
}
