// The verifier: loads an installed pi's own, unpatched session code (its bundle chunk and its
// unbundled module), runs the corpus (lib/verify/corpus.mjs) against each and this package, and
// records a verdict per digest (lib/verify/verdicts.mjs). Must run in a process without this
// package's module hooks (lib/verify/cli.mjs makes sure).
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { pathToFileURL } from "node:url";
import { runCorpus } from "./corpus.mjs";
import { loadModules } from "./differential.mjs";
import { bundleDigest, knownRelease, moduleDigest } from "./identity.mjs";
import { findSessionChunk, findSessionModule, SESSION_EXPORTS } from "./locate.mjs";
import { VERIFIER, writeVerdict } from "./verdicts.mjs";

const require = createRequire(import.meta.url);

/** The names of a chunk's exports that are pi's session module's (the others are other modules'). */
function sessionExportsOf(chunkNs, moduleNs) {
  const names = Object.keys(chunkNs);
  if (moduleNs) return names.filter((n) => Object.hasOwn(moduleNs, n));
  // without the unbundled module: the names the hook assigns
  return names.filter((n) => SESSION_EXPORTS.includes(n));
}

/**
 * Verifies pi's package `dir` (`version` for the report). Returns `{ results }`, one per target:
 * `{ kind, file, digest, known, ok, skipped, checks, failure, ms }`. Code whose digest is
 * known-good is not verified again unless `all`. Records verdicts unless `record` is false.
 */
/**
 * @param {{ dir: string, version: string, seeds?: number, record?: boolean, all?: boolean,
 *   onCheck?: (check: any) => void, onTarget?: (target: any) => void }} options
 */
export async function verifyPi({ dir, version, seeds = 40, record = true, all = false, onCheck, onTarget }) {
  const own = require("../../index.js");
  const results = [];
  const moduleFile = findSessionModule(dir);
  const chunkFile = findSessionChunk(dir);
  let moduleNs; // the unbundled module's namespace: which of a chunk's exports are the session module's
  const targets = [];
  if (moduleFile) targets.push({ kind: "module", file: moduleFile, digest: moduleDigest(moduleFile) });
  if (chunkFile) targets.push({ kind: "bundle", file: chunkFile, digest: bundleDigest(readFileSync(chunkFile)) });
  for (const target of targets) {
    const started = performance.now();
    const known = knownRelease(target.digest);
    if (known && !all) {
      results.push({ ...target, known, ok: true, skipped: true, checks: [], ms: 0 });
      continue;
    }
    onTarget?.(target);
    let outcome;
    try {
      const { ref } = await loadModules({ referenceUrl: pathToFileURL(target.file).href, impl: own });
      let side = ref;
      if (target.kind === "bundle") {
        // the chunk also exports other modules' names: keep the session module's
        moduleNs ??= moduleFile ? await import(pathToFileURL(moduleFile).href) : undefined;
        side = {};
        for (const name of sessionExportsOf(ref, moduleNs)) side[name] = ref[name];
      }
      outcome = await runCorpus({ ref: side, impl: own, seeds, onCheck });
    } catch (error) {
      const failure = { name: "loading pi's session code", ok: false, detail: String(error?.message ?? error) };
      outcome = { ok: false, checks: [failure], failure };
    }
    const result = {
      ...target,
      known,
      ok: outcome.ok,
      checks: outcome.checks,
      failure: outcome.failure,
      ms: Math.round(performance.now() - started),
    };
    results.push(result);
    if (record) {
      const failure = outcome.failure ? `${outcome.failure.name}: ${outcome.failure.detail}` : undefined;
      writeVerdict(target.digest, VERIFIER, { ok: outcome.ok, failure, pi: version });
    }
  }
  return { results };
}

/** The report as text (what `pi-native --verify` prints and the cache keeps). */
export function formatReport({ dir, version }, { results }) {
  const lines = [`pi ${version} at ${dir}`, `verifier ${VERIFIER}`];
  if (!results.length)
    lines.push("  no session code found (no bundle chunk defines SessionManager, no dist/core/session-manager.js)");
  for (const r of results) {
    lines.push(
      `${r.kind === "bundle" ? "bundle chunk" : "unbundled module"} ${r.file}`,
      `  ${r.digest}${r.known ? ` (known: pi ${r.known})` : " (new to this package)"}`,
    );
    if (r.skipped) {
      lines.push("  known-good: served without verifying here (--all verifies it too)");
      continue;
    }
    for (const c of r.checks)
      lines.push(`  ${c.ok ? "same" : "DIFFERS"}  ${c.name} (${c.ms} ms)${c.ok ? "" : `\n${indent(c.detail)}`}`);
    lines.push(`  verdict: ${r.ok ? "behaves as pi-session-native: served" : "differs: not served"} (${r.ms} ms)`);
  }
  const bad = results.filter((r) => !r.ok);
  lines.push(
    bad.length
      ? "RESULT: FAIL. pi runs unmodified with this session code. Please report it with this output at https://github.com/pi-session-native/pi-session-native/issues"
      : results.length
        ? "RESULT: PASS. pi-native serves this pi."
        : "RESULT: FAIL (nothing to verify)",
  );
  return `${lines.join("\n")}\n`;
}

function indent(text) {
  return String(text ?? "")
    .split("\n")
    .map((l) => `      ${l}`)
    .join("\n");
}
