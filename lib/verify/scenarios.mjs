// The corpus's scenarios (lib/verify/corpus.mjs): fixed states where the answer of a listing, a lookup
// or an open depends on the branch pi's session code takes, run on both sides and compared. The
// seeded sequences reach every method with random states; these reach what random states rarely
// make: several sessions whose mtimes and cwds decide which one `continueRecent`, `findById` and
// `list` return, cwds with `:` and Windows drive forms, files without a final newline followed by
// appends, odd headers, compactions that point at labels, long and odd ids.
//
// Only what pi's bundle chunk exports is used (SessionManager and the context functions): the
// chunk is what `pi` runs, so the free functions it does not export (findMostRecentSession,
// loadEntriesFromFile, getDefaultSessionDir, assertValidSessionId, projectContextEntry) are reached
// through the methods that call them.
//
// Values are compared after mapping on each side: its temp folder -> <root>, fresh ids (8 hex
// digits, uuids) -> <id:n> by first appearance, and timestamps by what they must be: one written
// in a fixture stays as it is (so a copy must carry the source's own), one made during the call
// becomes <now> (<now-ms> in milliseconds) only when it lies between the scenario's start and its
// end (so a time taken from elsewhere shows), and a file name's time must be its header's
// (`fileTimeIsHeaderTime`).
import fs from "node:fs";
import path from "node:path";

// fixture ids are not hex, so that only the ids the code makes are mapped
const TS = ["2024-03-01T10:00:00.000Z", "2024-03-01T10:05:00.000Z", "2024-03-01T10:10:00.000Z"];
const L = (o) => JSON.stringify(o);
const header = (id, cwd, extra = {}) => ({ type: "session", version: 3, id, timestamp: TS[0], cwd, ...extra });
const msg = (id, parentId, role, content, ts = 1709287200000 + id.length) => ({
  type: "message",
  id,
  parentId,
  timestamp: TS[1],
  message:
    role === "assistant"
      ? { role, content: [{ type: "text", text: content }], provider: "p", model: "m", timestamp: ts }
      : { role, content, timestamp: ts },
});
const label = (id, parentId, targetId, text, ts = TS[2]) => ({
  type: "label",
  id,
  parentId,
  timestamp: ts,
  targetId,
  label: text,
});
const lines = (...entries) => `${entries.map((e) => (typeof e === "string" ? e : L(e))).join("\n")}\n`;

const ISO_G = /\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z/g;
const FILE_TS_G = /\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}-\d{3}Z/g;
const ID_G = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|(?<![0-9a-zA-Z])[0-9a-f]{8}(?![0-9a-zA-Z])/g;
const fileTsToIso = (f) => f.replace(/T(\d{2})-(\d{2})-(\d{2})-(\d{3})Z/, "T$1:$2:$3.$4Z");

/** The mapping of one side's values (see the top of the file). */
function mapper(root, since) {
  const ids = new Map();
  const fresh = (iso) => {
    const t = Date.parse(iso);
    return t >= since && t <= Date.now() ? "<now>" : iso;
  };
  const str = (s) =>
    s
      .split(root)
      .join("<root>")
      .replace(ISO_G, fresh)
      .replace(FILE_TS_G, (f) => (fresh(fileTsToIso(f)) === "<now>" ? "<now-file>" : f))
      .replace(ID_G, (id) => {
        if (!ids.has(id)) ids.set(id, `<id:${ids.size}>`);
        return ids.get(id);
      });
  return (value) =>
    JSON.parse(
      JSON.stringify(value === undefined ? "<undefined>" : value, (_k, v) =>
        typeof v === "string"
          ? str(v)
          : v === undefined
            ? "<undefined>"
            : // a time made during the call, in milliseconds (a summary message's)
              typeof v === "number" && v >= since && v <= Date.now()
              ? "<now-ms>"
              : v,
      ),
    );
}

/** `{ error }` for a throw, the value otherwise. */
function attempt(f) {
  try {
    return f();
  } catch (error) {
    return { error: `${error?.name}: ${error?.message}` };
  }
}
async function attemptAsync(f) {
  try {
    return await f();
  } catch (error) {
    return { error: `${error?.name}: ${error?.message}` };
  }
}

/** Whether a session file's name carries its header's time (`<time with - for : and .>_<id>.jsonl`). */
function fileTimeIsHeaderTime(sm) {
  const file = sm.getSessionFile();
  const h = sm.getHeader();
  if (!file || !h) return "no file or header";
  return path.basename(file) === `${String(h.timestamp).replace(/[:.]/g, "-")}_${h.id}.jsonl`;
}

/** What a manager shows: header, entries, leaf, context, labels, cwd, folders, and its file. */
function state(sm) {
  const file = sm.getSessionFile();
  return {
    header: sm.getHeader(),
    entries: sm.getEntries(),
    leaf: sm.getLeafId(),
    context: attempt(() => sm.buildSessionContext()),
    labels: sm.getEntries().map((e) => sm.getLabel(e.id) ?? null),
    tree: attempt(() => sm.getTree()),
    name: sm.getSessionName() ?? null,
    cwd: sm.getCwd(),
    dir: sm.getSessionDir(),
    file: file ?? null,
    persisted: sm.isPersisted(),
    text:
      file && fs.existsSync(file) ? (fs.statSync(file).isFile() ? fs.readFileSync(file, "utf8") : "<folder>") : null,
  };
}

const infos = (list) =>
  list.map((i) => ({
    ...i,
    created: i.created instanceof Date ? i.created.getTime() : i.created,
    modified: i.modified instanceof Date ? i.modified.getTime() : i.modified,
  }));

/** Writes `text` at `file` (folders made) with mtime `minute` minutes after a fixed time. */
function put(file, text, minute) {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, text);
  const when = new Date(Date.parse("2025-06-01T00:00:00.000Z") + minute * 60_000);
  fs.utimesSync(file, when, when);
}

// cwds whose session folders and comparisons depend on the branch taken
const CWD_A = "/verify/proj-a";
const CWD_B = "/verify/proj-b";
const CWD_COLON = "/verify/work-a:b";
const CWD_DRIVE = "C:\\Users\\me\\proj";
const CWD_SHELL = "/c/Users/me/proj";

/**
 * A store of several sessions, laid out the same on both sides: `dir` a custom folder of sessions
 * of several cwds with distinct mtimes (the newest of CWD_A is not the newest file), and the agent
 * folder's default folders for CWD_A and CWD_COLON.
 */
