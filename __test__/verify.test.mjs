// The verifier's parts without pi's bin (lib/verify/): the verdict cache cannot be turned into a
// false "yes" by a corrupt, tampered, copied or planted file; the digests of the devDependency's
// session code are the known-good ones; the corpus passes for pi's own module and catches an API
// gap and a behaviour change. (With the real bin: __test__/pi-bin/verify.test.mjs.)
import {
  chmodSync,
  cpSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  utimesSync,
  writeFileSync,
} from "node:fs";
import { spawnSync } from "node:child_process";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, test } from "vitest";
import { knownChunkMatches, matchSignature, othersMayHook, SESSION_EXPORTS } from "../lib/register-hooks.mjs";
import { runCorpus, surfaceDifferences } from "../lib/verify/corpus.mjs";
import { loadModules } from "../lib/verify/differential.mjs";
import { forgetMemo, memoDigest, rememberDigest, statKey } from "../lib/verify/digest-memo.mjs";
import { bundleDigest, knownRelease, moduleDigest } from "../lib/verify/identity.mjs";
import { chunkPart, installDigest, knownInstall, modulePart, packageOfChunk } from "../lib/verify/install.mjs";
import { findSessionChunk, findSessionModule, piPackageOf, verifierEnv } from "../lib/verify/locate.mjs";
import { verifyPi } from "../lib/verify/run.mjs";
import { cacheDir, readVerdict, takeLock, VERIFIER, writeVerdict } from "../lib/verify/verdicts.mjs";
import { makeMutantModule } from "./diff-mutants.mjs";

const require = createRequire(import.meta.url);
const piDir = join(import.meta.dirname, "..", "node_modules", "@earendil-works", "pi-coding-agent");
const temps = [];
function temp() {
  const d = mkdtempSync(join(tmpdir(), "psn-verify-"));
  temps.push(d);
  return d;
}
afterEach(() => {
  for (const d of temps.splice(0)) rmSync(d, { recursive: true, force: true });
});

const DIGEST = `bundle:${"ab".repeat(32)}`;

