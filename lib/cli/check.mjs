import { readdirSync, statSync } from "node:fs";
import { createRequire } from "node:module";
import { join, resolve } from "node:path";
import { isIdArgument, resolveSession } from "./ids.mjs";
import { CliError, errLine, fileKind, fsErrorMessage, makeOut, parse, paths, readRegularFile } from "./util.mjs";

export const help = `Usage: pi-session check FILE|DIR|ID... [--json] [--quiet] [--dir STORE]

Validate session files (DIR: every *.jsonl in it and in its sub-directories; ID: a session
id or id prefix, as ls and search print them, looked up in pi's store or --dir STORE).

Problems (kind: meaning), each with its 1-based line number:
  torn-tail              last line has no newline and does not parse (interrupted write)
  missing-final-newline  last line is complete but lacks its newline
  malformed              a line that is not valid JSON (pi skips it)
  not-an-entry           valid JSON that is not an object with a string "type"
  header                 no session header as the first entry, or a bad header id
  missing-id             an entry without a string id
  duplicate-id           an id used by an earlier entry
  dangling-parent        parentId names no entry in the file
  cycle                  following parentId never reaches a root
  label-target           a label's targetId names no entry
  context-edit-target    a context_edit's targetId names no entry
  compaction-first-kept  a compaction without retainedTail whose firstKeptEntryId is
                         missing or not on the compaction's own path from the root
  retained-tail          a compaction's retainedTail is not an array of messages
Notes (not problems): blank-line, legacy-version (migrated by pi on load), header-cwd
(no string cwd in the header), extra-header (a later session header, ignored by pi).

  --json    [{file, ok, unreadable, lines, entries, problems: [{kind, line, message, id?}],
             notes: [{kind, line, message}]}]
  --quiet   only print files with problems
  --dir STORE  where IDs are looked up (a session directory or a sessions root;
               default: pi's store, every project)

The line pass (decoding, JSON.parse of every line) runs in Rust, in parallel over files
(crates/core/src/check/scan.rs); PI_SESSION_CHECK_ENGINE=js forces the JS implementation.

Exit: 0 all clean, 1 problems found, 2 a file or directory could not be read.`;

/**
 * The line pass: `{lines, nl, recs}`, one rec per non-blank line, `{l, v}` (the parsed
 * value) or `{l, bad, err}` (the text and JSON.parse's message). crates/core/src/check/scan.rs
 * produces the same records (with `v` reduced to the fields `analyze` reads, and without
 * `err`), in parallel over files.
 */
export function scanText(buf) {
  const text = Buffer.isBuffer(buf) ? buf.toString("utf8") : String(buf);
  const parts = text.split("\n");
  const nl = text.endsWith("\n");
  if (nl) parts.pop();
  const recs = [];
  parts.forEach((raw, i) => {
    if (!raw.trim()) return;
    try {
      recs.push({ l: i + 1, v: JSON.parse(raw) });
    } catch (err) {
      recs.push({ l: i + 1, bad: raw, err: String(err.message).split("\n")[0] });
    }
  });
  return { lines: parts.length, nl, recs };
}

/** Check one file's bytes. Returns {lines, entries, problems, notes}. */
export function checkText(buf) {
  return analyze(scanText(buf));
}

/** The analysis over the line records of scanText / checkScanFiles. */
export function analyze(scan) {
  const r = analyzeUnsorted(scan);
  r.problems.sort((a, b) => a.line - b.line);
  r.notes.sort((a, b) => a.line - b.line);
  return r;
}