function makeStore(root, { big = true } = {}) {
  const dir = path.join(root, "store");
  const s = (n, cwd, minute, ...entries) =>
    put(
      path.join(dir, `2024-03-01T10-00-0${n}-000Z_sess-${n}.jsonl`),
      lines(header(`sess-${n}`, cwd), ...entries),
      minute,
    );
  s(1, CWD_A, 5, msg("m-1", null, "user", "oldest of a"));
  s(2, CWD_A, 30, msg("m-1", null, "assistant", "assistant first"), msg("m-2", "m-1", "user", "then the user"));
  s(3, CWD_B, 50, msg("m-1", null, "user", "newest file, other cwd"));
  s(4, CWD_A, 20, msg("m-1", null, "user", "middle"), {
    type: "session_info",
    id: "m-2",
    parentId: "m-1",
    timestamp: TS[1],
    name: " named ",
  });
  s(
    5,
    CWD_COLON,
    10,
    msg("m-1", null, "user", [
      { type: "text", text: "colon" },
      { type: "image", data: "x", mimeType: "image/png" },
    ]),
  );
  s(6, CWD_DRIVE, 15, msg("m-1", null, "toolResult", "tool only"));
  s(
    7,
    `${CWD_A}/`,
    25,
    { type: "session_info", id: "m-1", parentId: null, timestamp: TS[1], name: "n" },
    { type: "session_info", id: "m-2", parentId: "m-1", timestamp: TS[1], name: "   " },
  );
  // the same id as sess-1, another cwd: findById with and without the cwd filter
  put(
    path.join(dir, "2024-03-01T10-00-08-000Z_dup.jsonl"),
    lines(header("sess-1", CWD_B), msg("m-1", null, "user", "dup")),
    40,
  );
  put(path.join(dir, "2024-03-01T10-00-09-000Z_bad.jsonl"), lines(msg("m-1", null, "user", "no header")), 60);
  put(
    path.join(dir, "2024-03-01T10-00-10-000Z_noid.jsonl"),
    lines({ type: "session", version: 3, timestamp: TS[0], cwd: CWD_A }),
    70,
  );
  put(
    path.join(dir, "2024-03-01T10-00-11-000Z_badtime.jsonl"),
    lines({ ...header("sess-11", CWD_A), timestamp: "not a time" }, msg("m-1", null, "user", "x", "later")),
    3,
  );
  put(path.join(dir, "notes.txt"), "not a session\n", 80);
  // the newest files: a header without a cwd, one with an empty cwd, a session not named .jsonl, a
  // folder named .jsonl, a header over the 1 MiB discovery scan
  put(
    path.join(dir, "2024-03-01T10-00-12-000Z_nocwd.jsonl"),
    lines({ type: "session", version: 3, id: "sess-12", timestamp: 1709287200000 }),
    90,
  );
  put(path.join(dir, "2024-03-01T10-00-13-000Z_emptycwd.jsonl"), lines(header("sess-13", "")), 85);
  put(path.join(dir, "zz-newest.jsonl.bak"), lines(header("bak", CWD_A), msg("m-1", null, "user", "bak")), 100);
  if (big)
    put(
      path.join(dir, "2024-03-01T10-00-14-000Z_huge.jsonl"),
      lines(header("sess-14", CWD_A, { pad: "h".repeat(1024 * 1024) })),
      95,
    );
  // headers past the discovery scan's limit (not found) and ending exactly at it (found)
  const atLimit = L(header("sess-16", CWD_A, { pad: "" }));
  if (big)
    put(
      path.join(dir, "2024-03-01T10-00-16-000Z_limit.jsonl"),
      `${L(header("sess-16", CWD_A, { pad: "l".repeat(1024 * 1024 - 1 - atLimit.length) }))}\n`,
      2,
    );
  // a header without a newline, then a stray first byte of a two-byte character
  put(
    path.join(dir, "2024-03-01T10-00-17-000Z_stray.jsonl"),
    Buffer.concat([Buffer.from(L(header("sess-17", CWD_A))), Buffer.from([0xc3])]),
    3,
  );
  // one id, three sessions without a cwd and one with CWD_A
  for (const k of ["a", "b", "c", "d"])
    put(
      path.join(dir, `2024-03-01T10-00-22-000Z_dup-${k}.jsonl`),
      lines(k === "c" ? header("sess-22", CWD_A) : { type: "session", version: 3, id: "sess-22", timestamp: TS[0] }),
      1,
    );
  // a malformed first line, then the header (the scan starts the next line afresh)
  put(path.join(dir, "2024-03-01T10-00-18-000Z_late.jsonl"), `{bad\n${lines(header("sess-18", CWD_A))}`, 6);
  if (big) {
    // a header that ends the file exactly at the scan limit, without a newline: found; and one a
    // byte short of it followed by a stray first byte of a two-byte character: not a header
    const bare = L(header("sess-19", CWD_A, { pad: "" }));
    put(
      path.join(dir, "2024-03-01T10-00-19-000Z_exact.jsonl"),
      L(header("sess-19", CWD_A, { pad: "e".repeat(1024 * 1024 - bare.length) })),
      7,
    );
    const stray = L(header("sess-20", CWD_A, { pad: "" }));
    put(
      path.join(dir, "2024-03-01T10-00-20-000Z_exact-stray.jsonl"),
      Buffer.concat([
        Buffer.from(L(header("sess-20", CWD_A, { pad: "s".repeat(1024 * 1024 - 1 - stray.length) }))),
        Buffer.from([0xc3]),
      ]),
      8,
    );
  }
  // several text blocks (joined for firstMessage), a message time of 0 (not an activity time)
  put(
    path.join(dir, "2024-03-01T10-00-21-000Z_blocks.jsonl"),
    lines(
      header("sess-21", CWD_B),
      msg(
        "m-1",
        null,
        "user",
        [
          { type: "text", text: "one" },
          { type: "text", text: "two" },
        ],
        0,
      ),
    ),
    9,
  );
  // a message time of 1 ms: an activity time (above 0)
  put(
    path.join(dir, "2024-03-01T10-00-23-000Z_one-ms.jsonl"),
    lines(header("sess-23", CWD_B), msg("m-1", null, "user", "at 1 ms", 1)),
    10,
  );
  fs.mkdirSync(path.join(dir, "folder.jsonl"));
  fs.utimesSync(
    path.join(dir, "folder.jsonl"),
    new Date(Date.parse("2025-06-01T02:00:00.000Z")),
    new Date(Date.parse("2025-06-01T02:00:00.000Z")),
  );
  // messages whose text or time the listing skips
  put(
    path.join(dir, "2024-03-01T10-00-15-000Z_quiet.jsonl"),
    lines(
      header("sess-15", CWD_A),
      { ...msg("m-1", null, "user", ""), timestamp: "bad time", message: { role: "user", content: "" } },
      msg("m-2", "m-1", "assistant", ""),
      msg("m-3", "m-2", "user", [{ type: "image", data: "x", mimeType: "image/png" }]),
      {
        type: "message",
        id: "m-4",
        parentId: "m-3",
        timestamp: TS[1],
        message: { role: "custom", content: "not listed" },
      },
      { type: "message", id: "m-5", parentId: "m-4", timestamp: TS[1], message: { content: "no role" } },
    ),
    4,
  );
  return dir;
}

