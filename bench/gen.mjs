#!/usr/bin/env node
// Deterministic generator of realistic pi sessions in the on-disk format of
// @earendil-works/pi-coding-agent@1.6.0 (session JSONL, version 3).
//
//   node bench/gen.mjs            1/10/100 MB singles + store (1,000 x ~200 KB + 3 x 50-200 MB)
//   node bench/gen.mjs --big      ... plus the 1 GB single
//   node bench/gen.mjs --quick    only the 1 MB and 10 MB singles
//   node bench/gen.mjs --out DIR  output directory (default bench/data)
//   node bench/gen.mjs --images   only the 1 GB session full of base64 images:
//                                 bench/data/images/session-1gb-images.jsonl (~460 images among
//                                 normal text turns and compactions; own manifest in that folder)
//   node bench/gen.mjs --images --images-mb N   the same recipe at N MB (session-<N>mb-images.jsonl)
//
// Files are written through a buffered fd to "<file>.tmp" and renamed when complete.
// bench/data/manifest.json records every finished file's size (and the generator
// version); a file that exists with the recorded size is skipped.

import {
  closeSync,
  existsSync,
  mkdirSync,
  openSync,
  readFileSync,
  renameSync,
  statSync,
  utimesSync,
  writeFileSync,
  writeSync,
} from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { num, parseOptions } from "./lib.mjs";

/**
 * Session `i`'s id (uuid v7 layout, unique by construction: `i` in its last part) and file-name
 * stamp, for a session started at `startMs`; `r` is an `rng`.
 */
export function benchSessionName(r, startMs, i) {
  const hex = (n) => Array.from({ length: n }, () => "0123456789abcdef"[r(16)]).join("");
  const ms = startMs.toString(16).padStart(12, "0");
  const id = `${ms.slice(0, 8)}-${ms.slice(8)}-7${hex(3)}-8${hex(3)}-${i.toString(16).padStart(12, "0")}`;
  return { id, ts: new Date(startMs).toISOString().replace(/[:.]/g, "-") };
}

/** Deterministic small PRNG (xorshift32): `rng(seed)(n)` is an integer in [0, n). */
export function rng(seed) {
  let s = seed >>> 0 || 1;
  return (n) => {
    s ^= s << 13;
    s >>>= 0;
    s ^= s >>> 17;
    s ^= s << 5;
    s >>>= 0;
    return s % n;
  };
}

export const GEN_VERSION = 1;
const HERE = dirname(fileURLToPath(import.meta.url));
export const DEFAULT_DATA_DIR = join(HERE, "data");
const MB = 1024 * 1024;

