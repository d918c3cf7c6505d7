// The pi-suite runner (scripts/run-pi-suite.mjs) must tell the truth: refuse a checkout too small
// to mean anything, give the install command that works, and exit 0 only when native passes every
// test that passes on pi's own code. Checked on tiny fake checkouts (no network, no pi checkout);
// the last two tests run the runner end to end on one, with real vitest processes under Node 22.
import { spawnSync } from "node:child_process";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { describe, expect, test } from "vitest";
import { findNode22 } from "../scripts/node22.mjs";
import {
  MIN_SESSION_TEST_FILES,
  PI_REPOSITORY,
  SETUP_COMMAND,
  SetupError,
  checkEnoughTests,
  checkInstalled,
  locateCheckout,
  selectFiles,
  sessionTestFiles,
} from "../scripts/pi-suite/checkout.mjs";
import { collect, judge, modeLine, testVerdict, VERDICT } from "../scripts/pi-suite/judge.mjs";
import { root, tmp } from "./helpers.mjs";

const runner = join(root, "scripts", "run-pi-suite.mjs");

/**
 * The module path a fake test file at `depth` directories under `test/` imports (the fake
 * checkout's session manager; these few one-line tests are written here, none is pi's).
 */
const smPath = (depth, ext = ".js") =>
  `${"../".repeat(depth + 1)}${["src", "core", "session-manager"].join("/")}${ext}`;

/** A fake pi checkout: files maps paths under packages/coding-agent to their text. */
function fakeCheckout(files, { installed = false } = {}) {
  const dir = tmp("pi-suite-fake-");
  const agent = join(dir, "packages", "coding-agent");
  const all = {
    "package.json": JSON.stringify({ name: "@fake/pi-coding-agent", version: "0.0.1", type: "module" }),
    "src/core/session-manager.ts": "export class SessionManager {}\n",
    ...files,
  };
  for (const [rel, text] of Object.entries(all)) {
    mkdirSync(dirname(join(agent, rel)), { recursive: true });
    writeFileSync(join(agent, rel), text);
  }
  if (installed) mkdirSync(join(dir, "node_modules"));
  return dir;
}

/** n session test files: half under test/session-manager/, half elsewhere importing the module. */
function sessionFiles(n) {
  const files = {};
  for (let i = 0; i < n; i++) {
    if (i % 2) files[`test/session-manager/t${i}.test.ts`] = "// direct\n";
    else files[`test/t${i}.test.ts`] = `import { SessionManager } from "${smPath(0)}";\n`;
  }
  return files;
}

const run = (args, env = {}) =>
  spawnSync(process.execPath, [runner, ...args], {
    encoding: "utf8",
    env: { ...process.env, ...env },
    timeout: 120_000,
  });

