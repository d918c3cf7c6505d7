// The fail-safe path of the hook with the real bundled pi bin: when the session-manager module
// does not match the signature (a copy of pi's package whose class is renamed), or when the addon
// does not load (session code the hook does not know: __test__/pi-bin/verify.test.mjs), pi runs unmodified and
// exactly one line on stderr says why. Also: the hook installed twice (NODE_OPTIONS and
// pi-native) still serves, or gives up, once.
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import {
  cleanup,
  copyPiPackage,
  FAILSAFE,
  makeRoot,
  MARKER,
  markerCount,
  node22,
  piPackage,
  readJsonl,
  registerScript,
  repoRoot,
  runPi,
  sessionFiles,
} from "./helpers.mjs";
import { startModelServer } from "../../scripts/model-server.mjs";

const TIMEOUT = 120_000;

/** A copy of pi's package whose bundle chunk's class is renamed. */
function copyPiWithRenamedClass() {
  return copyPiPackage({ editChunk: (src) => src.split("_SessionManager").join("_PiSessionStore") });
}

const failLines = (stderr) => stderr.split("\n").filter((l) => l.includes("[pi-session-native]"));

afterAll(cleanup);

describe.skipIf(!node22)("fail-safe: pi runs unmodified and one line says why", () => {
  let server;
  let copy;
  beforeAll(async () => {
    server = await startModelServer({ maxRequests: 40 });
    copy = copyPiWithRenamedClass();
  }, TIMEOUT);
  afterAll(async () => {
    await server?.close();
  });

  /**
   * @param {string} how
   * @param {string | RegExp} reason
   * @param {{ bin?: string, env?: NodeJS.ProcessEnv, prompt?: string }} [options]
   */
  async function expectUnmodifiedRun(how, reason, { bin, env, prompt = "hello there" } = {}) {
    const root = makeRoot("pisafe-", server.baseUrl);
    const r = await runPi(root, how, ["-p", prompt], { bin, env });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout.trim()).toBe(`ok: ${prompt}`);
    const lines = failLines(r.stderr);
    expect(lines, r.stderr).toHaveLength(1);
    expect(lines[0].startsWith(FAILSAFE), lines[0]).toBe(true);
    expect(lines[0]).toMatch(reason);
    expect(r.stderr).not.toContain(MARKER);
    const files = sessionFiles(root);
    expect(files).toHaveLength(1);
    expect(
      readJsonl(files[0])
        .filter((e) => e.type === "message")
        .map((e) => e.message.role),
    ).toEqual(["system", "user", "assistant"]);
    return lines[0];
  }

  test("a bundle whose session-manager class is renamed: signature not found", async () => {
    const line = await expectUnmodifiedRun("native", /does not match the signature: the class declaration/, {
      bin: copy.bin,
    });
    expect(line).toContain(copy.chunk);
    // the line is not a debug message: it is printed without PI_SESSION_NATIVE_DEBUG too
    await expectUnmodifiedRun("native", /does not match the signature/, {
      bin: copy.bin,
      env: { PI_SESSION_NATIVE_DEBUG: undefined },
    });
  });

  test("a pi version string is not what decides: the renamed copy called 1.6.0 is still refused", async () => {
    // the copy's package.json says the pi release under test, one this package knows; its session code is not
    // 1.6.0's, and the signature check refuses it before any digest is looked at
    const pkgFile = join(copy.pkg, "package.json");
    const { version } = JSON.parse(readFileSync(join(piPackage, "package.json"), "utf8"));
    expect(JSON.parse(readFileSync(pkgFile, "utf8")).version).toBe(version);
    // PI_SESSION_NATIVE_ANY_VERSION=1 skips verification; the signature still guards
    await expectUnmodifiedRun("native", /does not match the signature/, {
      bin: copy.bin,
      env: { PI_SESSION_NATIVE_ANY_VERSION: "1" },
    });
  });

  test("a bundle where no module looks like the session manager: said once, at exit", async () => {
    const renamed = readFileSync(copy.chunk, "utf8");
    try {
      // the class is intact, but 80 KB of comment after the export list hide it from the
      // cheap tail check: the hook never serves, and says so when pi exits
      writeFileSync(copy.chunk, `${copy.original}\n/*${" ".repeat(80 * 1024)}*/\n`);
      const line = await expectUnmodifiedRun("native", /no module of pi's bundle looks like its session manager/, {
        bin: copy.bin,
      });
      expect(line).toContain("last 64 KB");
    } finally {
      writeFileSync(copy.chunk, renamed);
    }
  });

  test("the addon does not load", async () => {
    await expectUnmodifiedRun("native", /the native addon does not load/, {
      env: { PI_SESSION_NATIVE_BINARY: join(repoRoot, "no-such-addon.node") },
    });
  });

  test("hook installed twice (NODE_OPTIONS and pi-native): one line, whether it serves or gives up", async () => {
    const twice = { NODE_OPTIONS: `--import ${registerScript}` };
    await expectUnmodifiedRun("native", /does not match the signature/, { bin: copy.bin, env: twice });
    const root = makeRoot("pisafe-", server.baseUrl);
    const r = await runPi(root, "native", ["-p", "served once"], { env: twice });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout.trim()).toBe("ok: served once");
    expect(markerCount(r.stderr), r.stderr).toBe(1);
    expect(failLines(r.stderr)).toHaveLength(1);
  });
});
