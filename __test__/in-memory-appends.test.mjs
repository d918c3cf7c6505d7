// Appends whose index fields JS knows exactly (type, id, parentId, role) hand them to Rust
// instead of having the line scanned. In-memory sessions send no text at all: the reference
// never serializes an entry it does not write, and neither do we; their appends are queued in
// JS and handed to Rust in one call when it is next asked anything (`_flush`). These tests
// check that the results still equal the reference's, for plain messages and odd shapes
// (toJSON, arrays, non-string roles: in memory read from the object as the reference does;
// persisted, the text path), through every kind of read that hands the queue over, and through
// the operations that would read an entry's text (branching, context, tree, materialization).
import { describe, it, expect } from "vitest";
import { readFileSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { ref, nat, tmp } from "./helpers.mjs";

const binding = createRequire(import.meta.url)("../lib/native.js");

/**
 * Replace the global `Date` by one whose `new Date()` reads `clock()` (a fake clock, as a
 * test's timers would give: both implementations see the same times). Returns the real `Date`
 * to put back.
 */
function installClock(clock) {
  const RealDate = globalThis.Date;
  // @ts-expect-error a stand-in Date class (a fake clock), not a complete DateConstructor
  globalThis.Date = class extends RealDate {
    constructor(...a) {
      // @ts-expect-error forwards whatever the caller passed to Date
      super(...(a.length ? a : [clock()]));
    }
  };
  return RealDate;
}

/** Same sequence on both: ids and timestamps differ, so results are compared by shape. */
function build(SM, messages) {
  const sm = SM.SessionManager.inMemory("/tmp/mem");
  const ids = [];
  for (const m of messages) ids.push(sm.appendMessage(m));
  ids.push(sm.appendThinkingLevelChange("high"));
  ids.push(sm.appendModelChange("prov", "model-x"));
  ids.push(sm.appendCustomEntry("kind", { a: 1 }));
  ids.push(sm.appendCustomMessageEntry("kind", "shown", true, { d: 1 }));
  ids.push(sm.appendSessionInfo("  a name\n"));
  ids.push(sm.appendMessage({ role: "user", content: "last", timestamp: 9 }));
  return { sm, ids };
}

/** Entries with ids replaced by their position and clock-made timestamps (ISO strings, epoch ms) dropped. */
function shape(entries, ids) {
  const pos = new Map(ids.map((id, i) => [id, i]));
  return JSON.parse(
    JSON.stringify(entries, (k, v) => {
      if ((k === "timestamp" || k === "labelTimestamp") && (typeof v === "string" || v > 1e12)) return undefined;
      if (
        (k === "id" || k === "parentId" || k === "targetId" || k === "firstKeptEntryId" || k === "fromId") &&
        typeof v === "string"
      )
        return pos.has(v) ? `#${pos.get(v)}` : "?";
      return v;
    }),
  );
}

const messages = [
  { role: "user", content: "hello", timestamp: 1 },
  { role: "assistant", content: [{ type: "text", text: "hi" }], provider: "p", model: "m", timestamp: 2 },
  {
    role: "toolResult",
    toolCallId: "t",
    toolName: "read",
    content: [{ type: "text", text: "x" }],
    isError: false,
    timestamp: 3,
  },
  { role: "bashExecution", command: "ls", output: "", exitCode: 0, timestamp: 4 },
  { content: "no role", timestamp: 5 },
  {
    role: "user",
    content: "with toJSON",
    toJSON() {
      return { role: "assistant", content: "as json", timestamp: 6 };
    },
  },
  { role: new String("user"), content: "boxed role", timestamp: 7 },
  ["an", "array"],
];

describe("in-memory appends by fields", () => {
  it("keeps no text in Rust for any of these types, whatever the message's shape", () => {
    const { sm } = build(nat, messages);
    const n = sm._native;
    const texts = sm.getEntries().map((_, i) => n.line(i + 1));
    expect(texts.length).toBe(messages.length + 6);
    expect(texts.every((t) => t === null)).toBe(true);
  });

  it("context, tree, branch, entries and names equal the reference", () => {
    const r = build(ref, messages);
    const n = build(nat, messages);
    expect(shape(n.sm.getEntries(), n.ids)).toEqual(shape(r.sm.getEntries(), r.ids));
    expect(shape(n.sm.buildSessionContext(), n.ids)).toEqual(shape(r.sm.buildSessionContext(), r.ids));
    expect(shape(n.sm.getBranch(), n.ids)).toEqual(shape(r.sm.getBranch(), r.ids));
    expect(shape(n.sm.getTree(), n.ids)).toEqual(shape(r.sm.getTree(), r.ids));
    expect(n.sm.getSessionName()).toBe(r.sm.getSessionName());
    for (const [i, id] of n.ids.entries())
      expect(shape(n.sm.getEntry(id), n.ids)).toEqual(shape(r.sm.getEntry(r.ids[i]), r.ids));
  });

  it("createBranchedSession and branch over field-appended entries equal the reference", () => {
    for (const at of [1, 3, 9]) {
      const r = build(ref, messages);
      const n = build(nat, messages);
      r.sm.branch(r.ids[at]);
      n.sm.branch(n.ids[at]);
      r.sm.appendMessage({ role: "user", content: "on the branch", timestamp: 10 });
      n.sm.appendMessage({ role: "user", content: "on the branch", timestamp: 10 });
      expect(r.sm.createBranchedSession(r.sm.getLeafId())).toBe(undefined);
      expect(n.sm.createBranchedSession(n.sm.getLeafId())).toBe(undefined);
      const norm = (sm) => sm.getEntries().map((e) => [e.type, e.message?.content ?? e.customType ?? e.name ?? null]);
      expect(norm(n.sm)).toEqual(norm(r.sm));
      expect(n.sm.buildSessionContext().messages.length).toBe(r.sm.buildSessionContext().messages.length);
    }
  });

  it("values JSON cannot hold are kept as objects, as by the reference (it never serializes in memory)", () => {
    const big = { role: "user", content: "big", n: 10n, timestamp: 1 };
    const r = ref.SessionManager.inMemory("/tmp/mem");
    const n = nat.SessionManager.inMemory("/tmp/mem");
    r.appendMessage(big);
    n.appendMessage(big);
    expect(n.getEntries()[0].message).toBe(big);
    expect(n.buildSessionContext().messages[0]).toBe(r.buildSessionContext().messages[0]);
  });

  it("a persisted session writes every line; the given fields index it as a scan of the file does", () => {
    const dir = tmp("psn-mem-persisted-");
    const sm = nat.SessionManager.create("/tmp/mem", dir);
    for (const m of messages) sm.appendMessage(m);
    sm.appendThinkingLevelChange("low");
    sm.appendModelChange("prov", "model-y");
    sm.appendCustomEntry("kind", { a: 1 });
    sm.appendCustomMessageEntry("kind", "shown", false);
    sm.appendSessionInfo("persisted name");
    sm.branch(sm.getEntries()[2].id);
    sm.appendMessage({ role: "user", content: "branch", timestamp: 11 });
    const lines = readFileSync(sm.getSessionFile(), "utf8").trim().split("\n");
    expect(lines.length).toBe(sm.getEntries().length + 1);
    sm.getEntries().forEach((e, i) => {
      expect(lines[i + 1]).toBe(JSON.stringify(e));
      expect(sm._native.line(i + 1)).toBe(lines[i + 1]);
    });
    // A reopened session indexes the same file by scanning it (objects compared as JSON: the
    // live ones are the caller's, with a boxed role and a toJSON).
    const again = nat.SessionManager.open(sm.getSessionFile(), dir, "/tmp/mem");
    const j = (x) => JSON.parse(JSON.stringify(x));
    expect(j(again.getTree())).toEqual(j(sm.getTree()));
    expect(j(again.buildSessionContext())).toEqual(j(sm.buildSessionContext()));
    expect(again.getSessionName()).toBe(sm.getSessionName());
    expect(again._native.hasConversation()).toBe(sm._native.hasConversation());
    rmSync(dir, { recursive: true, force: true });
  });
});

/** Shape-compare what each read gives on both sides. */
function reads(sm, ids) {
  return {
    entries: shape(sm.getEntries(), ids),
    branch: shape(sm.getBranch(), ids),
    tree: shape(sm.getTree(), ids),
    context: shape(sm.buildSessionContext(), ids),
    name: sm.getSessionName(),
    count: sm.getEntryCount(),
  };
}

describe("queued in-memory appends", () => {
  // Each read below is the first use of Rust after a run of queued appends: it must hand the
  // queue over before it answers.
  const firstReads = {
    getBranch: (sm) => shape(sm.getBranch(), sm.__ids),
    getTree: (sm) => shape(sm.getTree(), sm.__ids),
    getEntries: (sm) => shape(sm.getEntries(), sm.__ids),
    getChildren: (sm) => shape(sm.getChildren(sm.__ids[1]), sm.__ids),
    getLabel: (sm) => sm.getLabel(sm.__ids[2]),
    buildSessionContext: (sm) => shape(sm.buildSessionContext(), sm.__ids),
    getSessionName: (sm) => sm.getSessionName(),
    getEntryCount: (sm) => sm.getEntryCount(),
    getHeader: (sm) => sm.getHeader().type,
    "getEntry of a queued id": (sm) => shape(sm.getEntry(sm.__ids[3]), sm.__ids),
    "branch to a queued id, then getBranch": (sm) => {
      sm.branch(sm.__ids[2]);
      return shape(sm.getBranch(), sm.__ids);
    },
    "appendLabelChange on a queued id": (sm) => {
      sm.appendLabelChange(sm.__ids[1], "L");
      return sm.getLabel(sm.__ids[1]);
    },
    "appendCompaction over queued entries": (sm) => {
      sm.appendCompaction("sum", sm.__ids[2], 5);
      return shape(sm.buildSessionContext(), sm.__ids);
    },
    createBranchedSession: (sm) => {
      sm.createBranchedSession(sm.__ids[3]);
      return sm.getEntries().map((e) => e.type);
    },
  };
  for (const [name, read] of Object.entries(firstReads)) {
    it(`${name} sees every queued append`, () => {
      const r = build(ref, messages);
      const n = build(nat, messages);
      r.sm.__ids = r.ids;
      n.sm.__ids = n.ids;
      expect(n.sm._q.length).toBeGreaterThan(0);
      expect(read(n.sm)).toEqual(read(r.sm));
      expect(reads(n.sm, n.ids)).toEqual(reads(r.sm, r.ids));
      expect(n.sm._q.length).toBe(0);
    });
  }

  it("appends after a branch, interleaved with reads, equal the reference at every step", () => {
    const r = ref.SessionManager.inMemory("/tmp/mem");
    const n = nat.SessionManager.inMemory("/tmp/mem");
    const rIds = [];
    const nIds = [];
    for (let k = 0; k < 60; k++) {
      const m = { role: k % 2 ? "assistant" : "user", content: `m${k}`, timestamp: k };
      rIds.push(r.appendMessage(m));
      nIds.push(n.appendMessage(m));
      if (k % 7 === 3) {
        rIds.push(r.appendCustomEntry("c", { k }));
        nIds.push(n.appendCustomEntry("c", { k }));
      }
      if (k % 11 === 5) {
        r.branch(rIds[k >> 1]);
        n.branch(nIds[k >> 1]);
      }
      if (k % 5 === 0) expect(reads(n, nIds)).toEqual(reads(r, rIds));
      expect(nIds.indexOf(n.getLeafId())).toBe(rIds.indexOf(r.getLeafId()));
    }
    expect(reads(n, nIds)).toEqual(reads(r, rIds));
  });

  it("10,000 queued appends are handed over in one call and read back in order", () => {
    const n = nat.SessionManager.inMemory("/tmp/mem");
    const ids = [];
    for (let k = 0; k < 10_000; k++)
      ids.push(n.appendMessage({ role: k % 2 ? "assistant" : "user", content: `m${k}`, timestamp: k }));
    expect(n._q.length).toBe(10_000);
    const branch = n.getBranch();
    expect(branch.map((e) => e.id)).toEqual(ids);
    expect(n._q.length).toBe(0);
    expect(n.buildSessionContext().messages.length).toBe(10_000);
    expect(new Set(ids).size).toBe(10_000);
  });

  it("what Rust indexes is taken at append (id, parent, type, role); odd values never break a read", () => {
    const r = ref.SessionManager.inMemory("/tmp/mem");
    const n = nat.SessionManager.inMemory("/tmp/mem");
    const ids = (sm) => {
      const a = sm.appendMessage({ role: "user", content: "a", timestamp: 1 });
      const b = sm.appendMessage({ role: "assistant", content: "b", timestamp: 2 });
      // A caller renames the leaf entry before anything reads: the reference keyed it by the
      // id it was appended with, and so do we.
      sm.getLeafEntry().id = "renamed";
      return [a, b];
    };
    const [ra, rb] = ids(r);
    const [na, nb] = ids(n);
    expect(n.getEntry("renamed")).toBe(r.getEntry("renamed"));
    expect(n.getEntry(nb).message.content).toBe(r.getEntry(rb).message.content);
    expect(n.getBranch(nb).length).toBe(r.getBranch(rb).length);
    expect(n.getBranch(na).length).toBe(r.getBranch(ra).length);
    // Type and parent changed while still queued, a message whose role getter throws: Rust
    // indexes each entry as it was appended (as a persisted session indexes the line it
    // wrote, and as for entries already handed over), so the walks follow the parent it was
    // appended with (the reference's follow the live parentId 42, found nowhere); the
    // objects handed back are the caller's, changed; nothing throws.
    const boom = new Proxy(
      {},
      {
        get() {
          throw new Error("no role here");
        },
      },
    );
    const more = (sm) => {
      const c = sm.appendCustomEntry("k", {});
      sm.getEntry(c).type = "no-such-type";
      sm.getEntry(c).parentId = 42;
      const d = sm.appendMessage(boom);
      return [c, d];
    };
    more(r);
    const [nc, nd] = more(n);
    expect(n._q.length).toBeGreaterThan(0);
    expect(n.getEntries().length).toBe(r.getEntries().length);
    expect(n.getEntries()[2]).toBe(n.getEntry(nc));
    expect(n.getEntry(nc)).toMatchObject({ type: "no-such-type", parentId: 42 });
    const branch = n.getBranch();
    expect(branch.length).toBe(4);
    for (const [k, id] of [na, nb, nc, nd].entries()) expect(branch[k]).toBe(n.getEntry(id));
    expect(n.getBranch(nc).length).toBe(3);
    // getTree() is built from the objects themselves, as the reference's.
    expect(n.getTree().length).toBe(r.getTree().length);
    expect(n.getLeafId()).toBe(nd);
    expect(() => n.buildSessionContext()).toThrow(/no role here/);
    expect(() => r.buildSessionContext()).toThrow(/no role here/);
  });

  it("ids with a newline (a stubbed randomUUID) travel as a list", async () => {
    const crypto = (await import("node:crypto")).default;
    const { syncBuiltinESMExports } = await import("node:module");
    const real = crypto.randomUUID;
    let i = 0;
    crypto.randomUUID = () => `a\nb${String(i++).padStart(5, "0")}-0000-4000-8000-000000000000`;
    syncBuiltinESMExports();
    try {
      const n = nat.SessionManager.inMemory("/tmp/mem");
      const ids = [n.appendMessage({ role: "user", content: "x", timestamp: 1 }), n.appendCustomEntry("k", {})];
      expect(ids.every((id) => id.includes("\n"))).toBe(true);
      expect(n.getBranch().map((e) => e.id)).toEqual(ids);
      expect(n.getEntry(ids[1]).type).toBe("custom");
    } finally {
      crypto.randomUUID = real;
      syncBuiltinESMExports();
    }
  });

  it("appendFieldsBatch refuses a malformed batch whole, and refuses persisted sessions", () => {
    const s = new binding.NativeSession(false);
    s.replaceLines(JSON.stringify({ type: "session", version: 3, id: "h", timestamp: "t", cwd: "/" }));
    const u8 = (...x) => Uint8Array.from(x);
    const i32 = (...x) => Int32Array.from(x);
    expect(() => s.appendFieldsBatch(u8(0, 0), u8(0), "a\nb", i32(-1, -2), [])).toThrow(/2 kinds, 1 roles/);
    expect(() => s.appendFieldsBatch(u8(0, 9), u8(0, 0), "a\nb", i32(-1, -2), [])).toThrow(/unknown kind 9/);
    expect(() => s.appendFieldsBatch(u8(0, 0), u8(0, 0), "a\nb", i32(-1, 3), [])).toThrow(/parent code 3/);
    expect(() => s.appendFieldsBatch(u8(0), u8(0), "a", i32(-2), [])).toThrow(/parent code -2/);
    expect(s.length).toBe(1);
    expect(s.appendFieldsBatch(u8(0, 1), u8(0, 4), ["a", "b"], i32(-1, 0), ["a"])).toBe(1);
    expect(s.length).toBe(3);
    expect(s.leafKey()).toBe("b");
    expect(() => s.appendFieldsBatch(u8(0), u8(5), "c", i32(-1), [])).toThrow(/unknown role 5/);
    expect(s.length).toBe(3);
    const p = new binding.NativeSession(true);
    expect(() => p.appendFieldsBatch(u8(0), u8(0), "a", i32(-1), [])).toThrow(/persisted session/);
  });

  it("the codes are the binding's enums: named values, and a code outside them is refused", () => {
    const { FieldKind, FieldRole, BatchParent, ID_TAKEN, IDS_NOT_SPLIT } = binding;
    expect(FieldKind).toEqual({
      Message: 0,
      Custom: 1,
      SessionInfo: 2,
      ThinkingLevelChange: 3,
      ModelChange: 4,
      CustomMessage: 5,
      Usage: 6,
    });
    expect(FieldRole).toEqual({ User: 0, Assistant: 1, ToolResult: 2, System: 3, Other: 4 });
    expect(BatchParent).toEqual({ Null: -1, Previous: -2 });
    const s = new binding.NativeSession(false);
    s.replaceLines(JSON.stringify({ type: "session", version: 3, id: "h", timestamp: "t", cwd: "/" }));
    expect(s.appendFields(FieldKind.Message, "a", null, FieldRole.Assistant, false, null)).toBe(1);
    expect(s.appendFields(FieldKind.Custom, "a", "a", FieldRole.Other, false, null)).toBe(ID_TAKEN);
    expect(() => s.appendFields(7, "b", "a", FieldRole.User, false, null)).toThrow(/FieldKind/);
    expect(() => s.appendFields(FieldKind.Message, "b", "a", 5, false, null)).toThrow(/FieldRole/);
    expect(s.length).toBe(2);
    const batch = [Uint8Array.of(FieldKind.Usage), Uint8Array.of(FieldRole.Other)];
    expect(s.appendFieldsBatch(...batch, "x\ny", Int32Array.of(BatchParent.Previous), [])).toBe(IDS_NOT_SPLIT);
    expect(s.appendFieldsBatch(...batch, "b", Int32Array.of(0), ["a"])).toBe(2);
    expect(s.contextPlan().modelFrom).toBe(1);
    expect(s.branchInto("nope", JSON.stringify({ type: "session", id: "h2" }))).toBe(binding.Branched.NotFound);
  });
});

describe("append timestamps and buildSessionContext's messages", () => {
  it("timestamps follow the Date of each append, as the reference's (formatted once per millisecond)", () => {
    const RealDate = globalThis.Date;
    let now = Date.UTC(2026, 0, 2, 3, 4, 5, 6);
    // A replaced Date, as a test's fake clock would be: both sides see the same times.
    // @ts-expect-error a stand-in Date class (a fake clock), not a complete DateConstructor
    globalThis.Date = class extends RealDate {
      constructor(...a) {
        // @ts-expect-error forwards whatever the caller passed to Date
        super(...(a.length ? a : [now]));
      }
      static now() {
        return now;
      }
    };
    try {
      const stamps = (SM) => {
        now = Date.UTC(2026, 0, 2, 3, 4, 5, 6);
        const sm = SM.inMemory("/tmp/mem");
        const out = [];
        for (const step of [0, 0, 1, 0, 999, -1000, 0]) {
          now += step;
          sm.appendMessage({ role: "user", content: "t", timestamp: 1 });
          out.push(sm.getLeafEntry().timestamp);
        }
        return out;
      };
      const n = stamps(nat.SessionManager);
      expect(n).toEqual(stamps(ref.SessionManager));
      expect(n).toEqual([
        "2026-01-02T03:04:05.006Z",
        "2026-01-02T03:04:05.006Z",
        "2026-01-02T03:04:05.007Z",
        "2026-01-02T03:04:05.007Z",
        "2026-01-02T03:04:06.006Z",
        "2026-01-02T03:04:05.006Z",
        "2026-01-02T03:04:05.006Z",
      ]);
      // An invalid date throws as toISOString does, on both sides.
      now = Number.NaN;
      expect(() =>
        nat.SessionManager.inMemory("/tmp/mem").appendMessage({ role: "user", content: "x", timestamp: 1 }),
      ).toThrow(RangeError);
      expect(() =>
        ref.SessionManager.inMemory("/tmp/mem").appendMessage({ role: "user", content: "x", timestamp: 1 }),
      ).toThrow(RangeError);
    } finally {
      globalThis.Date = RealDate;
    }
  });

  it("buildSessionContext gives buildSessionProjection's messages (edits, compactions, odd contents) as the reference", () => {
    const run = (SM) => {
      const sm = SM.inMemory("/tmp/mem");
      const ids = [];
      ids.push(sm.appendMessage({ role: "user", content: "u1", timestamp: 1 }));
      ids.push(sm.appendMessage({ role: "assistant", content: null, timestamp: 2, provider: "p", model: "m" }));
      ids.push(sm.appendMessage({ role: "system", content: undefined, timestamp: 3 }));
      ids.push(sm.appendMessage({ role: "toolResult", content: [{ type: "text", text: "r" }], timestamp: 4 }));
      sm.appendContextEdit(ids[0], { content: "edited u1" });
      sm.appendContextEdit(ids[3], { content: "edited result" });
      sm.appendCustomMessageEntry("kind", "shown", true, { d: 1 });
      sm.appendCompaction("first summary", ids[1], 10);
      ids.push(sm.appendMessage({ role: "user", content: "u2", timestamp: 5 }));
      sm.appendContextEdit(ids[4], null);
      ids.push(sm.appendMessage({ role: "custom", customType: "x", content: null, timestamp: 6 }));
      sm.appendThinkingLevelChange("high");
      const projection = sm.buildSessionProjection();
      const ctx = sm.buildSessionContext();
      expect(ctx.messages).toEqual(projection.messages);
      expect(ctx.thinkingLevel).toBe(projection.thinkingLevel);
      expect(ctx.model).toEqual(projection.model);
      // A message entry without edit and with content is handed back as the very object.
      const plain = sm.getEntry(ids[5]).message;
      expect(ctx.messages.includes(plain) || plain.content == null).toBe(true);
      return ctx;
    };
    // Same clock on both sides: compaction and custom messages carry the append's time.
    const RealDate = installClock(() => Date.UTC(2026, 0, 2));
    try {
      expect(run(nat.SessionManager)).toEqual(run(ref.SessionManager));
    } finally {
      globalThis.Date = RealDate;
    }
    // A message entry whose message is null fails the same way on both sides.
    const broken = (SM) => {
      const sm = SM.inMemory("/tmp/mem");
      sm.appendMessage(null);
      return () => sm.buildSessionContext();
    };
    let refError;
    try {
      broken(ref.SessionManager)();
    } catch (e) {
      refError = e;
    }
    expect(refError).toBeInstanceOf(TypeError);
    expect(broken(nat.SessionManager)).toThrow(refError.message);
  });
});

describe("buildSessionContext over queued appends, without a hand-over", () => {
  /** Run `steps(sm)` on both sides under one fixed clock; compare the contexts by shape. */
  function both(steps, { queuedAfter = true } = {}) {
    const RealDate = installClock(() => Date.UTC(2026, 0, 2));
    try {
      const out = {};
      for (const [name, SM] of [
        ["ref", ref.SessionManager],
        ["nat", nat.SessionManager],
      ]) {
        const sm = SM.inMemory("/tmp/mem");
        const ids = [];
        steps(sm, ids);
        const pending = name === "nat" ? sm._q.length : 0;
        out[name] = {
          context: shape(sm.buildSessionContext(), ids),
          projection: shape(sm.buildSessionProjection(), ids),
          entries: shape(sm.buildContextEntries(), ids),
        };
        if (name === "nat") {
          expect(pending).toBeGreaterThan(0);
          // Nothing was handed over when the queue extends Rust's leaf as it is.
          if (queuedAfter) expect(sm._q.length).toBe(pending);
          // ... and the same context once everything is in Rust.
          void sm._native;
          expect(sm._q.length).toBe(0);
          expect(shape(sm.buildSessionContext(), ids)).toEqual(out.nat.context);
        }
      }
      expect(out.nat).toEqual(out.ref);
      return out.nat;
    } finally {
      globalThis.Date = RealDate;
    }
  }
  const u = (text) => ({ role: "user", content: text, timestamp: 1 });
  const a = (text, model = "m") => ({
    role: "assistant",
    content: [{ type: "text", text }],
    provider: "p",
    model,
    timestamp: 2,
  });

  it("a fresh session: messages, settings and custom messages, all queued", () => {
    const r = both((sm, ids) => {
      ids.push(sm.appendMessage(u("one")), sm.appendThinkingLevelChange("high"), sm.appendMessage(a("two", "m1")));
      ids.push(
        sm.appendModelChange("prov", "m2"),
        sm.appendCustomEntry("k", { x: 1 }),
        sm.appendCustomMessageEntry("k", "shown", true),
      );
      ids.push(sm.appendSessionInfo("name"), sm.appendMessage(u("three")));
    });
    expect(r.context.messages.length).toBe(4);
    expect(r.context.thinkingLevel).toBe("high");
    expect(r.context.model).toEqual({ provider: "prov", modelId: "m2" });
  });

  it("after a compaction, context edits and a branch summary that Rust holds", () => {
    both((sm, ids) => {
      ids.push(sm.appendMessage(u("one")), sm.appendMessage(a("two")), sm.appendMessage(u("three")));
      sm.appendContextEdit(ids[2], { content: "three, edited" });
      ids.push(sm.appendCompaction("summary", ids[1], 100));
      ids.push(sm.appendMessage(a("four", "m4")));
      sm.appendContextEdit(ids[4], null);
      sm.appendThinkingLevelChange("low");
      // Queued from here on.
      ids.push(
        sm.appendMessage(u("five")),
        sm.appendMessage(a("six")),
        sm.appendCustomMessageEntry("k", [{ type: "text", text: "c" }], false),
      );
    });
  });

  it("after a branch and after resetLeaf (the queue starts at a mid-tree leaf, or at null)", () => {
    both((sm, ids) => {
      ids.push(sm.appendMessage(u("one")), sm.appendMessage(a("two")), sm.appendMessage(u("three")));
      sm.branch(ids[1]);
      ids.push(sm.appendMessage(u("three'")), sm.appendModelChange("p", "b"));
    });
    both((sm, ids) => {
      ids.push(sm.appendMessage(u("one")), sm.appendThinkingLevelChange("high"));
      void sm.getEntries();
      sm.resetLeaf();
      ids.push(sm.appendMessage(u("root again")), sm.appendMessage(a("two")));
    });
  });

  it("hands the queue over when a context edit Rust holds targets a queued id", async () => {
    const crypto = (await import("node:crypto")).default;
    const { syncBuiltinESMExports } = await import("node:module");
    const real = crypto.randomUUID;
    const header = { type: "session", version: 3, id: "s", timestamp: "2026-01-01T00:00:00.000Z", cwd: "/tmp/mem" };
    const preloaded = () => [
      header,
      { type: "message", id: "aaaaaaaa", parentId: null, timestamp: "2026-01-01T00:00:01.000Z", message: u("one") },
      // An edit of an id that does not exist yet (a file may hold one).
      {
        type: "context_edit",
        id: "bbbbbbbb",
        parentId: "aaaaaaaa",
        timestamp: "2026-01-01T00:00:02.000Z",
        targetId: "cccccccc",
        replacement: { content: "edited later" },
      },
    ];
    crypto.randomUUID = () => "cccccccc-0000-4000-8000-000000000000";
    syncBuiltinESMExports();
    try {
      const run = (SM) => {
        const sm = SM.inMemory("/tmp/mem", undefined, preloaded());
        sm.appendMessage(u("two"));
        return sm;
      };
      const n = run(nat.SessionManager);
      const r = run(ref.SessionManager);
      expect(n.getLeafId()).toBe("cccccccc");
      expect(n._q.length).toBe(1);
      const ctx = n.buildSessionContext();
      expect(n._q.length).toBe(0);
      expect(ctx).toEqual(r.buildSessionContext());
      expect(ctx.messages.map((m) => m.content)).toEqual(["one", "edited later"]);
    } finally {
      crypto.randomUUID = real;
      syncBuiltinESMExports();
    }
  });
});

describe("queued appends and every other operation, seeded random sequences", () => {
  it("contexts, projections and branches equal the reference's after every step (300 sequences)", () => {
    let seed = 12345;
    const rnd = (n) => {
      seed = (seed * 1103515245 + 12345) % 2147483648;
      return seed % n;
    };
    const RealDate = installClock(() => Date.UTC(2026, 0, 2));
    // Count the contexts built over a queue without handing it over (the path under test).
    const proto = nat.SessionManager.prototype;
    const queuedPlan = proto._queuedPlan;
    const seen = { without: 0, handedOver: 0 };
    proto._queuedPlan = function () {
      const plan = queuedPlan.call(this);
      if (this._q.length) seen[plan ? "without" : "handedOver"]++;
      return plan;
    };
    try {
      for (let s = 0; s < 300; s++) {
        const sides = [ref.SessionManager, nat.SessionManager].map((SM) => ({ sm: SM.inMemory("/tmp/mem"), ids: [] }));
        const plan = [];
        for (let step = 0; step < 40; step++) plan.push([rnd(100), rnd(1000)]);
        for (const [op, x] of plan) {
          for (const side of sides) {
            const { sm, ids } = side;
            const pick = () => (ids.length ? ids[x % ids.length] : null);
            const onBranch = () => {
              const b = sm
                .getBranch()
                .filter((e) => e.type === "message" && ["user", "assistant", "toolResult"].includes(e.message.role));
              return b.length ? b[x % b.length].id : null;
            };
            if (op < 30) ids.push(sm.appendMessage({ role: "user", content: `u${x}`, timestamp: x }));
            else if (op < 50)
              ids.push(
                sm.appendMessage({
                  role: "assistant",
                  content: [{ type: "text", text: `a${x}` }],
                  provider: "p",
                  model: `m${x % 3}`,
                  timestamp: x,
                }),
              );
            else if (op < 55) ids.push(sm.appendThinkingLevelChange(["low", "high"][x % 2]));
            else if (op < 60) ids.push(sm.appendModelChange("q", `n${x % 4}`));
            else if (op < 64) ids.push(sm.appendCustomMessageEntry("k", `c${x}`, x % 2 === 0));
            else if (op < 67) ids.push(sm.appendCustomEntry("k", { x }));
            else if (op < 72 && pick() !== null) sm.branch(pick());
            else if (op < 74) sm.resetLeaf();
            else if (op < 78 && onBranch() !== null)
              sm.appendContextEdit(onBranch(), x % 3 ? { content: `e${x}` } : null);
            else if (op < 82 && onBranch() !== null) ids.push(sm.appendCompaction(`sum${x}`, onBranch(), x));
            else if (op < 85 && pick() !== null) ids.push(sm.branchWithSummary(pick(), `bs${x}`));
            else if (op < 88 && pick() !== null) ids.push(sm.appendLabelChange(pick(), `l${x}`));
          }
          const [r, n] = sides;
          if (op % 3 === 0 || op >= 88) {
            const got = {
              ctx: shape(n.sm.buildSessionContext(), n.ids),
              entries: shape(n.sm.buildContextEntries(), n.ids),
            };
            const want = {
              ctx: shape(r.sm.buildSessionContext(), r.ids),
              entries: shape(r.sm.buildContextEntries(), r.ids),
            };
            expect(got).toEqual(want);
          }
          if (op >= 95) expect(shape(n.sm.getBranch(), n.ids)).toEqual(shape(r.sm.getBranch(), r.ids));
        }
        expect(shape(sides[1].sm.buildSessionProjection(), sides[1].ids)).toEqual(
          shape(sides[0].sm.buildSessionProjection(), sides[0].ids),
        );
      }
      expect(seen.without).toBeGreaterThan(1000);
    } finally {
      globalThis.Date = RealDate;
      proto._queuedPlan = queuedPlan;
    }
  });
});

describe("queued contexts: review findings (session 9)", () => {
  const H = { type: "session", version: 3, id: "s", timestamp: "2026-01-01T00:00:00.000Z", cwd: "/tmp/mem" };
  const at = (s) => `2026-01-01T00:00:0${s}.000Z`;
  const msg = (role, content, extra = {}) => ({ role, content, timestamp: 1, ...extra });
  const show = (c) => ({
    messages: c.messages.map((m) => m.content ?? m.summary),
    thinkingLevel: c.thinkingLevel,
    model: c.model,
  });
  const sides = [
    ["ref", ref.SessionManager],
    ["nat", nat.SessionManager],
  ];

  it("a queue whose first parent is a falsy id: the walk ends there, as the reference's", () => {
    for (const id of [0, "", false, undefined]) {
      const out = {};
      for (const [name, SM] of sides) {
        const sm = SM.inMemory("/tmp/mem", undefined, [
          H,
          { type: "message", id, parentId: null, timestamp: at(1), message: msg("user", "old") },
        ]);
        sm.appendMessage(msg("user", "new"));
        out[name] = { ctx: show(sm.buildSessionContext()), entries: sm.buildContextEntries().length };
      }
      expect(out.nat).toEqual(out.ref);
      expect(out.nat.ctx.messages).toEqual(["new"]);
    }
  });

  it("entries not yet parsed before the queue are read without handing the queue over mid-call", () => {
    const dir = tmp("psn-mem-lazy-");
    const file = `${dir}/plain.jsonl`;
    const lines = [
      H,
      { type: "thinking_level_change", id: "t1", parentId: null, timestamp: at(1), thinkingLevel: "low" },
      { type: "message", id: "a1", parentId: "t1", timestamp: at(2), message: msg("user", "old") },
      {
        type: "message",
        id: "a2",
        parentId: "a1",
        timestamp: at(3),
        message: msg("assistant", "old reply", { provider: "p", model: "m" }),
      },
      {
        type: "compaction",
        id: "c1",
        parentId: "a2",
        timestamp: at(4),
        summary: "sum",
        firstKeptEntryId: "a2",
        tokensBefore: 5,
      },
    ];
    writeFileSync(file, `${lines.map((e) => JSON.stringify(e)).join("\n")}\n`);
    const run = (SM, touch) => {
      const sm = SM.inMemory("/tmp/mem");
      sm.setSessionFile(file);
      if (touch) touch(sm);
      sm.appendThinkingLevelChange("high");
      sm.appendModelChange("q", "new-model");
      sm.appendMessage(msg("user", "new"));
      return {
        first: show(sm.buildSessionContext()),
        second: show(sm.buildSessionContext()),
        entries: sm.buildContextEntries().length,
      };
    };
    // Nothing parsed; or only the selected entries parsed (the thinking entry Rust points at is not).
    const touchTwo = (sm) => {
      sm.getEntry("c1");
      sm.getEntry("a2");
    };
    for (const touch of [undefined, touchTwo]) {
      const r = run(ref.SessionManager, touch);
      const n = run(nat.SessionManager, touch);
      expect(n).toEqual(r);
      expect(n.first.messages).toEqual(["sum", "old reply", "new"]);
      expect(n.first.thinkingLevel).toBe("high");
      expect(n.first.model).toEqual({ provider: "q", modelId: "new-model" });
    }
    rmSync(dir, { recursive: true, force: true });
  });

  it("message getters are read in the reference's order (role first)", () => {
    const cases = [
      {
        content: "x",
        timestamp: 1,
        get role() {
          throw new Error("role getter");
        },
      },
      {
        role: "custom",
        timestamp: 1,
        get content() {
          throw new Error("content getter");
        },
      },
    ];
    for (const make of [() => cases[0], () => cases[1]]) {
      const out = {};
      for (const [name, SM] of sides) {
        const sm = SM.inMemory("/tmp/mem");
        sm.appendMessage(msg("user", "hi"));
        sm.appendMessage(make());
        try {
          out[name] = `ok ${sm.buildSessionContext().messages.length}`;
        } catch (e) {
          out[name] = `throws ${e.message}`;
        }
      }
      expect(out.nat).toBe(out.ref);
    }
  });

  it("a replaced or spied toISOString is called on every append, as by the reference", () => {
    const T = Date.UTC(2026, 0, 2);
    const RealDate = installClock(() => T);
    const realIso = RealDate.prototype.toISOString;
    try {
      const out = {};
      for (const [name, SM] of sides) {
        const sm = SM.inMemory("/tmp/mem");
        const a = sm.getEntry(sm.appendMessage(msg("user", "a"))).timestamp;
        let n = 0;
        RealDate.prototype.toISOString = () => `mocked-${++n}`;
        const b = sm.getEntry(sm.appendMessage(msg("user", "b"))).timestamp;
        const c = sm.getEntry(sm.appendMessage(msg("user", "c"))).timestamp;
        RealDate.prototype.toISOString = realIso;
        out[name] = [a, b, c];
      }
      expect(out.nat).toEqual(out.ref);
      expect(out.nat).toEqual(["2026-01-02T00:00:00.000Z", "mocked-1", "mocked-2"]);
      // A Date class of its own, without getTime: its toISOString is what counts.
      // @ts-expect-error a stand-in Date class (a fake clock), not a complete DateConstructor
      globalThis.Date = class {
        toISOString() {
          return "2030-01-01T00:00:00.000Z";
        }
        static now() {
          return 0;
        }
      };
      expect(nat.SessionManager.inMemory("/tmp/mem").getHeader().timestamp).toBe(
        ref.SessionManager.inMemory("/tmp/mem").getHeader().timestamp,
      );
    } finally {
      RealDate.prototype.toISOString = realIso;
      globalThis.Date = RealDate;
    }
  });

  it("a session whose last entry has a null id has a null leaf and an empty context", () => {
    const entries = () => [
      H,
      { type: "message", id: "a", parentId: null, timestamp: at(1), message: msg("user", "a") },
      { type: "message", id: null, parentId: "a", timestamp: at(2), message: msg("user", "b") },
    ];
    const out = {};
    for (const [name, SM] of sides) {
      const sm = SM.inMemory("/tmp/mem", undefined, entries());
      out[name] = { leaf: sm.getLeafId(), ctx: show(sm.buildSessionContext()), branch: sm.getBranch().length };
    }
    expect(out.nat).toEqual(out.ref);
    expect(out.nat.ctx.messages).toEqual([]);
  });
});
