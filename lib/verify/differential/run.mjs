// The differential harness: state snapshots, session files read back, and the sequence runner.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { makeRng, parseSkip } from "./setup.mjs";
import {
  DiffError,
  IdRef,
  Pairing,
  PathRef,
  SideFn,
  canonSnapshot,
  firstDiff,
  normLine,
  normText,
  normalize,
  normalizeOutcome,
  show,
} from "./values.mjs";
import { Side } from "./generate.mjs";
import { genConstructor, genOp } from "./ops-probe.mjs";

// ---------------------------------------------------------------------------------------------
// State snapshots
// ---------------------------------------------------------------------------------------------

export function grab(fn) {
  try {
    return { ok: true, value: fn() };
  } catch (error) {
    return { ok: false, error: { name: error?.name, message: String(error?.message ?? error) } };
  }
}

export function snapshot(side, full, withIdentity = true) {
  const sm = side.sm;
  // Getters that read the agent dir (usesDefaultSessionDir) must see this side's env.
  process.env.PI_CODING_AGENT_DIR = side.agentDir;
  const s = {};
  s.leafId = grab(() => sm.getLeafId());
  s.entryCount = grab(() => sm.getEntryCount());
  s.header = grab(() => sm.getHeader());
  s.sessionName = grab(() => sm.getSessionName());
  s.sessionId = grab(() => sm.getSessionId());
  s.sessionFile = grab(() => sm.getSessionFile());
  s.leafEntry = grab(() => sm.getLeafEntry());
  if (!full) {
    s.lastEntry = grab(() => sm.getEntries().at(-1));
    return s;
  }
  s.cwd = grab(() => sm.getCwd());
  s.sessionDir = grab(() => sm.getSessionDir());
  s.isPersisted = grab(() => sm.isPersisted());
  s.usesDefaultSessionDir = grab(() => sm.usesDefaultSessionDir());
  const entriesR = grab(() => sm.getEntries());
  s.entries = entriesR;
  s.tree = grab(() => sm.getTree());
  s.projection = grab(() => sm.buildSessionProjection());
  s.context = grab(() => sm.buildSessionContext());
  s.contextEntries = grab(() => sm.buildContextEntries());
  s.branch = grab(() => sm.getBranch());
  if (entriesR.ok) {
    const entries = entriesR.value;
    s.labels = grab(() => entries.map((e) => sm.getLabel(e.id)));
    // getChildren() is O(n) in the reference: probe the leaf, the last entries and every 16th entry only.
    s.children = grab(() =>
      entries.filter((_e, k) => k >= entries.length - 4 || k % 16 === 0).map((e) => sm.getChildren(e.id)),
    );
    if (!side.skip.has("identity") && withIdentity) s.identity = grab(() => identitySignature(sm, entries));
  }
  return s;
}

/** Whether two calls of `f` give the very same object (identity, not equality). */
export function sameTwice(f) {
  const first = f();
  return first === f();
}

export function bits(arr) {
  return arr.map((b) => (b ? "1" : "0")).join("");
}

export function identitySignature(sm, e1) {
  const e2 = sm.getEntries();
  const out = {};
  out.entriesArraySame = e1 === e2;
  out.entriesElemSame = bits(e1.map((e, k) => e === e2[k]));
  out.getEntrySame = bits(e1.map((e) => sm.getEntry(e.id) === e));
  out.getEntryTwice = bits(e1.map((e) => sameTwice(() => sm.getEntry(e.id))));
  out.headerSame = sameTwice(() => sm.getHeader());
  const leafId = sm.getLeafId();
  out.leafEntrySame = leafId ? sm.getLeafEntry() === sm.getEntry(leafId) : "no leaf";
  out.branchSame = bits(sm.getBranch().map((e) => e === sm.getEntry(e.id)));
  const tree = [];
  const stack = [...sm.getTree()];
  while (stack.length) {
    const node = stack.pop();
    tree.push(node.entry === sm.getEntry(node.entry.id));
    stack.push(...node.children);
  }
  out.treeEntrySame = bits(tree);
  out.treeTwiceSame = sameTwice(() => sm.getTree());
  const proj = sm.buildSessionProjection();
  out.projSourceSame = bits(proj.entries.map((p) => p.sourceEntry === sm.getEntry(p.sourceEntry.id)));
  out.projMsgSame = bits(
    proj.entries.map(
      (p) => p.messages.length === 1 && p.sourceEntry.type === "message" && p.messages[0] === p.sourceEntry.message,
    ),
  );
  const flat = proj.entries.flatMap((p) => p.messages);
  out.projMessagesFlat = bits(proj.messages.map((m, i) => m === flat[i]));
  const ctx = sm.buildSessionContext();
  out.contextMsgSame = bits(ctx.messages.map((m, i) => m === proj.messages[i]));
  out.contextEntriesSame = bits(sm.buildContextEntries().map((e) => e === sm.getEntry(e.id)));
  out.childrenSame = bits(e1.slice(-5).flatMap((e) => sm.getChildren(e.id).map((c) => c === sm.getEntry(c.id))));
  return out;
}

