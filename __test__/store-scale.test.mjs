// A SessionInfo costs what the caller reads. `firstMessage` and
// `allMessagesText` are produced when first read (lib/discovery/session-info.js), and the listing
// index holds no texts. These tests hold the lazily produced objects against the
// reference's (pi-coding-agent 1.6.0) for every way of reading them, and pin down what a
// read gives when the file changed between the listing and the read.
import { afterAll, describe, expect, it } from "vitest";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import util from "node:util";
import assert from "node:assert";
import { createRequire } from "node:module";

process.env.PI_SESSION_NATIVE_PROGRESS_MS = "0";
const require = createRequire(import.meta.url);
const ROOT = fs.mkdtempSync(path.join(os.tmpdir(), "psn-store-scale-"));
process.env.PI_CODING_AGENT_DIR = path.join(ROOT, "agent");
afterAll(() => fs.rmSync(ROOT, { recursive: true, force: true }));

const { SessionManager: Ref } = await import(
  "../node_modules/@earendil-works/pi-coding-agent/dist/core/session-manager.js"
);
const native = require("../lib/native.js");
const disc = require("../lib/discovery/index.js");

const PAST = Date.now() / 1000 - 3600;
const ts = (i) => new Date(Date.UTC(2024, 0, 1) + i * 60000).toISOString();
const line = (o) => JSON.stringify(o);
const hdr = (id, i, extra = {}) =>
  line({ type: "session", version: 3, id, timestamp: ts(i), cwd: "/proj/a", ...extra });
const msg = (role, content, i) =>
  line({ type: "message", id: `m${i}`, parentId: null, timestamp: ts(i), message: { role, content } });

function write(dir, name, lines, age = 0) {
  const f = path.join(dir, name);
  fs.writeFileSync(f, lines.join("\n") + "\n");
  fs.utimesSync(f, PAST - age, PAST - age);
  return f;
}

/** A directory of sessions with every kind of text a SessionInfo can hold. */
function store() {
  const dir = fs.mkdtempSync(path.join(ROOT, "s-"));
  write(dir, "a.jsonl", [
    hdr("a", 0),
    msg("user", "first question", 1),
    msg("assistant", [{ type: "text", text: "an answer" }, { type: "image" }, { type: "text", text: "two" }], 2),
  ]);
  write(dir, "b.jsonl", [hdr("b", 3)], 1);
  write(
    dir,
    "c.jsonl",
    [hdr("c", 4), msg("assistant", "only the assistant", 5), line({ type: "session_info", name: " named " })],
    2,
  );
  write(
    dir,
    "d.jsonl",
    [
      hdr("d", 6, { parentSession: "/x/y.jsonl" }),
      msg("user", "lone \ud83d surrogate \u00e9 \u{1F600}", 7),
      msg("user", "second", 8),
    ],
    3,
  );
  write(
    dir,
    "e.jsonl",
    [
      hdr("e", 9),
      msg("toolResult", "tool text is not listed", 10),
      msg("user", [{ type: "text", text: "x".repeat(200_000) }], 11),
    ],
    4,
  );
  write(dir, "f.jsonl", [hdr("f", 12), msg("assistant", "before", 13), msg("user", "after the assistant", 14)], 5);
  return dir;
}

const DIR = store();
const ref = () => Ref.list("/proj/a", DIR);
const nat = () => disc.list("/proj/a", DIR);

/** Count the native text reads while `fn` runs. */
async function textReads(fn) {
  const orig = native.discoveryText;
  let n = 0;
  native.discoveryText = (...a) => {
    n++;
    return orig(...a);
  };
  try {
    await fn();
  } finally {
    native.discoveryText = orig;
  }
  return n;
}

