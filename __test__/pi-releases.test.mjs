// The logic of `npm run test:pi-releases` (scripts/pi-releases/plan.mjs) without the registry:
// which releases a run covers, when a cached install counts as intact, how the hook's line and
// the verifier's answer are read, and vitest's report in counts. The releases run itself
// (installs from npm, e2e per release) is a separate command, not part of `npm test`.
import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, test } from "vitest";
import {
  e2eCounts,
  installProblem,
  packageDirOf,
  selectVersions,
  serveStatus,
  verifyVerdict,
} from "../scripts/pi-releases/plan.mjs";

const registry = {
  versions: ["0.99.1", "1.0.3", "1.3.0", "1.4.0", "1.5.0", "1.5.2", "1.6.0", "1.7.0-beta.1"],
  "dist-tags": { latest: "1.6.0", next: "1.7.0-beta.1" },
};
const temp = mkdtempSync(join(tmpdir(), "pi-releases-test-"));
afterAll(() => rmSync(temp, { recursive: true, force: true }));

describe("which releases a run covers", () => {
  test("default: every stable release since 1.3.0, latest folded into its version's row", () => {
    expect(selectVersions(undefined, registry)).toEqual([
      { version: "1.3.0", labels: [] },
      { version: "1.4.0", labels: [] },
      { version: "1.5.0", labels: [] },
      { version: "1.5.2", labels: [] },
      { version: "1.6.0", labels: ["latest"] },
    ]);
    expect(selectVersions(undefined, registry, "1.5.0").map((r) => r.version)).toEqual(["1.5.0", "1.5.2", "1.6.0"]);
  });

  test("a new release shows up by itself (latest ahead of the known list)", () => {
    const next = { versions: [...registry.versions, "1.7.0"], "dist-tags": { latest: "1.7.0" } };
    expect(selectVersions(undefined, next).at(-1)).toEqual({ version: "1.7.0", labels: ["latest"] });
  });

  test("--versions: numbers as given (no registry needed), tags resolved, in version order", () => {
    expect(selectVersions(["1.5.2", "1.3.0"], undefined)).toEqual([
      { version: "1.3.0", labels: [] },
      { version: "1.5.2", labels: [] },
    ]);
    expect(selectVersions(["latest", "1.5.2", "next"], registry)).toEqual([
      { version: "1.5.2", labels: [] },
      { version: "1.6.0", labels: ["latest"] },
      { version: "1.7.0-beta.1", labels: ["next"] },
    ]);
  });

  test("unknown versions and tags are refused with a clear message", () => {
    expect(() => selectVersions(["1.9.9"], registry)).toThrow(/1\.9\.9 is not published/);
    expect(() => selectVersions(["nightly"], registry)).toThrow(/neither a published version nor a dist-tag/);
    expect(() => selectVersions(["latest"], undefined)).toThrow(/registry was not asked/);
    expect(() => selectVersions(undefined, undefined)).toThrow(/needs the registry/);
  });
});

describe("a cached install is used only when intact", () => {
  function fakeInstall(name, { version = "1.5.2", marker = version, bin = true } = {}) {
    const dir = join(temp, name);
    const pkg = packageDirOf(dir);
    mkdirSync(join(pkg, "dist", "bundle"), { recursive: true });
    writeFileSync(join(pkg, "package.json"), JSON.stringify({ name: "@earendil-works/pi-coding-agent", version }));
    if (bin) writeFileSync(join(pkg, "dist", "bundle", "cli.js"), "#!/usr/bin/env node\n");
    if (marker !== null) writeFileSync(join(dir, "installed.json"), JSON.stringify({ version: marker }));
    return dir;
  }

  test("complete install of the right version: intact", () => {
    expect(installProblem(fakeInstall("ok"), "1.5.2")).toBeUndefined();
  });

  test("interrupted, wrong version, missing bin, corrupt marker: installed again", () => {
    expect(installProblem(join(temp, "nothing"), "1.5.2")).toBe("not installed");
    expect(installProblem(fakeInstall("no-marker", { marker: null }), "1.5.2")).toBe("not installed");
    expect(installProblem(fakeInstall("other", { version: "1.5.0", marker: "1.5.2" }), "1.5.2")).toMatch(
      /says @earendil-works\/pi-coding-agent@1\.5\.0/,
    );
    expect(installProblem(fakeInstall("no-bin", { bin: false }), "1.5.2")).toMatch(/cli\.js is missing/);
    const corrupt = fakeInstall("corrupt");
    writeFileSync(join(corrupt, "installed.json"), "{not json");
    expect(installProblem(corrupt, "1.5.2")).toMatch(/not JSON/);
    expect(installProblem(fakeInstall("asked-other"), "1.6.0")).toMatch(/names 1\.5\.2, not 1\.6\.0/);
  });
});