// ---------------------------------------------------------------------------
// Seeded PRNG (sfc32) + helpers
// ---------------------------------------------------------------------------
function hashSeed(str) {
  let h = 1779033703 ^ str.length;
  for (let i = 0; i < str.length; i++) {
    h = Math.imul(h ^ str.charCodeAt(i), 3432918353);
    h = (h << 13) | (h >>> 19);
  }
  return () => {
    h = Math.imul(h ^ (h >>> 16), 2246822507);
    h = Math.imul(h ^ (h >>> 13), 3266489909);
    h ^= h >>> 16;
    return h >>> 0;
  };
}
function makeRng(seedStr) {
  const s = hashSeed(seedStr);
  let a = s(),
    b = s(),
    c = s(),
    d = s();
  const next = () => {
    a >>>= 0;
    b >>>= 0;
    c >>>= 0;
    d >>>= 0;
    let t = (a + b) | 0;
    a = b ^ (b >>> 9);
    b = (c + (c << 3)) | 0;
    c = (c << 21) | (c >>> 11);
    d = (d + 1) | 0;
    t = (t + d) | 0;
    c = (c + t) | 0;
    return (t >>> 0) / 4294967296;
  };
  for (let i = 0; i < 15; i++) next();
  const r = {
    next,
    int: (lo, hi) => lo + Math.floor(next() * (hi - lo + 1)), // inclusive
    pick: (arr) => arr[Math.floor(next() * arr.length)],
    chance: (p) => next() < p,
    // log-uniform size in [lo, hi]
    logSize: (lo, hi) => Math.round(Math.exp(Math.log(lo) + next() * (Math.log(hi) - Math.log(lo)))),
    hex: (n) => {
      let s = "";
      while (s.length < n) s += ((next() * 4294967296) >>> 0).toString(16).padStart(8, "0");
      return s.slice(0, n);
    },
  };
  return r;
}
function uuidv7(rng, ms) {
  const h = ms.toString(16).padStart(12, "0");
  const r = rng.hex(20);
  const variant = ((parseInt(r[3], 16) & 0x3) | 0x8).toString(16);
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-7${r.slice(0, 3)}-${variant}${r.slice(4, 7)}-${r.slice(8, 20)}`;
}

// ---------------------------------------------------------------------------
// Text corpora (built once per process from a fixed seed)
// ---------------------------------------------------------------------------
const WORDS = (
  "the a to of and in is it that for on with as this be are by not or from at can but should when we function " +
  "value error file session entry branch leaf parent tree test build cache index parse write read stream buffer " +
  "type interface module export import config path directory tool result message context model token compact " +
  "summary label fix bug update change refactor performance memory allocation native binding rust node async " +
  "promise callback handler request response server client query table column row schema migration version " +
  "check verify ensure handle return throw catch retry timeout limit offset length size count total missing " +
  "unexpected behavior works now instead because after before while then also just only maybe please thanks"
).split(" ");
const IDENT_PARTS = (
  "get set load save parse build make read write open close find list entry session leaf node tree branch " +
  "file path dir buf line chunk token model user tool call result error state cache index map id key value " +
  "count size offset total header info name text content message context summary"
).split(" ");
const KEYWORDS_LINE = [
  (r, id) => `const ${id()} = ${id()}.${id()}(${id()}, ${r.int(0, 4096)});`,
  (_r, id) => `let ${id()} = await ${id()}(${id()});`,
  (r, id) =>
    `if (${id()} ${r.pick(["===", "!==", ">", "<", ">="])} ${r.pick(["null", "undefined", String(r.int(0, 99)), '""'])}) {`,
  (_r, _id) => `}`,
  (_r, _id) => `} else {`,
  (r, id) => `return ${id()} ?? "${r.pick(WORDS)}-${r.pick(WORDS)}";`,
  (r, _id) => `// ${sentence(r, r.int(4, 14))}`,
  (r, id) =>
    `export function ${id()}(${id()}: string, ${id()}?: number): ${r.pick(["void", "string", "Promise<void>", "boolean"])} {`,
  (_r, id) => `import { ${id()}, ${id()} } from "./${id()}.js";`,
  (_r, id) => `for (const ${id()} of ${id()}.${id()}()) {`,
  (r, id) => `throw new Error(\`${sentence(r, r.int(3, 8))}: \${${id()}}\`);`,
  (r, id) => `${id()}.push({ type: "${r.pick(WORDS)}", id: ${id()}, parentId: ${id()} ?? null });`,
  (r, id) => `fn ${id()}(&mut self, ${id()}: &str) -> Result<${r.pick(["()", "usize", "String", "Vec<u8>"])}> {`,
  (_r, id) => `let ${id()} = ${id()}.iter().map(|x| x.${id()}()).collect::<Vec<_>>();`,
  (_r, _id) => ``,
];
function sentence(r, n) {
  let s = "";
  for (let i = 0; i < n; i++) s += (i ? " " : "") + r.pick(WORDS);
  return s.charAt(0).toUpperCase() + s.slice(1);
}
let CORPUS = null;
function corpus() {
  if (CORPUS) return CORPUS;
  const r = makeRng("corpus-v1");
  const id = () => {
    const n = r.int(1, 3);
    let s = r.pick(IDENT_PARTS);
    for (let i = 1; i < n; i++) {
      const p = r.pick(IDENT_PARTS);
      s += p[0].toUpperCase() + p.slice(1);
    }
    return s;
  };
  const code = [];
  let len = 0,
    depth = 0;
  while (len < 3 * MB) {
    const line = r.pick(KEYWORDS_LINE)(r, id);
    if (line.startsWith("}")) depth = Math.max(0, depth - 1);
    const l = "\t".repeat(depth) + line;
    if (line.endsWith("{")) depth = Math.min(6, depth + 1);
    code.push(l);
    len += l.length + 1;
  }
  const prose = [];
  len = 0;
  while (len < 1 * MB) {
    const p = [];
    const ns = r.int(1, 5);
    for (let i = 0; i < ns; i++) p.push(`${sentence(r, r.int(5, 22))}${r.pick([".", ".", ".", "?", "!", ":"])}`);
    const s = p.join(" ");
    prose.push(s);
    len += s.length + 1;
  }
  const grepLines = [];
  for (let i = 0; i < 20000; i++)
    grepLines.push(
      `src/${id()}/${id()}.${r.pick(["ts", "rs", "js", "md"])}:${r.int(1, 2000)}:${code[r.int(0, code.length - 1)]}`,
    );
  CORPUS = {
    code: code.join("\n"),
    prose: prose.join("\n"),
    grep: grepLines.join("\n"),
    b64: Buffer.from(Array.from({ length: 256 * 1024 }, () => r.int(0, 255))).toString("base64"),
    ident: id,
  };
  return CORPUS;
}
function slice(r, text, n) {
  if (n >= text.length) return text;
  let start = r.int(0, text.length - n - 1);
  const nl = text.indexOf("\n", start);
  if (nl !== -1 && nl < text.length - n) start = nl + 1;
  return text.slice(start, start + n);
}

