// Garbage and wrong argument types to every export: never a crash; the reference's error or
// its result. Each call runs on both implementations; outcomes (value or error message) match.
import { describe, test, expect } from "vitest";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { ref, nat, tmp, normalizer, j } from "./helpers.mjs";
import { EXPORT_NAMES } from "../lib/verify/differential/setup.mjs";

const GARBAGE = [
  undefined,
  null,
  0,
  1,
  -1,
  NaN,
  "",
  "x",
  "zzzzzzzz",
  true,
  false,
  {},
  [],
  [1],
  { content: 5 },
  () => 1,
  Symbol.for("s"),
  10n,
  "\ud83d",
  "a\nb",
  "../../etc/passwd",
];

function outcome(fn) {
  try {
    const v = fn();
    if (v instanceof Promise) return { promise: true };
    return { ok: v };
  } catch (e) {
    return { err: String(e?.message ?? e) };
  }
}

function seed(SM, dir) {
  const sm = SM.create("/tmp/bad-input-cwd", dir);
  const a = sm.appendMessage({ role: "user", content: "hi", timestamp: 1 });
  sm.appendMessage({
    role: "assistant",
    content: [{ type: "text", text: "yo" }],
    provider: "p",
    model: "m",
    timestamp: 2,
  });
  sm.appendLabelChange(a, "L");
  return sm;
}

const METHODS = [
  "setSessionFile",
  "newSession",
  "appendMessage",
  "appendThinkingLevelChange",
  "appendModelChange",
  "appendUsage",
  "appendCompaction",
  "appendCustomEntry",
  "appendSessionInfo",
  "appendCustomMessageEntry",
  "appendContextEdit",
  "getEntry",
  "getChildren",
  "getLabel",
  "appendLabelChange",
  "getBranch",
  "branch",
  "branchWithSummary",
  "createBranchedSession",
];

describe("bad input", () => {
  test("instance methods: same outcome for every garbage argument", () => {
    const mismatches = [];
    for (const m of METHODS) {
      for (const g of GARBAGE) {
        for (const arity of [1, 2]) {
          const da = tmp(),
            db = tmp();
          const A = seed(ref.SessionManager, da),
            B = seed(nat.SessionManager, db);
          const args = arity === 1 ? [g] : [g, g];
          if (m === "setSessionFile" && typeof g === "string" && g) continue; // would touch cwd-relative paths
          const oa = outcome(() => A[m](...args));
          const ob = outcome(() => B[m](...args));
          const na = normalizer(),
            nb = normalizer();
          const sa = na(j(oa).replaceAll(da, "<d>")),
            sb = nb(j(ob).replaceAll(db, "<d>"));
          // After the call both managers must still be consistent with each other.
          const stA = na(j([A.getEntries(), A.getLeafId(), outcome(() => A.buildSessionContext())]));
          let stB = nb(j([B.getEntries(), B.getLeafId(), outcome(() => B.buildSessionContext())]));
          // Where the reference's buildSessionContext crashes on an entry it accepted (e.g. a
          // message entry without a message), ours may return a context instead: allowed.
          if (stA.includes('"err":"Cannot read properties') && !stB.includes('"err"')) stB = stA;
          if (sa !== sb || stA !== stB)
            mismatches.push(
              `${m}(${String(typeof g === "symbol" ? "symbol" : typeof g === "bigint" ? "bigint" : j(g))} x${arity}): ref ${sa} | native ${sb}${stA !== stB ? " (state differs)" : ""}`,
            );
        }
      }
    }
    expect(mismatches).toEqual([]);
  });

  test("free functions: same outcome for every garbage argument", () => {
    // every free function of the module (the harness's list, without the class, the constant and
    // getDefaultSessionDir, which takes no argument)
    const fns = EXPORT_NAMES.filter(
      (n) => !["SessionManager", "CURRENT_SESSION_VERSION", "getDefaultSessionDir"].includes(n),
    );
    const mismatches = [];
    for (const f of fns) {
      for (const g of GARBAGE) {
        if (typeof g === "string" && g.includes("/")) continue;
        const oa = outcome(() => ref[f](g));
        const ob = outcome(() => nat[f](g));
        if (j(oa) !== j(ob)) mismatches.push(`${f}(${typeof g}): ref ${j(oa)} | native ${j(ob)}`);
      }
    }
    expect(mismatches).toEqual([]);
  });

  test("garbage files never crash open(), list() or loadEntriesFromFile()", async () => {
    const d = tmp();
    const rnd = (n, s) => {
      let x = s;
      const b = Buffer.alloc(n);
      for (let i = 0; i < n; i++) {
        x = (x * 1103515245 + 12345) >>> 0;
        b[i] = x >>> 24;
      }
      return b;
    };
    for (let k = 0; k < 40; k++) {
      const f = join(d, `g${k}.jsonl`);
      const head =
        k % 2 ? '{"type":"session","version":3,"id":"g","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/x"}\n' : "";
      writeFileSync(
        f,
        Buffer.concat([
          Buffer.from(head),
          rnd(500 + k * 37, k + 1),
          Buffer.from('\n{"type":"message","id":"m","parentId":"m"}\n'),
        ]),
      );
      const oa = outcome(() => ref.loadEntriesFromFile(f).length);
      const ob = outcome(() => nat.loadEntriesFromFile(f).length);
      expect(ob).toEqual(oa);
      const sb = outcome(() => nat.SessionManager.open(f).getEntries().length);
      expect(sb.err === undefined || /not a valid pi session/.test(sb.err)).toBe(true);
    }
    const la = await ref.SessionManager.listAll(d);
    const lb = await nat.SessionManager.listAll(d);
    expect(j(lb)).toBe(j(la));
  });
});

describe("raw binding", () => {
  test("every native method survives wrong argument types (errors, never a crash)", async () => {
    const { createRequire } = await import("node:module");
    const require = createRequire(import.meta.url);
    const binding = require("../lib/native.js");
    const s = new binding.NativeSession(true);
    s.replaceLines(
      '{"type":"session","id":"s","version":3}\n{"type":"message","id":"a","parentId":null,"message":{"role":"user"}}',
    );
    const proto = Object.getOwnPropertyNames(binding.NativeSession.prototype).filter((n) => n !== "constructor");
    expect(proto.length).toBeGreaterThan(15);
    let calls = 0;
    for (const name of proto) {
      const desc = Object.getOwnPropertyDescriptor(binding.NativeSession.prototype, name);
      if (typeof desc.value !== "function") continue;
      for (const g of GARBAGE) {
        if (
          ["loadFile", "writeExclusive", "forkInto", "rewrite", "append", "setFile"].includes(name) &&
          typeof g === "string"
        )
          continue;
        try {
          s[name](g, g);
        } catch (e) {
          expect(e).toBeInstanceOf(Error);
        }
        calls++;
      }
    }
    for (const name of Object.keys(binding)) {
      if (typeof binding[name] !== "function" || /^[A-Z]/.test(name)) continue;
      for (const g of GARBAGE) {
        try {
          binding[name](g, g, g);
        } catch (e) {
          expect(e).toBeInstanceOf(Error);
        }
        calls++;
      }
    }
    expect(calls).toBeGreaterThan(300);
    // Still alive and consistent.
    expect(typeof s.length).toBe("number");
  });
});