describe("the hook's line and the verifier's answer", () => {
  test("served, not served (with the reason), silent", () => {
    expect(serveStatus("[pi-session-native] serving session-manager: /x/chunk.js (pi 1.6.0; …)\n").served).toBe(true);
    expect(
      serveStatus(
        "[pi-session-native] not serving session-manager, pi runs unmodified: pi 1.5.2 is not a version this hook was tested with (1.6.0)\n",
      ),
    ).toMatchObject({ served: false, reason: "pi 1.5.2 is not a version this hook was tested with (1.6.0)" });
    expect(serveStatus("")).toMatchObject({ served: false, reason: /said nothing/ });
  });

  test("no verifier yet: pi refusing --verify is 'not available', not a failure", () => {
    const refused = { status: 1, stdout: "", stderr: "Error: Unknown option: --verify\n" };
    expect(verifyVerdict(refused, true)).toEqual({ status: "n/a", text: "verifier not available (pi got --verify)" });
    expect(verifyVerdict({ status: 0, stdout: "", stderr: "" }, false).status).toBe("n/a");
  });

  test("a verifier's exit code is its verdict; the last line says why", () => {
    expect(verifyVerdict({ status: 0, stdout: "corpus: 212 operations\nverdict: equal\n", stderr: "" }, true)).toEqual({
      status: "ok",
      text: "ok: verdict: equal",
    });
    expect(
      verifyVerdict({ status: 1, stdout: "", stderr: "appendLabelChange differs: label 'x' vs 'x!'\n" }, true),
    ).toEqual({ status: "fail", text: "FAILED (exit 1): appendLabelChange differs: label 'x' vs 'x!'" });
    expect(verifyVerdict({ status: null, signal: "SIGKILL", stdout: "", stderr: "" }, true).text).toBe(
      "FAILED (killed by SIGKILL)",
    );
  });
});

describe("vitest's report in counts", () => {
  test("passed, failed (with names), skipped; a file that failed to load counts", () => {
    const report = {
      numPassedTests: 20,
      numFailedTests: 1,
      numPendingTests: 2,
      numTodoTests: 0,
      testResults: [
        {
          name: "/r/__test__/pi-bin/rpc.test.mjs",
          status: "failed",
          assertionResults: [
            { status: "passed", fullName: "rpc a" },
            { status: "failed", fullName: "rpc b" },
          ],
        },
        {
          name: "/r/__test__/pi-bin/tty.test.mjs",
          status: "failed",
          message: "SyntaxError: x\n at y",
          assertionResults: [],
        },
      ],
    };
    expect(e2eCounts(report)).toEqual({
      passed: 20,
      failed: 2,
      skipped: 2,
      failedNames: ["rpc b", "/r/__test__/pi-bin/tty.test.mjs: SyntaxError: x"],
    });
  });
});

describe("PI_E2E_PI_PACKAGE", () => {
  const load = (dir) =>
    spawnSync(process.execPath, ["--input-type=module", "-e", 'await import("./__test__/pi-bin/helpers.mjs")'], {
      cwd: join(import.meta.dirname, ".."),
      env: { ...process.env, PI_E2E_PI_PACKAGE: dir },
      encoding: "utf8",
    });

  test("a folder that is not an installed pi package is refused when the suite loads", () => {
    const r = load(temp);
    expect(r.status).not.toBe(0);
    expect(r.stderr).toContain("is not an installed @earendil-works/pi-coding-agent");
  });
});