describe("the checkout guard", () => {
  test("counts test/session-manager/** and the other tests that import the module, nothing else", () => {
    const dir = fakeCheckout({
      ...sessionFiles(4),
      "test/unrelated.test.ts": "import { x } from '../src/core/other.js';\n",
      "test/session-manager/helper.ts": "// not a test file\n",
    });
    const { agentDir } = locateCheckout(dir);
    const found = sessionTestFiles(agentDir);
    expect(found.files).toEqual([
      "test/session-manager/t1.test.ts",
      "test/session-manager/t3.test.ts",
      "test/t0.test.ts",
      "test/t2.test.ts",
    ]);
    expect(found.direct).toEqual(["test/session-manager/t1.test.ts", "test/session-manager/t3.test.ts"]);
    // The packages/coding-agent directory itself is accepted too.
    expect(locateCheckout(agentDir).checkout).toBe(locateCheckout(dir).checkout);
  });

  test("a folder that is not a pi checkout is refused with the repository to clone", () => {
    expect(() => locateCheckout(tmp("pi-suite-empty-"))).toThrow(SetupError);
    expect(() => locateCheckout(tmp("pi-suite-empty-"))).toThrow(PI_REPOSITORY);
  });

  test("too few session tests: says how many it found and how many it expected", () => {
    const { agentDir } = locateCheckout(fakeCheckout(sessionFiles(2)));
    const found = sessionTestFiles(agentDir);
    let message = "";
    try {
      checkEnoughTests(found, MIN_SESSION_TEST_FILES, "fake");
    } catch (error) {
      expect(error).toBeInstanceOf(SetupError);
      message = error.message;
    }
    expect(message).toContain("holds 2 session test file(s) (1 under test/session-manager/)");
    expect(message).toContain(`expected at least ${MIN_SESSION_TEST_FILES}`);
    expect(() => checkEnoughTests(found, 2, "fake")).not.toThrow();
  });

  test("a filter that selects nothing is an error, not an empty pass", () => {
    const { agentDir } = locateCheckout(fakeCheckout(sessionFiles(4)));
    const found = sessionTestFiles(agentDir);
    expect(selectFiles(found, { filters: ["t3"] })).toEqual(["test/session-manager/t3.test.ts"]);
    expect(selectFiles(found, { directOnly: true })).toHaveLength(2);
    expect(() => selectFiles(found, { filters: ["nope"] })).toThrow(
      "--filter nope matched none of the checkout's 4 session test files",
    );
  });

  test("an uninstalled checkout gets the install command that works without the CDN", () => {
    const dir = fakeCheckout(sessionFiles(2));
    const { checkout, agentDir } = locateCheckout(dir);
    expect(() => checkInstalled(checkout, agentDir)).toThrow(SETUP_COMMAND);
    expect(SETUP_COMMAND).toContain("-w packages/coding-agent");
    mkdirSync(join(checkout, "node_modules"));
    expect(() => checkInstalled(checkout, agentDir)).not.toThrow();
  });

  test("the runner exits 2, loudly, on a checkout with 2 session tests (before starting any vitest)", () => {
    const r = run([fakeCheckout(sessionFiles(2), { installed: true })]);
    expect(r.status).toBe(2);
    expect(r.stderr).toContain("holds 2 session test file(s)");
    expect(r.stderr).toContain(`expected at least ${MIN_SESSION_TEST_FILES}`);
    expect(r.stderr).toContain("RESULT: NOT TESTED (exit 2)");
    expect(r.stdout).not.toContain("RESULT: PASS");
  });

  test("the runner exits 2 with the working install command when node_modules is missing", () => {
    const r = run([fakeCheckout(sessionFiles(MIN_SESSION_TEST_FILES))]);
    expect(r.status).toBe(2);
    expect(r.stderr).toContain(SETUP_COMMAND);
    expect(r.stderr).not.toContain("holds");
  });
});

// ------------------------------------------------------------------ judging made-up reports
const AGENT = "/fake/packages/coding-agent";
const relOf = (name) => name.slice(AGENT.length + 1);
/** A vitest JSON report: files maps rel -> {tests: {title: passed|failed|skipped}} or {error: message}. */
function report(files) {
  return {
    testResults: Object.entries(files).map(([rel, f]) => ({
      name: `${AGENT}/${rel}`,
      status: f.error || Object.values(f.tests ?? {}).includes("failed") ? "failed" : "passed",
      message: f.error ?? "",
      assertionResults: Object.entries(f.tests ?? {}).map(([title, status]) => ({
        title,
        fullName: title,
        status,
        failureMessages: status === "failed" ? [f.why?.[title] ?? "AssertionError: expected 1 to be 2"] : [],
      })),
    })),
  };
}
/** Judge made-up reports; the selected files default to every file any report names. */
function judged(modes, reports, selected) {
  const files = selected ?? [
    ...new Set(
      Object.values(reports)
        .filter(Boolean)
        .flatMap((r) => r.testResults.map((t) => relOf(t.name))),
    ),
  ];
  const results = collect({ modes, selected: files, reports, relOf });
  return judge({ modes, selected: files, reports, results });
}