// ---------------------------------------------------------------------------
// Session writer
// ---------------------------------------------------------------------------
class BufferedFile {
  constructor(path) {
    this.fd = openSync(path, "w");
    this.parts = [];
    this.pendingLen = 0;
    this.bytes = 0;
  }
  line(obj) {
    const s = `${JSON.stringify(obj)}\n`;
    this.parts.push(s);
    this.pendingLen += s.length;
    this.bytes += s.length; // ~bytes (corpus is ASCII)
    if (this.pendingLen > 4 * MB) this.flush();
  }
  flush() {
    if (this.parts.length) writeSync(this.fd, this.parts.join(""));
    this.parts = [];
    this.pendingLen = 0;
  }
  close() {
    this.flush();
    closeSync(this.fd);
  }
}

const MODELS = [
  ["anthropic", "claude-sonnet-4-5", "anthropic-messages"],
  ["anthropic", "claude-opus-4-1", "anthropic-messages"],
  ["openai", "gpt-5", "openai-responses"],
  ["google", "gemini-2.5-pro", "google-generative-ai"],
];
const THINKING = ["off", "minimal", "low", "medium", "high"];
const TOOLS = ["read", "bash", "edit", "write", "grep", "ls"];
const LABELS = ["checkpoint", "good state", "before refactor", "bug repro", "works", "todo", "review me"];

/** ~8 MB of random bytes as base64 (compressed image data is as random), built on first use. */
let IMAGE_B64 = null;
function imageCorpus() {
  if (IMAGE_B64) return IMAGE_B64;
  const r = makeRng("images-v1");
  const buf = Buffer.allocUnsafe(6 * MB);
  for (let i = 0; i < buf.length; i += 4) buf.writeUInt32LE((r.next() * 4294967296) >>> 0, i);
  IMAGE_B64 = buf.toString("base64");
  return IMAGE_B64;
}
const PNG_B64_HEAD = "iVBORw0KGgoAAAANSUhEUgAA"; // "\x89PNG\r\n\x1a\n" + IHDR chunk start, 18 bytes
/** One `{ type: "image" }` content block of about `chars` base64 characters (valid base64). */
function imageBlock(r, chars, mimeType) {
  const src = imageCorpus();
  const png = mimeType === "image/png";
  const n = Math.min(src.length - 4, Math.max(4, (chars >> 2) << 2));
  const start = r.int(0, (src.length - n) >> 2) << 2;
  const body = src.slice(start, start + n);
  return {
    type: "image",
    data: png ? PNG_B64_HEAD + body.slice(PNG_B64_HEAD.length) : `/9j/4AAQ${body.slice(8)}`,
    mimeType,
  };
}