function analyzeUnsorted({ lines, nl, recs }) {
  const problems = [];
  const notes = [];
  const parts = { length: lines };
  const entries = []; // {e, line}
  let prevLine = 0;
  const blanksUpTo = (l) => {
    for (let b = prevLine + 1; b < l; b++) notes.push({ kind: "blank-line", line: b, message: "blank line" });
  };
  for (const r of recs) {
    blanksUpTo(r.l);
    prevLine = r.l;
    const line = r.l;
    const isLast = line === lines && !nl;
    if (r.bad !== undefined) {
      let msg = r.err;
      if (msg === undefined) {
        try {
          JSON.parse(r.bad);
          msg = "invalid JSON";
        } catch (err) {
          msg = String(err.message).split("\n")[0];
        }
      }
      if (isLast) {
        problems.push({
          kind: "torn-tail",
          line,
          message: `last line is incomplete (${r.bad.length} chars, no newline): ${msg}`,
        });
      } else {
        problems.push({ kind: "malformed", line, message: `invalid JSON: ${msg}` });
      }
      continue;
    }
    const v = r.v;
    if (isLast) problems.push({ kind: "missing-final-newline", line, message: "last line has no final newline" });
    if (v === null || typeof v !== "object" || Array.isArray(v) || typeof v.type !== "string") {
      problems.push({
        kind: "not-an-entry",
        line,
        message: `not a session entry (${v === null ? "null" : Array.isArray(v) ? "array" : typeof v}${v && typeof v === "object" && !Array.isArray(v) ? " without a string type" : ""})`,
      });
      // pi still loads it as an entry (it only skips what does not parse)
    }
    entries.push({ e: v, line });
  }
  // a whitespace-only last line without newline is harmless
  blanksUpTo(nl ? lines + 1 : lines);
  const first = entries[0];
  let version = 3;
  if (!first) {
    problems.push({ kind: "header", line: 1, message: "no session header (no entries at all)" });
    return { lines: parts.length, entries: 0, problems, notes };
  }
  const h = first.e;
  if (h?.type !== "session" || typeof h.id !== "string") {
    problems.push({
      kind: "header",
      line: first.line,
      message: "first entry is not a session header with a string id: pi will not load this file",
    });
    return { lines: parts.length, entries: entries.length, problems, notes };
  }
  version = typeof h.version === "number" ? h.version : 1;
  if (version < 3)
    notes.push({
      kind: "legacy-version",
      line: first.line,
      message: `version ${version}: pi migrates it to 3 (and rewrites the file) on load`,
    });
  if (typeof h.cwd !== "string")
    notes.push({ kind: "header-cwd", line: first.line, message: "header has no string cwd" });
  for (const x of entries.slice(1)) {
    if (x.e && x.e.type === "session")
      notes.push({ kind: "extra-header", line: x.line, message: "another session header (pi ignores it)" });
  }
  const body = entries.slice(1).filter(({ e }) => e && typeof e === "object" && e.type !== "session");
  if (version < 2) {
    // v1 entries have no ids: pi assigns them on load; tree checks do not apply.
    return { lines: parts.length, entries: entries.length, problems, notes };
  }
  const byId = new Map();
  for (const x of body) {
    const id = x.e.id;
    if (typeof id !== "string") {
      problems.push({ kind: "missing-id", line: x.line, message: `${x.e.type} entry without a string id` });
      continue;
    }
    const prev = byId.get(id);
    if (prev) {
      problems.push({
        kind: "duplicate-id",
        line: x.line,
        id,
        message: `id ${id} already used on line ${prev.line} (the later entry wins in pi's index)`,
      });
    }
    byId.set(id, x);
  }
  for (const x of body) {
    const p = x.e.parentId;
    if (p !== null && p !== undefined && !byId.has(p)) {
      problems.push({
        kind: "dangling-parent",
        line: x.line,
        id: x.e.id,
        message: `parentId ${JSON.stringify(p)} names no entry (pi shows it as a root)`,
      });
    }
  }
  // Cycles: walk parent chains with colouring (0 new, 1 on stack, 2 done).
  const state = new Map();
  const reported = new Set();
  for (const start of byId.values()) {
    if (state.get(start.e.id)) continue;
    const chain = [];
    let cur = start;
    while (cur && !state.get(cur.e.id)) {
      state.set(cur.e.id, 1);
      chain.push(cur);
      const p = cur.e.parentId;
      cur = typeof p === "string" ? byId.get(p) : undefined;
    }
    if (cur && state.get(cur.e.id) === 1) {
      const idx = chain.indexOf(cur);
      const cyc = chain.slice(idx);
      const key = cyc
        .map((c) => c.e.id)
        .sort()
        .join(",");
      if (!reported.has(key)) {
        reported.add(key);
        const lines = cyc.map((c) => c.line).sort((a, b) => a - b);
        problems.push({
          kind: "cycle",
          line: lines[0],
          id: cur.e.id,
          message: `parent chain loops: ${cyc.map((c) => `${c.e.id} (line ${c.line})`).join(" → ")} → ${cur.e.id}`,
        });
      }
    }
    for (const c of chain) state.set(c.e.id, 2);
  }
  // "k is on x's path from the root": DFS entry/exit times over the parent tree (entries
  // indexed by id, the later of duplicates, as pi's index), so each test is O(1). Entries on
  // a cycle are not reached from any root; for those, walk the parent chain.
  const children = new Map();
  const roots = [];
  for (const x of byId.values()) {
    const p = x.e.parentId;
    const parent = typeof p === "string" && p !== x.e.id ? byId.get(p) : undefined;
    if (!parent) roots.push(x);
    else {
      const c = children.get(parent);
      if (c) c.push(x);
      else children.set(parent, [x]);
    }
  }
  const tin = new Map();
  const tout = new Map();
  let clock = 0;
  for (const r of roots) {
    const stack = [[r, 0]];
    tin.set(r, clock++);
    while (stack.length) {
      const top = stack[stack.length - 1];
      const kids = children.get(top[0]) ?? [];
      if (top[1] < kids.length) {
        const c = kids[top[1]++];
        if (tin.has(c)) continue;
        tin.set(c, clock++);
        stack.push([c, 0]);
      } else {
        tout.set(top[0], clock++);
        stack.pop();
      }
    }
  }
  const onPath = (k, x) => {
    if (tin.has(x) && tin.has(k)) return tin.get(k) <= tin.get(x) && tout.get(x) <= tout.get(k);
    const seen = new Set();
    for (let cur = x; cur && !seen.has(cur); ) {
      if (cur === k) return true;
      seen.add(cur);
      const p = cur.e.parentId;
      cur = typeof p === "string" ? byId.get(p) : undefined;
    }
    return false;
  };
  for (const x of body) {
    const e = x.e;
    if (e.type === "label" && !byId.has(e.targetId)) {
      problems.push({
        kind: "label-target",
        line: x.line,
        id: e.id,
        message: `label ${JSON.stringify(e.label ?? null)} targets missing entry ${JSON.stringify(e.targetId ?? null)}`,
      });
    }
    if (e.type === "context_edit" && !byId.has(e.targetId)) {
      problems.push({
        kind: "context-edit-target",
        line: x.line,
        id: e.id,
        message: `context_edit targets missing entry ${JSON.stringify(e.targetId ?? null)}`,
      });
    }
    if (e.type === "compaction" && e.retainedTail !== undefined) {
      const rt = e.retainedTail;
      if (!Array.isArray(rt)) {
        problems.push({
          kind: "retained-tail",
          line: x.line,
          id: e.id,
          message: `retainedTail is ${rt === null ? "null" : typeof rt}, not an array (ignored: context falls back to firstKeptEntryId)`,
        });
      } else {
        const bad = rt.findIndex((m) => !m || typeof m !== "object" || Array.isArray(m) || typeof m.role !== "string");
        if (bad >= 0)
          problems.push({
            kind: "retained-tail",
            line: x.line,
            id: e.id,
            message: `retainedTail[${bad}] is not a message (an object with a string role)`,
          });
        continue; // a retainedTail is the checkpoint: firstKeptEntryId is not used
      }
    }
    if (e.type === "compaction") {
      const k = e.firstKeptEntryId;
      if (k === e.id) continue;
      if (typeof k !== "string" || !byId.has(k)) {
        problems.push({
          kind: "compaction-first-kept",
          line: x.line,
          id: e.id,
          message: `firstKeptEntryId ${JSON.stringify(k ?? null)} names no entry (the compacted context keeps nothing before the summary)`,
        });
      } else if (!onPath(byId.get(k), x)) {
        problems.push({
          kind: "compaction-first-kept",
          line: x.line,
          id: e.id,
          message: `firstKeptEntryId ${k} (line ${byId.get(k).line}) is not on the compaction's path`,
        });
      }
    }
  }
  return { lines: parts.length, entries: entries.length, problems, notes };
}