describe("judging", () => {
  const all = ["baseline", "reference", "native"];

  test("failures on pi's own code too and version skew are not ours: PASS, exit 0", () => {
    const base = { "test/a.test.ts": { tests: { one: "passed", env: "failed", skew: "passed", llm: "skipped" } } };
    const other = { "test/a.test.ts": { tests: { one: "passed", env: "failed", skew: "failed", llm: "skipped" } } };
    const j = judged(all, { baseline: report(base), reference: report(other), native: report(other) });
    expect(j.exitCode).toBe(0);
    expect(j.nativeOnly).toBe(0);
    expect(j.compared).toBe(1);
    expect(j.result).toMatch(
      /^RESULT: PASS: native passes all 1 tests that pass on pi's own code and 1.6.0's session-manager; not ours: 1 environment.*, 1 version skew.*; 1 skipped \(exit 0\)$/,
    );
    // The per-mode line gives counts, not vitest's exit 1 (which any failing test causes).
    expect(modeLine("baseline", j.perMode.baseline, 1.25)).toBe(
      "baseline: 1 files, 4 tests: 2 passed, 1 failed, 1 skipped (1.3s)",
    );
  });

  test("a test that passes on pi's code and on 1.6.0 but fails natively: FAIL, exit 1", () => {
    const good = { "test/a.test.ts": { tests: { one: "passed", two: "passed" } } };
    const bad = { "test/a.test.ts": { tests: { one: "passed", two: "failed" } } };
    const j = judged(all, { baseline: report(good), reference: report(good), native: report(bad) });
    expect(j.exitCode).toBe(1);
    expect(j.nativeOnly).toBe(1);
    expect(j.tests).toMatchObject([
      { name: "two", verdict: "NATIVE DIFFERENCE", statuses: { baseline: "pass", reference: "pass", native: "fail" } },
    ]);
    expect(j.result).toContain("RESULT: FAIL: 1 native-only failure(s)");
  });

  test("a file that loads on pi's code but not natively fails every test it holds (was 'ok' before)", () => {
    const good = { "test/a.test.ts": { tests: { one: "passed", two: "passed" } } };
    const broken = { "test/a.test.ts": { error: "Error: Cannot find module 'x'" } };
    const j = judged(all, { baseline: report(good), reference: report(good), native: report(broken) });
    expect(j.exitCode).toBe(1);
    expect(j.nativeOnly).toBe(2);
    expect(j.files[0].cells.native).toBe("ERROR (missing-module)");
    expect(j.files[0].verdict).toBe("NATIVE DIFFERENCE");
    expect(j.tests.map((t) => t.statuses.native)).toEqual(["missing", "missing"]);
  });

  test("a file without tests that loads only natively-broken is counted; one broken everywhere is not", () => {
    const ok = { "test/a.test.ts": { tests: {} }, "test/b.test.ts": { error: "SyntaxError: x" } };
    const broken = { "test/a.test.ts": { error: "SyntaxError: y" }, "test/b.test.ts": { error: "SyntaxError: x" } };
    const j = judged(["baseline", "native"], {
      baseline: report({ ...ok, "test/c.test.ts": { tests: { c: "passed" } } }),
      native: report({ ...broken, "test/c.test.ts": { tests: { c: "passed" } } }),
    });
    expect(j.nativeOnly).toBe(1);
    expect(j.files.find((f) => f.rel === "test/a.test.ts").verdict).toContain("NATIVE DIFFERENCE (file)");
    expect(j.files.find((f) => f.rel === "test/b.test.ts").verdict).toContain("fails on pi's own code too");
  });

  test("an API that 1.6.0 has and this package lacks is a native difference", () => {
    const good = { "test/a.test.ts": { tests: { api: "passed" } } };
    const bad = {
      "test/a.test.ts": { tests: { api: "failed" }, why: { api: "TypeError: sm.newThing is not a function" } },
    };
    const j = judged(all, { baseline: report(good), reference: report(good), native: report(bad) });
    expect(j.exitCode).toBe(1);
    expect(j.tests[0].verdict).toBe(VERDICT.nativeApi.label);
  });

  test("without the reference mode a native-only failure still fails the run, marked unconfirmed", () => {
    const good = { "test/a.test.ts": { tests: { one: "passed" } } };
    const bad = { "test/a.test.ts": { tests: { one: "failed" } } };
    const j = judged(["baseline", "native"], { baseline: report(good), native: report(bad) });
    expect(j.exitCode).toBe(1);
    expect(j.tests[0].verdict).toBe(VERDICT.nativeUnconfirmed.label);
  });

  test("nothing to compare against: NOT TESTED, exit 2, never a pass", () => {
    const nothing = { "test/a.test.ts": { tests: { one: "skipped" } } };
    expect(
      judged(all, { baseline: report(nothing), reference: report(nothing), native: report(nothing) }),
    ).toMatchObject({ exitCode: 2, result: expect.stringContaining("no test passed on pi's own code") });
    const good = { "test/a.test.ts": { tests: { one: "passed" } } };
    expect(
      judged(all, { baseline: null, reference: report(good), native: report(good) }, ["test/a.test.ts"]),
    ).toMatchObject({ exitCode: 2, result: expect.stringContaining("baseline: vitest produced no report") });
    expect(judged(["native"], { native: report(good) })).toMatchObject({
      exitCode: 2,
      result: expect.stringContaining("nothing to compare native against"),
    });
    expect(judged(["baseline"], { baseline: report(good) })).toMatchObject({
      exitCode: 2,
      result: expect.stringContaining("the native mode did not run"),
    });
  });

  test("verdict order: native pass, skip, then environment before version skew", () => {
    const p = { status: "pass" };
    const f = { status: "fail", reason: { kind: "assertion" } };
    expect(testVerdict({ baseline: p, reference: p, native: p })).toBe(VERDICT.ok);
    expect(testVerdict({ baseline: f, reference: f, native: p })).toBe(VERDICT.better);
    expect(testVerdict({ baseline: f, reference: f, native: f })).toBe(VERDICT.env);
    expect(testVerdict({ baseline: f, reference: f, native: f }, { needsBuild: true })).toBe(VERDICT.envUnbuilt);
    expect(testVerdict({ baseline: p, reference: f, native: f })).toBe(VERDICT.skew);
    expect(
      testVerdict({ baseline: p, reference: p, native: { status: "fail", reason: { kind: "private-field" } } }),
    ).toBe(VERDICT.privateState);
  });
});

