// pi is served by what its session code is, not by its version string (lib/verify/): with the real
// bundled pi bin and copies of pi's package,
//   - a copy of pi (the release under test, default the devDependency 1.6.0) whose package says
//     1.99.0 is served at once (its digest is known-good);
//   - a copy whose session code changed text but not behaviour (a no-op statement in a method) is
//     not served at first, verified in the background, then served from the next start;
//   - a copy whose session behaviour changed (labels stored with a suffix) is never served, and its
//     line says which operation differed; `pi-native --verify` prints the report and exits 1;
//   - a copy whose SessionManager has a method ours lacks is never served, and its line says so;
//   - a copy whose unbundled module alone changed behaviour (its chunk known-good) is not served
//     either: one verdict for the install (lib/verify/install.mjs), and the line names the module;
//   - a copy served before (its chunk's digest remembered, lib/verify/digest-memo.mjs) whose chunk
//     then changes in place, same size and mtime put back, is not served: the memo does not vouch
//     for it.
// Every run has its own HOME, so its own verdict cache (~/.cache/pi-session-native).
import { existsSync, readFileSync, statSync, utimesSync, writeFileSync } from "node:fs";
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
  piVersion,
  runPi,
} from "./helpers.mjs";
import { startModelServer } from "../../scripts/model-server.mjs";

const TIMEOUT = 240_000;
const failLines = (stderr) => stderr.split("\n").filter((l) => l.includes("[pi-session-native]"));
// the override would serve unverified code: these runs are about verification
const env = { PI_SESSION_NATIVE_ANY_VERSION: undefined };
const verdictsFile = (root) => join(root, "home", ".cache", "pi-session-native", "verdicts.json");
const memoFile = (root) => join(root, "home", ".cache", "pi-session-native", "digests.json");

