#!/usr/bin/env node
// How much of pi's session code the verifier's corpus (lib/verify/corpus.mjs) executes, measured
// with V8's precise block coverage (node:inspector) while the corpus runs against pi's own code:
//   node scripts/verify-coverage.mjs [--part module|bundle|both] [--seeds N] [--list]
// (the bundle chunk needs Node >= 22.19: under an older Node the script runs itself again with
// scripts/node22.mjs's Node).
//
// What counts, read from the source with TypeScript's parser:
//   functions  every function, method, accessor, constructor and arrow of pi's session module
//              (dist/core/session-manager.js), or of the chunk's session code (from its
//              CURRENT_SESSION_VERSION to the end of its SessionManager class)
//   branches   each way a decision can go: an if's then and else (an absent else too), a ?:'s two
//              arms, the right side of && || ?? (taken or not), each case, a loop's body, a catch,
//              an optional call or access (?.), a default parameter
// A function or branch is reached when V8 counted its first position (in the innermost range that
// holds it) at least once. The bundle part runs the corpus on the chunk's nine exports, as the
// verifier does.
import inspector from "node:inspector/promises";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { parseArgs } from "node:util";
import ts from "typescript";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const piDir = path.join(root, "node_modules", "@earendil-works", "pi-coding-agent");
const require = createRequire(import.meta.url);

/** Functions and branches of `src` between `from` and `to`: `{ functions, branches }` of `{ at, what }`. */
export function sitesOf(src, from = 0, to = src.length) {
  const sf = ts.createSourceFile("x.js", src, ts.ScriptTarget.Latest, true, ts.ScriptKind.JS);
  const functions = [];
  const branches = [];
  const pos = (n) => n.getStart(sf);
  const where = (at) => {
    const { line, character } = sf.getLineAndCharacterOfPosition(at);
    return `${line + 1}:${character + 1}`;
  };
  const branch = (node, what, at = node ? pos(node) : undefined) => {
    if (at !== undefined) branches.push({ at, what: `${what} @${where(at)}` });
  };
  const visit = (node) => {
    if (node.getEnd() < from || node.getStart(sf) > to) return;
    const inside = pos(node) >= from && node.getEnd() <= to;
    const body = /** @type {any} */ (node).body;
    if (inside && ts.isFunctionLike(node) && body) {
      const name = node.name?.getText(sf) ?? (ts.isConstructorDeclaration(node) ? "constructor" : "(anonymous)");
      const owner = ts.isClassLike(node.parent) ? `${node.parent.name?.getText(sf) ?? "class"}.` : "";
      functions.push({ at: pos(body), what: `${owner}${name} @${where(pos(node))}` });
      for (const p of node.parameters ?? []) if (p.initializer) branch(p.initializer, "default parameter");
    }
    if (inside) {
      if (ts.isIfStatement(node)) {
        branch(node.thenStatement, "if then");
        // no else: the branch not taken starts right after the if
        if (node.elseStatement) branch(node.elseStatement, "if else");
        else branches.push({ at: node.getEnd(), what: `if without else, not taken @${where(pos(node))}`, after: true });
      } else if (ts.isConditionalExpression(node)) {
        branch(node.whenTrue, "?: true");
        branch(node.whenFalse, "?: false");
      } else if (ts.isBinaryExpression(node) && ["&&", "||", "??"].includes(node.operatorToken.getText(sf))) {
        branch(node.right, `${node.operatorToken.getText(sf)} right side`);
      } else if (ts.isCaseClause(node) || ts.isDefaultClause(node)) {
        branch(node.statements[0] ?? node, "case");
      } else if (ts.isIterationStatement(node, false)) {
        branch(node.statement, "loop body");
      } else if (ts.isCatchClause(node)) {
        branch(node.block, "catch");
      } else if (
        (ts.isPropertyAccessExpression(node) || ts.isCallExpression(node) || ts.isElementAccessExpression(node)) &&
        node.questionDotToken
      ) {
        branch(undefined, "?. continued", node.questionDotToken.getEnd());
      }
    }
    ts.forEachChild(node, visit);
  };
  visit(sf);
  return { functions, branches };
}

/** The count V8 gives position `at` of a script: the innermost range holding it (block coverage). */
function countAt(fnCoverage, at) {
  let best;
  for (const fn of fnCoverage) {
    for (const r of fn.ranges) {
      if (
        r.startOffset <= at &&
        at < r.endOffset &&
        (!best || r.endOffset - r.startOffset <= best.endOffset - best.startOffset)
      )
        best = r;
    }
  }
  return best ? best.count : 0;
}

