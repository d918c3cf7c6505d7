// Appends whose index fields JS knows exactly (type, id, parentId, role) hand them to Rust
// instead of having the line scanned. In-memory sessions send no text at all: the reference
// never serializes an entry it does not write, and neither do we. These tests check that the
// results still equal the reference's, for message shapes the fast path takes and for those it
// hands to the text path (toJSON, arrays, non-string roles), and through the operations that
// would read an entry's text (branching, context, tree, materialization).
import { describe, it, expect } from "vitest";
import { readFileSync, rmSync } from "node:fs";
import { ref, nat, tmp } from "./helpers.mjs";

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
      if (k === "timestamp" && (typeof v === "string" || v > 1e12)) return undefined;
      if ((k === "id" || k === "parentId" || k === "targetId" || k === "firstKeptEntryId") && typeof v === "string")
        return pos.has(v) ? `#${pos.get(v)}` : "?";
      return v;
    }),
  );
}

const messages = [
  { role: "user", content: "hello", timestamp: 1 },
  { role: "assistant", content: [{ type: "text", text: "hi" }], provider: "p", model: "m", timestamp: 2 },
  { role: "toolResult", toolCallId: "t", toolName: "read", content: [{ type: "text", text: "x" }], isError: false, timestamp: 3 },
  { role: "bashExecution", command: "ls", output: "", exitCode: 0, timestamp: 4 },
  { content: "no role", timestamp: 5 },
  { role: "user", content: "with toJSON", toJSON() { return { role: "assistant", content: "as json", timestamp: 6 }; } },
  { role: new String("user"), content: "boxed role", timestamp: 7 },
  ["an", "array"],
];

describe("in-memory appends by fields", () => {
  it("the fast path keeps no text in Rust, and only takes entries it can index exactly", () => {
    const { sm } = build(nat, messages);
    const n = sm._native;
    const texts = sm.getEntries().map((_, i) => n.line(i + 1));
    // Plain messages and the field-only types: no text. toJSON / boxed role / array: text.
    expect(texts.map((t) => t === null)).toEqual([
      true, true, true, true, true, false, false, false, true, true, true, true, true, true,
    ]);
  });

  it("context, tree, branch, entries and names equal the reference", () => {
    const r = build(ref, messages);
    const n = build(nat, messages);
    expect(shape(n.sm.getEntries(), n.ids)).toEqual(shape(r.sm.getEntries(), r.ids));
    expect(shape(n.sm.buildSessionContext(), n.ids)).toEqual(shape(r.sm.buildSessionContext(), r.ids));
    expect(shape(n.sm.getBranch(), n.ids)).toEqual(shape(r.sm.getBranch(), r.ids));
    expect(shape(n.sm.getTree(), n.ids)).toEqual(shape(r.sm.getTree(), r.ids));
    expect(n.sm.getSessionName()).toBe(r.sm.getSessionName());
    for (const [i, id] of n.ids.entries()) expect(shape(n.sm.getEntry(id), n.ids)).toEqual(shape(r.sm.getEntry(r.ids[i]), r.ids));
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