/** Waits until the verdict cache of `root` holds `count` verdicts (the background verifier's). */
async function waitForVerdicts(root, count, ms = 180_000) {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    if (existsSync(verdictsFile(root))) {
      try {
        const data = JSON.parse(readFileSync(verdictsFile(root), "utf8"));
        if (Object.keys(data.verdicts).length >= count) return data.verdicts;
      } catch {
        // being written
      }
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(`no verdict in ${verdictsFile(root)} after ${ms} ms`);
}

afterAll(cleanup);

describe.skipIf(!node22)("pi served by what its session code is", () => {
  let server;
  beforeAll(async () => {
    server = await startModelServer({ maxRequests: 40 });
  }, TIMEOUT);
  afterAll(async () => {
    await server?.close();
  });

  async function served(root, bin, prompt) {
    const r = await runPi(root, "native", ["-p", prompt], { bin, env });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout.trim()).toBe(`ok: ${prompt}`);
    expect(markerCount(r.stderr), r.stderr).toBe(1);
    expect(failLines(r.stderr), r.stderr).toHaveLength(1);
    return r.stderr;
  }

  async function unmodified(root, bin, prompt) {
    const r = await runPi(root, "native", ["-p", prompt], { bin, env });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout.trim()).toBe(`ok: ${prompt}`);
    const lines = failLines(r.stderr);
    expect(lines, r.stderr).toHaveLength(1);
    expect(lines[0].startsWith(FAILSAFE), lines[0]).toBe(true);
    return lines[0];
  }

  test(
    "a copy of pi whose version says 1.99.0 is served at once",
    async () => {
      const copy = copyPiPackage({
        editPackage: (pkg) => {
          pkg.version = "1.99.0";
        },
      });
      const root = makeRoot("piverify-", server.baseUrl);
      const stderr = await served(root, copy.bin, "version string only");
      expect(stderr).toContain("(pi 1.99.0; ");
      expect(stderr).toMatch(new RegExp(`session code known-good \\(pi [^)]*${piVersion.replaceAll(".", "\\.")}`));
      expect(existsSync(verdictsFile(root))).toBe(false); // nothing verified, nothing cached
    },
    TIMEOUT,
  );

  test(
    "session code changed in text only: verified in the background, then served",
    async () => {
      const copy = copyPiPackage({
        editChunk: (src) => src.replace("getLeafId(){return this.leafId}", "getLeafId(){void 0;return this.leafId}"),
      });
      const root = makeRoot("piverify-", server.baseUrl);
      const line = await unmodified(root, copy.bin, "first start");
      expect(line).toContain("is new to this package: it is being verified in the background");
      expect(line).toContain(copy.chunk);
      const verdicts = await waitForVerdicts(root, 1);
      expect(Object.values(verdicts).map((v) => v.ok)).toEqual([true]);
      const stderr = await served(root, copy.bin, "second start");
      expect(stderr).toMatch(/verified on this machine/);
    },
    TIMEOUT,
  );

  test(
    "session behaviour changed (labels stored with a suffix): never served, the line says which operation",
    async () => {
      const copy = copyPiPackage({
        editChunk: (src) =>
          src.replace("this.labelsById.set(targetId,label)", 'this.labelsById.set(targetId,label+" (v2)")'),
      });
      const root = makeRoot("piverify-", server.baseUrl);
      const report = await runPi(root, "native", ["--verify"], { bin: copy.bin, env });
      expect(report.code, report.stderr).toBe(1);
      expect(report.stdout).toMatch(/DIFFERS {2}(scenarios|operation sequences)/);
      expect(report.stdout).toMatch(/label/i);
      expect(report.stdout).toContain("RESULT: FAIL");
      expect(report.stdout).toContain("(known: pi "); // the unbundled module is unchanged: known-good
      expect(report.stdout).toContain("not served (the bundle chunk");
      const line = await unmodified(root, copy.bin, "after the verdict");
      expect(line).toMatch(
        /does not behave as this package's: (scenarios|operation sequences)[^:]* in the bundle chunk/,
      );
      expect(line).toContain("pi-native --verify");
      // and it stays so
      expect(await unmodified(root, copy.bin, "again")).toBe(line);
    },
    TIMEOUT,
  );

  test(
    "only the unbundled module changed (the chunk known-good): the chunk is not served either, the line names the module",
    async () => {
      const copy = copyPiPackage({
        editModule: (src) => src.replace('if (!firstMessage && message.role === "user") {', "if (!firstMessage) {"),
      });
      const root = makeRoot("piverify-", server.baseUrl);
      const first = await unmodified(root, copy.bin, "first start");
      expect(first).toContain("is new to this package: it is being verified in the background");
      const verdicts = await waitForVerdicts(root, 1);
      expect(Object.keys(verdicts)[0]).toMatch(/^install:/);
      const line = await unmodified(root, copy.bin, "second start");
      expect(line).toContain(
        "does not behave as this package's: scenarios in the unbundled module dist/core/session-manager.js",
      );
      expect(line).toContain(copy.chunk);
    },
    TIMEOUT,
  );

  test(
    "a SessionManager with a method ours lacks: never served, the line names it",
    async () => {
      const copy = copyPiPackage({
        editChunk: (src) =>
          src.replace(
            "var SessionManager=class _SessionManager{",
            "var SessionManager=class _SessionManager{archiveBranch(){return null}",
          ),
      });
      const root = makeRoot("piverify-", server.baseUrl);
      await unmodified(root, copy.bin, "first start");
      await waitForVerdicts(root, 1);
      const line = await unmodified(root, copy.bin, "second start");
      expect(line).toContain("API surface in the bundle chunk");
      expect(line).toContain(": SessionManager#archiveBranch is missing");
      expect(line).not.toContain(MARKER);
    },
    TIMEOUT,
  );

  test(
    "a remembered chunk changed in place (same size, mtime put back): hashed again, not served",
    async () => {
      const copy = copyPiPackage();
      const root = makeRoot("piverify-", server.baseUrl);
      const first = await served(root, copy.bin, "first start");
      expect(first).not.toContain("digest remembered");
      const memo = JSON.parse(readFileSync(memoFile(root), "utf8"));
      // the chunk and the unbundled module beside it (the install's two parts)
      expect(Object.keys(memo.files).sort()).toEqual(
        [copy.chunk, join(copy.pkg, "dist", "core", "session-manager.js")].sort(),
      );
      const second = await served(root, copy.bin, "second start");
      expect(second).toContain("digest remembered from an earlier start");
      // a behaviour change of the same length, written into the same file, its mtime put back
      const before = statSync(copy.chunk);
      const edited = copy.original.replace("getLeafId(){return this.leafId}", "getLeafId(){return this.leafID}");
      expect(edited).not.toBe(copy.original);
      expect(edited.length).toBe(copy.original.length);
      writeFileSync(copy.chunk, edited);
      utimesSync(copy.chunk, before.atime, before.mtime);
      expect(statSync(copy.chunk).size).toBe(before.size);
      const line = await unmodified(root, copy.bin, "after the change");
      expect(line).toContain("is new to this package");
      expect(line).toContain(copy.chunk);
    },
    TIMEOUT,
  );
});