// ---------------------------------------------------------------------------------------------
// Files
// ---------------------------------------------------------------------------------------------

export function readFileLines(side, p) {
  if (typeof p !== "string") return { exists: "<no path>" };
  let content;
  try {
    content = fs.readFileSync(p, "utf8");
  } catch (e) {
    return { exists: false, code: e.code };
  }
  const c = side.fileCache;
  let lines;
  if (c.path === p && c.content !== undefined && content.startsWith(c.content) && c.content.endsWith("\n")) {
    const add = content.slice(c.content.length).split("\n");
    lines = c.lines.slice(0, -1).concat(add.map((l) => normLine(l, side)));
    // c.lines ends with the "" after the last newline; it is replaced by the first added fragment
  } else {
    lines = content.split("\n").map((l) => normLine(l, side));
  }
  side.fileCache = { path: p, content, lines };
  return { exists: true, lines };
}

export function dirListing(side) {
  const dirs = [...new Set([side.dir, path.join(side.root, "sessions")])];
  const out = {};
  for (const d of dirs) {
    if (!fs.existsSync(d)) continue;
    for (const f of fs.readdirSync(d).sort()) {
      const p = path.join(d, f);
      const key = normText(p, side);
      let content;
      try {
        content = fs.readFileSync(p, "utf8");
      } catch (e) {
        content = `<unreadable ${e.code}>`;
      }
      const cached = side.dirCache.get(p);
      if (cached && cached.content === content) {
        out[key] = cached.lines;
        continue;
      }
      out[key] = content.split("\n").map((l) => normLine(l, side));
      side.dirCache.set(p, { content, lines: out[key] });
    }
  }
  const sorted = {};
  for (const k of Object.keys(out).sort()) sorted[k] = out[k];
  return sorted;
}

// ---------------------------------------------------------------------------------------------
// Sequence runner
// ---------------------------------------------------------------------------------------------

export function describeArg(v, ids) {
  try {
    const s = JSON.stringify(v, (_k, x) => {
      if (x instanceof IdRef) return `@${ids.tok("A", x.aId) ?? x.aId}`;
      if (x instanceof PathRef) return `<path ${x.kind}:${x.value ?? ""}>`;
      if (x instanceof SideFn) return x.label;
      if (x === undefined) return "<undefined>";
      if (typeof x === "number" && !Number.isFinite(x)) return `<${x}>`;
      return x;
    });
    return s.length > 220 ? `${s.slice(0, 220)}…` : s;
  } catch (e) {
    return `<unprintable ${e.message}>`;
  }
}

/** @returns {{ sequences: number, persistEvery: number, fullEvery: number, minOps: number, maxOps: number, keep: boolean, verbose: boolean, reproduce?: string }} */
export function defaultConfig(env = process.env) {
  return {
    sequences: Number(env.FUZZ_SEQUENCES ?? 500),
    persistEvery: Number(env.FUZZ_PERSIST_EVERY ?? 10),
    fullEvery: Number(env.FUZZ_FULL_EVERY ?? 6),
    minOps: Number(env.FUZZ_MIN_OPS ?? 100),
    maxOps: Number(env.FUZZ_MAX_OPS ?? 300),
    keep: env.DIFF_KEEP === "1",
    verbose: env.DIFF_VERBOSE === "1",
  };
}

export function isPersistedSeed(seed, config) {
  return config.persistEvery > 0 && seed % config.persistEvery === 0;
}

export const CWDS = [
  "/tmp/diff-seq-cwd",
  "/tmp/with space/ünï",
  "relative/sub-dir",
  "~/diff-home-cwd",
  "/tmp/trailing/",
];

