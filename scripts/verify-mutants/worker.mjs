// One worker of the verifier's mutation test (scripts/verify-mutants.mjs): for each mutant index it
// is given, writes pi's session module with that mutant into its own copy of pi's dist folder (links
// to pi's files but for the module), loads it, and runs the verifier's corpus against it and this
// package, first as the bundle chunk shows it (its nine exports), then as the unbundled module.
// Prints one JSON line per mutant: { index, verdict: "refused" | "served" | "stillborn", part, check, ms }.
//   node scripts/verify-mutants/worker.mjs <mutants.json> <work folder> <file of indices, one a line>
import fs from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { runCorpus } from "../../lib/verify/corpus.mjs";
import { SESSION_EXPORTS } from "../../lib/verify/locate.mjs";
import { applyMutant } from "./generate.mjs";

const require = createRequire(import.meta.url);
const [listFile, work, indexFile] = process.argv.slice(2);
const indices = fs.readFileSync(indexFile, "utf8").split("\n").filter(Boolean);
const { piDir, seeds, mutants } = JSON.parse(fs.readFileSync(listFile, "utf8"));
const own = require("../../index.js");
const source = fs.readFileSync(path.join(piDir, "dist", "core", "session-manager.js"), "utf8");

/** `<work>/dist`: links to pi's dist entries, `core` a folder of links but for session-manager.js. */
function mirror() {
  const dist = path.join(work, "dist");
  fs.rmSync(work, { recursive: true, force: true });
  fs.mkdirSync(path.join(dist, "core"), { recursive: true });
  fs.symlinkSync(path.join(piDir, "package.json"), path.join(work, "package.json")); // "type": "module"
  for (const name of fs.readdirSync(path.join(piDir, "dist")))
    if (name !== "core") fs.symlinkSync(path.join(piDir, "dist", name), path.join(dist, name));
  for (const name of fs.readdirSync(path.join(piDir, "dist", "core")))
    if (name !== "session-manager.js")
      fs.symlinkSync(path.join(piDir, "dist", "core", name), path.join(dist, "core", name));
  return path.join(dist, "core", "session-manager.js");
}

const file = mirror();
for (const index of indices.map(Number)) {
  const m = mutants[index];
  const started = performance.now();
  const line = (o) =>
    process.stdout.write(`${JSON.stringify({ index, ms: Math.round(performance.now() - started), ...o })}\n`);
  fs.writeFileSync(file, applyMutant(source, m));
  let ns;
  try {
    ns = await import(`${pathToFileURL(file).href}?mutant=${index}`);
  } catch (error) {
    line({ verdict: "stillborn", check: String(error?.message ?? error).split("\n")[0] });
    continue;
  }
  const bundleView = Object.fromEntries(SESSION_EXPORTS.map((n) => [n, ns[n]]));
  let verdict = "served";
  let part;
  let check;
  for (const [name, ref] of [
    ["bundle", bundleView],
    ["module", ns],
  ]) {
    let r;
    try {
      r = await runCorpus({ ref, impl: own, seeds });
    } catch (error) {
      r = { ok: false, failure: { name: "threw", detail: String(error?.message ?? error) } };
    }
    if (!r.ok) {
      verdict = "refused";
      part = name;
      check = `${r.failure.name}: ${String(r.failure.detail ?? "")
        .split("\n")[0]
        .slice(0, 200)}`;
      break;
    }
  }
  line({ verdict, part, check });
}
