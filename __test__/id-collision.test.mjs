// Entry ids under a stubbed `crypto.randomUUID` that repeats itself: both implementations must
// draw the same candidates, skip the same taken ids and fall back to a full UUID after the same
// 100 tries. The native side checks the first candidate inside `append` (no separate lookup), so
// this is the test of that shortcut's redraw path.
import { describe, test, expect, afterEach } from "vitest";
import crypto from "node:crypto";
import { syncBuiltinESMExports } from "node:module";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { ref, nat, tmp } from "./helpers.mjs";

const realRandomUUID = crypto.randomUUID;

/** Stub randomUUID with `next()` for both the CommonJS object and ESM named imports. */
function stubUUID(next) {
  let calls = 0;
  crypto.randomUUID = () => {
    calls++;
    return next(calls);
  };
  syncBuiltinESMExports();
  return () => calls;
}

afterEach(() => {
  crypto.randomUUID = realRandomUUID;
  syncBuiltinESMExports();
});

const uuid = (prefix, n = 0) => `${prefix}-0000-4000-8000-${String(n).padStart(12, "0")}`;

/**
 * Appends of every kind that draws an id, so each id path meets a taken candidate. `short`: two
 * messages only — with one UUID forever the reference repeats the full-UUID fallback, the tree
 * gets a self-parented entry, and its tree walks (compaction) never end.
 */
function appendAll(sm, short) {
  const ids = [];
  if (short) {
    ids.push(sm.appendMessage({ role: "user", content: "one", timestamp: 1 }));
    ids.push(sm.appendMessage({ role: "assistant", content: [{ type: "text", text: "two" }], timestamp: 2 }));
    ids.push(sm.appendMessage({ role: "user", content: "three", timestamp: 3 }));
    // Ids drawn by generateId() and used as they are (also its unchecked full-UUID fallback).
    ids.push(sm.appendCustomEntry("kind", { a: 1 }));
    ids.push(sm.appendCustomMessageEntry("kind", "text", true));
    return ids;
  }
  ids.push(sm.appendMessage({ role: "user", content: "one", timestamp: 1 }));
  ids.push(sm.appendMessage({ role: "assistant", content: [{ type: "text", text: "two" }], timestamp: 2 }));
  ids.push(sm.appendThinkingLevelChange("high"));
  ids.push(sm.appendModelChange("anthropic", "claude"));
  ids.push(sm.appendCustomEntry("kind", { a: 1 }));
  ids.push(sm.appendCustomMessageEntry("kind", "text", true));
  ids.push(sm.appendSessionInfo("named"));
  ids.push(sm.appendLabelChange(ids[0], "first"));
  ids.push(sm.appendCompaction("sum", ids[1], 100));
  ids.push(sm.appendMessage({ role: "user", content: "three", timestamp: 3 }));
  return ids;
}

function run(SM, persistDir, next, short) {
  const calls = stubUUID(next);
  const sm = persistDir ? SM.create("/tmp/proj", persistDir) : SM.inMemory("/tmp/proj");
  const ids = appendAll(sm, short);
  const used = calls();
  crypto.randomUUID = realRandomUUID;
  syncBuiltinESMExports();
  return { ids, used, entries: sm.getEntries().map((e) => [e.id, e.parentId, e.type]), file: sm.getSessionFile() };
}

// A small pool of 8-char prefixes drawn in an order that repeats: later appends meet taken ids.
const cycling = (n) =>
  uuid(["aaaaaaaa", "aaaaaaaa", "bbbbbbbb", "aaaaaaaa", "cccccccc", "bbbbbbbb", "dddddddd"][n % 7] ?? "eeeeeeee", n);
const counting = (n) => uuid((0x10000000 + Math.floor(n / 3)).toString(16), n);

describe("entry ids with a repeating randomUUID", () => {
  for (const [name, next, short] of [
    ["cycling pool", cycling],
    ["each candidate drawn three times", counting],
    ["one value forever (100 tries, then the full UUID)", () => uuid("abcdef01", 7), true],
  ]) {
    test(`${name}: same ids, same draws (in memory)`, () => {
      const r = run(ref.SessionManager, null, next, short);
      const n = run(nat.SessionManager, null, next, short);
      expect(n.ids).toEqual(r.ids);
      expect(n.used).toEqual(r.used);
      expect(n.entries).toEqual(r.entries);
    });

    test(`${name}: same ids and file lines (persisted)`, () => {
      const r = run(ref.SessionManager, tmp(), next, short);
      const n = run(nat.SessionManager, tmp(), next, short);
      expect(n.ids).toEqual(r.ids);
      expect(n.used).toEqual(r.used);
      const ids = (f) =>
        readFileSync(f, "utf8")
          .trim()
          .split("\n")
          .slice(1)
          .map((l) => JSON.parse(l).id);
      expect(ids(n.file)).toEqual(ids(r.file));
      expect(ids(n.file)).toEqual(n.ids);
    });
  }

  test("the fallback full UUID is used unchecked, like the reference", () => {
    const r = run(ref.SessionManager, null, () => uuid("abcdef01", 7), true);
    expect(new Set(r.ids).size).toBeLessThan(r.ids.length); // the reference really repeats it
    const n = run(nat.SessionManager, null, () => uuid("abcdef01", 7), true);
    expect(n.ids).toEqual(r.ids);
  });
});

test("a persisted native session file lives in the session dir the persisted runs read from", () => {
  const d = tmp();
  const sm = nat.SessionManager.create("/tmp/proj", d);
  expect(sm.getSessionFile().startsWith(join(d, ""))).toBe(true);
});

describe("createBranchedSession label ids under a stubbed randomUUID", () => {
  // The path's labels are re-created with fresh ids. Both routes (Rust splicing the text of a
  // re-opened session; the object route for entries JS holds) draw them through
  // crypto.randomUUID like the reference: same candidates, same redraws, same fallback.
  const pools = {
    counting: (n) => uuid((0x30000000 + n).toString(16), n),
    // Label candidates collide with the path's ids first, then come free.
    "colliding then free": (n) => uuid(n < 8 ? "30000001" : (0x30000000 + n).toString(16), n),
    // One value forever: the 100 tries fail and the whole UUID is used.
    "one value forever": (n) => uuid(n < 3 ? (0x30000000 + n).toString(16) : "30000001", n),
  };
  for (const [name, next] of Object.entries(pools)) {
    for (const reopen of [false, true]) {
      test(`${name}, ${reopen ? "re-opened (text route)" : "as appended (object route)"}`, () => {
        const run = (M) => {
          const calls = stubUUID(next);
          const sm = M.SessionManager.create("/tmp/proj", tmp());
          const a = sm.appendMessage({ role: "user", content: "x", timestamp: 1 });
          sm.appendLabelChange(a, "L");
          sm.appendMessage({ role: "assistant", content: [], timestamp: 2 });
          if (reopen) sm.setSessionFile(sm.getSessionFile());
          const before = calls();
          sm.createBranchedSession(sm.getLeafId());
          const drawn = calls() - before;
          crypto.randomUUID = realRandomUUID;
          syncBuiltinESMExports();
          return { drawn, entries: sm.getEntries().map((e) => [e.type, e.id, e.parentId, e.targetId]) };
        };
        const r = run(ref);
        const n = run(nat);
        expect(n).toEqual(r);
      });
    }
  }
});
