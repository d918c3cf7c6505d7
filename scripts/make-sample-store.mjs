#!/usr/bin/env node
// Generates examples/sample-store/: a small, deterministic pi session store
// (sessions/--home-user-demo--/*.jsonl) with branches, labels, a compaction (with a
// retainedTail checkpoint), a branch summary, a context edit and a session name. Written entry by entry with fixed ids and
// timestamps, so the output is byte-identical on every run.
//
//   node scripts/make-sample-store.mjs [OUT_DIR]      (default: examples/sample-store)
//
// The SessionBuilder is also used by the CLI tests to make temporary stores.
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

/** Builds one session file's lines in memory; ids and clock are deterministic. */
export class SessionBuilder {
  /** @param {{ id?: string, cwd?: string, start?: string, seed?: number, parentSession?: string }} [options] */
  constructor({ id, cwd = "/home/user/demo", start = "2026-01-05T09:00:00.000Z", seed = 1, parentSession } = {}) {
    this.clock = Date.parse(start);
    this.seed = seed >>> 0;
    this.ids = new Set();
    this.leaf = null;
    this.entries = [];
    this.header = { type: "session", version: 3, id, timestamp: new Date(this.clock).toISOString(), cwd };
    if (parentSession) this.header.parentSession = parentSession;
  }
  nextId() {
    for (;;) {
      // xorshift32: deterministic 8-hex-digit ids, like pi's randomUUID().slice(0, 8)
      let x = this.seed;
      x ^= x << 13;
      x >>>= 0;
      x ^= x >>> 17;
      x ^= x << 5;
      x >>>= 0;
      this.seed = x;
      const id = x.toString(16).padStart(8, "0");
      if (!this.ids.has(id)) {
        this.ids.add(id);
        return id;
      }
    }
  }
  tick(seconds = 7) {
    this.clock += seconds * 1000;
    return this.clock;
  }
  add(type, fields, { parentId = this.leaf } = {}) {
    const ms = this.tick();
    const entry = { type, id: this.nextId(), parentId, timestamp: new Date(ms).toISOString(), ...fields };
    this.entries.push(entry);
    this.leaf = entry.id;
    return entry.id;
  }
  user(text) {
    return this.add("message", {
      message: { role: "user", content: [{ type: "text", text }], timestamp: this.clock + 7000 },
    });
  }
  assistant(
    text,
    { toolCalls = [], model = "claude-sonnet-4-5", provider = "anthropic", input = 1200, output = 300 } = {},
  ) {
    const content = [];
    if (text) content.push({ type: "text", text });
    for (const tc of toolCalls) content.push({ type: "toolCall", id: tc.id, name: tc.name, arguments: tc.arguments });
    const totalTokens = input + output;
    const cost = { input: input * 3e-6, output: output * 15e-6, cacheRead: 0, cacheWrite: 0 };
    cost.total = cost.input + cost.output;
    return this.add("message", {
      message: {
        role: "assistant",
        content,
        api: provider === "openai" ? "openai-responses" : "anthropic-messages",
        provider,
        model,
        usage: { input, output, cacheRead: 0, cacheWrite: 0, totalTokens, cost },
        stopReason: toolCalls.length ? "toolUse" : "stop",
        timestamp: this.clock + 7000,
      },
    });
  }
  toolResult(toolCallId, toolName, text, isError = false) {
    return this.add("message", {
      message: {
        role: "toolResult",
        toolCallId,
        toolName,
        content: [{ type: "text", text }],
        isError,
        timestamp: this.clock + 7000,
      },
    });
  }
  model(provider, modelId) {
    return this.add("model_change", { provider, modelId });
  }
  thinking(level) {
    return this.add("thinking_level_change", { thinkingLevel: level });
  }
  label(targetId, label) {
    return this.add("label", { targetId, label });
  }
  name(name) {
    return this.add("session_info", { name });
  }
  /**
   * A compaction. With `retainTail`, it also carries the newer harnesses' retainedTail
   * checkpoint: the messages from firstKeptEntryId on, materialized (readers that only
   * know firstKeptEntryId build the same context).
   */
  compaction(summary, firstKeptEntryId, tokensBefore, { retainTail = false } = {}) {
    const fields = { summary, firstKeptEntryId, tokensBefore };
    if (retainTail) {
      const byId = new Map(this.entries.map((e) => [e.id, e]));
      const path = [];
      for (let cur = byId.get(this.leaf); cur; cur = byId.get(cur.parentId)) path.unshift(cur);
      const from = path.findIndex((e) => e.id === firstKeptEntryId);
      fields.retainedTail = path
        .slice(from)
        .filter((e) => e.type === "message")
        .map((e) => e.message);
    }
    return this.add("compaction", fields);
  }
  contextEdit(targetId, replacement) {
    return this.add("context_edit", { targetId, replacement });
  }
  customMessage(customType, text) {
    return this.add("custom_message", { customType, content: text, display: true });
  }
  /** Move the leaf back to `id` (pi's branch()). */
  branch(id) {
    this.leaf = id;
  }
  /** pi's branchWithSummary(): a branch_summary child of `id` describing the abandoned path. */
  branchWithSummary(id, summary) {
    const fromId = this.leaf ?? "root";
    return this.add("branch_summary", { fromId, summary }, { parentId: id });
  }
  fileName() {
    return `${this.header.timestamp.replace(/[:.]/g, "-")}_${this.header.id}.jsonl`;
  }
  text() {
    return [this.header, ...this.entries].map((e) => `${JSON.stringify(e)}\n`).join("");
  }
  write(dir) {
    mkdirSync(dir, { recursive: true });
    const path = join(dir, this.fileName());
    writeFileSync(path, this.text());
    return path;
  }
}

