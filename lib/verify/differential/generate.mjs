// The differential harness: one side (A: pi, B: ours), the random values the operations take,
// and the fixture session files written identically on both sides.
import path from "node:path";
import { defineOwn, materialize } from "./values.mjs";

// ---------------------------------------------------------------------------------------------
// Sides
// ---------------------------------------------------------------------------------------------

export class Side {
  constructor(label, mod, root, ids, sids, skip, persisted) {
    this.label = label;
    this.mod = mod;
    this.root = root;
    this.dir = path.join(root, "sessions");
    this.agentDir = path.join(root, "agent");
    this.ids = ids;
    this.sids = sids;
    this.skip = skip;
    this.persisted = persisted;
    this.sm = undefined;
    this.files = [];
    this.fileCache = { path: undefined, content: undefined, lines: undefined };
    /** Memo of canon(entry) and canon(entry.message) keyed by entry object (entries are immutable once appended). */
    this.entryCache = new WeakMap();
    this.dirCache = new Map();
    this.refs = null;
  }
  id(aId) {
    return this.label === "A" ? aId : this.ids.toB(aId);
  }
  path(ref) {
    switch (ref.kind) {
      case "rel":
        return path.join(this.dir, ref.value);
      case "known":
        return this.files[ref.value];
      case "current":
        return this.sm.getSessionFile();
      case "abs":
        return ref.value;
    }
    throw new Error(`bad PathRef ${ref.kind}`);
  }
  mat(v) {
    return materialize(v, this);
  }
  exec(fn) {
    process.env.PI_CODING_AGENT_DIR = this.agentDir;
    try {
      return { ok: true, value: fn(this) };
    } catch (error) {
      return { ok: false, error };
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Value generators
// ---------------------------------------------------------------------------------------------

export const STRINGS = [
  "",
  "hello",
  "Hello, world!",
  "héllo wörld ñ",
  "日本語のテキスト",
  "emoji 😀👍🏽👨‍👩‍👧",
  "\ud83d",
  "lone \ud83d high",
  "lone \udc00 low",
  "\udc00\ud83d",
  "line1\nline2",
  "crlf\r\nline",
  "tab\tsep",
  "nul\u0000byte",
  "\u2028\u2029",
  'quote " and \\ backslash',
  "  padded  ",
  "<script>&amp;</script>",
  "\u007f\u0080\u00ff",
  "🏳️‍🌈",
  "Ωmega",
  "a".repeat(300),
  "x\ny\r\nz\rw",
];
export const KEYS = [
  "a",
  "b",
  "z",
  "10",
  "2",
  "0",
  "-1",
  "01",
  "1.5",
  "4294967294",
  "4294967295",
  "9007199254740993",
  "constructor",
  "toString",
  "",
  "ключ",
  "😀",
  "type",
  "id",
  "timestamp",
];
// biome-ignore-start lint/suspicious/noApproximativeNumericConstant: 3.14159 is number text to round-trip, not an approximation of π.
export const NUMBERS = [
  0,
  1,
  -1,
  42,
  123456,
  0.1 + 0.2,
  1e21,
  1e-7,
  5e-324,
  -0,
  2 ** 53,
  2 ** 53 + 2,
  -(2 ** 31),
  1.5,
  3.14159,
  1e300,
  100,
];
// biome-ignore-end lint/suspicious/noApproximativeNumericConstant: end of NUMBERS

export function genString(rng) {
  if (rng.bool(0.15)) {
    const n = rng.range(1, 40);
    let s = "";
    for (let i = 0; i < n; i++) s += String.fromCharCode(rng.pick([32, 48, 65, 97, 0x3b1, 0x4e00]) + rng.int(26));
    return s;
  }
  if (rng.bool(0.01)) return "long ".repeat(rng.range(500, 3000));
  return rng.pick(STRINGS);
}

export function genNumber(rng) {
  if (rng.bool(0.02)) return rng.pick([NaN, Infinity, -Infinity]);
  if (rng.bool(0.5)) return rng.int(1000);
  return rng.pick(NUMBERS);
}

export function genValue(rng, depth = 0) {
  const k = rng.weighted([
    [2, "null"],
    [2, "bool"],
    [4, "num"],
    [5, "str"],
    [depth < 3 ? 3 : 0, "arr"],
    [depth < 3 ? 4 : 0, "obj"],
    [0.5, "undef"],
  ]);
  switch (k) {
    case "null":
      return null;
    case "bool":
      return rng.bool();
    case "num":
      return genNumber(rng);
    case "str":
      return genString(rng);
    case "undef":
      return undefined;
    case "arr": {
      const n = rng.int(4);
      const a = [];
      for (let i = 0; i < n; i++) a.push(genValue(rng, depth + 1));
      return a;
    }
    default:
      return genObject(rng, depth + 1);
  }
}

export function genObject(rng, depth = 0) {
  const o = {};
  if (rng.bool(0.15)) {
    // integer-like keys inserted out of numeric order
    o["10"] = 1;
    o["2"] = 2;
    o.b = 3;
  }
  const n = rng.int(4);
  for (let i = 0; i < n; i++) defineOwn(o, rng.bool(0.01) ? "__proto__" : rng.pick(KEYS), genValue(rng, depth + 1));
  return o;
}

export function genTs(rng, ctx) {
  // Always far below MS_THRESHOLD so user supplied timestamps are compared by value.
  return rng.bool(0.9) ? 1_000_000 + ctx.tsCounter++ * 1000 : rng.pick([0, 1, 999_999_999_999]);
}

export function genTextBlock(rng) {
  const b = { type: "text", text: genString(rng) };
  if (rng.bool(0.05)) b.textSignature = genString(rng);
  if (rng.bool(0.03)) b.extra = undefined;
  return b;
}
export function genImageBlock(rng) {
  return {
    type: "image",
    data: rng.pick(["iVBORw0KGgo=", "", "R0lGODlh"]),
    mimeType: rng.pick(["image/png", "image/gif"]),
  };
}

export function genUserContent(rng) {
  const k = rng.weighted([
    [6, "str"],
    [4, "blocks"],
    [0.4, "null"],
    [0.4, "empty"],
    [0.2, "nested"],
  ]);
  if (k === "str") return genString(rng);
  if (k === "null") return null;
  if (k === "empty") return [];
  if (k === "nested") return [[genTextBlock(rng)], [[1, [2, [3]]]]];
  const n = rng.range(1, 3);
  const out = [];
  for (let i = 0; i < n; i++) out.push(rng.bool(0.8) ? genTextBlock(rng) : genImageBlock(rng));
  return out;
}

export function genAssistantContent(rng) {
  if (rng.bool(0.05)) return null;
  if (rng.bool(0.05)) return genString(rng);
  const n = rng.range(0, 3);
  const out = [];
  for (let i = 0; i < n; i++) {
    const t = rng.weighted([
      [5, "text"],
      [2, "thinking"],
      [2, "toolCall"],
    ]);
    if (t === "text") out.push(genTextBlock(rng));
    else if (t === "thinking")
      out.push({ type: "thinking", thinking: genString(rng), thinkingSignature: rng.bool() ? "sig" : undefined });
    else
      out.push({
        type: "toolCall",
        id: `call_${rng.int(100)}`,
        name: rng.pick(["read", "bash", "edit"]),
        arguments: genObject(rng, 1),
      });
  }
  return out;
}

export function genUsage(rng) {
  if (rng.bool(0.05)) return genObject(rng, 1);
  return {
    input: genNumber(rng),
    output: genNumber(rng),
    cacheRead: rng.int(100),
    cacheWrite: rng.int(100),
    totalTokens: genNumber(rng),
    cost: { input: genNumber(rng), output: 0.001, cacheRead: 0, cacheWrite: 0, total: genNumber(rng) },
  };
}

export const PROVIDERS = ["anthropic", "openai", "google", "", "prövider"];
export const MODELS = ["claude-sonnet-4", "gpt-5", "gemini-2.5-pro", "", "model\nwith newline"];

export function genTool(rng) {
  return {
    name: rng.pick(["read", "bash", "edit", "write", "grep"]),
    description: genString(rng),
    parameters: {
      type: "object",
      properties: rng.bool() ? { path: { type: "string" } } : {},
      required: rng.bool() ? ["path"] : undefined,
    },
  };
}

export function genMessage(rng, ctx) {
  const role = rng.weighted([
    [30, "user"],
    [24, "assistant"],
    [12, "toolResult"],
    [5, "bashExecution"],
    [6, "custom"],
    [10, "system"],
    [1, "weird"],
  ]);
  /** @type {Record<string, any>} */
  let m;
  switch (role) {
    case "user":
      m = { role, content: genUserContent(rng), timestamp: genTs(rng, ctx) };
      break;
    case "assistant":
      m = {
        role,
        content: genAssistantContent(rng),
        api: rng.pick(["anthropic-messages", "openai-responses"]),
        provider: rng.bool(0.95) ? rng.pick(PROVIDERS) : undefined,
        model: rng.bool(0.95) ? rng.pick(MODELS) : undefined,
        usage: genUsage(rng),
        stopReason: rng.pick(["stop", "toolUse", "length", "error", "aborted"]),
        timestamp: genTs(rng, ctx),
      };
      if (rng.bool(0.1)) m.errorMessage = genString(rng);
      break;
    case "toolResult":
      m = {
        role,
        toolCallId: `call_${rng.int(100)}`,
        toolName: rng.pick(["read", "bash", "edit"]),
        content: rng.bool(0.9) ? genUserContent(rng) : undefined,
        details: rng.bool(0.3) ? genValue(rng) : undefined,
        isError: rng.bool(0.2),
        timestamp: genTs(rng, ctx),
      };
      break;
    case "bashExecution":
      m = {
        role,
        command: rng.pick(["ls -la", "echo 😀", "cat \ud83d", ""]),
        output: genString(rng),
        exitCode: rng.pick([0, 1, 127, null, undefined]),
        cancelled: rng.bool(0.1),
        truncated: rng.bool(0.1),
        fullOutputPath: rng.bool(0.1) ? "/tmp/out.txt" : undefined,
        timestamp: genTs(rng, ctx),
      };
      if (rng.bool(0.2)) m.excludeFromContext = rng.bool();
      break;
    case "custom":
      m = {
        role,
        customType: rng.pick(["ext-a", "ext-b", ""]),
        content: genUserContent(rng),
        display: rng.bool(),
        details: rng.bool(0.4) ? genValue(rng) : undefined,
        timestamp: genTs(rng, ctx),
      };
      break;
    case "system": {
      m = {
        role,
        content: rng.weighted([
          [6, genString(rng)],
          [2, [genTextBlock(rng), genImageBlock(rng)]],
          [0.5, null],
        ]),
      };
      if (rng.bool(0.4)) {
        const sections = {};
        const n = rng.range(1, 3);
        for (let i = 0; i < n; i++)
          sections[rng.pick(["env", "tools", "10", "2", "skills", "agents"])] = rng.bool(0.75) ? genString(rng) : null;
        m.sections = sections;
      }
      if (rng.bool(0.3)) m.toolsAdded = [genTool(rng), ...(rng.bool() ? [genTool(rng)] : [])];
      if (rng.bool(0.15)) m.toolsRemoved = [{ name: rng.pick(["read", "bash", "edit"]) }];
      if (rng.bool(0.9)) m.timestamp = genTs(rng, ctx);
      break;
    }
    default: {
      const r = rng.pick(["compactionSummary", "branchSummary", "hookMessage", "mystery"]);
      m = {
        role: r,
        summary: genString(rng),
        content: rng.bool() ? genString(rng) : undefined,
        timestamp: genTs(rng, ctx),
      };
    }
  }
  if (rng.bool(0.08)) m.extra = genObject(rng, 1);
  if (rng.bool(0.04)) m.undefinedField = undefined;
  return m;
}

export function genContentForEdit(rng) {
  return rng.bool(0.5) ? genString(rng) : [genTextBlock(rng), ...(rng.bool(0.3) ? [genImageBlock(rng)] : [])];
}

export const MISSING_IDS = ["missing-id", "deadbeef", "", "root", "00000000", "ROOT", "nope nope"];
export const SESSION_NAMES = [
  "My session",
  "  spaced name  ",
  "multi\nline",
  "crlf\r\nname",
  "\r\n",
  "",
  "   ",
  "😀 emoji name",
  "tab\tname",
  "\ud83d lone",
  "a\n\n\nb",
];
export const LABELS = ["bookmark", "⭐ star", "", undefined, "multi\nline label", "\ud83d", "  x  "];
export const THINKING = ["off", "minimal", "low", "medium", "high", "xhigh", "", "ünï"];

// ---------------------------------------------------------------------------------------------
// Fixture session files (written identically on both sides, with literal ids)
// ---------------------------------------------------------------------------------------------

export const FIX_TS = "2024-01-02T03:04:05.678Z";
export function fixtureContent(kind, cwd) {
  const L = (o) => JSON.stringify(o);
  const header = (extra = {}) => ({
    type: "session",
    version: 3,
    id: "fixture-session",
    timestamp: FIX_TS,
    cwd,
    ...extra,
  });
  const user = (id, parentId, text) => ({
    type: "message",
    id,
    parentId,
    timestamp: FIX_TS,
    message: { role: "user", content: text, timestamp: 1234 },
  });
  switch (kind) {
    case "empty":
      return "";
    case "garbage":
      return 'this is not json\n{"also": "not a session"}\n';
    case "headerOnly":
      return `${L(header())}\n`;
    case "noTrailingNewline":
      return `${L(header())}\n${L(user("f0000001", null, "first"))}\n${L(user("f0000002", "f0000001", "second"))}`;
    case "malformedLines":
      return `\n${L(header())}\n{bad json\n\n   \n${L(user("f0000001", null, "kept"))}\n[1,2\n${L({ type: "label", id: "f0000002", parentId: "f0000001", timestamp: FIX_TS, targetId: "f0000001", label: "fx" })}\n`;
    case "crlf":
      return `${L(header())}\r\n${L(user("f0000001", null, "crlf"))}\r\n`;
    case "bom":
      return `\ufeff${L(header())}\n${L(user("f0000001", null, "bom"))}\n`;
    case "orphans":
      return `${L(header())}\n${L(user("f0000001", "ffffffff", "orphan"))}\n${L(user("f0000002", "f0000001", "child"))}\n${L(user("f0000003", null, "root2"))}\n`;
    case "v1":
      return `${L({ type: "session", id: "fixture-v1", timestamp: FIX_TS, cwd })}\n${L({ type: "message", timestamp: FIX_TS, message: { role: "user", content: "v1 hello", timestamp: 1 } })}\n${L({ type: "message", timestamp: FIX_TS, message: { role: "hookMessage", customType: "x", content: "hook", display: true, timestamp: 2 } })}\n${L({ type: "compaction", timestamp: FIX_TS, summary: "sum", firstKeptEntryIndex: 2, tokensBefore: 10 })}\n${L({ type: "message", timestamp: FIX_TS, message: { role: "assistant", content: [{ type: "text", text: "ok" }], provider: "p", model: "m", timestamp: 3 } })}\n`;
    case "v2":
      return `${L({ type: "session", version: 2, id: "fixture-v2", timestamp: FIX_TS, cwd })}\n${L(user("f0000001", null, "v2"))}\n${L({ type: "message", id: "f0000002", parentId: "f0000001", timestamp: FIX_TS, message: { role: "hookMessage", customType: "x", content: "hook", display: false, timestamp: 2 } })}\n`;
    case "notHeaderFirst":
      return `${L(user("f0000001", null, "no header"))}\n${L(header())}\n`;
    case "noCwd":
      return `${L({ type: "session", version: 3, id: "fixture-nocwd", timestamp: FIX_TS })}\n${L(user("f0000001", null, "x"))}\n`;
    case "labelsAndEdits":
      return [
        L(header({ parentSession: "/somewhere/parent.jsonl" })),
        L(user("f0000001", null, "target")),
        L({
          type: "label",
          id: "f0000002",
          parentId: "f0000001",
          timestamp: FIX_TS,
          targetId: "f0000001",
          label: "L1",
        }),
        L({
          type: "context_edit",
          id: "f0000003",
          parentId: "f0000002",
          timestamp: FIX_TS,
          targetId: "f0000001",
          replacement: { content: "edited" },
        }),
        L({ type: "label", id: "f0000004", parentId: "f0000003", timestamp: FIX_TS, targetId: "f0000001" }),
        L({ type: "session_info", id: "f0000005", parentId: "f0000004", timestamp: FIX_TS, name: "  fixture name " }),
        L({
          type: "message",
          id: "f0000006",
          parentId: "f0000005",
          timestamp: FIX_TS,
          message: { role: "system", content: null },
        }),
        L({ type: "message", id: "f0000007", parentId: "f0000006", timestamp: FIX_TS, message: { role: "assistant" } }),
        "",
      ].join("\n");
  }
  throw new Error(`unknown fixture ${kind}`);
}
export const FIXTURES = [
  "empty",
  "garbage",
  "headerOnly",
  "noTrailingNewline",
  "malformedLines",
  "crlf",
  "bom",
  "orphans",
  "v1",
  "v2",
  "notHeaderFirst",
  "noCwd",
  "labelsAndEdits",
];