export function runSequence(seed, mods, config = defaultConfig(), skip = parseSkip()) {
  const rng = makeRng(seed);
  const persisted = isPersistedSeed(seed, config);
  const nOps = rng.range(config.minOps, config.maxOps);
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), `pi-diff-${seed}-`));
  const ids = new Pairing("id");
  const sids = new Pairing("sid");
  const A = new Side("A", mods.ref, path.join(tmp, "a"), ids, sids, skip, persisted);
  const B = new Side("B", mods.impl, path.join(tmp, "b"), ids, sids, skip, persisted);
  const cwd = rng.pick(CWDS);
  const ctx = { rng, A, B, persisted, skip, seed, cwd, tsCounter: 0 };
  const log = [];
  const savedEnv = process.env.PI_CODING_AGENT_DIR;
  let stepNo = 0;
  let fullCount = 0;
  let sinceFull = 0;
  let lastCount = 0;

  const fail = (what, d) => {
    if (typeof d.a === "string" && typeof d.b === "string" && (d.a.length > 200 || d.b.length > 200)) {
      // Long strings (file lines, canonical forms): show a window around the first difference.
      let i = 0;
      while (i < d.a.length && d.a[i] === d.b[i]) i++;
      const from = Math.max(0, i - 60);
      d = {
        ...d,
        a: `${from ? "…" : ""}${d.a.slice(from, i + 140)}`,
        b: `${from ? "…" : ""}${d.b.slice(from, i + 140)}`,
        note: `${d.note ? `${d.note}; ` : ""}strings differ at char ${i}`,
      };
    }
    const lines = [
      `Differential mismatch: seed=${seed} (${persisted ? "persisted" : "in-memory"}, cwd=${JSON.stringify(cwd)}) step=${stepNo} op=${log.at(-1)?.name}`,
      `${what}: at ${d.path}${d.note ? ` (${d.note})` : ""}`,
      `  A (reference): ${show(d.a)}`,
      `  B (${mods.implName}): ${show(d.b)}`,
      `Reproduce: ${config.reproduce ?? `DIFF_SEED=${seed} npx vitest run __test__/differential.test.mjs`}${config.keep ? "" : "   (DIFF_KEEP=1 keeps the temp dir)"}`,
      `Temp dir: ${tmp}`,
      `Last ${Math.min(20, log.length)} ops (ids as A-side tokens):`,
      ...log.slice(-20).map((l) => `  #${l.step} ${l.name}(${l.args})${l.outcome ? ` -> ${l.outcome}` : ""}`),
    ];
    throw new DiffError(lines.join("\n"));
  };
  const compare = (what, a, b) => {
    const d = firstDiff(a, b);
    if (d) fail(what, d);
  };
  /** Compare raw values of both sides: fast canonical strings first, structural diff for the report. */
  const compareRaw = (what, rawA, rawB, fresh = false) => {
    const ca = canonSnapshot(rawA, A);
    const cb = canonSnapshot(rawB, B, fresh);
    if (ca === cb) return;
    const d = firstDiff(normalize(rawA, A), normalize(rawB, B));
    if (d) fail(what, d);
    let i = 0;
    while (i < ca.length && ca[i] === cb[i]) i++;
    fail(what, {
      path: `(canonical form, offset ${i})`,
      a: ca.slice(Math.max(0, i - 80), i + 200),
      b: cb.slice(Math.max(0, i - 80), i + 200),
    });
  };

  const pairAll = () => {
    const sa = grab(() => A.sm.getSessionId());
    const sb = grab(() => B.sm.getSessionId());
    if (sa.ok && sb.ok && typeof sa.value === "string" && typeof sb.value === "string") {
      const c = sids.pair(sa.value, sb.value);
      if (c) fail("session id pairing", { path: "getSessionId()", a: sa.value, b: sb.value, note: c });
    }
    const ea = grab(() => A.sm.getEntries());
    const eb = grab(() => B.sm.getEntries());
    if (ea.ok && eb.ok && Array.isArray(eb.value)) {
      const n = Math.min(ea.value.length, eb.value.length);
      for (let k = 0; k < n; k++) {
        const c = ids.pair(ea.value[k]?.id, eb.value[k]?.id);
        if (c)
          fail("entry id pairing (getEntries() order)", {
            path: `getEntries()[${k}].id`,
            a: ea.value[k]?.id,
            b: eb.value[k]?.id,
            note: c,
          });
      }
    }
    if (persisted) {
      const fa = grab(() => A.sm.getSessionFile());
      const fb = grab(() => B.sm.getSessionFile());
      if (fa.ok && typeof fa.value === "string" && !A.files.includes(fa.value)) {
        A.files.push(fa.value);
        B.files.push(fb.ok ? fb.value : undefined);
      }
    }
  };

  const compareFiles = (fullDir) => {
    if (skip.has("files") || !persisted) return;
    const pa = grab(() => A.sm.getSessionFile());
    const pb = grab(() => B.sm.getSessionFile());
    compare("current session file contents", readFileLines(A, pa.value), readFileLines(B, pb.value));
    if (fullDir) compare("session directory contents", dirListing(A), dirListing(B));
  };

  const step = (op) => {
    stepNo++;
    const entry = { step: stepNo, name: op.name, args: describeArg(op.args, ids) };
    log.push(entry);
    if (op.guard && !(op.guard(A) && op.guard(B))) {
      entry.outcome = "skipped (guard)";
      return;
    }
    const ra = A.exec(op.run);
    const rb = B.exec(op.run);
    process.env.PI_CODING_AGENT_DIR = A.agentDir;
    entry.outcome = ra.ok ? "ok" : `throws ${JSON.stringify(String(ra.error?.message ?? ra.error).slice(0, 80))}`;
    if (op.pairResult && ra.ok && rb.ok) {
      const xa = ra.value?.arr;
      const xb = rb.value?.arr;
      if (Array.isArray(xa) && Array.isArray(xb)) {
        for (let k = 1; k < Math.min(xa.length, xb.length); k++) {
          if (typeof xa[k]?.id === "string" && typeof xb[k]?.id === "string" && !ids.tokA.has(xa[k].id))
            ids.pair(xa[k].id, xb[k].id);
        }
      }
    }
    if (A.sm && B.sm) pairAll();
    compare("operation outcome", normalizeOutcome(ra, A), normalizeOutcome(rb, B));
    if (!A.sm || !B.sm) return;
    // Full snapshot every fullEvery steps and after file-level operations;
    // otherwise the cheap core (leaf, count, header, last/leaf entry, session id/file/dir...).
    // The full snapshot costs O(entries): its interval grows with the session so the cost per step stays flat.
    const interval = Math.max(config.fullEvery, Math.ceil(lastCount / 15));
    const full = config.fullEvery <= 1 || ++sinceFull >= interval || !!op.fsChange || ra.ok !== rb.ok;
    if (full) sinceFull = 0;
    // Every 10th full snapshot bypasses B's canon memo so later in-place mutations of returned objects are caught.
    const fresh = full && ++fullCount % 10 === 0;
    const withIdentity = full && fullCount % 2 === 0;
    const snapA = snapshot(A, full, withIdentity);
    compareRaw("state after operation", snapA, snapshot(B, full, withIdentity), fresh);
    if (snapA.entryCount.ok) lastCount = snapA.entryCount.value;
    compareFiles(!!op.fsChange);
  };

  try {
    // Construction (retry with a plain constructor if the generated one is rejected on both sides).
    step(genConstructor(rng, ctx));
    if (!A.sm) {
      const plain = persisted
        ? {
            name: "SessionManager.create",
            args: [cwd, "<dir>"],
            run: (s) => {
              s.sm = s.mod.SessionManager.create(cwd, s.dir);
              return null;
            },
          }
        : {
            name: "SessionManager.inMemory",
            args: [cwd],
            run: (s) => {
              s.sm = s.mod.SessionManager.inMemory(cwd);
              return null;
            },
          };
      step(plain);
    }
    for (let i = 0; i < nOps; i++) step(genOp(rng, ctx));
    // Final deep comparison.
    compareRaw("final state", snapshot(A, true), snapshot(B, true), true);
    compareFiles(true);
    const stats = {};
    for (const l of log) {
      stats[l.name] ??= { ok: 0, threw: 0, skipped: 0 };
      const st = stats[l.name];
      if (l.outcome === "ok") st.ok++;
      else if (l.outcome?.startsWith("skipped")) st.skipped++;
      else st.threw++;
    }
    const systemCheckpoints = A.sm.getEntries().filter((e) => e.type === "compaction" && e.systemMessage).length;
    return { seed, persisted, ops: stepNo, entries: A.sm.getEntryCount(), systemCheckpoints, stats };
  } finally {
    if (savedEnv === undefined) delete process.env.PI_CODING_AGENT_DIR;
    else process.env.PI_CODING_AGENT_DIR = savedEnv;
    if (!config.keep) fs.rmSync(tmp, { recursive: true, force: true });
  }
}