/** Where the chunk's session code is: CURRENT_SESSION_VERSION's statement to the end of SessionManager's. */
function sessionRegion(src) {
  const from = src.indexOf("var CURRENT_SESSION_VERSION=");
  const classAt = src.indexOf("var SessionManager=class _SessionManager{");
  if (from === -1 || classAt === -1) throw new Error("the chunk's session code is not where it is expected");
  // the class ends at its matching brace: parse just that statement
  const sf = ts.createSourceFile("c.js", src.slice(classAt, classAt + 200_000), ts.ScriptTarget.Latest, true);
  return { from, to: classAt + sf.statements[0].getEnd() };
}

async function measure(part, seeds) {
  const { runCorpus } = await import("../lib/verify/corpus.mjs");
  const { SESSION_EXPORTS, findSessionChunk } = await import("../lib/verify/locate.mjs");
  const file = part === "module" ? path.join(piDir, "dist", "core", "session-manager.js") : findSessionChunk(piDir);
  const url = pathToFileURL(file).href;
  const session = new inspector.Session();
  session.connect();
  await session.post("Profiler.enable");
  await session.post("Profiler.startPreciseCoverage", { callCount: true, detailed: true });
  const ns = await import(url);
  const ref = part === "module" ? ns : Object.fromEntries(SESSION_EXPORTS.map((n) => [n, ns[n]]));
  const started = performance.now();
  const r = await runCorpus({ ref, impl: require("../index.js"), seeds });
  const ms = Math.round(performance.now() - started);
  const { result } = await session.post("Profiler.takePreciseCoverage");
  await session.post("Profiler.stopPreciseCoverage");
  session.disconnect();
  const script = result.find((s) => s.url === url);
  if (!script) throw new Error(`no coverage for ${url}`);
  const src = readFileSync(file, "utf8");
  const region = part === "module" ? { from: 0, to: src.length } : sessionRegion(src);
  const { functions, branches } = sitesOf(src, region.from, region.to);
  const reached = (s) => countAt(script.functions, s.at) > 0;
  return {
    part,
    file,
    corpusOk: r.ok,
    ms,
    functions: { total: functions.length, missed: functions.filter((f) => !reached(f)).map((f) => f.what) },
    branches: { total: branches.length, missed: branches.filter((b) => !reached(b)).map((b) => b.what) },
  };
}

async function main() {
  const { values } = parseArgs({
    options: {
      part: { type: "string", default: "both" },
      seeds: { type: "string", default: "40" },
      list: { type: "boolean" },
      json: { type: "boolean" },
    },
  });
  const parts = values.part === "both" ? ["module", "bundle"] : [values.part];
  const [major, minor] = process.versions.node.split(".").map(Number);
  if (parts.includes("bundle") && (major < 22 || (major === 22 && minor < 19))) {
    const { runNode22 } = await import("./node22.mjs");
    return runNode22([fileURLToPath(import.meta.url), ...process.argv.slice(2)], { stdio: "inherit" }).status ?? 1;
  }
  const out = [];
  for (const part of parts) out.push(await measure(part, Number(values.seeds)));
  if (values.json) process.stdout.write(`${JSON.stringify(out, null, 1)}\n`);
  else {
    const pct = (c) =>
      `${c.total - c.missed.length}/${c.total} (${((100 * (c.total - c.missed.length)) / c.total).toFixed(1)}%)`;
    for (const m of out) {
      process.stdout.write(
        `${m.part === "module" ? "unbundled module" : "bundle chunk's session code"} ${path.relative(root, m.file)}: ` +
          `corpus ${m.corpusOk ? "same" : "DIFFERS"} (${seeds(values)} seeds, ${m.ms} ms); ` +
          `functions ${pct(m.functions)}, branches ${pct(m.branches)}\n`,
      );
      if (values.list || m.functions.missed.length)
        for (const f of m.functions.missed) process.stdout.write(`  function not reached: ${f}\n`);
      if (values.list) for (const b of m.branches.missed) process.stdout.write(`  branch not reached: ${b}\n`);
    }
  }
  return out.every((m) => m.corpusOk) ? 0 : 1;
}

const seeds = (values) => Number(values.seeds);

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  main().then(
    (code) => process.exit(code),
    (error) => {
      process.stderr.write(`${error?.stack ?? error}\n`);
      process.exit(2);
    },
  );
}
