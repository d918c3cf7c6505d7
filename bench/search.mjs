#!/usr/bin/env node
// Search benchmark (issue 25), not a test: a generated store of N sessions (default 1,000;
// `node bench/search.mjs 10000`) with planted facts; first index build, an appended turn,
// query p50/p95 for words / phrases / prefixes, index size vs store bytes, peak RSS; and the
// same words through the brute-force literal scan (pi-session search's Rust scan).
import { appendFileSync, mkdirSync, readdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { tmpdir } from "node:os";
import { searchSessions } from "../index.mjs";
import { searchFiles } from "../lib/cli/search.mjs";

const N = Number(process.argv[2] ?? 1000);
const dir = join(tmpdir(), `psn-bench-search-${N}`);
const WORDS = "parser token cache commit branch review deploy schema index query module error retry timeout buffer stream socket render layout widget".split(" ");
let seed = 42;
const rnd = (n) => ((seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) >>> 8) % n;
const text = (n) => Array.from({ length: n }, () => WORDS[rnd(WORDS.length)]).join(" ");
const hex = (n) => Array.from({ length: n }, () => "0123456789abcdef"[rnd(16)]).join("");

function generate() {
  rmSync(dir, { recursive: true, force: true });
  const files = [];
  for (let i = 0; i < N; i++) {
    const sub = join(dir, `--proj-${i % 20}--`);
    mkdirSync(sub, { recursive: true });
    const id = `${hex(8)}-${hex(4)}-7${hex(3)}-8${hex(3)}-${hex(12)}`;
    const lines = [JSON.stringify({ type: "session", version: 3, id, timestamp: "2026-01-01T00:00:00.000Z", cwd: `/proj/${i % 20}` })];
    let parent = null;
    for (let k = 0; k < 40; k++) {
      const eid = hex(8);
      const role = k % 2 ? "assistant" : "user";
      let t = text(60 + rnd(200));
      if (k === 21) t += ` planted fact${i}x about the purple walrus number ${i} and authz${i}ology`;
      const content = role === "user" ? t : [{ type: "text", text: t }];
      lines.push(JSON.stringify({ type: "message", id: eid, parentId: parent, timestamp: new Date(Date.UTC(2026, 0, 1, 0, 0, k)).toISOString(), message: { role, content, timestamp: 0 } }));
      parent = eid;
    }
    const p = join(sub, `2026-01-01T00-00-00-000Z_${id}.jsonl`);
    writeFileSync(p, lines.join("\n") + "\n");
    files.push({ path: p, id, parent });
  }
  return files;
}

const pct = (a, p) => a.slice().sort((x, y) => x - y)[Math.min(a.length - 1, Math.floor((a.length * p) / 100))];
const ms = (t0) => Number(process.hrtime.bigint() - t0) / 1e6;

let t0 = process.hrtime.bigint();
const files = generate();
const gen = ms(t0);
const storeBytes = files.reduce((n, f) => n + statSync(f.path).size, 0);
// Settle past the index's one-second "recently modified" window.
await new Promise((r) => setTimeout(r, 1100));
t0 = process.hrtime.bigint();
await searchSessions("warmup", { sessionDir: dir });
const build = ms(t0);
const sizes = readdirSync(dir).filter((f) => f.startsWith(".pi-session-search.sqlite")).map((f) => statSync(join(dir, f)).size);
const indexBytes = sizes.reduce((a, b) => a + b, 0);

const kinds = {
  words: (i) => `fact${i}x walrus`,
  phrase: (i) => `"purple walrus number ${i}"`,
  prefix: (i) => `authz${i}olo*`,
};
const rows = [];
for (const [kind, q] of Object.entries(kinds)) {
  const lat = [];
  let found = 0;
  for (let j = 0; j < 200; j++) {
    const i = rnd(N);
    const s = process.hrtime.bigint();
    const hits = await searchSessions(q(i), { sessionDir: dir, limit: 20 });
    lat.push(ms(s));
    if (hits.some((h) => h.sessionPath === files[i].path)) found++;
  }
  rows.push({ kind, p50: pct(lat, 50), p95: pct(lat, 95), found: `${found}/200` });
}
// Brute force: the literal scan over every file (as pi-session search without the index).
const scanLat = [];
const list = files.map((f) => ({ path: f.path, id: f.id }));
for (let j = 0; j < 10; j++) {
  const i = rnd(N);
  const s = process.hrtime.bigint();
  searchFiles(list, { query: `fact${i}x`, icase: true });
  scanLat.push(ms(s));
}
// Incremental: one appended turn, then the next query.
const f = files[7];
appendFileSync(f.path, JSON.stringify({ type: "message", id: "feedbeef", parentId: f.parent, timestamp: new Date().toISOString(), message: { role: "user", content: "freshly appended zebracorn", timestamp: 0 } }) + "\n");
t0 = process.hrtime.bigint();
const inc = await searchSessions("zebracorn", { sessionDir: dir });
const incMs = ms(t0);

const mb = (b) => (b / 1024 / 1024).toFixed(1);
console.log(`\nSearch benchmark: ${N} sessions, store ${mb(storeBytes)} MB (generated in ${gen.toFixed(0)} ms)\n`);
console.log("| measure | value |\n|---|---|");
console.log(`| first index build (${N} sessions) | ${build.toFixed(0)} ms |`);
console.log(`| index size / store bytes | ${mb(indexBytes)} MB / ${mb(storeBytes)} MB = ${((100 * indexBytes) / storeBytes).toFixed(0)}% |`);
for (const r of rows) console.log(`| query ${r.kind}, p50 / p95 (warm, incl. freshness check) | ${r.p50.toFixed(2)} / ${r.p95.toFixed(2)} ms (found ${r.found}) |`);
console.log(`| brute-force literal scan (Rust, parallel), p50 / p95 | ${pct(scanLat, 50).toFixed(1)} / ${pct(scanLat, 95).toFixed(1)} ms |`);
console.log(`| appended turn → next query finds it | ${incMs.toFixed(1)} ms (${inc.length} hit) |`);
console.log(`| peak RSS | ${mb(process.resourceUsage().maxRSS * 1024)} MB |`);
if (!process.env.KEEP) rmSync(dir, { recursive: true, force: true });
