// The fail-safe path of the hook with the real bundled pi bin: when the session-manager module
// does not match the signature (a copy of pi's package whose class is renamed), when pi's version
// is not one the hook was tested with, or when the addon does not load, pi runs unmodified and
// exactly one line on stderr says why. Also: the hook installed twice (NODE_OPTIONS and
// pi-native) still serves, or gives up, once.
import { cpSync, mkdirSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import {
  cleanup,
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
  tempDir,
} from "./helpers.mjs";
import { startModelServer } from "../../scripts/model-server.mjs";

const TIMEOUT = 120_000;
const CLASS = "var SessionManager=class _SessionManager{";

/**
 * <tmp>/node_modules/@earendil-works/pi-coding-agent: a real copy of pi's package (module URLs
 * must point into the copy, so no symlinks there), its dependencies symlinked next to it.
 * The module that defines SessionManager is found by content and its class renamed.
 */
function copyPiWithRenamedClass() {
  const base = tempDir("pi-copy-");
  const nm = join(base, "node_modules");
  const scope = join(nm, "@earendil-works");
  mkdirSync(scope, { recursive: true });
  const repoNm = join(repoRoot, "node_modules");
  for (const name of readdirSync(repoNm)) {
    if (name === "@earendil-works" || name.startsWith(".")) continue;
    symlinkSync(join(repoNm, name), join(nm, name));
  }
  for (const name of readdirSync(join(repoNm, "@earendil-works"))) {
    if (name !== "pi-coding-agent") symlinkSync(join(repoNm, "@earendil-works", name), join(scope, name));
  }
  const pkg = join(scope, "pi-coding-agent");
  cpSync(piPackage, pkg, { recursive: true, dereference: true });
  const chunks = join(pkg, "dist", "bundle", "chunks");
  const renamed = [];
  let original;
  for (const f of readdirSync(chunks)) {
    const file = join(chunks, f);
    const src = readFileSync(file, "utf8");
    if (!src.includes(CLASS)) continue;
    writeFileSync(file, src.split("_SessionManager").join("_PiSessionStore"));
    renamed.push(file);
    original = src;
  }
  if (renamed.length !== 1) throw new Error(`expected one chunk defining SessionManager, found ${renamed.length}`);
  return { base, pkg, bin: join(pkg, "dist", "bundle", "cli.js"), chunk: renamed[0], original };
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

  test("a pi version the hook was not tested with", async () => {
    const pkgFile = join(copy.pkg, "package.json");
    const original = readFileSync(pkgFile, "utf8");
    try {
      const pkg = JSON.parse(original);
      pkg.version = "1.6.99";
      writeFileSync(pkgFile, JSON.stringify(pkg, null, "\t"));
      await expectUnmodifiedRun("native", /pi 1\.6\.99 is not a version this hook was tested with \(1\.6\.0\)/, {
        bin: copy.bin,
      });
      // PI_SESSION_NATIVE_ANY_VERSION=1 skips the version check; the signature still guards
      await expectUnmodifiedRun("native", /does not match the signature/, {
        bin: copy.bin,
        env: { PI_SESSION_NATIVE_ANY_VERSION: "1" },
      });
    } finally {
      writeFileSync(pkgFile, original);
    }
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