describe("verdict cache", () => {
  const envFor = (dir) => ({ PI_SESSION_NATIVE_CACHE_DIR: dir });

  test("a verdict written is read back; another digest or verifier has none", () => {
    const env = envFor(join(temp(), "cache"));
    expect(readVerdict(DIGEST, VERIFIER, env)).toBeUndefined();
    writeVerdict(DIGEST, VERIFIER, { ok: true, pi: "1.7.0" }, env);
    writeVerdict(`bundle:${"cd".repeat(32)}`, VERIFIER, { ok: false, failure: "API surface: x", pi: "1.8.0" }, env);
    expect(readVerdict(DIGEST, VERIFIER, env)).toMatchObject({ ok: true, pi: "1.7.0" });
    expect(readVerdict(`bundle:${"cd".repeat(32)}`, VERIFIER, env)).toMatchObject({
      ok: false,
      failure: "API surface: x",
    });
    expect(readVerdict(`bundle:${"ef".repeat(32)}`, VERIFIER, env)).toBeUndefined();
    expect(readVerdict(DIGEST, "pi-session-native@9.9.9/corpus-1", env)).toBeUndefined();
  });

  test("files and folder are the user's alone (0700 / 0600)", () => {
    const dir = join(temp(), "cache");
    writeVerdict(DIGEST, VERIFIER, { ok: true, pi: "1.7.0" }, envFor(dir));
    if (process.platform === "win32") return;
    const mode = (p) => require("node:fs").statSync(p).mode & 0o777;
    expect(mode(dir)).toBe(0o700);
    expect(mode(join(dir, "key"))).toBe(0o600);
    expect(mode(join(dir, "verdicts.json"))).toBe(0o600);
  });

  test.each([
    ["a 'no' edited into a 'yes'", (dir) => edit(dir, (d) => Object.assign(d.verdicts[DIGEST], { ok: true }))],
    ["a wrong MAC", (dir) => edit(dir, (d) => Object.assign(d.verdicts[DIGEST], { mac: "00".repeat(32) }))],
    ["a MAC that is not hex", (dir) => edit(dir, (d) => Object.assign(d.verdicts[DIGEST], { mac: "yes" }))],
    ["garbage", (dir) => writeFileSync(join(dir, "verdicts.json"), "{not json", { mode: 0o600 })],
    ["an empty file", (dir) => writeFileSync(join(dir, "verdicts.json"), "", { mode: 0o600 })],
    ["another format", (dir) => edit(dir, (d) => Object.assign(d, { format: 99 }))],
    ["another key", (dir) => writeFileSync(join(dir, "key"), "11".repeat(32), { mode: 0o600 })],
    ["a key that is not a key", (dir) => writeFileSync(join(dir, "key"), "short", { mode: 0o600 })],
  ])("%s reads as no verdict", (_what, spoil) => {
    const dir = join(temp(), "cache");
    const env = envFor(dir);
    writeVerdict(DIGEST, VERIFIER, { ok: false, failure: "operation sequences: label", pi: "1.7.0" }, env);
    spoil(dir);
    expect(readVerdict(DIGEST, VERIFIER, env)).toBeUndefined();
  });

  test("a 'yes' copied from another user's cache (another key) is not a 'yes' here", () => {
    const theirs = join(temp(), "theirs");
    writeVerdict(DIGEST, VERIFIER, { ok: true, pi: "1.7.0" }, envFor(theirs));
    const mine = join(temp(), "mine");
    writeVerdict(`bundle:${"cd".repeat(32)}`, VERIFIER, { ok: true, pi: "1.8.0" }, envFor(mine));
    cpSync(join(theirs, "verdicts.json"), join(mine, "verdicts.json"));
    expect(readVerdict(DIGEST, VERIFIER, envFor(mine))).toBeUndefined();
  });

  test.skipIf(process.platform === "win32")("links and files others may write are not read", () => {
    const dir = join(temp(), "cache");
    const env = envFor(dir);
    writeVerdict(DIGEST, VERIFIER, { ok: true, pi: "1.7.0" }, env);
    expect(readVerdict(DIGEST, VERIFIER, env)?.ok).toBe(true);
    chmodSync(join(dir, "verdicts.json"), 0o666);
    expect(readVerdict(DIGEST, VERIFIER, env)).toBeUndefined();
    chmodSync(join(dir, "verdicts.json"), 0o600);
    chmodSync(dir, 0o777);
    expect(readVerdict(DIGEST, VERIFIER, env)).toBeUndefined();
    chmodSync(dir, 0o700);
    // the cache folder a link to the real one
    const link = join(temp(), "link");
    symlinkSync(dir, link);
    expect(readVerdict(DIGEST, VERIFIER, envFor(link))).toBeUndefined();
    // the verdicts file a link to a good one elsewhere
    const other = join(temp(), "other");
    mkdirSync(other, { mode: 0o700 });
    cpSync(join(dir, "key"), join(other, "key"));
    symlinkSync(join(dir, "verdicts.json"), join(other, "verdicts.json"));
    expect(readVerdict(DIGEST, VERIFIER, envFor(other))).toBeUndefined();
  });

  test("one verifier at a time; a stale lock is taken over", () => {
    const dir = join(temp(), "cache");
    const env = envFor(dir);
    const release = takeLock(env);
    expect(release).toBeTypeOf("function");
    expect(takeLock(env)).toBeUndefined();
    const old = new Date(Date.now() - 10 * 60_000);
    utimesSync(join(dir, "verify.lock"), old, old);
    const again = takeLock(env);
    expect(again).toBeTypeOf("function");
    again?.();
    release?.();
  });

  test("the cache folder: PI_SESSION_NATIVE_CACHE_DIR, else XDG_CACHE_HOME, else ~/.cache", () => {
    expect(cacheDir({ PI_SESSION_NATIVE_CACHE_DIR: "/x/y" })).toBe("/x/y");
    if (process.platform === "linux") {
      expect(cacheDir({ XDG_CACHE_HOME: "/xdg" })).toBe("/xdg/pi-session-native");
      expect(cacheDir({})).toMatch(/\/\.cache\/pi-session-native$/);
    }
  });
});

