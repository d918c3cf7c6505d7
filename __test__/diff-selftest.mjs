// Harness self-test: the reference must equal itself, and every deliberate mutant must be caught.
//   node __test__/diff-selftest.mjs [seedsPerCheck]
import { defaultConfig, loadModules, parseSkip, runSequence } from "../lib/verify/differential.mjs";
import { MUTANTS, REQUIRES, makeMutantModule } from "./diff-mutants.mjs";

const seeds = Number(process.argv[2] ?? 40);
const config = defaultConfig();
const skip = parseSkip();
let bad = 0;
{
  const mods = await loadModules({ impl: (ref) => ref, implName: "reference" });
  const t = performance.now();
  for (let s = 0; s < seeds; s++) runSequence(s, mods, config, skip);
  console.log(`reference vs reference: ${seeds} seeds pass (${Math.round(performance.now() - t)} ms)`);
}
for (const m of MUTANTS) {
  if (REQUIRES[m] && skip.has(REQUIRES[m])) {
    console.log(`skipped ${m} (needs check "${REQUIRES[m]}", disabled by DIFF_SKIP)`);
    continue;
  }
  const mods = await loadModules({ impl: (ref) => makeMutantModule(ref, m), implName: `mutant ${m}` });
  let caught;
  for (let s = 0; s < seeds && !caught; s++) {
    try {
      runSequence(s, mods, config, skip);
    } catch (e) {
      caught = { seed: s, msg: String(e.message).split("\n").slice(0, 4).join(" | ") };
    }
  }
  if (!caught) bad++;
  console.log(`${caught ? "CAUGHT " : "MISSED!"} ${m}${caught ? ` at seed ${caught.seed}: ${caught.msg}` : ""}`);
}
process.exit(bad ? 1 : 0);
