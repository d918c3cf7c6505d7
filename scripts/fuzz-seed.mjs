#!/usr/bin/env node
// Writes a small seed corpus for the fuzz targets (fuzz/seeds/loader, fuzz/seeds/ops).
// Everything is generated here (deterministic PRNG); no fixture files are copied.
//
//   node scripts/fuzz-seed.mjs [outDir=fuzz/seeds]
import { mkdirSync, writeFileSync, rmSync } from "node:fs";
import { join } from "node:path";

const out = process.argv[2] ?? join(import.meta.dirname, "..", "fuzz", "seeds");

let state = 0x2545f491n;
function rand(n) {
  // xorshift32
  let x = Number(state & 0xffffffffn);
  x ^= x << 13;
  x >>>= 0;
  x ^= x >>> 17;
  x ^= x << 5;
  x >>>= 0;
  state = BigInt(x);
  return x % n;
}

const ts = (i) => new Date(Date.UTC(2024, 0, 1, 0, 0, i)).toISOString();
let counter = 0;
const newId = () => (++counter).toString(16).padStart(8, "0");

function header(id = "sess-" + newId()) {
  return { type: "session", version: 3, id, timestamp: ts(0), cwd: "/tmp/project" };
}

function message(parentId, role, text) {
  const m = { role, content: [{ type: "text", text }] };
  if (role === "assistant") Object.assign(m, { provider: "prov", model: "model-1", usage: { input: 3, output: 5 } });
  return { type: "message", id: newId(), parentId, timestamp: ts(counter), message: m };
}

function linear(n) {
  /** @type {object[]} */
  const lines = [header()];
  let parent = null;
  for (let i = 0; i < n; i++) {
    const e = message(parent, i % 2 ? "assistant" : "user", `turn ${i} ✓`);
    lines.push(e);
    parent = e.id;
  }
  return lines;
}

function branched() {
  const lines = linear(4);
  const fork = lines[2].id;
  const a = message(fork, "user", "alternative");
  const b = message(a.id, "assistant", "answer");
  lines.push(a, b);
  lines.push({ type: "label", id: newId(), parentId: b.id, timestamp: ts(99), targetId: fork, label: "fork point" });
  lines.push({ type: "label", id: newId(), parentId: b.id, timestamp: ts(99), targetId: fork, label: "" });
  lines.push({ type: "model_change", id: newId(), parentId: b.id, timestamp: ts(100), provider: "p2", modelId: "m2" });
  lines.push({
    type: "thinking_level_change",
    id: newId(),
    parentId: lines.at(-1).id,
    timestamp: ts(101),
    thinkingLevel: "high",
  });
  return lines;
}

function compacted() {
  const lines = linear(6);
  const kept = lines[4].id;
  const c = {
    type: "compaction",
    id: newId(),
    parentId: lines.at(-1).id,
    timestamp: ts(200),
    summary: "so far",
    firstKeptEntryId: kept,
    tokensBefore: 1234,
  };
  lines.push(c);
  const edit = {
    type: "context_edit",
    id: newId(),
    parentId: c.id,
    timestamp: ts(201),
    targetId: lines[5].id,
    replacement: "shorter",
  };
  lines.push(edit);
  lines.push(message(edit.id, "user", "after compaction"));
  lines.push({
    type: "compaction",
    id: newId(),
    parentId: lines.at(-1).id,
    timestamp: ts(202),
    summary: "tail",
    retainedTail: [],
  });
  lines.push({
    type: "branch_summary",
    id: newId(),
    parentId: lines.at(-1).id,
    timestamp: ts(203),
    fromId: kept,
    summary: "s",
  });
  lines.push({
    type: "custom",
    id: newId(),
    parentId: lines.at(-1).id,
    customType: "ext",
    data: { a: [1, 2, { b: null }] },
  });
  lines.push({
    type: "custom_message",
    id: newId(),
    parentId: lines.at(-1).id,
    customType: "ext",
    content: "x",
    display: true,
  });
  lines.push({ type: "session_info", id: newId(), parentId: lines.at(-1).id, name: "named" });
  return lines;
}

