// Mutants of pi 1.6.0's dist/core/session-manager.js (ids from generate.mjs) that change no behaviour
// the session code shows, with why. The mutation test (scripts/verify-mutants.mjs) expects each of
// them served and every other mutant refused.
export const EQUIVALENT = Object.freeze({});