/**
 * Write one session. Returns { bytes, entries, lastMs, images, imageBytes }.
 * opts: { seed, targetBytes, cwd, startMs, sessionId?, images? }
 * images (opt-in): { userChance, readChance, minChars, maxChars }: a user
 * prompt carries a pasted screenshot with probability userChance, a `read` tool call reads an
 * image file (pi's read tool answers "Read image file [mime]" + the image) with probability
 * readChance; base64 sizes are log-uniform in [minChars, maxChars]. Compactions are then spaced
 * by text bytes (image data excluded), as pi's token estimate counts an image as ~1,200 tokens.
 * Without it the random stream (and so every existing data set) is unchanged.
 */
export function writeSession(path, opts) {
  const r = makeRng(opts.seed);
  const C = corpus();
  const out = new BufferedFile(path);
  let nowMs = opts.startMs;
  const tick = (lo, hi) => (nowMs += r.int(lo, hi));
  const iso = () => new Date(nowMs).toISOString();
  const sessionId = opts.sessionId ?? uuidv7(r, nowMs);
  out.line({ type: "session", version: 3, id: sessionId, timestamp: iso(), cwd: opts.cwd });

  const ids = new Set();
  const newId = () => {
    for (;;) {
      const id = r.hex(8);
      if (!ids.has(id)) {
        ids.add(id);
        return id;
      }
    }
  };
  const path_ = []; // ids on the current branch, root..leaf
  const pathMeta = []; // parallel: entry type/role (for picking firstKept / branch points)
  const all = []; // every id (for labels)
  let leaf = null;
  let entries = 0;
  const emit = (entry, kind) => {
    entry.parentId = leaf;
    out.line(entry);
    leaf = entry.id;
    path_.push(entry.id);
    pathMeta.push(kind);
    all.push(entry.id);
    entries++;
  };
  const base = (type) => {
    tick(50, 4000);
    return { type, id: newId(), parentId: null, timestamp: iso() };
  };

  let [provider, model, api] = r.pick(MODELS);
  let thinking = r.pick(THINKING.slice(1));
  {
    const e = base("model_change");
    e.provider = provider;
    e.modelId = model;
    emit(e, "model_change");
    const t = base("thinking_level_change");
    t.thinkingLevel = thinking;
    emit(t, "thinking_level_change");
  }
  const usage = (inTok, outTok) => {
    const cacheRead = r.int(0, inTok * 4);
    const cacheWrite = r.int(0, inTok);
    const cost = {
      input: +(inTok * 3e-6).toFixed(6),
      output: +(outTok * 15e-6).toFixed(6),
      cacheRead: +(cacheRead * 0.3e-6).toFixed(6),
      cacheWrite: +(cacheWrite * 3.75e-6).toFixed(6),
      total: 0,
    };
    cost.total = +(cost.input + cost.output + cost.cacheRead + cost.cacheWrite).toFixed(6);
    return {
      input: inTok,
      output: outTok,
      cacheRead,
      cacheWrite,
      totalTokens: inTok + outTok + cacheRead + cacheWrite,
      cost,
    };
  };
  const msgEntry = (message, kind) => {
    const e = base("message");
    message.timestamp = nowMs;
    e.message = message;
    emit(e, kind);
    return e.id;
  };
  const assistant = (content, stopReason) =>
    msgEntry(
      {
        role: "assistant",
        content,
        api,
        provider,
        model,
        responseId: `msg_${r.hex(24)}`,
        usage: usage(r.int(20, 4000), r.int(20, 3000)),
        stopReason,
        timestamp: 0,
      },
      "assistant",
    );
  const filePath = () => `src/${C.ident()}/${C.ident()}.${r.pick(["ts", "rs", "js", "json", "md"])}`;
  const toolArgs = (name) => {
    switch (name) {
      case "read":
        return { path: filePath(), ...(r.chance(0.3) ? { offset: r.int(1, 400), limit: r.int(50, 400) } : {}) };
      case "bash":
        return {
          command: r.pick([
            "npm test",
            "cargo build --release",
            "git status",
            "git diff --stat",
            `rg -n ${C.ident()} src`,
            "ls -la",
            "node bench/run.mjs --quick",
          ]),
        };
      case "edit":
        return {
          path: filePath(),
          oldText: slice(r, C.code, r.logSize(40, 1500)),
          newText: slice(r, C.code, r.logSize(40, 2000)),
        };
      case "write":
        return { path: filePath(), content: slice(r, C.code, r.logSize(300, 8000)) };
      case "grep":
        return { pattern: C.ident(), path: "src" };
      default:
        return { path: r.pick([".", "src", "bench", "src/node"]) };
    }
  };
  const toolOutput = (name) => {
    switch (name) {
      case "read":
        return slice(r, C.code, r.logSize(400, 24000));
      case "bash":
        return slice(r, r.chance(0.5) ? C.code : C.grep, r.logSize(100, 12000));
      case "grep":
        return slice(r, C.grep, r.logSize(200, 8000));
      case "edit":
        return `Successfully replaced text in ${filePath()}.`;
      case "write":
        return `Successfully wrote ${r.int(100, 9000)} bytes to ${filePath()}`;
      default:
        return slice(r, C.grep, r.logSize(100, 2000)).replace(/:.*$/gm, "");
    }
  };

  const img = opts.images;
  let images = 0;
  let imageBytes = 0;
  const addImage = (content, mimeType = r.chance(0.8) ? "image/png" : "image/jpeg") => {
    const b = imageBlock(r, r.logSize(img.minChars, img.maxChars), mimeType);
    content.push(b);
    images++;
    imageBytes += b.data.length;
  };
  const textBytes = () => out.bytes - imageBytes;
  let nextCompactionAt = out.bytes + r.int(512 * 1024, 1024 * 1024);
  let tokensSinceCompaction = 0;
  const target = opts.targetBytes;
  let named = false;

  while (out.bytes < target) {
    tick(20_000, 600_000);
    // --- user prompt
    const promptText = r.chance(0.2)
      ? `${slice(r, C.prose, r.logSize(40, 600))}\n\n\`\`\`\n${slice(r, C.code, r.logSize(80, 1500))}\n\`\`\``
      : slice(r, C.prose, r.logSize(20, 1500));
    if (img && r.chance(img.userChance)) {
      const content = [{ type: "text", text: promptText }];
      addImage(content);
      msgEntry({ role: "user", content, timestamp: 0 }, "user");
    } else
      msgEntry(
        { role: "user", content: r.chance(0.85) ? [{ type: "text", text: promptText }] : promptText, timestamp: 0 },
        "user",
      );
    if (!named && entries > 4 && r.chance(0.7)) {
      const e = base("session_info");
      e.name = sentence(r, r.int(2, 6));
      emit(e, "session_info");
      named = true;
    }
    // --- agent loop: tool-use steps then a final answer
    const steps = r.int(0, 6);
    for (let s = 0; s <= steps; s++) {
      const final = s === steps;
      const content = [];
      if (thinking !== "off" && r.chance(0.8)) {
        const t = { type: "thinking", thinking: slice(r, C.prose, r.logSize(80, 3000)) };
        if (provider === "anthropic") t.thinkingSignature = slice(r, C.b64, r.int(200, 800));
        content.push(t);
      }
      if (final || r.chance(0.4))
        content.push({ type: "text", text: slice(r, C.prose, final ? r.logSize(60, 4000) : r.logSize(20, 400)) });
      const calls = [];
      if (!final) {
        const n = r.chance(0.8) ? 1 : r.int(2, 3);
        for (let i = 0; i < n; i++) {
          const name = r.pick(TOOLS);
          const call = { type: "toolCall", id: `toolu_${r.hex(24)}`, name, arguments: toolArgs(name) };
          calls.push(call);
          content.push(call);
        }
      }
      tick(1000, 60_000);
      assistant(content, final ? "stop" : "toolUse");
      for (const call of calls) {
        tick(10, 8000);
        if (img && call.name === "read" && r.chance(img.readChance)) {
          const mime = r.chance(0.8) ? "image/png" : "image/jpeg";
          const content = [{ type: "text", text: `Read image file [${mime}]` }];
          addImage(content, mime);
          msgEntry(
            { role: "toolResult", toolCallId: call.id, toolName: call.name, content, isError: false, timestamp: 0 },
            "toolResult",
          );
          continue;
        }
        const text = toolOutput(call.name);
        const tr = {
          role: "toolResult",
          toolCallId: call.id,
          toolName: call.name,
          content: [{ type: "text", text }],
          isError: r.chance(0.05),
          timestamp: 0,
        };
        if (call.name === "edit")
          tr.details = {
            diff: `--- a\n+++ b\n@@ -1,3 +1,3 @@\n${slice(r, C.code, r.logSize(80, 1200))}`,
            firstChangedLine: r.int(1, 900),
          };
        else if (call.name === "bash" && r.chance(0.3))
          tr.details = { truncation: { truncated: true, totalLines: r.int(200, 5000), outputLines: 200 } };
        msgEntry(tr, "toolResult");
        tokensSinceCompaction += text.length >> 2;
      }
    }
    // --- occasional state changes / labels / renames
    if (r.chance(0.04)) {
      [provider, model, api] = r.pick(MODELS);
      const e = base("model_change");
      e.provider = provider;
      e.modelId = model;
      emit(e, "model_change");
    }
    if (r.chance(0.04)) {
      thinking = r.pick(THINKING);
      const e = base("thinking_level_change");
      e.thinkingLevel = thinking;
      emit(e, "thinking_level_change");
    }
    if (r.chance(0.03)) {
      const e = base("label");
      e.targetId = all[r.int(Math.max(0, all.length - 200), all.length - 1)];
      e.label = r.chance(0.85) ? r.pick(LABELS) : undefined; // undefined = clear (omitted in JSON)
      emit(e, "label");
    }
    if (named && r.chance(0.005)) {
      const e = base("session_info");
      e.name = sentence(r, r.int(2, 6));
      emit(e, "session_info");
    }
    // --- branch: continue from an earlier user message on the current path (/tree, /fork)
    if (path_.length > 30 && r.chance(0.02)) {
      let i = r.int(Math.max(1, path_.length - 60), path_.length - 5);
      while (i > 0 && pathMeta[i] !== "user") i--;
      if (i > 0) {
        const fromLeaf = leaf;
        path_.length = i; // branch from the entry *before* that user message
        pathMeta.length = i;
        leaf = path_[i - 1];
        if (r.chance(0.5)) {
          const e = base("branch_summary");
          e.fromId = fromLeaf;
          e.summary = `# Branch summary\n\n${slice(r, C.prose, r.logSize(200, 2000))}`;
          e.details = { readFiles: [filePath(), filePath()], modifiedFiles: [filePath()] };
          emit(e, "branch_summary");
        }
      }
    }
    // --- auto-compaction every ~0.5-1 MB
    if ((img ? textBytes() : out.bytes) >= nextCompactionAt && path_.length > 12) {
      let k = path_.length - r.int(4, 12);
      while (k > 0 && pathMeta[k] !== "user") k--;
      const firstKept = path_[Math.max(k, 0)];
      const e = base("compaction");
      e.summary = `## Goal\n${slice(r, C.prose, r.logSize(100, 600))}\n\n## Progress\n${slice(r, C.prose, r.logSize(400, 4000))}\n\n## Key decisions\n${slice(r, C.prose, r.logSize(100, 1200))}\n\n## Next steps\n${slice(r, C.prose, r.logSize(80, 600))}`;
      e.firstKeptEntryId = firstKept;
      e.tokensBefore = 20_000 + tokensSinceCompaction + r.int(0, 20_000);
      e.details = {
        readFiles: Array.from({ length: r.int(1, 12) }, filePath),
        modifiedFiles: Array.from({ length: r.int(0, 6) }, filePath),
      };
      e.usage = usage(e.tokensBefore, r.int(500, 3000));
      emit(e, "compaction");
      tokensSinceCompaction = 0;
      nextCompactionAt = (img ? textBytes() : out.bytes) + r.int(512 * 1024, 1024 * 1024);
    }
  }
  out.close();
  return { sessionId, entries, lastMs: nowMs, images, imageBytes };
}