/** The default session folder of `cwd` under the side's agent folder (as both name it). */
const defaultDir = (mod, cwd) => mod.SessionManager.create(cwd).getSessionDir();

/** @type {[string, (mod: any, side: { root: string }) => any][]} */
export const SCENARIOS = [
  [
    "default session folders of cwds with ':' and drive forms (SessionManager.create without a folder)",
    (mod) =>
      [CWD_A, CWD_COLON, CWD_DRIVE, CWD_SHELL, "rel/dir", "~/proj", `${CWD_A}/`].map((cwd) => {
        const sm = mod.SessionManager.create(cwd);
        return {
          cwd: sm.getCwd(),
          dir: sm.getSessionDir(),
          uses: sm.usesDefaultSessionDir(),
          exists: fs.existsSync(sm.getSessionDir()),
          file: fileTimeIsHeaderTime(sm),
          inDir: path.dirname(sm.getSessionFile() ?? "") === sm.getSessionDir(),
        };
      }),
  ],
  [
    "default session folders made (or not) by the lookups without a folder",
    async (mod, side) => {
      // a fresh agent folder: which calls make the cwd's default folder
      const out = [];
      const made = (cwd) =>
        fs.existsSync(
          path.join(side.root, "agent", "sessions", `--${cwd.replace(/^[/\\]/, "").replace(/[/\\:]/g, "-")}--`),
        );
      /** @type {[string, () => any][]} */
      const calls = [
        [CWD_A, () => mod.SessionManager.list(CWD_A)],
        [CWD_B, () => mod.SessionManager.findById(CWD_B, "nope") ?? null],
        [CWD_COLON, () => mod.SessionManager.listAll()],
        ["/verify/recent", () => mod.SessionManager.continueRecent("/verify/recent").getEntryCount()],
        ["/verify/open", () => mod.SessionManager.open(path.join(side.root, "x", "missing.jsonl")).getSessionDir()],
      ];
      for (const [cwd, call] of calls)
        out.push([cwd, made(cwd), await attemptAsync(async () => await call()), made(cwd)]);
      return out;
    },
  ],
  [
    "SessionManager.continueRecent over several sessions (mtimes, cwds)",
    (mod, side) => {
      const dir = makeStore(side.root);
      const out = {};
      for (const cwd of [CWD_A, CWD_B, CWD_COLON, CWD_DRIVE, "/verify/none", process.cwd()]) {
        const sm = mod.SessionManager.continueRecent(cwd, dir);
        out[cwd] = {
          file: sm.getSessionFile(),
          id: sm.getSessionId(),
          entries: sm.getEntryCount(),
          cwd: sm.getCwd(),
          persisted: sm.isPersisted(),
        };
      }
      // the default folder (no cwd filter): the newest file whatever its cwd
      const def = defaultDir(mod, CWD_A);
      put(path.join(def, "a.jsonl"), lines(header("def-old", CWD_A), msg("m-1", null, "user", "old")), 1);
      put(path.join(def, "b.jsonl"), lines(header("def-new", CWD_B), msg("m-1", null, "user", "new")), 2);
      out.defaultNoDir = mod.SessionManager.continueRecent(CWD_A).getSessionId();
      out.defaultGiven = mod.SessionManager.continueRecent(CWD_A, def).getSessionId();
      out.empty = state(mod.SessionManager.continueRecent(CWD_B, path.join(side.root, "empty-dir")));
      return out;
    },
  ],
  [
    "SessionManager.findById (cwd filter, duplicates, missing folder)",
    (mod, side) => {
      const dir = makeStore(side.root);
      const def = defaultDir(mod, CWD_B);
      put(path.join(def, "x.jsonl"), lines(header("in-default", CWD_A)), 1);
      // a file that starts with a message carrying an id: not a session, whatever the id
      put(path.join(def, "y.jsonl"), lines(msg("m-x", null, "user", "no header")), 2);
      return [
        ["sess-1", CWD_A, dir],
        ["sess-1", CWD_B, dir],
        ["sess-1", "/verify/none", dir],
        ["sess-5", CWD_COLON, dir],
        ["sess-6", CWD_DRIVE, dir],
        ["sess-7", CWD_A, dir],
        ["sess-9", CWD_A, dir],
        ["sess-14", CWD_A, dir],
        ["sess-16", CWD_A, dir],
        ["sess-17", CWD_A, dir],
        ["sess-18", CWD_A, dir],
        ["sess-19", CWD_A, dir],
        ["sess-20", CWD_A, dir],
        // a header whose cwd is empty: no cwd, even for the cwd an empty path resolves to
        ["sess-13", process.cwd(), dir],
        ["m-1", CWD_A, dir],
        ["bak", CWD_A, dir],
        ["sess-22", CWD_A, dir],
        ["", CWD_A, dir],
        ["in-default", CWD_B, undefined],
        ["m-x", CWD_B, undefined],
        ["in-default", CWD_B, def],
        ["sess-1", CWD_A, path.join(side.root, "missing")],
      ].map(([id, cwd, d]) => attempt(() => mod.SessionManager.findById(cwd, id, d) ?? null));
    },
  ],
  [
    "SessionManager.list / listAll over several sessions (order, cwd filter, names, first messages, progress)",
    async (mod, side) => {
      const dir = makeStore(side.root, { big: false }); // the scan limits are discovery's, not the listing's
      for (let k = 0; k < 12; k++)
        put(
          path.join(defaultDir(mod, CWD_A), `f${k}.jsonl`),
          lines(header(`many-${k}`, CWD_A), msg("m-1", null, "user", `q${k}`, 1000 + k)),
          k,
        );
      put(path.join(defaultDir(mod, CWD_COLON), "c.jsonl"), lines(header("colon", CWD_COLON)), 2);
      // in A's default folder: another cwd's session, one not named .jsonl, and sessions whose
      // modified times tie (no messages), so that the order of the files read decides theirs
      const defA = defaultDir(mod, CWD_A);
      put(
        path.join(defA, "other-cwd.jsonl"),
        lines(header("other-cwd", CWD_B), msg("m-1", null, "user", "b", 5000)),
        20,
      );
      put(path.join(defA, "kept.jsonl.bak"), lines(header("bak-in-default", CWD_A)), 21);
      for (const [name, minute] of [
        ["tie-a", 30],
        ["tie-b", 31],
        ["tie-c", 29],
        ["tie-d", 31],
      ])
        put(path.join(defA, `${name}.jsonl`), lines(header(name, CWD_A)), minute);
      // modified at the epoch: a time of 0, still above a file whose stat fails
      put(path.join(defA, "tie-epoch.jsonl"), lines(header("tie-epoch", CWD_A)), 0);
      fs.utimesSync(path.join(defA, "tie-epoch.jsonl"), 0, 0);
      // a session folder that is a link to a folder elsewhere
      const elsewhere = path.join(side.root, "elsewhere");
      put(
        path.join(elsewhere, "linked.jsonl"),
        lines(header("linked", CWD_A), msg("m-1", null, "user", "via link", 6000)),
        3,
      );
      attempt(() => fs.symlinkSync(elsewhere, path.join(side.root, "agent", "sessions", "--linked--")));
      fs.writeFileSync(path.join(side.root, "agent", "sessions", "stray-file.jsonl"), "");
      // Progress: this package throttles the calls by design; unthrottled (PROGRESS_MS=0) it makes
      // pi's calls: the counts, and whether a partial list comes (sorted newest first). Which
      // sessions a partial list holds depends on which files were read first: not compared. For
      // listAll, whether a call has a list depends on that too: only its last call is compared.
      const progress = () => {
        const calls = [];
        const on = (loaded, total, partial) => {
          const sorted = partial?.every((info, k) => k === 0 || partial[k - 1].modified >= info.modified);
          calls.push([loaded, total, partial === undefined ? "-" : sorted ? "sorted" : "unsorted", partial?.length]);
        };
        return { calls, on };
      };
      const out = {};
      const run = async (name, f) => {
        const p = progress();
        const list = await attemptAsync(() => f(p.on));
        // every call's counts; the last call's list, whole by then; the others' lists: which
        // files were read first decides their length (and for listAll whether one comes)
        const all = name.startsWith("listAll");
        const calls = p.calls.map((c, k) => (k === p.calls.length - 1 ? c : all ? c.slice(0, 2) : c.slice(0, 3)));
        out[name] = { list: Array.isArray(list) ? infos(list) : list, calls };
      };
      const throttle = process.env.PI_SESSION_NATIVE_PROGRESS_MS;
      process.env.PI_SESSION_NATIVE_PROGRESS_MS = "0";
      await run("list(a, dir)", (on) => mod.SessionManager.list(CWD_A, dir, on));
      await run("list(b, dir)", (on) => mod.SessionManager.list(CWD_B, dir, on));
      await run("list(colon, dir)", (on) => mod.SessionManager.list(CWD_COLON, dir, on));
      await run("list(drive, dir)", (on) => mod.SessionManager.list(CWD_DRIVE, dir, on));
      await run("list(a)", (on) => mod.SessionManager.list(CWD_A, undefined, on));
      await run("list(a, a's default dir)", (on) => mod.SessionManager.list(CWD_A, defA, on));
      await run("list(process cwd, dir)", (on) => mod.SessionManager.list(process.cwd(), dir, on));
      await run("list(a, dir) without progress", () => mod.SessionManager.list(CWD_A, dir));
      await run("list(a, dir, on, live signal)", (on) =>
        mod.SessionManager.list(CWD_A, dir, on, new AbortController().signal),
      );
      await run("list(a, a file)", (on) =>
        mod.SessionManager.list(CWD_A, path.join(dir, "notes.txt"), on, new AbortController().signal),
      );
      await run("list(a, missing)", (on) => mod.SessionManager.list(CWD_A, path.join(dir, "missing"), on));
      await run("listAll(dir, on, live signal)", (on) =>
        mod.SessionManager.listAll(dir, on, new AbortController().signal),
      );
      await run("list(a, default dir)", (on) => mod.SessionManager.list(CWD_B, defaultDir(mod, CWD_A), on));
      await run("listAll()", () => mod.SessionManager.listAll());
      await run("listAll(onProgress)", (on) => mod.SessionManager.listAll(on));
      await run("listAll(undefined, onProgress)", (on) => mod.SessionManager.listAll(undefined, on));
      await run("listAll(dir, onProgress)", (on) => mod.SessionManager.listAll(dir, on));
      // the sessions folder: links to nothing (a folder and a session), then a file, then nothing
      const sessions = path.join(side.root, "agent", "sessions");
      const link = (to, at) => attempt(() => fs.symlinkSync(to, at));
      link(path.join(side.root, "nowhere"), path.join(sessions, "--gone--"));
      for (const name of ["0-gone.jsonl", "gone.jsonl", "zz-gone.jsonl"])
        link(path.join(side.root, "nowhere.jsonl"), path.join(defaultDir(mod, CWD_A), name));
      await run("listAll() with links to nothing", (on) => mod.SessionManager.listAll(on));
      process.env.PI_CODING_AGENT_DIR = path.join(side.root, "agent-file");
      put(path.join(side.root, "agent-file", "sessions"), "a file", 0);
      await run("listAll() sessions folder a file", (on) =>
        mod.SessionManager.listAll(on, new AbortController().signal),
      );
      process.env.PI_CODING_AGENT_DIR = path.join(side.root, "agent-none");
      await run("listAll() no sessions folder", (on) => mod.SessionManager.listAll(on));
      await run("listAll(on, aborted) no sessions folder", (on) => mod.SessionManager.listAll(on, AbortSignal.abort()));
      process.env.PI_CODING_AGENT_DIR = path.join(side.root, "agent");
      const aborted = AbortSignal.abort();
      await run("list aborted", (on) => mod.SessionManager.list(CWD_A, dir, on, aborted));
      // where listAll takes its signal from: (onProgress, signal), (dir, onProgress, signal), else the third
      await run("listAll(on, aborted)", (on) => mod.SessionManager.listAll(on, aborted));
      await run("listAll(dir, aborted)", () => mod.SessionManager.listAll(dir, aborted));
      await run("listAll(dir, undefined, aborted)", () => mod.SessionManager.listAll(dir, undefined, aborted));
      await run("listAll(undefined, undefined, aborted)", () =>
        mod.SessionManager.listAll(undefined, undefined, aborted),
      );
      await run("listAll(on, undefined, aborted)", (on) => mod.SessionManager.listAll(on, undefined, aborted));
      await run("listAll(undefined, on, aborted)", (on) => mod.SessionManager.listAll(undefined, on, aborted));
      await run("listAll(undefined, false, aborted)", () => mod.SessionManager.listAll(undefined, false, aborted));
      await run("listAll(signal) aborted", () => mod.SessionManager.listAll(aborted));
      await run("listAll(dir, on, signal) aborted", (on) => mod.SessionManager.listAll(dir, on, aborted));
      await run("list(a, missing, on, signal) aborted", (on) =>
        mod.SessionManager.list(CWD_A, path.join(dir, "missing"), on, aborted),
      );
      if (throttle === undefined) delete process.env.PI_SESSION_NATIVE_PROGRESS_MS;
      else process.env.PI_SESSION_NATIVE_PROGRESS_MS = throttle;
      return out;
    },
  ],
  [
    "SessionManager.open of a file without its final newline, then appends",
    (mod, side) => {
      const out = [];
      const variants = {
        entry: `${L(header("nl-1", CWD_A))}\n${L(msg("m-1", null, "user", "one"))}\n${L(msg("m-2", "m-1", "assistant", "two"))}`,
        malformed: `${L(header("nl-2", CWD_A))}\n${L(msg("m-1", null, "user", "one"))}\n{"type":"mess`,
        headerOnly: L(header("nl-3", CWD_A)),
        crlf: `${L(header("nl-4", CWD_A))}\r\n${L(msg("m-1", null, "user", "one"))}`,
        blankTail: `${L(header("nl-5", CWD_A))}\n${L(msg("m-1", null, "user", "one"))}\n   `,
        // the last line followed by the first byte of a two-byte character: decoded, it spoils the line
        strayByte: Buffer.concat([
          Buffer.from(`${L(header("nl-6", CWD_A))}\n${L(msg("m-1", null, "user", "one"))}`),
          Buffer.from([0xc3]),
        ]),
      };
      for (const [name, text] of Object.entries(variants)) {
        const file = path.join(side.root, "nl", `${name}.jsonl`);
        put(file, text, 0);
        const r = attempt(() => {
          const sm = mod.SessionManager.open(file);
          const before = fs.readFileSync(file, "utf8");
          sm.appendMessage({ role: "user", content: "appended", timestamp: 5 });
          sm.appendLabelChange(sm.getEntries()[0].id, "after");
          const reopened = mod.SessionManager.open(file);
          return { before, after: state(sm), reopened: state(reopened) };
        });
        out.push([name, r]);
      }
      // setSessionFile takes the same path
      const file = path.join(side.root, "nl", "set.jsonl");
      put(file, variants.entry, 0);
      const sm = mod.SessionManager.inMemory(CWD_A);
      sm.setSessionFile(file);
      out.push(["setSessionFile", fs.readFileSync(file, "utf8"), state(sm)]);
      return out;
    },
  ],
  [
    "SessionManager.open of odd headers and files",
    (mod, side) => {
      const big = "ü".repeat(2500); // > 4096 bytes: the header is read in several pieces
      const files = {
        noId: lines({ type: "session", version: 3, timestamp: TS[0], cwd: CWD_A }, msg("m-1", null, "user", "x")),
        numericId: lines(
          { type: "session", version: 3, id: 7, timestamp: TS[0], cwd: CWD_A },
          msg("m-1", null, "user", "x"),
        ),
        notFirst: lines(msg("m-1", null, "user", "x"), header("late", CWD_A)),
        blankFirst: `\n  \n{bad\n${lines(header("after-blank", CWD_B), msg("m-1", null, "user", "x"))}`,
        noCwd: lines({ type: "session", version: 3, id: "no-cwd", timestamp: TS[0] }),
        numericCwd: lines({ ...header("num-cwd", CWD_A), cwd: 42 }),
        emptyCwd: lines(header("empty-cwd", "")),
        relativeCwd: lines(header("rel-cwd", "rel/cwd")),
        colonCwd: lines(header("colon-cwd", CWD_COLON), msg("m-1", null, "user", "x")),
        longHeader: lines(header("long", `/verify/${big}`), msg("m-1", null, "user", "x")),
        hugeHeader: lines(header("huge", CWD_A, { pad: "x".repeat(1024 * 1024 + 10) }), msg("m-1", null, "user", "x")),
        v1: lines(
          { type: "session", id: "v1", timestamp: TS[0], cwd: CWD_A },
          { type: "message", timestamp: TS[1], message: { role: "user", content: "v1", timestamp: 1 } },
        ),
        // a header line ending exactly at the 1 MiB scan limit, without a newline
        atLimit: (() => {
          const h = L(header("at-limit", CWD_A, { pad: "" }));
          return L(header("at-limit", CWD_A, { pad: "p".repeat(1024 * 1024 - h.length) }));
        })(),
        blankAtLimit: " ".repeat(1024 * 1024),
        hugeFirstLine: lines(msg("m-1", null, "user", "b".repeat(1024 * 1024)), header("late", CWD_A)),
        edits: lines(
          header("edits", CWD_A),
          msg("m-1", null, "user", "question"),
          msg("m-2", "m-1", "assistant", "answer"),
          {
            type: "message",
            id: "m-3",
            parentId: "m-2",
            timestamp: TS[1],
            message: {
              role: "toolResult",
              toolCallId: "t",
              toolName: "x",
              content: [{ type: "text", text: "out" }],
              isError: false,
              timestamp: 3,
            },
          },
          label("l-1", "m-3", "m-2", "answer label"),
          {
            type: "custom",
            id: "x-1",
            parentId: "l-1",
            timestamp: TS[2],
            customType: "c",
            targetId: "m-1",
            label: "not a label",
          },
          {
            type: "context_edit",
            id: "e-1",
            parentId: "x-1",
            timestamp: TS[2],
            targetId: "m-2",
            replacement: { content: "edited answer" },
          },
          {
            type: "context_edit",
            id: "e-2",
            parentId: "e-1",
            timestamp: TS[2],
            targetId: "m-3",
            replacement: { content: "edited output" },
          },
          { type: "context_edit", id: "e-3", parentId: "e-2", timestamp: TS[2], targetId: "m-1", replacement: null },
          {
            type: "branch_summary",
            id: "b-1",
            parentId: "e-3",
            timestamp: TS[2],
            fromId: "m-1",
            summary: "went elsewhere",
          },
          {
            type: "context_edit",
            id: "e-4",
            parentId: "b-1",
            timestamp: TS[2],
            targetId: "b-1",
            replacement: { content: "not editable" },
          },
        ),
        orphan: lines(
          header("orphan", CWD_A),
          msg("m-1", null, "user", "root"),
          msg("m-2", "missing", "user", "orphan"),
          msg("m-3", "m-2", "user", "child"),
          msg("m-4", "m-4", "user", "its own parent"),
          { ...msg("m-5", "m-1", "user", "later child, earlier line"), timestamp: "2024-03-02T00:00:00.000Z" },
          { ...msg("m-6", "m-1", "user", "earlier child, later line"), timestamp: "2024-03-01T00:00:00.000Z" },
          { ...msg("m-7", "m-5", "user", "later grandchild"), timestamp: "2024-03-03T00:00:00.000Z" },
          { ...msg("m-8", "m-5", "user", "earlier grandchild"), timestamp: "2024-03-02T12:00:00.000Z" },
          { ...msg("m-9", "m-1", "user", "the leaf"), timestamp: "2024-03-04T00:00:00.000Z" },
        ),
        oneByte: "\n",
        whitespace: "  \n\n",
        empty: "",
        garbage: "not json\n",
      };
      const out = {};
      for (const [name, text] of Object.entries(files)) {
        const file = path.join(side.root, "odd", `${name}.jsonl`);
        put(file, text, 0);
        out[name] = attempt(() => {
          /** @type {any} */
          const s = state(mod.SessionManager.open(file));
          // the megabyte of padding as its length
          if (s.text?.length > 1024 * 1024) s.text = s.text.length;
          if (s.header?.pad) s.header = { ...s.header, pad: s.header.pad.length };
          if (name !== "orphan") s.tree = s.tree?.length; // the tree repeats the entries
          return { ...s, fileTime: fileTimeIsHeaderTime(mod.SessionManager.open(file)) };
        });
      }
      out.cwdOverride = attempt(() =>
        state(mod.SessionManager.open(path.join(side.root, "odd", "colonCwd.jsonl"), undefined, CWD_DRIVE)),
      );
      out.withDir = attempt(() =>
        state(mod.SessionManager.open(path.join(side.root, "odd", "colonCwd.jsonl"), path.join(side.root, "other"))),
      );
      out.folder = attempt(() => state(mod.SessionManager.open(path.join(side.root, "odd"))));
      // an in-memory manager pointed at files: an empty one and a v1 one are not written
      out.inMemoryOnFiles = ["empty", "v1"].map((name) =>
        attempt(() => {
          const file = path.join(side.root, "odd", `${name}.jsonl`);
          put(file, files[name], 0);
          const sm = mod.SessionManager.inMemory(CWD_A);
          sm.setSessionFile(file);
          return { ...state(sm), tree: undefined, disk: fs.readFileSync(file, "utf8") };
        }),
      );
      // (no failed write: pi 1.3.0 and 1.4.0, known-good, keep an entry whose write failed in memory,
      // where 1.5.0 on and this package roll it back; docs/compatibility.md)
      const missing = attempt(() => mod.SessionManager.open(path.join(side.root, "odd", "missing.jsonl")));
      out.missing = missing.error ? missing : { ...state(missing), fileTime: fileTimeIsHeaderTime(missing) };
      return out;
    },
  ],
  [
    "SessionManager.forkFrom (cwds, ids, errors)",
    (mod, side) => {
      const src = path.join(side.root, "src", "source.jsonl");
      put(
        src,
        lines(
          header("src", CWD_B, { parentSession: "/x/p.jsonl" }),
          msg("m-1", null, "user", "q"),
          label("l-1", "m-1", "m-1", "kept"),
          msg("m-2", "l-1", "assistant", "a"),
        ),
        0,
      );
      const out = [];
      const cases = [
        [src, CWD_A, path.join(side.root, "forks")],
        [src, "rel/target", path.join(side.root, "forks")],
        [src, `${CWD_COLON}/`, undefined],
        [src, CWD_A, path.join(side.root, "forks"), { id: "fork.id-1" }],
        [src, CWD_A, path.join(side.root, "forks"), { id: "x".repeat(200) }],
        [src, CWD_A, path.join(side.root, "forks"), { id: "bad id" }],
        [src, CWD_A, path.join(side.root, "forks", "deep", "er")],
        [path.join(side.root, "src", "missing.jsonl"), CWD_A, path.join(side.root, "forks")],
      ];
      for (const name of ["noHeader", "empty"]) {
        const f = path.join(side.root, "src", `${name}.jsonl`);
        put(f, name === "empty" ? "" : lines(msg("m-1", null, "user", "q")), 0);
        cases.push([f, CWD_A, path.join(side.root, "forks")]);
      }
      for (const [from, cwd, dir, options] of cases) {
        out.push(
          attempt(() => {
            const sm = mod.SessionManager.forkFrom(from, cwd, dir, options);
            return { ...state(sm), fileTime: fileTimeIsHeaderTime(sm) };
          }),
        );
      }
      return out;
    },
  ],
  [
    "createBranchedSession: compactions pointing at labels, label times, in memory and on disk",
    (mod, side) => {
      const text = lines(
        header("branch-src", CWD_A),
        msg("m-1", null, "user", "first"),
        label("l-1", "m-1", "m-1", "on first", "2024-02-02T02:02:02.222Z"),
        msg("m-2", "l-1", "assistant", "kept"),
        label("l-2", "m-2", "m-2", "on kept", "2024-02-03T03:03:03.333Z"),
        {
          type: "compaction",
          id: "c-1",
          parentId: "l-2",
          timestamp: TS[2],
          summary: "sum",
          firstKeptEntryId: "l-2",
          tokensBefore: 9,
        },
        {
          type: "compaction",
          id: "c-2",
          parentId: "c-1",
          timestamp: TS[2],
          summary: "self",
          firstKeptEntryId: "c-2",
          tokensBefore: 9,
        },
        label("l-3", "c-2", "m-1", "relabel", "2024-02-04T04:04:04.444Z"),
        msg("m-3", "l-3", "user", "after"),
        // the latest compaction keeps from a label: the branch must keep from the entry after it
        {
          type: "compaction",
          id: "c-3",
          parentId: "m-3",
          timestamp: TS[2],
          summary: "late",
          firstKeptEntryId: "l-1",
          tokensBefore: 9,
        },
        msg("m-4", "c-3", "user", "last"),
        label("l-4", "m-4", "missing", "dangling"),
      );
      const out = [];
      // a path of labels only: the branch has no entry to hang its labels on
      const labelsFirst = lines(
        header("labels-first", CWD_A),
        label("l-1", null, "l-1", "self"),
        label("l-2", "l-1", "l-1", "again"),
      );
      for (const persisted of [true, false]) {
        const file = path.join(side.root, "branch", `labels-first-${persisted}.jsonl`);
        put(file, labelsFirst, 0);
        const sm = persisted
          ? mod.SessionManager.open(file)
          : mod.SessionManager.inMemory(
              CWD_A,
              undefined,
              labelsFirst
                .trim()
                .split("\n")
                .map((l) => JSON.parse(l)),
            );
        out.push({ persisted, r: attempt(() => sm.createBranchedSession("l-2") ?? null), state: state(sm) });
      }
      for (const persisted of [true, false]) {
        for (const leaf of ["m-4", "m-3", "c-1", "l-4", "m-1", "nope"]) {
          const file = path.join(side.root, "branch", `${persisted}-${leaf}.jsonl`);
          put(file, text, 0);
          const sm = persisted
            ? mod.SessionManager.open(file)
            : mod.SessionManager.inMemory(
                CWD_A,
                undefined,
                text
                  .trim()
                  .split("\n")
                  .map((l) => JSON.parse(l)),
              );
          const r = attempt(() => sm.createBranchedSession(leaf) ?? null);
          // the branch goes on: an append lands in the branch's file
          attempt(() => sm.appendMessage({ role: "user", content: "after the branch", timestamp: 7 }));
          out.push({ leaf, persisted, r, state: state(sm), fileTime: persisted ? fileTimeIsHeaderTime(sm) : null });
        }
      }
      return out;
    },
  ],
  [
    "v1 and v2 files migrated on open, and migrateSessionEntries",
    (mod, side) => {
      const v1 = [
        { type: "session", id: "v1", timestamp: TS[0], cwd: CWD_A },
        {
          type: "message",
          timestamp: TS[1],
          message: { role: "user", content: "one", timestamp: 1 },
          firstKeptEntryIndex: 0,
        },
        { type: "compaction", timestamp: TS[1], summary: "no index", tokensBefore: 1 },
        { type: "compaction", timestamp: TS[1], summary: "past the end", firstKeptEntryIndex: 99, tokensBefore: 1 },
        { type: "compaction", timestamp: TS[1], summary: "the header", firstKeptEntryIndex: 0, tokensBefore: 1 },
        { type: "compaction", timestamp: TS[1], summary: "kept", firstKeptEntryIndex: 1, tokensBefore: 1 },
        { type: "compaction", timestamp: TS[1], summary: "index as text", firstKeptEntryIndex: "1", tokensBefore: 1 },
        {
          type: "message",
          timestamp: TS[1],
          message: { role: "hookMessage", customType: "h", content: "hook", display: true, timestamp: 2 },
        },
      ];
      const v2 = [
        { type: "session", version: 2, id: "v2", timestamp: TS[0], cwd: CWD_A },
        { type: "message", id: "m-1", parentId: null, timestamp: TS[1], message: null },
        {
          type: "custom",
          id: "m-2",
          parentId: "m-1",
          timestamp: TS[1],
          customType: "c",
          message: { role: "hookMessage" },
        },
        {
          type: "message",
          id: "m-3",
          parentId: "m-2",
          timestamp: TS[1],
          message: { role: "hookMessage", customType: "h", content: "x", display: false, timestamp: 3 },
        },
      ];
      const out = {};
      for (const [name, entries] of [
        ["v1", v1],
        ["v2", v2],
        ["v0", [{ ...v1[0], version: 0 }, ...v1.slice(1)]],
        ["v4", [{ ...v2[0], version: 4 }, ...v2.slice(1)]],
      ]) {
        const file = path.join(side.root, "migrate", `${name}.jsonl`);
        put(file, lines(...entries), 0);
        out[name] = attempt(() => {
          const sm = mod.SessionManager.open(file);
          return { ...state(sm), tree: undefined, context: undefined };
        });
        const copy = JSON.parse(JSON.stringify(entries));
        out[`${name} migrateSessionEntries`] = attempt(() => [mod.migrateSessionEntries(copy) ?? "<undefined>", copy]);
      }
      return out;
    },
  ],
  [
    "the context functions on empty, leafless and odd entries",
    (mod) => {
      const entries = [
        msg("m-1", null, "user", "q"),
        { type: "custom_message", id: "m-2", parentId: "m-1", timestamp: TS[1], customType: "c", display: true },
        { type: "branch_summary", id: "m-3", parentId: "m-2", timestamp: TS[1], fromId: "m-1", summary: "" },
        {
          type: "compaction",
          id: "m-4",
          parentId: "m-3",
          timestamp: TS[1],
          summary: "s",
          firstKeptEntryId: "m-2",
          tokensBefore: 3,
          systemMessage: { role: "system", content: "sys" },
        },
        { type: "message", id: "m-5", parentId: "m-4", timestamp: TS[1], message: { role: "system", content: null } },
        {
          type: "message",
          id: "m-6",
          parentId: "m-5",
          timestamp: TS[1],
          message: { role: "toolResult", content: null },
        },
      ];
      const out = {};
      for (const fn of ["buildSessionContext", "buildContextEntries", "buildSessionProjection"]) {
        if (typeof mod[fn] !== "function") continue;
        for (const [name, args] of [
          ["empty", [[]]],
          ["empty, missing leaf", [[], "nope"]],
          ["empty, null leaf", [[], null]],
          ["missing leaf", [entries, "nope"]],
          ["null leaf", [entries, null]],
          ["leaf", [entries, "m-6"]],
          ["no leaf", [entries]],
          ["with map", [entries, "m-3", new Map(entries.map((e) => [e.id, e]))]],
          // a map that is not the entries' own: pi walks the map it is given
          ["with another map", [entries, "m-6", new Map(entries.slice(2).map((e) => [e.id, e]))]],
          ["empty id as leaf", [[msg("", null, "user", "no id"), msg("m-9", "", "user", "after")], ""]],
          ["entries without ids", [[{ ...msg("x", null, "user", "a"), id: undefined }, msg("m-9", null, "user", "b")]]],
        ])
          out[`${fn} ${name}`] = attempt(() => mod[fn](...args));
      }
      if (typeof mod.getLatestCompactionEntry === "function")
        out.latest = [[], entries, entries.slice(0, 4), entries.slice(3, 4)].map((e) =>
          attempt(() => mod.getLatestCompactionEntry(e)),
        );
      if (typeof mod.sessionEntryToContextMessages === "function")
        out.toMessages = entries.map((e) => attempt(() => mod.sessionEntryToContextMessages(e)));
      if (typeof mod.parseSessionEntries === "function")
        out.parse = ["", " \n ", '{"a":1}\r\n\n{bad\n  {"b":2}  ', "[1]\nnull\n3"].map((t) =>
          attempt(() => mod.parseSessionEntries(t)),
        );
      return out;
    },
  ],
  [
    "labels and context edits on a manager: cleared, switched away from, bad replacements, getBranch('')",
    (mod, side) => {
      const a = path.join(side.root, "switch", "a.jsonl");
      const b = path.join(side.root, "switch", "b.jsonl");
      put(
        a,
        lines(
          header("a", CWD_A),
          msg("m-1", null, "user", "q"),
          label("l-1", "m-1", "m-1", "kept"),
          msg("m-2", "l-1", "assistant", "a"),
        ),
        0,
      );
      put(
        b,
        lines(header("b", CWD_A), msg("m-1", null, "user", "other q"), msg("m-2", "m-1", "assistant", "other a")),
        0,
      );
      const sm = mod.SessionManager.open(a);
      const out = {};
      out.labels = ["m-1", "m-2"].map((id) => sm.getLabel(id) ?? null);
      sm.appendLabelChange("m-2", "second");
      sm.appendLabelChange("m-2", undefined);
      sm.appendLabelChange("m-1", "");
      out.cleared = ["m-1", "m-2"].map((id) => sm.getLabel(id) ?? null);
      sm.appendLabelChange("m-1", "again");
      out.edits = [
        null,
        { content: "text" },
        { content: [{ type: "text", text: "blocks" }] },
        {},
        { content: 5 },
        "x",
        undefined,
        [],
      ].map((r) => attempt(() => sm.appendContextEdit("m-2", r)));
      out.branches = ["", undefined, null, "m-1", "nope"].map((id) => attempt(() => sm.getBranch(id).map((e) => e.id)));
      // a summary branch from an earlier entry: it hangs there, not at the old leaf
      out.summary = attempt(() => {
        const id = sm.branchWithSummary("m-1", "back to the question");
        return { id, entry: sm.getEntry(id), leaf: sm.getLeafId(), branch: sm.getBranch().map((e) => e.id) };
      });
      out.before = state(sm);
      sm.setSessionFile(b);
      out.switched = { labels: ["m-1", "m-2"].map((id) => sm.getLabel(id) ?? null), state: state(sm) };
      // a new session on a manager that holds labels
      const again = mod.SessionManager.open(a);
      again.newSession();
      out.fresh = ["m-1", "m-2"].map((id) => again.getLabel(id) ?? null);
      return out;
    },
  ],
  [
    "long and odd session ids (newSession, create)",
    (mod, side) =>
      [
        "a",
        "A.b_c-9",
        "x".repeat(128),
        "y".repeat(129),
        "z".repeat(300),
        "0",
        "a..b",
        "-a",
        "a-",
        "a b",
        "ü",
        "",
        "a\n",
      ].map((id) =>
        attempt(() => {
          const sm = mod.SessionManager.create(CWD_A, path.join(side.root, "ids"), { id });
          const again = sm.newSession({ id, parentSession: "/p.jsonl" });
          return {
            id: sm.getSessionId(),
            file: sm.getSessionFile(),
            again,
            header: sm.getHeader(),
            fileTime: fileTimeIsHeaderTime(sm),
          };
        }),
      ),
  ],
];