const native = createRequire(import.meta.url)("../native.js");

/**
 * Check files; the line pass runs in Rust, in parallel, when the binding has it
 * (`engine: "js"` or PI_SESSION_CHECK_ENGINE=js forces JS). Same results either way.
 */
export function checkFiles(files, { engine = process.env.PI_SESSION_CHECK_ENGINE } = {}) {
  if (engine === "js" || typeof native.checkScanFiles !== "function") return files.map(checkFile);
  const out = [];
  const CHUNK = 32;
  for (let i = 0; i < files.length; i += CHUNK) {
    const batch = files.slice(i, i + CHUNK);
    const scanned = native.checkScanFiles(batch);
    batch.forEach((file, j) => {
      if (scanned[j] == null)
        out.push(checkFile(file)); // unreadable: JS reports the fs error
      else {
        const r = analyze(JSON.parse(scanned[j]));
        out.push({ file, ok: r.problems.length === 0, unreadable: null, ...r });
      }
    });
  }
  return out;
}

export function checkFile(file) {
  let buf;
  try {
    buf = readRegularFile(file);
  } catch (err) {
    return { file, ok: false, unreadable: fsErrorMessage(err, file), lines: 0, entries: 0, problems: [], notes: [] };
  }
  const r = checkText(buf);
  return { file, ok: r.problems.length === 0, unreadable: null, ...r };
}