/** The sample sessions; returns their builders (write them with `.write(dir)`). */
export function sampleSessions() {
  // 1. Named session with two branches and labels.
  const a = new SessionBuilder({
    id: "019b8d1e-5a00-7c3e-9a41-2f0c6d1e0a01",
    start: "2026-01-05T09:00:00.000Z",
    seed: 11,
  });
  a.model("anthropic", "claude-sonnet-4-5");
  a.thinking("medium");
  const q1 = a.user("The JSON parser in src/parse.ts crashes on a trailing comma. Can you fix it?");
  a.assistant("Let me look at the parser first.", {
    toolCalls: [{ id: "call_read_1", name: "read", arguments: { path: "src/parse.ts" } }],
  });
  a.toolResult("call_read_1", "read", "export function parse(s: string) {\n  // ...\n}\n");
  const fix1 = a.assistant(
    "The tokenizer treats `,]` as an error. I changed it to skip a trailing comma before `]` and `}`.",
    { input: 2400, output: 420 },
  );
  a.label(fix1, "first-fix");
  a.user("Please also add a test for it.");
  a.assistant("Added `trailing comma` cases to test/parse.test.ts; all 14 tests pass.", { input: 2900, output: 380 });
  // Branch: re-ask the first question differently.
  a.branch(q1);
  a.user("Actually, make trailing commas a clear error message instead of a crash.");
  const alt = a.assistant("Now `parse()` throws `SyntaxError: trailing comma at 3:14` instead of crashing.", {
    input: 2100,
    output: 350,
  });
  a.label(alt, "chosen");
  a.name("Parser: trailing commas");

  // 2. Long session with a compaction and a context edit.
  const b = new SessionBuilder({
    id: "019b8e40-1200-7a11-8b22-3c4d5e6f0a02",
    start: "2026-01-06T14:30:00.000Z",
    seed: 22,
  });
  b.model("openai", "gpt-5");
  b.user("Set up CI for this repository: lint, test and build on every push.");
  b.assistant("I'll add a GitHub Actions workflow.", {
    provider: "openai",
    model: "gpt-5",
    toolCalls: [
      { id: "call_w1", name: "write", arguments: { path: ".github/workflows/ci.yml", content: "name: CI\n" } },
    ],
  });
  b.toolResult("call_w1", "write", "Wrote .github/workflows/ci.yml");
  b.assistant("The workflow runs `npm ci`, `npm run lint`, `npm test` and `npm run build`.", {
    provider: "openai",
    model: "gpt-5",
  });
  const keep = b.user("Cache the npm dependencies too.");
  b.assistant("Added `cache: npm` to actions/setup-node; cold runs take 1m40s, warm ones 35s.", {
    provider: "openai",
    model: "gpt-5",
  });
  b.compaction(
    "The user asked for CI (lint, test, build on push). A GitHub Actions workflow was written to .github/workflows/ci.yml and npm caching was enabled.",
    keep,
    48210,
    { retainTail: true },
  );
  const q2 = b.user("Now add a matrix for Node 20 and 22.");
  b.assistant("The job now runs on a `node: [20, 22]` matrix.", { provider: "openai", model: "gpt-5" });
  b.contextEdit(q2, { content: "Add a Node 20/22 matrix." });
  b.user("Thanks, that's all.");
  b.assistant("You're welcome!", { provider: "openai", model: "gpt-5", input: 800, output: 20 });

  // 3. Session with an abandoned branch summarised (branch_summary) and a custom message.
  const c = new SessionBuilder({
    id: "019b9a02-7f00-7d55-a1b2-4e5f60718a03",
    start: "2026-01-08T08:15:00.000Z",
    seed: 33,
  });
  const r = c.user("Rename the `util` module to `helpers` everywhere.");
  c.assistant("I'll start with a search for imports of `util`.", {
    toolCalls: [{ id: "call_b1", name: "bash", arguments: { command: "grep -rn \"from './util'\" src" } }],
  });
  c.toolResult("call_b1", "bash", "src/a.ts:1:import { x } from './util'\nsrc/b.ts:3:import { y } from './util'");
  c.assistant("Two files import it; renaming now.");
  c.branchWithSummary(r, "Tried a grep-based rename; abandoned in favour of the TypeScript language service rename.");
  c.customMessage("note", "Using tsserver rename for safety.");
  c.user("Use the language service rename instead.");
  c.assistant("Done with tsserver: 2 imports and 1 re-export updated, `tsc --noEmit` is clean.");

  // 4. A short fork of session 1 (parentSession in the header).
  const d = new SessionBuilder({
    id: "019b9b10-0000-7e00-8c00-5f6a7b8c9a04",
    start: "2026-01-09T17:45:00.000Z",
    seed: 44,
    parentSession:
      "/home/user/.pi/agent/sessions/--home-user-demo--/2026-01-05T09-00-00-000Z_019b8d1e-5a00-7c3e-9a41-2f0c6d1e0a01.jsonl",
  });
  d.user("What does the `chosen` parser change do for `[1,2,]`?");
  d.assistant("It throws `SyntaxError: trailing comma at 1:6`.");
  return [a, b, c, d];
}

export function writeSampleStore(outDir) {
  const dir = join(outDir, "sessions", "--home-user-demo--");
  rmSync(join(outDir, "sessions"), { recursive: true, force: true });
  return sampleSessions().map((s) => s.write(dir));
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");
  const out = resolve(process.argv[2] ?? join(root, "examples", "sample-store"));
  for (const p of writeSampleStore(out)) console.log(p);
}