// ---------------------------------------------------------------------------
// Data set layout
// ---------------------------------------------------------------------------
const BASE_MS = Date.UTC(2025, 5, 1, 9, 0, 0); // fixed: output is independent of "now"
export const SINGLES = [
  { name: "1mb", bytes: 1 * MB },
  { name: "10mb", bytes: 10 * MB },
  { name: "100mb", bytes: 100 * MB },
  { name: "1gb", bytes: 1024 * MB, big: true },
];
export const STORE_PROJECTS = 10;
export const STORE_SESSIONS = 1000;
export const STORE_BIG = [50 * MB, 120 * MB, 200 * MB];

export function singlePath(dataDir, name) {
  return join(dataDir, "single", `session-${name}.jsonl`);
}
export function storeDir(dataDir) {
  return join(dataDir, "store");
}
export function storeProjectCwd(k) {
  return `/home/u/proj${k}`;
}
export function storeProjectDir(dataDir, k) {
  return join(dataDir, "store", "sessions", `--home-u-proj${k}--`);
}

function plan(dataDir, { big, quick }) {
  const jobs = [];
  for (const s of SINGLES) {
    if (s.big && !big) continue;
    if (quick && s.bytes > 10 * MB) continue;
    jobs.push({
      file: singlePath(dataDir, s.name),
      seed: `single-${s.name}`,
      targetBytes: s.bytes,
      cwd: "/home/u/bench",
      startMs: BASE_MS,
    });
  }
  if (!quick) {
    const r = makeRng("store-layout");
    for (let i = 0; i < STORE_SESSIONS + STORE_BIG.length; i++) {
      const k = i < STORE_SESSIONS ? i % STORE_PROJECTS : i - STORE_SESSIONS; // big ones go to proj0..proj2
      const startMs = BASE_MS + r.int(0, 60 * 86400_000);
      const targetBytes = i < STORE_SESSIONS ? r.int(120_000, 280_000) : STORE_BIG[i - STORE_SESSIONS];
      const sessionId = uuidv7(r, startMs);
      const ts = new Date(startMs).toISOString().replace(/[:.]/g, "-");
      jobs.push({
        file: join(storeProjectDir(dataDir, k), `${ts}_${sessionId}.jsonl`),
        seed: `store-${i}`,
        targetBytes,
        cwd: storeProjectCwd(k),
        startMs,
        sessionId,
        setMtime: true,
      });
    }
  }
  return jobs;
}

