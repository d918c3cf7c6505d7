// Seeded random differential suite: reference SessionManager (A) vs the implementation under test (B).
//
//   npx vitest run __test__/differential.test.mjs                  # B = ../index.js, 500 sequences
//   DIFF_IMPL=reference npx vitest run __test__/differential.test.mjs   # B = reference (harness self-test)
//   DIFF_SEED=123 npx vitest run __test__/differential.test.mjs    # one seed
//   FUZZ_SEQUENCES=5000 FUZZ_SEED_BASE=10000 ...                   # more / other seeds
//   DIFF_SKIP=argIdentity,identity ...                             # disable named checks (see SKIPPABLE in lib/verify/differential.mjs)
//   FUZZ_PERSIST_EVERY=6 (every n-th seed persists to disk; 0 = none), FUZZ_MIN_OPS/FUZZ_MAX_OPS, DIFF_KEEP=1
import { afterEach, describe, expect, it } from "vitest";
import {
  EXPORT_NAMES,
  defaultConfig,
  isPersistedSeed,
  loadModules,
  parseSkip,
  runSequence,
} from "../lib/verify/differential.mjs";
import { makeMutantModule } from "./diff-mutants.mjs";

let mods;
let loadError;
try {
  const which = process.env.DIFF_IMPL;
  mods = await loadModules(
    which === "reference"
      ? { impl: (ref) => ref, implName: "reference (DIFF_IMPL=reference)" }
      : which?.startsWith("mutant:")
        ? { impl: (ref) => makeMutantModule(ref, which.slice(7)), implName: `mutant (DIFF_IMPL=${which})` }
        : {},
  );
} catch (error) {
  loadError = error;
}

const config = defaultConfig();
const skip = parseSkip();
const base = Number(process.env.FUZZ_SEED_BASE ?? 0);
const seeds =
  process.env.DIFF_SEED !== undefined
    ? process.env.DIFF_SEED.split(",").map((s) => Number(s.trim()))
    : Array.from({ length: config.sequences }, (_, i) => base + i);

// The worker reads vitest's RPC replies in the event loop's poll phase. Thousands of
// synchronous tests in a row (FUZZ_SEQUENCES=5000: minutes) never reach it, and vitest's
// fixed 60 s RPC timeout then fails a run whose tests all passed ("Timeout calling
// onTaskUpdate"). A turn of the event loop every second lets the replies through.
let lastTurn = Date.now();
afterEach(async () => {
  if (Date.now() - lastTurn < 1000) return;
  await new Promise((resolve) => setImmediate(resolve));
  lastTurn = Date.now();
});

describe(`differential SessionManager (B = ${mods?.implName ?? "pi-session-native"})`, () => {
  if (loadError) {
    it("loads the implementation under test", () => {
      throw loadError;
    });
    return;
  }

  it("exports the same names as the reference module", () => {
    const missing = EXPORT_NAMES.filter((n) => !(n in mods.impl));
    expect(missing, `missing exports in ${mods.implName}`).toEqual([]);
    expect(mods.impl.CURRENT_SESSION_VERSION).toBe(mods.ref.CURRENT_SESSION_VERSION);
    for (const n of EXPORT_NAMES) expect(typeof mods.impl[n], n).toBe(typeof mods.ref[n]);
  });

  for (const seed of seeds) {
    const kind = isPersistedSeed(seed, config) ? "persisted" : "memory";
    it(`seed ${seed} (${kind})`, () => {
      const r = runSequence(seed, mods, config, skip);
      if (config.verbose) console.log(JSON.stringify(r));
    }, 120_000);
  }
});