function edit(dir, change) {
  const file = join(dir, "verdicts.json");
  const data = JSON.parse(readFileSync(file, "utf8"));
  change(data);
  writeFileSync(file, JSON.stringify(data), { mode: 0o600 });
}

describe("what pi's session code is", () => {
  test("the devDependency's chunk and module digests are known-good (pi 1.6.0)", () => {
    const chunk = findSessionChunk(piDir);
    expect(chunk).toBeTruthy();
    expect(knownRelease(bundleDigest(readFileSync(chunk)))).toBe("1.6.0");
    expect(knownRelease(moduleDigest(findSessionModule(piDir)))).toBe("1.6.0");
    expect(piPackageOf(chunk)).toEqual({ dir: piDir, version: "1.6.0" });
  });

  test("the known-good chunk binds every session export under its own name (the match the hook takes as given)", () => {
    const bytes = readFileSync(findSessionChunk(piDir));
    expect(knownChunkMatches(bytes)).toBe(true);
    expect(matchSignature(bytes).assignments).toEqual(SESSION_EXPORTS.map((name) => [name, name]));
    // a chunk that binds one under another name is refused for the known-good list
    const text = bytes.toString("latin1").replace(/\bparseSessionEntries\b/g, "parseSessionEntries2");
    const at = text.lastIndexOf("export{");
    const renamed = Buffer.from(
      text.slice(0, at) + text.slice(at).replace("parseSessionEntries2", "parseSessionEntries2 as parseSessionEntries"),
      "latin1",
    );
    expect(matchSignature(renamed).assignments).toContainEqual(["parseSessionEntries2", "parseSessionEntries"]);
    expect(String(knownChunkMatches(renamed))).toMatch(/parseSessionEntries/);
  });

  test("the module digest covers the files it imports", () => {
    const copy = join(temp(), "pi");
    cpSync(join(piDir, "dist"), join(copy, "dist"), { recursive: true });
    const file = join(copy, "dist", "core", "session-manager.js");
    const before = moduleDigest(file);
    expect(knownRelease(before)).toBe("1.6.0");
    writeFileSync(join(copy, "dist", "config.js"), `${readFileSync(join(copy, "dist", "config.js"), "utf8")}\n//x\n`);
    expect(knownRelease(moduleDigest(file))).toBeUndefined();
  });

  test("one verdict per install: known only when every part is known-good", () => {
    const chunk = chunkPart(piDir);
    expect(chunk?.file).toBe(findSessionChunk(piDir));
    expect(packageOfChunk(chunk.file)).toBe(piDir);
    const env = { PI_SESSION_NATIVE_CACHE_DIR: join(temp(), "cache") };
    const module = modulePart(piDir, env);
    expect(module.digest).toBe(moduleDigest(findSessionModule(piDir)));
    // remembered by its files' stats, then taken from the memo
    forgetMemo();
    expect(modulePart(piDir, env).digest).toBe(module.digest);
    expect(knownInstall({ chunk: chunk.digest, module: module.digest })).toBe("1.6.0");
    expect(knownInstall({ chunk: chunk.digest })).toBe("1.6.0");
    const changed = `module:${"0".repeat(64)}`;
    expect(knownInstall({ chunk: chunk.digest, module: changed })).toBeUndefined();
    expect(knownInstall({})).toBeUndefined();
    const a = installDigest({ chunk: chunk.digest, module: changed });
    expect(a).toMatch(/^install:[0-9a-f]{64}$/);
    expect(installDigest({ chunk: chunk.digest, module: module.digest })).not.toBe(a);
    expect(installDigest({ chunk: changed, module: chunk.digest })).not.toBe(a);
  });

  test("a change in the unbundled module alone refuses the install: the verdict names the module and the check", async () => {
    // a copy of pi whose files are links to the devDependency's, but for a changed session module;
    // under the repository (pi's own imports resolve) and in a node_modules (loaded as it is)
    mkdirSync(join(import.meta.dirname, "..", ".tmp"), { recursive: true });
    const base = mkdtempSync(join(import.meta.dirname, "..", ".tmp", "verify-copy-"));
    temps.push(base);
    const copy = join(base, "node_modules", "@earendil-works", "pi-coding-agent");
    const linkAll = (from, to, except) => {
      mkdirSync(to, { recursive: true });
      for (const name of readdirSync(from)) if (name !== except) symlinkSync(join(from, name), join(to, name));
    };
    linkAll(piDir, copy, "dist");
    linkAll(join(piDir, "dist"), join(copy, "dist"), "core");
    linkAll(join(piDir, "dist", "core"), join(copy, "dist", "core"), "session-manager.js");
    const source = readFileSync(join(piDir, "dist", "core", "session-manager.js"), "utf8");
    const changed = source.replace('if (!firstMessage && message.role === "user") {', "if (!firstMessage) {");
    expect(changed).not.toBe(source);
    writeFileSync(join(copy, "dist", "core", "session-manager.js"), changed);
    const env = { PI_SESSION_NATIVE_CACHE_DIR: join(temp(), "cache") };
    const saved = process.env.PI_SESSION_NATIVE_CACHE_DIR;
    process.env.PI_SESSION_NATIVE_CACHE_DIR = env.PI_SESSION_NATIVE_CACHE_DIR;
    try {
      const outcome = await verifyPi({ dir: copy, version: "1.6.0-changed", seeds: 2 });
      expect(outcome.ok).toBe(false);
      // the chunk is known-good (not verified again), the module differs
      expect(outcome.results.map((/** @type {any} */ r) => [r.kind, r.ok, r.skipped ?? false])).toEqual([
        ["module", false, false],
        ["bundle", true, true],
      ]);
      const install = installDigest({ chunk: chunkPart(copy).digest, module: modulePart(copy, env).digest });
      expect(outcome.installs).toEqual([install]);
      const verdict = readVerdict(install, VERIFIER, env);
      expect(verdict?.ok).toBe(false);
      expect(verdict?.failure).toMatch(/^scenarios in the unbundled module dist\/core\/session-manager\.js: .*first/);
    } finally {
      if (saved === undefined) delete process.env.PI_SESSION_NATIVE_CACHE_DIR;
      else process.env.PI_SESSION_NATIVE_CACHE_DIR = saved;
    }
  }, 120_000);

  test("a background verification past its time limit is stopped and refuses the install", () => {
    const cache = join(temp(), "cache");
    const cli = join(import.meta.dirname, "..", "lib", "verify", "cli.mjs");
    const r = spawnSync(process.execPath, [cli, piDir, "--background", "--all"], {
      env: { ...process.env, PI_SESSION_NATIVE_CACHE_DIR: cache, PI_SESSION_NATIVE_VERIFY_LIMIT_S: "1" },
      encoding: "utf8",
      timeout: 60_000,
    });
    expect(r.status, r.stderr).toBe(1);
    const env = { PI_SESSION_NATIVE_CACHE_DIR: cache };
    const install = installDigest({ chunk: chunkPart(piDir).digest, module: moduleDigest(findSessionModule(piDir)) });
    expect(readVerdict(install, VERIFIER, env)).toMatchObject({
      ok: false,
      failure: "the verification did not finish within 1 s (pi's session code may never return)",
    });
    expect(readFileSync(join(cache, "last-report.txt"), "utf8")).toContain("RESULT: FAIL");
  });

  test("the verifier's environment has this package's hooks off", () => {
    const env = verifierEnv({ NODE_OPTIONS: "--max-old-space-size=99 --import /a/pi-session-native/lib/register.mjs" });
    expect(env.PI_SESSION_NATIVE).toBe("0");
    expect(env.NODE_OPTIONS).toBe("--max-old-space-size=99");
    expect("NODE_OPTIONS" in verifierEnv({ NODE_OPTIONS: "--import=/x/pi-session-native/lib/register.mjs" })).toBe(
      false,
    );
  });
});