export function generate({ dataDir = DEFAULT_DATA_DIR, big = false, quick = false, log = console.log } = {}) {
  const t0 = performance.now();
  mkdirSync(dataDir, { recursive: true });
  const manifestPath = join(dataDir, "manifest.json");
  let manifest = { version: GEN_VERSION, files: {} };
  try {
    const m = JSON.parse(readFileSync(manifestPath, "utf8"));
    if (m.version === GEN_VERSION) manifest = m;
  } catch {}
  const saveManifest = () => writeFileSync(manifestPath, `${JSON.stringify(manifest, null, 1)}\n`);
  let written = 0,
    skipped = 0,
    bytes = 0,
    sinceSave = 0;
  for (const job of plan(dataDir, { big, quick })) {
    const rel = relative(dataDir, job.file);
    const want = manifest.files[rel];
    if (want !== undefined && existsSync(job.file) && statSync(job.file).size === want) {
      skipped++;
      continue;
    }
    mkdirSync(dirname(job.file), { recursive: true });
    const tmp = `${job.file}.tmp`;
    const t = performance.now();
    const res = writeSession(tmp, job);
    renameSync(tmp, job.file);
    if (job.setMtime) utimesSync(job.file, new Date(res.lastMs), new Date(res.lastMs));
    const size = statSync(job.file).size;
    manifest.files[rel] = size;
    written++;
    bytes += size;
    if (size > 20 * MB)
      log(
        `  ${rel}: ${(size / MB).toFixed(1)} MB, ${res.entries} entries, ${((performance.now() - t) / 1000).toFixed(1)} s`,
      );
    if (++sinceSave >= 100 || size > 20 * MB) {
      saveManifest();
      sinceSave = 0;
    }
  }
  saveManifest();
  const secs = (performance.now() - t0) / 1000;
  log(
    `gen: wrote ${written} files (${(bytes / MB).toFixed(0)} MB), skipped ${skipped} existing, ${secs.toFixed(1)} s -> ${dataDir}`,
  );
  return { written, skipped, bytes, secs };
}