// Hostile shapes: cycles, self-parents, odd ids, duplicates, system messages, odd values.
function weird() {
  return [
    header(),
    { type: "message", id: "a", parentId: "b", message: { role: "user", content: "x" } },
    { type: "message", id: "b", parentId: "a", message: { role: "assistant", content: "y" } },
    { type: "message", id: "c", parentId: "c", message: { role: "system", content: "z" } },
    { type: "message", id: 0, parentId: null, message: { role: "toolResult" } },
    { type: "message", id: 1.0, parentId: 0, message: "not an object" },
    { type: "message", id: null, parentId: false },
    { type: "message", id: {}, parentId: [] },
    { type: "label", id: "l", parentId: "a", targetId: "a", label: 0 },
    { type: "message", id: "a", parentId: "c", message: { role: "user" } },
    { type: "weird_type", id: "", parentId: "" },
  ];
}

const enc = (lines) => lines.map((l) => (typeof l === "string" ? l : JSON.stringify(l))).join("\n") + "\n";

const loader = {
  "linear.jsonl": enc(linear(6)),
  "branched.jsonl": enc(branched()),
  "compacted.jsonl": enc(compacted()),
  "weird.jsonl": enc(weird()),
  // Raw-text edge cases the JSON scanner must judge like JSON.parse.
  "lexical.jsonl": enc([
    JSON.stringify(header()) + "\r",
    '  {"type":"message","id":"\\u0061","parentId":null,"message":{"role":"user","role":"assistant"}}  ',
    '{"type":"message","id":"x","id":"y","parentId":"\\ud800","message":{"role":"us\\u0065r"}}',
    '{"type":"label","targetId":"\\ud83d\\ude00","label":"\\u0000","__proto__":{"a":1}}',
    '{"n":[-0,1e400,1E-400,0.1,123456789012345678901234567890,-1.5e+3]}',
    '"a string line"',
    "0",
    "[]",
    "null",
    '{"unterminated": ',
    '{"trailing": 1,}',
    "{'single': 1}",
    '{"x": 01}',
    '{"ctl": "\t"}',
    "\u2028",
  ]),
  "torn.jsonl": enc(linear(2)).slice(0, -17),
  "invalid-utf8.jsonl": Buffer.concat([
    Buffer.from(JSON.stringify(header()) + "\n"),
    Buffer.from('{"type":"message","id":"'),
    Buffer.from([0xff, 0xfe, 0xed, 0xa0, 0x80, 0xc3]),
    Buffer.from('","parentId":null,"message":{"role":"user"}}\n'),
  ]),
  "deep.jsonl": '{"type":"custom","id":"d","data":' + "[".repeat(300) + "]".repeat(300) + "}\n",
};

// ops seeds are byte programs; a few hand-made shapes plus PRNG bytes.
const ops = {
  "appends.bin": Buffer.from([0, 1, 2, 3, 0, 5, 6, 7, 1, 9, 3, 4, 0, 0, 1, 2, 3, 0, 5, 6, 9, 6, 8, 1]),
  "cycles.bin": Buffer.from([0, 14, 0, 0, 0, 10, 0, 0, 1, 15, 1, 0, 10, 0, 0, 5, 0, 6, 0, 9, 0]),
  "labels.bin": Buffer.from([0, 20, 4, 0, 14, 1, 20, 3, 5, 4, 1, 14, 2, 6, 9, 8, 1]),
};
for (let k = 0; k < 5; k++) {
  ops[`random-${k}.bin`] = Buffer.from(Array.from({ length: 64 + rand(192) }, () => rand(256)));
}

/** @type {[string, Record<string, string | Buffer>][]} */
const seedSets = [
  ["loader", loader],
  ["ops", ops],
];
for (const [dir, files] of seedSets) {
  const d = join(out, dir);
  rmSync(d, { recursive: true, force: true });
  mkdirSync(d, { recursive: true });
  for (const [name, data] of Object.entries(files)) writeFileSync(join(d, name), data);
  console.log(`${d}: ${Object.keys(files).length} files`);
}