describe("the corpus", () => {
  test("API surface: a method, a static or an export of pi's that we lack is named", async () => {
    const { ref, impl } = await loadModules();
    expect(surfaceDifferences(ref, impl)).toEqual([]);
    class Wider extends ref.SessionManager {
      archiveBranch() {}
      static compact() {}
      _privateHelper() {}
    }
    const wider = { ...ref, SessionManager: Wider, newHelper() {} };
    expect(surfaceDifferences(wider, impl)).toEqual([
      "export newHelper is missing",
      "static SessionManager.compact is missing",
      "SessionManager#archiveBranch is missing",
    ]);
  });

  test("pi's own module against ours: every check the same", async () => {
    const { ref, impl } = await loadModules();
    const r = await runCorpus({ ref, impl, seeds: 6 });
    expect(r.checks.map((c) => [c.name, c.ok, c.detail])).toEqual([
      ["API surface", true, undefined],
      ["list / listAll", true, undefined],
      ["default folders", true, undefined],
      ["scenarios", true, undefined],
      ["operation sequences (6 seeds)", true, undefined],
    ]);
  }, 120_000);

  test("a pi whose behaviour changed (labels dropped) is caught, with the operation", async () => {
    const { ref, impl } = await loadModules();
    const r = await runCorpus({ ref: makeMutantModule(ref, "dropLabel"), impl, seeds: 6 });
    expect(r.ok).toBe(false);
    expect(r.failure.name).toMatch(/^(scenarios|operation sequences \(6 seeds\))$/);
    expect(r.failure.detail).toMatch(/label/);
  }, 120_000);
});