// ---------------------------------------------------------------------------
// 1 GB session full of images (opt-in: --images)
// ---------------------------------------------------------------------------
/**
 * Image sizes: base64 log-uniform in [0.6, 5] MB (mean ~2.1 MB; pasted screenshots and read
 * image files, 0.45-3.7 MB decoded). With ~14 KB of text a turn and an image every ~9 turns
 * (user 4%, a `read` of an image 15%), 1 GiB holds ~460 images and ~100 MB of text.
 */
export const IMAGES_SPEC = { userChance: 0.04, readChance: 0.15, minChars: 600_000, maxChars: 5_000_000 };
export function imagesPath(dataDir = DEFAULT_DATA_DIR, mb = 1024) {
  return join(dataDir, "images", mb === 1024 ? "session-1gb-images.jsonl" : `session-${mb}mb-images.jsonl`);
}
/**
 * Writes the image session if missing (its own folder and manifest, bench/data/images/, so the
 * shared bench/data/manifest.json is not rewritten). Returns { file, size, entries, images, imageBytes }.
 */
export function generateImages({ dataDir = DEFAULT_DATA_DIR, mb = 1024, log = console.log } = {}) {
  const file = imagesPath(dataDir, mb);
  const manifestPath = join(dirname(file), "manifest.json");
  let manifest = { version: GEN_VERSION, files: {} };
  try {
    const m = JSON.parse(readFileSync(manifestPath, "utf8"));
    if (m.version === GEN_VERSION) manifest = m;
  } catch {}
  const rel = relative(dataDir, file);
  const rec = manifest.files[rel];
  if (rec && existsSync(file) && statSync(file).size === rec.size) return { file, ...rec };
  mkdirSync(dirname(file), { recursive: true });
  const t = performance.now();
  const res = writeSession(`${file}.tmp`, {
    seed: `images-${mb}mb`,
    targetBytes: mb * MB,
    cwd: "/home/u/screenshots",
    startMs: BASE_MS,
    images: IMAGES_SPEC,
  });
  renameSync(`${file}.tmp`, file);
  const size = statSync(file).size;
  manifest.files[rel] = { size, entries: res.entries + 1, images: res.images, imageBytes: res.imageBytes };
  writeFileSync(manifestPath, `${JSON.stringify(manifest, null, 1)}\n`);
  log(
    `  ${rel}: ${(size / MB).toFixed(0)} MB, ${res.entries + 1} entries, ${res.images} images (${(res.imageBytes / MB).toFixed(0)} MB base64), ${((performance.now() - t) / 1000).toFixed(1)} s`,
  );
  return { file, ...manifest.files[rel] };
}

