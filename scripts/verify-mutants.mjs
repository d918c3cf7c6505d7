#!/usr/bin/env node
// The verifier's mutation test: generates mutants of pi's session code (the devDependency's
// dist/core/session-manager.js, scripts/verify-mutants/generate.mjs), runs the verifier's corpus on
// each (scripts/verify-mutants/worker.mjs) and reports the score: a mutant is refused when the
// corpus finds a difference in the bundle chunk's view of it or in the module's (one verdict per
// install), served when neither does. Mutants that do not load (a syntax error) are stillborn and
// not counted; a mutant still running after --timeout seconds (an endless loop) counts as refused:
// the verifier never gives it a verdict, so pi is never served with it.
//   node scripts/verify-mutants.mjs [--set ci|full] [--only <text>] [--jobs N] [--seeds N]
//     [--timeout S] [--json <file>] [--served-in <file>] [--skip-refused-in <file>]
// --set ci (the default): the bounded set __test__/verify-mutants.test.mjs runs (CI_SET below);
// --set full: every mutant (`npm run test:verify-mutants`, ~1,200 mutants, tens of minutes).
// --served-in: only the mutants served in an earlier run's --json file (after the corpus changed);
// --skip-named: not those named in equivalent.mjs; --skip-refused-in: not those refused in it (a refusal stands while the corpus only grows). With
// --seeds N < 40 the seeded sequences are the first N of the verifier's 40: a mutant refused with
// fewer is refused by the verifier; those served are run again with 40 (--served-in).
// Exits 1 when a mutant not listed as equivalent (scripts/verify-mutants/equivalent.mjs) is served,
// or one listed as equivalent is refused.
import { spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { EQUIVALENT, INVISIBLE } from "./verify-mutants/equivalent.mjs";
import { generateMutants } from "./verify-mutants/generate.mjs";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const piDir = path.join(root, "node_modules", "@earendil-works", "pi-coding-agent");
const worker = path.join(root, "scripts", "verify-mutants", "worker.mjs");

/**
 * The bounded set that CI runs (__test__/verify-mutants.test.mjs, ~40): mutant ids (generate.mjs), every
 * operator across pi's session functions, the generated kin of issue 40's survivors (a cwd filter
 * dropped, a header check loosened, the final-newline repair, the discovery scan's limits), and two
 * equivalent ones (which must be served).
 */
export const CI_SET = [
  "const@11:40 3 -> 4",
  "cond@16:9 !/^[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za... -> true",
  "cmp@22:23 < -> >=",
  "stmt@40:9 entry.parentId = prevId; -> ;",
  "cmp@43:24 === -> !==",
  "logic@47:33 && -> ||",
  "cond@80:9 version < 2 -> false",
  "stmt@88:5 migrateToCurrentVersion(entries); -> ;",
  "arith@108:33 - -> +",
  "args@125:35 entries, byId -> byId, entries",
  "cond@127:9 leafId === null -> false",
  "logic@156:43 && -> ||",
  'const@171:30 "system" -> ""',
  "args@181:33 entry.customType, entry.content ?? [] -> entry.content ?? [], entry.customType",
  'cond@205:13 entry.type === "compaction" -> false',
  "stmt@221:13 foundFirstKept = true; -> ;",
  "cond@241:9 replacement === null -> false",
  "cmp@250:39 === -> !==",
  'args@294:69 /[/\\\\:]/g, "-" -> "-", /[/\\\\:]/g',
  "stmt@300:9 mkdirSync(sessionDir, { recursive: tr... -> ;",
  "stmt@310:9 super(`Session header exceeds ${MAX_S... -> ;",
  "cond@328:9 !existsSync(resolvedFilePath) -> false",
  "stmt@340:13 pending += decoder.write(buffer.subar... -> ;",
  "stmt@352:9 pending += decoder.end(); -> ;",
  "cond@361:9 entries.length === 0 -> false",
  "logic@364:35 || -> &&",
  "const@392:28 0 -> 1",
  'logic@382:9 entry.type !== "session" || typeof en... -> typeof entry.id !== "string"',
  "logic@457:28 !resolvedCwd -> (resolvedCwd)",
  'cond@1455:21 !file.endsWith(".jsonl") -> false',
  "const@1380:61 true -> false",
  "logic@1481:45 !filterCwd || sessionCwdMatches(sessi... -> sessionCwdMatches(session.cwd, resolv...",
  "stmt@1169:13 stack.push(...node.children); -> ;",
  "const@683:51 0 -> 1",
  "stmt@717:9 this.labelsById.clear(); -> ;",
  "args@1541:28 loaded, totalFiles -> totalFiles, loaded",
  "const@1408:41 true -> false",
  "const@304:34 1024 -> 1025",
  'const@334:43 "utf8" -> ""',
];

/**
 * Runs mutants `selected` (indices into `mutants`) on `jobs` workers. Resolves with one result per
 * mutant `{ index, id, verdict, part, check, ms }`. `onResult` sees each as it comes.
 * @param {{ mutants: any[], selected: number[], jobs?: number, seeds?: number, timeout?: number,
 *   onResult?: (result: any) => void }} options
 */
export async function runMutants({ mutants, selected, jobs = 1, seeds = 40, timeout = 120, onResult }) {
  const work = fs.mkdtempSync(path.join(root, ".tmp", "mutants-"));
  const listFile = path.join(work, "mutants.json");
  fs.writeFileSync(listFile, JSON.stringify({ piDir, seeds, mutants }));
  const results = [];
  const report = (r) => {
    const full = { id: mutants[r.index].id, ...r };
    results.push(full);
    onResult?.(full);
  };
  // one worker process for the batch; when it hangs or dies, the first mutant it had not finished
  // is refused without a verdict and a new worker takes the rest
  const runBatch = async (k, batch) => {
    while (batch.length) {
      const pending = new Set(batch);
      await new Promise((resolve) => {
        const indexFile = path.join(work, `w${k}.txt`);
        fs.writeFileSync(indexFile, batch.join("\n"));
        const child = spawn(process.execPath, [worker, listFile, path.join(work, `w${k}`), indexFile], {
          stdio: ["ignore", "pipe", "inherit"],
          // a mutant may write where it should not (a relative path, arguments swapped): here,
          // removed with the rest
          cwd: work,
        });
        let buffer = "";
        let timer;
        const arm = () => {
          clearTimeout(timer);
          timer = setTimeout(() => child.kill("SIGKILL"), timeout * 1000);
        };
        arm();
        child.stdout.on("data", (d) => {
          buffer += d;
          for (let at = buffer.indexOf("\n"); at !== -1; at = buffer.indexOf("\n")) {
            const r = JSON.parse(buffer.slice(0, at));
            buffer = buffer.slice(at + 1);
            pending.delete(r.index);
            report(r);
            arm();
          }
        });
        child.on("exit", () => {
          clearTimeout(timer);
          resolve(undefined);
        });
      });
      const [stuck, ...rest] = batch.filter((i) => pending.has(i));
      if (stuck !== undefined)
        report({
          index: stuck,
          verdict: "refused",
          part: "-",
          check: "no verdict (hang or crash)",
          ms: timeout * 1000,
        });
      batch = rest;
    }
  };
  await Promise.all(
    Array.from({ length: jobs }, (_, k) =>
      runBatch(
        k,
        selected.filter((_, i) => i % jobs === k),
      ),
    ),
  );
  fs.rmSync(work, { recursive: true, force: true });
  return results.sort((a, b) => a.index - b.index);
}

/** The score and the lines of the report. */
export function summarize(results) {
  const counted = results.filter((r) => r.verdict !== "stillborn");
  const equivalent = counted.filter((r) => Object.hasOwn(EQUIVALENT, r.id));
  const relevant = counted.filter((r) => !Object.hasOwn(EQUIVALENT, r.id));
  const refused = relevant.filter((r) => r.verdict === "refused");
  const invisible = relevant.filter((r) => r.verdict === "served" && Object.hasOwn(INVISIBLE, r.id));
  const escaped = relevant.filter((r) => r.verdict === "served" && !Object.hasOwn(INVISIBLE, r.id));
  // a mutant named equivalent or invisible that is refused: the lists are out of date
  const wrongEquivalent = counted.filter(
    (r) => (Object.hasOwn(EQUIVALENT, r.id) || Object.hasOwn(INVISIBLE, r.id)) && r.verdict !== "served",
  );
  const lines = [
    `mutants: ${results.length} (${results.length - counted.length} stillborn: do not load)`,
    `equivalent (named in scripts/verify-mutants/equivalent.mjs): ${equivalent.length}`,
    `behaviour-changing: ${relevant.length}, refused: ${refused.length}, served: ${invisible.length + escaped.length} (${invisible.length} of them named invisible to the verifier)`,
    `score: ${relevant.length ? ((100 * refused.length) / relevant.length).toFixed(1) : "100.0"}% of the behaviour-changing mutants refused`,
    `refused by the bundle chunk's view: ${refused.filter((r) => r.part === "bundle").length}, only by the module's: ${refused.filter((r) => r.part === "module").length}, without a verdict: ${refused.filter((r) => r.part === "-").length}`,
  ];
  for (const r of escaped) lines.push(`SERVED  ${r.id}`);
  for (const r of invisible) lines.push(`served, invisible  ${r.id}: ${INVISIBLE[r.id]}`);
  for (const r of wrongEquivalent) lines.push(`listed as served but refused  ${r.id}: ${r.check}`);
  return {
    ok: escaped.length === 0 && wrongEquivalent.length === 0,
    lines,
    refused,
    escaped,
    invisible,
    equivalent,
    wrongEquivalent,
  };
}

async function main() {
  const { values } = parseArgs({
    options: {
      set: { type: "string", default: "ci" },
      only: { type: "string" },
      jobs: { type: "string", default: "1" },
      seeds: { type: "string", default: "40" },
      timeout: { type: "string", default: "120" },
      json: { type: "string" },
      "served-in": { type: "string" },
      "skip-refused-in": { type: "string" },
      "skip-named": { type: "boolean" },
      quiet: { type: "boolean" },
    },
  });
  const source = fs.readFileSync(path.join(piDir, "dist", "core", "session-manager.js"), "utf8");
  const mutants = generateMutants(source);
  let selected = mutants.map((_, i) => i);
  if (values.set === "ci") selected = selected.filter((i) => CI_SET.includes(mutants[i].id));
  else if (values.set !== "full") throw new Error("--set: ci or full");
  const idsIn = (file, verdict) =>
    new Set(
      JSON.parse(fs.readFileSync(file, "utf8"))
        .filter((r) => r.verdict === verdict)
        .map((r) => r.id),
    );
  if (values["served-in"]) {
    const before = idsIn(values["served-in"], "served");
    selected = selected.filter((i) => before.has(mutants[i].id));
  }
  if (values["skip-refused-in"]) {
    const before = idsIn(values["skip-refused-in"], "refused");
    selected = selected.filter((i) => !before.has(mutants[i].id));
  }
  if (values["skip-named"])
    selected = selected.filter(
      (i) => !Object.hasOwn(EQUIVALENT, mutants[i].id) && !Object.hasOwn(INVISIBLE, mutants[i].id),
    );
  if (values.only) selected = selected.filter((i) => mutants[i].id.includes(values.only));
  fs.mkdirSync(path.join(root, ".tmp"), { recursive: true });
  const started = Date.now();
  const results = await runMutants({
    mutants,
    selected,
    jobs: Number(values.jobs),
    seeds: Number(values.seeds),
    timeout: Number(values.timeout),
    onResult: values.quiet
      ? undefined
      : (r) =>
          process.stderr.write(
            `${r.verdict.padEnd(9)} ${String(r.ms).padStart(6)} ms  ${r.id}${r.check ? `  [${r.part}: ${r.check.slice(0, 120)}]` : ""}\n`,
          ),
  });
  const summary = summarize(results);
  if (values.json) fs.writeFileSync(values.json, `${JSON.stringify(results, null, 1)}\n`);
  process.stdout.write(
    `pi ${JSON.parse(fs.readFileSync(path.join(piDir, "package.json"), "utf8")).version} dist/core/session-manager.js, set ${values.set}, ${os.cpus().length} cpus, ${Math.round((Date.now() - started) / 1000)} s\n${summary.lines.join("\n")}\n`,
  );
  return summary.ok ? 0 : 1;
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  main().then(
    (code) => process.exit(code),
    (error) => {
      process.stderr.write(`${error?.stack ?? error}\n`);
      process.exit(2);
    },
  );
}