describe("the hook's reading of pi's chunk", () => {
  test("its export list (exported name -> local) is es-module-lexer's, for the session exports", async () => {
    const { exportList } = await import("../lib/register-hooks.mjs");
    const { initSync, parse } = await import("es-module-lexer");
    initSync();
    const chunk = findSessionChunk(piDir);
    const bytes = readFileSync(chunk);
    const mine = exportList(bytes);
    const [, exports] = parse(bytes.toString("latin1"));
    const theirs = new Map(exports.map((e) => [e.n, e.ln]));
    expect(mine.size).toBe(theirs.size);
    for (const [name, local] of theirs) expect(mine.get(name), name).toBe(local);
  });
});

describe("the chunk digest memo", () => {
  const envFor = (dir) => ({ PI_SESSION_NATIVE_CACHE_DIR: dir });
  const FILE = "/pi/dist/bundle/chunks/chunk-X.js";
  const STAT = "2049:1234:2623685:1796407736834085709:1796407736834085709";
  const lookup = (env, file = FILE, stat = STAT) => {
    forgetMemo(); // as a new process: read from the files
    return memoDigest(file, stat, env);
  };

  test("a digest recorded is found for the same file at the same stat only", () => {
    const env = envFor(join(temp(), "cache"));
    expect(lookup(env)).toBeUndefined();
    rememberDigest(FILE, STAT, DIGEST, env);
    expect(lookup(env)).toBe(DIGEST);
    expect(lookup(env, FILE, STAT.replace(/:1796407736834085709$/, ":1796407736834085710"))).toBeUndefined();
    expect(lookup(env, "/other/chunk-X.js")).toBeUndefined();
    if (process.platform !== "win32")
      expect(statSync(join(env.PI_SESSION_NATIVE_CACHE_DIR, "digests.json")).mode & 0o777).toBe(0o600);
  });

  test("the stat key: device, inode, size and both times in ns; none on whole-second file systems", () => {
    const st = { dev: 1n, ino: 2n, size: 3n, mtimeNs: 1_700_000_000_123_456_789n, ctimeNs: 1_700_000_001_000_000_001n };
    expect(statKey(st)).toBe("1:2:3:1700000000123456789:1700000001000000001");
    expect(
      statKey({ ...st, mtimeNs: 1_700_000_000_000_000_000n, ctimeNs: 1_700_000_001_000_000_000n }),
    ).toBeUndefined();
    // a real file here: a key, and a write changes it even when the size and mtime are put back
    const file = join(temp(), "f.js");
    writeFileSync(file, "var a=1;");
    const key = statKey(statSync(file, { bigint: true }));
    const { mtime } = statSync(file);
    writeFileSync(file, "var b=1;");
    utimesSync(file, mtime, mtime);
    const after = statKey(statSync(file, { bigint: true }));
    if (key !== undefined) expect(after).not.toBe(key);
  });

  test.each([
    ["a digest edited", (dir) => editMemo(dir, (r) => Object.assign(r, { digest: `bundle:${"cd".repeat(32)}` }))],
    ["a stat edited", (dir) => editMemo(dir, (r) => Object.assign(r, { stat: "1:2:3:4:5" }), "1:2:3:4:5")],
    ["a wrong MAC", (dir) => editMemo(dir, (r) => Object.assign(r, { mac: "00".repeat(32) }))],
    ["garbage", (dir) => writeFileSync(join(dir, "digests.json"), "{not json", { mode: 0o600 })],
    ["another key", (dir) => writeFileSync(join(dir, "key"), "11".repeat(32), { mode: 0o600 })],
  ])("%s reads as no digest", (_what, spoil) => {
    const dir = join(temp(), "cache");
    rememberDigest(FILE, STAT, DIGEST, envFor(dir));
    const stat = spoil(dir) ?? STAT;
    forgetMemo();
    expect(memoDigest(FILE, stat, envFor(dir))).toBeUndefined();
  });

  test.skipIf(process.platform === "win32")("a memo others may write, or a link, is not read", () => {
    const dir = join(temp(), "cache");
    rememberDigest(FILE, STAT, DIGEST, envFor(dir));
    chmodSync(join(dir, "digests.json"), 0o666);
    expect(lookup(envFor(dir))).toBeUndefined();
    chmodSync(join(dir, "digests.json"), 0o600);
    expect(lookup(envFor(dir))).toBe(DIGEST);
    const link = join(temp(), "link");
    symlinkSync(dir, link);
    expect(lookup(envFor(link))).toBeUndefined();
  });

  test("at most 16 files are kept, the most recent", () => {
    const env = envFor(join(temp(), "cache"));
    for (let i = 0; i < 20; i++) rememberDigest(`/pi${i}/chunk.js`, STAT, DIGEST, env);
    const kept = Object.keys(
      JSON.parse(readFileSync(join(env.PI_SESSION_NATIVE_CACHE_DIR, "digests.json"), "utf8")).files,
    );
    expect(kept).toEqual(Array.from({ length: 16 }, (_, i) => `/pi${i + 4}/chunk.js`));
    expect(lookup(env, "/pi19/chunk.js")).toBe(DIGEST);
    expect(lookup(env, "/pi3/chunk.js")).toBeUndefined();
  });
});

function editMemo(dir, change, stat) {
  const file = join(dir, "digests.json");
  const data = JSON.parse(readFileSync(file, "utf8"));
  for (const record of Object.values(data.files)) change(record);
  writeFileSync(file, JSON.stringify(data), { mode: 0o600 });
  return stat;
}

describe("whose hooks may run before ours", () => {
  const own = join(import.meta.dirname, "..", "lib", "register.mjs");
  test.each([
    [[], "", false],
    [["--import", own], "", false],
    [[`--import=${own}`], "", false],
    [[], `--import ${own}`, false],
    [[], "--import pi-session-native/register --max-old-space-size=4096", false],
    [["--import", "tsx"], "", true],
    [["--require", "/x/otel.cjs"], "", true],
    [["-r", "/x/otel.cjs"], "", true],
    [[], "--loader ts-node/esm", true],
    [[], `--experimental-loader=/x/l.mjs --import ${own}`, true],
    [["--enable-source-maps"], "--max-old-space-size=4096", false],
  ])("execArgv %j, NODE_OPTIONS %j: %s", (execArgv, nodeOptions, expected) => {
    expect(othersMayHook({ NODE_OPTIONS: nodeOptions }, execArgv)).toBe(expected);
  });
});