if (resolve(process.argv[1] ?? "") === fileURLToPath(import.meta.url)) {
  const { values: args } = parseOptions(
    {
      out: { type: "string" },
      big: { type: "boolean" },
      quick: { type: "boolean" },
      images: { type: "boolean" },
      "images-mb": { type: "string" },
    },
    "usage: node bench/gen.mjs [--big | --quick | --images [--images-mb N]] [--out DIR]",
  );
  const dataDir = args.out !== undefined ? resolve(args.out) : DEFAULT_DATA_DIR;
  if (args.images) {
    generateImages({ dataDir, mb: num(args["images-mb"], 1024, "images-mb") });
  } else {
    generate({ dataDir, big: args.big === true, quick: args.quick === true });
  }
}

/** ~2 KB messages, alternating user / assistant (the appendMessage workload). */
export function makeMessages(n) {
  const filler = "The quick brown fox refactors the session manager while the tests keep passing. ".repeat(30);
  const msgs = [];
  for (let i = 0; i < n; i++) {
    const text = `${i}: ${filler.slice(0, 1900 + (i % 200))}`;
    msgs.push(
      i % 2 === 0
        ? { role: "user", content: [{ type: "text", text }], timestamp: 1748768585106 + i }
        : {
            role: "assistant",
            content: [{ type: "text", text }],
            api: "anthropic-messages",
            provider: "anthropic",
            model: "claude-sonnet-4-5",
            usage: {
              input: 100,
              output: 200,
              cacheRead: 0,
              cacheWrite: 0,
              totalTokens: 300,
              cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 },
            },
            stopReason: "stop",
            timestamp: 1748768585106 + i,
          },
    );
  }
  return msgs;
}
