// Differential fuzzing harness: reference SessionManager (A) vs implementation under test (B).
//
// Every sequence is driven by a seeded PRNG. Operations are generated from the state of side A
// only (entries are chosen by index, never by id value), so a seed replays the same operation
// sequence on every run even though entry ids, session ids and timestamps are random.
//
// Ids are paired A<->B by order of appearance (getEntries() order, checked after every step);
// every observable value is normalized on its own side (ids -> <id:n>, session ids -> <sid:n>,
// ISO timestamps -> <ts>, derived millisecond timestamps -> <ms>, temp paths -> <root>) and the
// normalized values are compared exactly (Object.is on primitives, own-key order, presence of
// keys whose value is undefined, prototypes).
//
// Split by job under lib/verify/differential/: setup (names, skips, loading, PRNG), values
// (arguments, pairing, normalization, comparison), generate (sides, values, fixtures), ops and
// ops-probe (the operations), run (snapshots and the sequence runner).
export {
  EXPORT_NAMES,
  REFERENCE_MODULE_URL,
  SKIPPABLE,
  assertGenuineReference,
  loadModules,
  makeRng,
  parseSkip,
} from "./differential/setup.mjs";
export { DiffError, firstDiff, normalize } from "./differential/values.mjs";
export { FIXTURES, fixtureContent } from "./differential/generate.mjs";
export { defaultConfig, isPersistedSeed, runSequence } from "./differential/run.mjs";