describe("a lazily produced SessionInfo is the reference's for every use", () => {
  // Each use starts from a fresh listing, so nothing has been read before it.
  const uses = {
    "JSON.stringify": (l) => JSON.stringify(l),
    spread: (l) => util.inspect(l.map((s) => ({ ...s }))),
    "Object.assign": (l) => util.inspect(l.map((s) => Object.assign({}, s))),
    structuredClone: (l) => util.inspect(structuredClone(l)),
    "Object.keys order": (l) => JSON.stringify(l.map((s) => Object.keys(s))),
    "Object.entries": (l) => util.inspect(l.map((s) => Object.entries(s))),
    "for...in": (l) =>
      JSON.stringify(
        l.map((s) => {
          const k = [];
          for (const x in s) k.push(x, s[x]);
          return k;
        }),
      ),
    "util.inspect": (l) => util.inspect(l),
    "util.inspect, one object, colors": (l) => util.inspect(l[0], { colors: true }),
    "util.inspect, depth 0": (l) => util.inspect(l, { depth: 0 }),
    "util.inspect, breakLength Infinity": (l) => util.inspect(l, { breakLength: Infinity }),
    "util.inspect, showHidden": (l) => util.inspect(l, { showHidden: true }),
    "util.format %o": (l) => util.format("%o", l[1]),
    "console.log-like nesting": (l) => util.inspect({ sessions: l, n: l.length }, { depth: 4 }),
    "property reads": (l) =>
      JSON.stringify(l.map((s) => [s.firstMessage, s.allMessagesText.length, s.allMessagesText])),
    "descriptors after a read": (l) =>
      JSON.stringify(
        l.map((s) => {
          void s.firstMessage;
          void s.allMessagesText;
          return [
            Object.getOwnPropertyDescriptor(s, "firstMessage"),
            Object.getOwnPropertyDescriptor(s, "allMessagesText"),
          ];
        }),
      ),
  };
  for (const [name, use] of Object.entries(uses)) {
    it(name, async () => {
      const want = use(await ref());
      expect(use(await nat())).toBe(want);
    });
  }

  it("deep equality (node:assert, vitest) both ways", async () => {
    const r = await ref();
    assert.deepStrictEqual(await nat(), r);
    assert.deepStrictEqual(r, await nat());
    expect(await nat()).toStrictEqual(r);
    expect(util.isDeepStrictEqual(await nat(), r)).toBe(true);
  });

  it("listAll(dir), without the index too", async () => {
    const want = JSON.stringify(await Ref.listAll(DIR));
    expect(JSON.stringify(await disc.listAll(DIR))).toBe(want);
    process.env.PI_SESSION_NATIVE_NO_INDEX = "1";
    try {
      expect(JSON.stringify(await disc.listAll(DIR))).toBe(want);
    } finally {
      delete process.env.PI_SESSION_NATIVE_NO_INDEX;
    }
  });

  it("an object inheriting from a SessionInfo, a frozen one, assignments", async () => {
    const r = await ref();
    const l = await nat();
    const child = Object.create(l[0]);
    expect(child.allMessagesText).toBe(r[0].allMessagesText);
    expect(Object.hasOwn(child, "allMessagesText")).toBe(false);
    child.firstMessage = "mine";
    expect(child.firstMessage).toBe("mine");
    expect(l[0].firstMessage).toBe(r[0].firstMessage);
    const frozen = Object.freeze((await nat())[0]);
    expect(frozen.allMessagesText).toBe(r[0].allMessagesText);
    expect(frozen.firstMessage).toBe(r[0].firstMessage);
    // Module code is strict: assigning to a frozen object's property throws.
    expect(() => {
      frozen.allMessagesText = "x";
    }).toThrow(TypeError);
    expect(frozen.allMessagesText).toBe(r[0].allMessagesText);
    const s = (await nat())[1];
    s.allMessagesText = "set before any read";
    expect(Object.getOwnPropertyDescriptor(s, "allMessagesText")).toEqual({
      value: "set before any read",
      writable: true,
      enumerable: true,
      configurable: true,
    });
    expect(Object.keys(s)).toEqual(Object.keys(r[1]));
    expect(delete s.firstMessage).toBe(true);
    expect("firstMessage" in s).toBe(false);
  });
});

