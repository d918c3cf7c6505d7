// The verifier: loads an installed pi's own, unpatched session code (every bundle chunk that declares
// SessionManager, and the unbundled module), runs the corpus (lib/verify/corpus.mjs) against each
// and this package, and records one verdict for the install (lib/verify/install.mjs): served only
// when every part behaved as ours; a difference in any part refuses all of them, and the verdict
// says which part and which operation. Must run in a process without this package's module hooks
// (lib/verify/cli.mjs makes sure).
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { createRequire } from "node:module";
import { basename, join } from "node:path";
import { pathToFileURL } from "node:url";
import { runCorpus } from "./corpus.mjs";
import { loadModules } from "./differential.mjs";
import { bundleDigest, knownRelease, moduleDigest } from "./identity.mjs";
import { installDigest } from "./install.mjs";
import { findSessionChunks, findSessionModule, SESSION_EXPORTS } from "./locate.mjs";
import { VERIFIER, writeVerdict } from "./verdicts.mjs";

const require = createRequire(import.meta.url);

/** The names of a chunk's exports that are pi's session module's (the others are other modules'). */
function sessionExportsOf(chunkNs, moduleNs) {
  const names = Object.keys(chunkNs);
  if (moduleNs) return names.filter((n) => Object.hasOwn(moduleNs, n));
  // without the unbundled module: the names the hook assigns
  return names.filter((n) => SESSION_EXPORTS.includes(n));
}

/** A part as the report and the verdict name it: `bundle chunk chunk-X.js`, `unbundled module ...`. */
export function partName(target) {
  return target.kind === "bundle"
    ? `bundle chunk ${basename(target.file)}`
    : "unbundled module dist/core/session-manager.js";
}

/** The verdict's failure line: the check, the part, the first lines of what differed. */
function failureOf(result) {
  const f = result.failure ?? { name: "verification", detail: "failed" };
  return `${f.name} in the ${partName(result)}: ${f.detail}`;
}

/**
 * Verifies pi's package `dir` (`version` for the report). Returns `{ results, installs, ok }`:
 * `results` one per part `{ kind, file, digest, known, ok, skipped, checks, failure, ms }`,
 * `installs` the install digests the verdict was recorded under (one per chunk), `ok` whether
 * every part passed. A part whose digest is known-good is not verified again unless `all`.
 * Records the verdict unless `record` is false.
 * @param {{ dir: string, version: string, seeds?: number, record?: boolean, all?: boolean,
 *   onCheck?: (check: any) => void, onTarget?: (target: any) => void }} options
 */
export async function verifyPi(options) {
  // pi's code under test may write where it should not (a relative path): into a folder of its
  // own, not the folder pi-native was started in (the user's project)
  const cwd = process.cwd();
  const scratch = mkdtempSync(join(tmpdir(), "pi-session-native-verify-cwd-"));
  process.chdir(scratch);
  try {
    return await verifyParts(options);
  } finally {
    process.chdir(cwd);
    rmSync(scratch, { recursive: true, force: true });
  }
}

/** @param {Parameters<typeof verifyPi>[0]} options */
async function verifyParts({ dir, version, seeds = 40, record = true, all = false, onCheck, onTarget }) {
  const own = require("../../index.js");
  const results = [];
  const moduleFile = findSessionModule(dir);
  const chunkFiles = findSessionChunks(dir);
  let moduleNs; // the unbundled module's namespace: which of a chunk's exports are the session module's
  const targets = [];
  if (moduleFile) targets.push({ kind: "module", file: moduleFile, digest: moduleDigest(moduleFile) });
  for (const file of chunkFiles) targets.push({ kind: "bundle", file, digest: bundleDigest(readFileSync(file)) });
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
    results.push({
      ...target,
      known,
      ok: outcome.ok,
      checks: outcome.checks,
      failure: outcome.failure,
      ms: Math.round(performance.now() - started),
    });
  }
  const bad = results.find((r) => !r.ok);
  const ok = results.length > 0 && !bad;
  const module = targets.find((t) => t.kind === "module")?.digest;
  const chunks = targets.filter((t) => t.kind === "bundle").map((t) => t.digest);
  // one verdict for each pairing the hook may meet (pi 1.3.0 to 1.6.0 have one chunk)
  const installs = (chunks.length ? chunks : [undefined]).map((chunk) => installDigest({ chunk, module }));
  if (record && results.length) {
    for (const install of installs)
      writeVerdict(install, VERIFIER, { ok, failure: bad ? failureOf(bad) : undefined, pi: version });
  }
  return { results, installs, ok };
}

/** The report as text (what `pi-native --verify` prints and the cache keeps). */
export function formatReport({ dir, version }, { results, installs = [], ok }) {
  const lines = [`pi ${version} at ${dir}`, `verifier ${VERIFIER}`];
  if (!results.length)
    lines.push("  no session code found (no bundle chunk defines SessionManager, no dist/core/session-manager.js)");
  for (const r of results) {
    lines.push(
      `${partName(r)} (${r.file})`,
      `  ${r.digest}${r.known ? ` (known: pi ${r.known})` : " (new to this package)"}`,
    );
    if (r.skipped) {
      lines.push("  known-good: not verified again here (--all verifies it too)");
      continue;
    }
    for (const c of r.checks)
      lines.push(`  ${c.ok ? "same" : "DIFFERS"}  ${c.name} (${c.ms} ms)${c.ok ? "" : `\n${indent(c.detail)}`}`);
    lines.push(`  this part: ${r.ok ? "behaves as pi-session-native" : "differs"} (${r.ms} ms)`);
  }
  const bad = results.find((r) => !r.ok);
  const passed = ok ?? (results.length > 0 && !bad);
  if (results.length)
    lines.push(
      `install ${installs.join(", ")}: ${passed ? "served" : `not served (the ${partName(bad)} differs: ${bad?.failure?.name})`}`,
    );
  lines.push(
    !passed && results.length
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