// ------------------------------------------------------------------ end to end, real vitest
describe("end to end on a tiny fake checkout", () => {
  const node22 = findNode22();
  // pi's baseline module: SessionManager.create exists like the real one, plus an export only
  // this fake has (a stand-in for behaviour the checkout has and 1.6.0 lacks).
  const files = {
    "src/core/session-manager.ts":
      "export class SessionManager { static create() { return new SessionManager(); } }\nexport const ONLY_IN_THE_CHECKOUT = true;\n",
    "test/session-manager/api.test.ts": `import { expect, test } from "vitest";\nimport { SessionManager } from "${smPath(1)}";\ntest("create is a static", () => expect(typeof SessionManager.create).toBe("function"));\n`,
    "test/session-manager/env.test.ts": `import { expect, test } from "vitest";\nimport "${smPath(1)}";\ntest("fails on every implementation", () => expect(1 + 1).toBe(3));\n`,
    "test/checkout-only.test.ts": `import { expect, test } from "vitest";\nimport * as sm from "${smPath(0, "")}";\ntest("checkout-only export", () => expect(sm.ONLY_IN_THE_CHECKOUT).toBe(true));\n`,
  };

  test("PASS (exit 0) although vitest fails a test in every mode; mode lines give counts", () => {
    expect(node22, "no Node >= 22.19: run `node scripts/node22.mjs --ensure` or set PI_NODE22").toBeTruthy();
    const dir = fakeCheckout(files, { installed: true });
    const json = join(tmp("pi-suite-json-"), "out.json");
    const r = run([dir, "--min-files", "3", "--json", json]);
    expect(r.stderr).not.toContain("produced no report");
    expect(r.status, r.stdout + r.stderr).toBe(0);
    expect(r.stdout).toContain("baseline: 3 files, 3 tests: 2 passed, 1 failed, 0 skipped");
    expect(r.stdout).toContain("reference: 3 files, 3 tests: 1 passed, 2 failed, 0 skipped");
    expect(r.stdout).toContain("native: 3 files, 3 tests: 1 passed, 2 failed, 0 skipped");
    const result = r.stdout.split("\n").find((l) => l.startsWith("RESULT:"));
    expect(result).toMatch(
      /^RESULT: PASS: native passes all 1 tests that pass on pi's own code and 1.6.0's session-manager; not ours: .*\(exit 0\)$/,
    );
    expect(result).toContain("1 environment/checkout (fails on pi's own code too)");
    expect(result).toContain("1 version skew (1.6.0's own session-manager fails it too)");
    expect(r.stdout + r.stderr).not.toContain("(exit 1)");
    const out = JSON.parse(readFileSync(json, "utf8"));
    expect(out.result).toMatchObject({ exitCode: 0, nativeOnly: 0, compared: 1 });
    expect(out.files["test/session-manager/api.test.ts"].tests["create is a static"]).toEqual({
      baseline: { status: "pass" },
      reference: { status: "pass" },
      native: { status: "pass" },
    });
  });

  test("FAIL (exit 1) when a test passes on pi's code but not natively (no reference to excuse it)", () => {
    const r = run([fakeCheckout(files, { installed: true }), "--min-files", "3", "--modes", "baseline,native"]);
    expect(r.status, r.stdout + r.stderr).toBe(1);
    expect(r.stdout).toContain("RESULT: FAIL: 1 native-only failure(s)");
    expect(r.stdout).toMatch(/checkout-only\.test\.ts .*checkout-only export .*pass .*fail .*NATIVE DIFFERENCE\?/);
  });
});
