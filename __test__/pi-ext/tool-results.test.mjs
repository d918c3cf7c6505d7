// continuePoint: where /sessions continues from a tool-call or tool-result hit (the turn's last
// result, on the session's branch where it passes), on sessions built with this package's
// SessionManager. The rpc test in sessions-flow.test.mjs runs it through the real pi bin.
import { describe, expect, it } from "vitest";
import { continuePoint } from "../../extensions/lib/tool-results.mjs";
import { SessionManager, scriptedAssistant } from "./helpers.mjs";

const assistant = (content) => scriptedAssistant(content, { stopReason: "toolUse" });
const call = (id) => ({ type: "toolCall", id, name: "bash", arguments: { command: `echo ${id}` } });
const result = (id) => ({
  role: "toolResult",
  toolCallId: id,
  toolName: "bash",
  content: [{ type: "text", text: id }],
  isError: false,
  timestamp: 1,
});

describe("continuePoint", () => {
  it("a call hit, or a result hit, continues after the turn's last result; a plain hit stays", () => {
    const sm = SessionManager.inMemory("/p");
    const u = sm.appendMessage({ role: "user", content: "go", timestamp: 1 });
    const a = sm.appendMessage(assistant([call("c1"), call("c2")]));
    const r1 = sm.appendMessage(result("c1"));
    const r2 = sm.appendMessage(result("c2"));
    sm.appendMessage(assistant([{ type: "text", text: "done" }]));
    expect(continuePoint(sm, a)).toEqual({ id: r2, results: 2, missing: 0 });
    expect(continuePoint(sm, r1)).toEqual({ id: r2, results: 2, missing: 0 });
    expect(continuePoint(sm, r2)).toEqual({ id: r2, results: 2, missing: 0 });
    expect(continuePoint(sm, u)).toEqual({ id: u, results: 0, missing: 0 });
    expect(continuePoint(sm, "nope")).toEqual({ id: "nope", results: 0, missing: 0 });
  });

  it("follows the session's branch where the results branch; says how many calls have no result", () => {
    const sm = SessionManager.inMemory("/p");
    sm.appendMessage({ role: "user", content: "go", timestamp: 1 });
    const a = sm.appendMessage(assistant([call("c1"), call("c2")]));
    const r1 = sm.appendMessage(result("c1"));
    // another branch off the call: a second result for c1, then the session's leaf goes back
    sm.branch(a);
    const other = sm.appendMessage(result("c1"));
    const r2 = sm.appendMessage(result("c2"));
    expect(continuePoint(sm, a)).toEqual({ id: r2, results: 2, missing: 0 });
    expect(sm.getBranch().map((e) => e.id)).toContain(other);
    sm.branch(r1);
    // on r1's branch c2 was never answered
    expect(continuePoint(sm, a)).toEqual({ id: r1, results: 1, missing: 1 });
  });
});
