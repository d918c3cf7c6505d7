// Type-level tests: index.d.ts must compile against a usage file that touches every export, must
// let pi's SDK accept our SessionManager (see __test__/types/sdk-compat.ts), and must reject
// deliberately wrong calls (__test__/types/negative.ts) so these checks cannot pass vacuously.
import { execFile } from "node:child_process";
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const typesDir = join(root, "__test__", "types");

function tsc(project) {
  return new Promise((resolve) => {
    execFile(
      "npx",
      ["tsc", "--noEmit", "--pretty", "false", "-p", join("__test__", "types", project)],
      { cwd: root, maxBuffer: 16 * 1024 * 1024 },
      (err, stdout, stderr) => {
        const code = err ? (typeof err.code === "number" ? err.code : 1) : 0;
        resolve({ code, output: `${stdout}${stderr}` });
      },
    );
  });
}

// Start all three compilations at once (each takes a few seconds); tests await their own.
const runs = {
  usage: tsc("tsconfig.json"),
  sdkCompat: tsc("tsconfig.sdk-compat.json"),
  negative: tsc("tsconfig.negative.json"),
};

function expectClean({ code, output }, command) {
  if (code !== 0) console.error(`${command} failed (exit ${code}):\n${output}`);
  expect(output, `${command} output`).toBe("");
  expect(code, `${command} exit code`).toBe(0);
}

describe("TypeScript declarations (index.d.ts)", () => {
  it("usage.ts / usage-esm.mts / usage-cjs.cts compile (every export, strict, nodenext)", async () => {
    expectClean(await runs.usage, "npx tsc --noEmit -p __test__/types/tsconfig.json");
  });

  it("sdk-compat.ts compiles: pi's createAgentSession accepts our SessionManager", async () => {
    expectClean(await runs.sdkCompat, "npx tsc --noEmit -p __test__/types/tsconfig.sdk-compat.json");
  });

  it("negative.ts fails to compile, with an error on every wrong call", async () => {
    const { code, output } = await runs.negative;
    expect(code, `tsc unexpectedly accepted negative.ts:\n${output}`).not.toBe(0);
    const source = readFileSync(join(typesDir, "negative.ts"), "utf8").split("\n");
    const errorLines = new Set(
      [...output.matchAll(/negative\.ts\((\d+),\d+\): error TS\d+/g)].map((m) => Number(m[1])),
    );
    const wrongCalls = source
      .map((text, i) => ({ text, line: i + 1 }))
      .filter(({ text }) => /^(sm\.|const n|buildSessionContext\(|SessionManager\.)/.test(text));
    expect(wrongCalls.length).toBeGreaterThanOrEqual(6);
    for (const { line, text } of wrongCalls) {
      expect(errorLines.has(line), `no tsc error for negative.ts:${line}: ${text}\n${output}`).toBe(true);
    }
    // Only the intended errors: nothing else in the file (e.g. the import) may fail.
    expect(
      [...errorLines].every((l) => wrongCalls.some((w) => w.line === l)),
      output,
    ).toBe(true);
    expect(output).toMatch(/negative\.ts\(5,\d+\): error TS2345: Argument of type 'number' is not assignable/);
  });
});

describe("binding.d.ts (the boundary's generated types, committed)", () => {
  it("is what the build generates: a changed binding shows in review", async () => {
    const { existsSync } = await import("node:fs");
    if (!existsSync(join(root, ".git"))) {
      console.warn("[types] not a git checkout: the committed binding.d.ts cannot be compared");
      return;
    }
    const diff = await new Promise((resolve) =>
      execFile("git", ["diff", "--stat", "--", "binding.d.ts"], { cwd: root }, (err, stdout) =>
        resolve(err ? `git failed: ${err.message}` : stdout),
      ),
    );
    expect(diff, "binding.d.ts differs from the committed one: commit the file `npm run build` wrote").toBe("");
  });
});