function collect(target) {
  const p = resolve(paths.normalizePath(target));
  let st;
  try {
    st = statSync(p);
  } catch (err) {
    return { files: [], error: fsErrorMessage(err, target) };
  }
  if (!st.isDirectory()) return { files: [p], error: null };
  const files = [];
  const walk = (d, depth) => {
    let ents;
    try {
      ents = readdirSync(d, { withFileTypes: true });
    } catch (err) {
      throw new CliError(fsErrorMessage(err, d));
    }
    for (const e of ents.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))) {
      const q = join(d, e.name);
      if (e.isDirectory() && depth < 3) walk(q, depth + 1);
      else if (e.isFile() && e.name.endsWith(".jsonl")) files.push(q);
      else if (!e.isDirectory() && e.name.endsWith(".jsonl")) {
        // A symbolic link to a session is checked; a FIFO, device or socket (directly or
        // through a link) is skipped with one warning (reading it would block or never end).
        let st = null;
        try {
          st = statSync(q);
        } catch {
          // dangling link: nothing to check
        }
        if (st?.isFile()) files.push(q);
        else if (st && !st.isDirectory()) errLine(`pi-session: ${q}: not a regular file (${fileKind(st)}); skipped`);
      }
    }
  };
  walk(p, 0);
  return { files, error: null };
}

/** An ID argument: the one session file it names, or why none (like collect). */
async function byId(arg, dir) {
  try {
    return { files: [await resolveSession(arg, { dir })], error: null };
  } catch (err) {
    if (!(err instanceof CliError)) throw err;
    return { files: [], error: err.message };
  }
}

export async function run(argv) {
  const { values, positionals } = parse(
    argv,
    {
      json: { type: "boolean" },
      quiet: { type: "boolean", short: "q" },
      dir: { type: "string" },
    },
    { command: "check" },
  );
  const out = makeOut();
  if (values.help) {
    out.line(help);
    return 0;
  }
  if (positionals.length === 0)
    throw new CliError("check: expected FILE, DIR or session ID (see pi-session check --help)");
  const results = [];
  let unreadable = false;
  for (const t of positionals) {
    const { files, error } = isIdArgument(t) ? await byId(t, values.dir) : collect(t);
    if (error) {
      unreadable = true;
      results.push({ file: t, ok: false, unreadable: error, lines: 0, entries: 0, problems: [], notes: [] });
      continue;
    }
    for (const r of checkFiles(files)) {
      if (r.unreadable) unreadable = true;
      results.push(r);
    }
  }
  const bad = results.filter((r) => !r.ok).length;
  if (values.json) {
    out.json(results);
  } else {
    for (const r of results) {
      if (r.unreadable) {
        errLine(`pi-session: ${r.unreadable}`);
        continue;
      }
      if (r.ok && values.quiet) continue;
      out.line(
        `${r.ok ? out.green("ok") : out.red("FAIL")}  ${r.file}  ${out.dim(`(${r.entries} entries, ${r.problems.length} problem${r.problems.length === 1 ? "" : "s"})`)}`,
      );
      for (const p of r.problems) out.line(`  ${r.file}:${p.line}: ${out.red(p.kind)}: ${p.message}`);
      if (!values.quiet)
        for (const n of r.notes) out.line(`  ${r.file}:${n.line}: ${out.dim(`note ${n.kind}`)}: ${n.message}`);
    }
    if (results.length !== 1 || results[0].unreadable)
      out.line(out.dim(`${results.length} file${results.length === 1 ? "" : "s"} checked, ${bad} with problems`));
  }
  return unreadable ? 2 : bad ? 1 : 0;
}