describe("texts cost what the caller reads", () => {
  it("a listing reads no text; a read reads one, once", async () => {
    /** @type {any[]} */
    let l = [];
    expect(
      await textReads(async () => {
        l = await nat();
      }),
    ).toBe(0);
    const e = l.find((s) => s.id === "e");
    expect(Object.getOwnPropertyDescriptor(e, "allMessagesText").get).toBeTypeOf("function");
    expect(await textReads(() => e.allMessagesText)).toBe(1);
    expect(await textReads(() => e.allMessagesText + e.allMessagesText)).toBe(0);
    expect(e.allMessagesText.length).toBe(200_000);
    // Sorting, filtering and counting as pi's picker does touch no text.
    expect(
      await textReads(async () =>
        (await nat()).filter((s) => s.name || s.messageCount > 0).sort((a, b) => b.modified - a.modified),
      ),
    ).toBe(0);
    // An empty text is a plain value from the start.
    const b = l.find((s) => s.id === "b");
    expect(Object.getOwnPropertyDescriptor(b, "firstMessage")).toEqual({
      value: "(no messages)",
      writable: true,
      enumerable: true,
      configurable: true,
    });
    expect(Object.getOwnPropertyDescriptor(b, "allMessagesText").value).toBe("");
  });

  it("the index holds no text: far below 10% of the store, none of its words", async () => {
    const dir = fs.mkdtempSync(path.join(ROOT, "idx-"));
    const word = "walrus-unique-word";
    for (let i = 0; i < 5; i++)
      write(dir, `s${i}.jsonl`, [hdr(`s${i}`, i), msg("user", `${word} `.repeat(20_000), i + 1)], i);
    // One session of a single long message (the 300 MB case, small).
    write(dir, "long.jsonl", [hdr("long", 9), msg("user", "y".repeat(3_000_000), 10)], 9);
    const l = await disc.list("/proj/a", dir);
    expect(l.length).toBe(6);
    const idx = fs.readFileSync(path.join(dir, ".pi-session-index"));
    const storeBytes = fs
      .readdirSync(dir)
      .filter((f) => f.endsWith(".jsonl"))
      .reduce((n, f) => n + fs.statSync(path.join(dir, f)).size, 0);
    expect(idx.length).toBeLessThan(storeBytes / 1000);
    expect(idx.includes(word)).toBe(false);
    // From the index: the same objects and texts as the reference's.
    const again = await disc.list("/proj/a", dir);
    expect(JSON.stringify(again)).toBe(JSON.stringify(await Ref.list("/proj/a", dir)));
  });
});

describe("a file changed between the listing and the read", () => {
  it("appended since: the listed text (the reference's at list time)", async () => {
    const dir = fs.mkdtempSync(path.join(ROOT, "ch-"));
    const f = write(dir, "s.jsonl", [hdr("s", 0), msg("assistant", "listed", 1)]);
    const want = JSON.stringify(await Ref.list("/proj/a", dir));
    const l = await disc.list("/proj/a", dir);
    fs.appendFileSync(f, msg("user", "appended later", 2) + "\n");
    expect(JSON.stringify(l)).toBe(want);
    expect(l[0].firstMessage).toBe("(no messages)");
  });

  it("appended to a session whose first user text comes later: still the listed text", async () => {
    const dir = fs.mkdtempSync(path.join(ROOT, "ch-"));
    const f = write(dir, "s.jsonl", [hdr("s", 0), msg("user", "q1", 1), msg("assistant", "a1", 2)]);
    const want = JSON.stringify(await Ref.list("/proj/a", dir));
    const l = await disc.list("/proj/a", dir);
    fs.appendFileSync(f, msg("user", "q2", 3) + "\n");
    expect(JSON.stringify(l)).toBe(want);
  });

  it("rewritten or replaced since: the text the file holds when read", async () => {
    const dir = fs.mkdtempSync(path.join(ROOT, "ch-"));
    const f = write(dir, "s.jsonl", [hdr("s", 0), msg("user", "old text", 1)]);
    const l = await disc.list("/proj/a", dir);
    write(dir, "s.jsonl", [hdr("s", 0), msg("user", "new text, rewritten", 1)]);
    const now = await Ref.list("/proj/a", dir);
    expect(l[0].allMessagesText).toBe(now[0].allMessagesText);
    expect(l[0].firstMessage).toBe("new text, rewritten");
    // Replaced by rename (another inode), same size as listed.
    const l2 = await disc.list("/proj/a", dir);
    const tmp = path.join(dir, "t.tmp");
    fs.writeFileSync(tmp, [hdr("s", 0), msg("user", "NEW TEXT, REWRITTEN", 1)].join("\n") + "\n");
    fs.renameSync(tmp, f);
    expect(l2[0].allMessagesText).toBe("NEW TEXT, REWRITTEN");
  });

  it("deleted, unreadable or no longer a session: no text, as a session without messages", async () => {
    const dir = fs.mkdtempSync(path.join(ROOT, "ch-"));
    const f = write(dir, "s.jsonl", [hdr("s", 0), msg("user", "gone", 1)]);
    const g = write(dir, "t.jsonl", [hdr("t", 0), msg("user", "not a session soon", 1)], 1);
    const l = await disc.list("/proj/a", dir);
    fs.rmSync(f);
    fs.writeFileSync(g, line({ type: "message" }) + "\n");
    for (const s of l) {
      expect(s.firstMessage).toBe("(no messages)");
      expect(s.allMessagesText).toBe("");
    }
    // A text read after a deletion never throws: serializing the stale list still works.
    expect(() => JSON.stringify(l)).not.toThrow();
  });
});

