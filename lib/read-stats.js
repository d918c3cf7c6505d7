"use strict";
// What callers made this process read of its sessions, for the test that checks what pi reads
// (__test__/pi-bin/reads.test.mjs) and for anyone profiling a caller: entries handed out
// (objects made), entries filled (a heavy value read), entries parsed whole (the context, a
// lookup). Counting costs an addition per batch or fill. With PI_SESSION_NATIVE_READ_STATS=<file>
// the counts are written there as JSON when the process exits.

const stats = { handedOut: 0, filled: 0, parsedWhole: 0 };

const file = process.env.PI_SESSION_NATIVE_READ_STATS;
if (file) {
  process.on("exit", () => {
    try {
      require("node:fs").writeFileSync(file, `${JSON.stringify(stats)}\n`);
    } catch {
      // a statistics file that cannot be written changes nothing for the caller
    }
  });
}

module.exports = { stats };
