// The workloads of the crash-state test, run under strace by record.mjs (one process each).
//
//   node workload.mjs setup <workload> <root>              the durable initial state (not traced)
//   node workload.mjs run <impl> <workload> <root> <marks>  the traced run (impl: ours | ref)
//
// A run tells the checker what it was told on <marks>, one line per event, written right after
// the call returned (so a crash after the line's write may not lose what it names):
//   append <file> <id>        an append of entry <id> to <file> returned
//   whole <file> <id,...>     a whole-file write of <file> returned; the file holds these entries
//   begin <file|->            a whole-file write starts (its file, or "-" when not known yet)
//   end <file>                the whole-file write that began last has returned
//   synced <file>             a file switch away from <file> returned (createBranchedSession,
//                             newSession, setSessionFile; forkFrom of <file>): its appends so
//                             far are promised to be on the device
// The fsync mode is PI_SESSION_NATIVE_FSYNC, set by the caller.
import { mkdirSync, openSync, writeFileSync, writeSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const repo = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
const require = createRequire(import.meta.url);
const CWD = "/home/user/project";

export const WORKLOADS = ["appends", "migrate", "branch", "fork", "switch", "torn", "index"];

const line = (o) => JSON.stringify(o);
const header = (id, extra = {}) => ({
  type: "session",
  version: 3,
  id,
  timestamp: "2026-01-01T00:00:00.000Z",
  cwd: CWD,
  ...extra,
});
const msg = (id, parentId, role, text) => ({
  type: "message",
  id,
  parentId,
  timestamp: "2026-01-01T00:00:01.000Z",
  message: { role, content: text, timestamp: 1 },
});

/** A v3 session of `n` messages: its lines. */
function v3(sessionId, n, tag) {
  const out = [line(header(sessionId))];
  let parent = null;
  for (let i = 0; i < n; i++) {
    const id = `${tag}${String(i).padStart(6, "0")}`.slice(0, 8);
    out.push(line(msg(id, parent, i % 2 ? "assistant" : "user", `${tag} message ${i} needle${i}`)));
    parent = id;
  }
  return out;
}

function setup(workload, root) {
  const dir = (d) => {
    mkdirSync(join(root, d), { recursive: true });
    return join(root, d);
  };
  mkdirSync(root, { recursive: true });
  if (workload === "migrate") {
    // v1: no version, no ids (ids are given at migration).
    const lines = [
      line({ type: "session", id: "v1-session", timestamp: "2026-01-01T00:00:00.000Z", cwd: CWD }),
      line({ type: "message", timestamp: "2026-01-01T00:00:01.000Z", message: { role: "user", content: "v1 q" } }),
      line({ type: "message", timestamp: "2026-01-01T00:00:02.000Z", message: { role: "assistant", content: "v1 a" } }),
      line({ type: "message", timestamp: "2026-01-01T00:00:03.000Z", message: { role: "user", content: "v1 q2" } }),
    ];
    writeFileSync(join(dir("sessions/p"), "v1.jsonl"), `${lines.join("\n")}\n`);
  } else if (workload === "branch") {
    writeFileSync(join(dir("sessions/p"), "main.jsonl"), `${v3("branch-s", 6, "b").join("\n")}\n`);
  } else if (workload === "switch") {
    dir("sessions/s");
  } else if (workload === "fork") {
    writeFileSync(join(dir("sessions/a"), "src.jsonl"), `${v3("fork-src", 4, "f").join("\n")}\n`);
  } else if (workload === "torn") {
    const lines = v3("torn-s", 4, "t");
    // The last line cut in the middle, as a crash of a writer without our guarantees leaves it.
    writeFileSync(join(dir("sessions/t"), "torn.jsonl"), `${lines.join("\n")}\n{"type":"message","id":"tcut`);
  } else if (workload === "index") {
    const d = dir("sessions/i");
    for (let s = 0; s < 3; s++)
      writeFileSync(join(d, `s${s}.jsonl`), `${v3(`index-${s}`, 3 + s, `i${s}`).join("\n")}\n`);
  }
}

async function run(impl, workload, root, marksPath) {
  const SM =
    impl === "ours"
      ? require(join(repo, "index.js")).SessionManager
      : (await import(join(repo, "node_modules/@earendil-works/pi-coding-agent/dist/core/session-manager.js")))
          .SessionManager;
  const marks = openSync(marksPath, "a");
  const mark = (...words) => writeSync(marks, `${words.join(" ")}\n`);
  const ids = (sm) => sm.getEntries().map((e) => e.id);
  const user = (text) => ({ role: "user", content: text, timestamp: 1 });
  const assistant = (text) => ({ role: "assistant", content: [{ type: "text", text }], timestamp: 1 });
  const append = (sm, what) => {
    const id = what === "custom" ? sm.appendCustomEntry("crash", { n: 1 }) : sm.appendMessage(what);
    mark("append", sm.getSessionFile(), id);
    return id;
  };
  const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
  if (workload === "appends") {
    // A new project: the sessions folder and its parent do not exist yet.
    const sm = SM.create(CWD, join(root, "sessions", "--home-user-project--"));
    sm.appendModelChange("prov", "model");
    mark("begin", "-");
    const first = sm.appendMessage(user("first question"));
    mark("end", sm.getSessionFile());
    mark("whole", sm.getSessionFile(), ids(sm).join(","));
    void first;
    for (let round = 0; round < 4; round++) {
      append(sm, assistant(`answer ${round} ${"x".repeat(round === 1 ? 9000 : 200)}`));
      append(sm, "custom");
      append(sm, user(`question ${round}`));
      // Some rounds are synced by the flusher before the next; the last ones are not.
      await sleep(round % 2 ? 150 : 20);
    }
    // The last turn, acknowledged just before the process exits (pi -p).
    append(sm, assistant("last answer"));
    append(sm, "custom");
    process.exit(0);
  }
  if (workload === "migrate") {
    const file = join(root, "sessions/p/v1.jsonl");
    mark("begin", file);
    const sm = SM.open(file);
    mark("end", file);
    mark("whole", file, ids(sm).join(","));
    append(sm, user("after migration"));
    append(sm, "custom");
    process.exit(0);
  }
  if (workload === "branch") {
    const sm = SM.open(join(root, "sessions/p/main.jsonl"));
    append(sm, user("before branch"));
    append(sm, "custom");
    const at = sm.getEntries()[3].id;
    const old = sm.getSessionFile();
    mark("begin", "-");
    sm.createBranchedSession(at);
    mark("end", sm.getSessionFile());
    mark("synced", old);
    mark("whole", sm.getSessionFile(), ids(sm).join(","));
    append(sm, user("on the branch"));
    await sleep(150);
    append(sm, assistant("branch answer"));
    process.exit(0);
  }
  if (workload === "fork") {
    const src = join(root, "sessions/a/src.jsonl");
    const sm = SM.open(src);
    append(sm, user("before fork"));
    append(sm, "custom");
    mark("begin", "-");
    // Into a folder that does not exist yet (two levels).
    const forked = SM.forkFrom(src, "/home/user/other", join(root, "sessions", "b", "c"));
    mark("end", forked.getSessionFile());
    mark("synced", src);
    mark("whole", forked.getSessionFile(), ids(forked).join(","));
    append(forked, user("in the fork"));
    append(sm, "custom");
    process.exit(0);
  }
  if (workload === "switch") {
    // newSession and setSessionFile: each switch syncs the file it leaves.
    const sm = SM.create(CWD, join(root, "sessions/s"));
    mark("begin", "-");
    sm.appendMessage(user("first file"));
    mark("end", sm.getSessionFile());
    mark("whole", sm.getSessionFile(), ids(sm).join(","));
    const first = sm.getSessionFile();
    append(sm, "custom");
    append(sm, assistant("first answer"));
    sm.newSession();
    mark("synced", first);
    mark("begin", "-");
    sm.appendMessage(user("second file"));
    mark("end", sm.getSessionFile());
    mark("whole", sm.getSessionFile(), ids(sm).join(","));
    const second = sm.getSessionFile();
    append(sm, "custom");
    sm.setSessionFile(first);
    mark("synced", second);
    append(sm, user("back to the first"));
    append(sm, "custom");
    process.exit(0);
  }
  if (workload === "torn") {
    const sm = SM.open(join(root, "sessions/t/torn.jsonl"));
    append(sm, user("after the torn line"));
    append(sm, "custom");
    await sleep(150);
    append(sm, assistant("later"));
    // No process.exit: the event loop ends.
    return;
  }
  if (workload === "index") {
    const dir = join(root, "sessions/i");
    const search = impl === "ours" ? require(join(repo, "index.js")).searchSessions : undefined;
    await SM.list(CWD, dir);
    if (search) await search("needle1", { sessionDir: dir });
    const sm = SM.open(join(dir, "s1.jsonl"));
    append(sm, user("indexed needle1 again"));
    await SM.list(CWD, dir);
    if (search) await search("needle1", { sessionDir: dir });
    append(sm, "custom");
    await sleep(150);
    append(sm, user("needle2 late"));
    await SM.list(CWD, dir);
    if (search) await search("needle2", { sessionDir: dir });
    process.exit(0);
  }
  throw new Error(`unknown workload ${workload}`);
}

if (process.argv[1] === import.meta.filename) {
  const [cmd, ...args] = process.argv.slice(2);
  if (cmd === "setup") setup(args[0], args[1]);
  else if (cmd === "run") await run(args[0], args[1], args[2], args[3]);
  else {
    console.error("usage: workload.mjs setup <workload> <root> | run <impl> <workload> <root> <marks>");
    process.exit(2);
  }
}