const refModule = await import("../node_modules/@earendil-works/pi-coding-agent/dist/core/session-manager.js");

describe("findById and continueRecent over many files (native batches)", () => {
  const ref = refModule;
  const dir = fs.mkdtempSync(path.join(ROOT, "many-"));
  // 700 files (past the two-thread thresholds of both batches): ids repeat, some in
  // another cwd, some with escaped ids, some not sessions, one unreadable for non-root.
  for (let i = 0; i < 700; i++) {
    const id = i % 7 === 3 ? `dup${i % 5}` : `id${i}`;
    const cwd = i % 11 === 0 ? "/other" : "/proj/a";
    let first = hdr(id, i, { cwd });
    if (i % 13 === 5) first = first.replace(`"id":"${id}"`, `"id":"\\u0069d${i}"`);
    if (i % 17 === 9) first = line({ type: "message" });
    write(
      dir,
      `f${String((i * 7919) % 700).padStart(3, "0")}-${i}.jsonl`,
      [first, msg("user", `q${i}`, i + 1)],
      (i * 37) % 500,
    );
  }
  const ids = ["id0", "id1", "id5", "id18", "id699", "dup0", "dup1", "dup4", "missing", "id9", "id22"];
  it("findById: the reference's file for every id, cwd filter on and off", () => {
    for (const id of ids) {
      for (const cwd of ["/proj/a", "/other"]) {
        expect(disc.findById(cwd, id, dir), `${id} ${cwd}`).toBe(ref.SessionManager.findById(cwd, id, dir));
      }
    }
  });
  it("findMostRecentSession / continueRecent: the reference's file", () => {
    for (const cwd of [undefined, "/proj/a", "/other", "/nowhere"]) {
      expect(disc.findMostRecentSession(dir, cwd)).toBe(ref.findMostRecentSession(dir, cwd));
    }
    expect(disc.continueRecentPath("/proj/a", dir).path).toBe(ref.findMostRecentSession(dir, "/proj/a"));
  });
});

describe("order of sessions modified at the same millisecond", () => {
  it("is the reference's (name order by localeCompare), for list and listAll(dir)", async () => {
    const dir = fs.mkdtempSync(path.join(ROOT, "ties-"));
    // Same header time, no messages: every session's `modified` is the same instant; names
    // whose localeCompare order differs from code-unit order.
    for (const n of ["a", "B", "b", "ä", "A-1", "a_2", "Z", "é", "e", "10", "9"]) {
      write(dir, `${n}.jsonl`, [hdr(`id-${n}`, 0)]);
    }
    write(dir, "later.jsonl", [hdr("later", 5)]);
    const want = (await Ref.list("/proj/a", dir)).map((s) => s.path);
    expect((await disc.list("/proj/a", dir)).map((s) => s.path)).toEqual(want);
    expect((await disc.listAll(dir)).map((s) => s.path)).toEqual((await Ref.listAll(dir)).map((s) => s.path));
  });
});
