// Child of __test__/power-loss.test.mjs, run under strace: appends in batch mode, then one way
// of ending, or one file switch. Prints nothing; the test reads the trace.
//
//   node sync-child.mjs exit <dir> <how>      how: exit | natural | throw | sigterm
//   node sync-child.mjs switch <dir> <which>  which: branch | new | setfile | fork
//   node sync-child.mjs mkdir <dir>           SessionManager.create into <dir>/a/b/c (missing)
import { createRequire } from "node:module";
import { join } from "node:path";

const require = createRequire(import.meta.url);
const { SessionManager } = require("../../index.js");
const [cmd, dir, how] = process.argv.slice(2);
/** @param {string} content */
const user = (content) => /** @type {import("../../index.js").Message} */ ({ role: "user", content, timestamp: 1 });
const cwd = "/home/user/project";

/** A session with a few appends not synced yet (the flusher waits 100 ms). */
function pending(name) {
  const sm = SessionManager.create(cwd, join(dir, name));
  sm.appendMessage(user("first"));
  for (let i = 0; i < 3; i++) sm.appendCustomEntry("pending", { i });
  return sm;
}

if (cmd === "exit") {
  // Two files with pending appends, one whose appends the flusher synced long ago.
  const quiet = pending("quiet");
  await new Promise((r) => setTimeout(r, 400));
  const a = pending("a");
  const b = pending("b");
  globalThis.keep = [quiet, a, b];
  if (how === "exit") process.exit(0);
  if (how === "throw") throw new Error("uncaught, on purpose");
  if (how === "sigterm") {
    // As pi does: its handler disposes, then process.exit(143).
    process.on("SIGTERM", () => process.exit(143));
    process.kill(process.pid, "SIGTERM");
    setTimeout(() => {}, 5000);
  }
  // natural: the event loop ends
} else if (cmd === "switch") {
  const sm = pending("s");
  if (how === "branch") sm.createBranchedSession(sm.getEntries()[1].id);
  else if (how === "new") sm.newSession();
  else if (how === "setfile") sm.setSessionFile(join(dir, "other.jsonl"));
  else if (how === "fork") SessionManager.forkFrom(sm.getSessionFile(), cwd, join(dir, "forked"));
  // The new file's first write (branch and fork wrote it already).
  if (how === "new" || how === "setfile") sm.appendMessage(user("after the switch"));
  // Exit at once (the exit sync would cover the old file too): the trace shows which came first.
  process.exit(0);
} else if (cmd === "mkdir") {
  const sm = SessionManager.create(cwd, join(dir, "a", "b", "c"));
  sm.appendMessage(user("first"));
  process.exit(0);
}