/**
 * Runs every scenario on pi's side (`ref`) and ours (`impl`), each in its own temp folder and agent
 * folder (HOME, PI_CODING_AGENT_DIR). Returns the first difference as text, or undefined.
 * @param {{ ref: any, impl: any, tmp: string, compare: (a: any, b: any) => string | undefined }} options
 */
export async function runScenarios({ ref, impl, tmp, compare }) {
  const keys = ["HOME", "USERPROFILE", "PI_CODING_AGENT_DIR"];
  const saved = keys.map((k) => process.env[k]);
  try {
    for (const [k, [name, run]] of SCENARIOS.entries()) {
      const seen = [];
      for (const mod of [ref, impl]) {
        // the same folder for both sides (one after the other): paths encoded in folder names match
        const root = path.join(tmp, `scenario-${k}`);
        fs.rmSync(root, { recursive: true, force: true });
        fs.mkdirSync(path.join(root, "home"), { recursive: true });
        process.env.HOME = path.join(root, "home");
        process.env.USERPROFILE = process.env.HOME;
        process.env.PI_CODING_AGENT_DIR = path.join(root, "agent");
        const since = Date.now();
        let value;
        try {
          value = await run(mod, { root });
        } catch (error) {
          value = { threw: `${error?.name}: ${error?.message}` };
        }
        seen.push(mapper(root, since)(value));
      }
      // an object of several operations: the line names the one that differed
      const [a, b] = seen;
      if (a && b && typeof a === "object" && typeof b === "object" && !Array.isArray(a) && !Array.isArray(b)) {
        for (const key of new Set([...Object.keys(a), ...Object.keys(b)])) {
          const diff = compare(a[key], b[key]);
          if (diff) return `${name}, ${key}: ${diff}`;
        }
      }
      const diff = compare(a, b);
      if (diff) return `${name}: ${diff}`;
    }
    return undefined;
  } finally {
    keys.forEach((k, i) => {
      if (saved[i] === undefined) delete process.env[k];
      else process.env[k] = saved[i];
    });
  }
}
