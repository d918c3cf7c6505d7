// Installs pi-session-native the way a user does: the release tarballs (scripts/pack.mjs, as the
// release workflow makes them) published to a real npm registry on 127.0.0.1 (verdaccio), then
// `npm install pi-session-native` in a fresh project with its own npm cache and HOME, a PATH
// without cargo/rustc, and nothing of this repository reachable (no node_modules above it).
//
// Checks: require and import load the addon from the platform package; a session written by the
// installed package opens in the reference (@earendil-works/pi-coding-agent@1.6.0) with the same
// context; the `pi-session` bin runs. With `--omit=optional`, and with a main package whose
// optionalDependencies leave this platform out (a deliberately broken release), the first
// require fails with the loader's one clear error, and the same checks report that failure.
import { execFile } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { delimiter, dirname, join } from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { cleanNpmEnv, MAIN_TARBALL_TOP, pack } from "../scripts/pack.mjs";
import { startRegistry } from "../scripts/local-registry.mjs";
import { ref, root, tmp } from "./helpers.mjs";
import { findNode22 } from "../scripts/node22.mjs";

const { platformId, BINARY_NAME } = await import("../lib/platform.js");
const id = platformId();
const localBinary = join(root, `${BINARY_NAME}.${id.name}.node`);
const version = JSON.parse(readFileSync(join(root, "package.json"), "utf8")).version;
const BROKEN = `${version}-broken.0`;

const win = process.platform === "win32";

/**
 * @param {string} cmd
 * @param {string[]} args
 * @param {{ input?: string } & import("node:child_process").ExecFileOptions} [options]
 * @returns {Promise<{ code: number, stdout: string, stderr: string }>}
 */
function run(cmd, args, { input = "", ...opts } = {}) {
  return new Promise((resolve) => {
    // npm and the bin shims are .cmd files on Windows: they need a shell there.
    const child = execFile(
      cmd,
      args,
      { maxBuffer: 64 * 1024 * 1024, timeout: 180_000, shell: win && cmd !== process.execPath, ...opts },
      (error, stdout, stderr) => {
        resolve({
          code: error ? (typeof error.code === "number" ? error.code : 1) : 0,
          stdout: String(stdout),
          stderr: String(stderr),
        });
      },
    );
    // stdin at EOF: pi's print mode reads piped stdin before it starts. A child that exits
    // without reading it makes the write fail with EPIPE: that is not an error here.
    child.stdin?.on("error", () => {});
    child.stdin?.end(input);
  });
}

/** PATH without any directory that holds cargo or rustc: a user without Rust. */
function pathWithoutRust() {
  return (process.env.PATH ?? "")
    .split(delimiter)
    .filter((d) => d && !["cargo", "rustc", "rustup"].some((b) => existsSync(join(d, win ? `${b}.exe` : b))))
    .join(delimiter);
}

let registry;
let work;
let tarballs;

beforeAll(async () => {
  expect(existsSync(localBinary), `${localBinary} is missing: run \`npm run build\` first`).toBe(true);
  work = tmp("psn-install-");
  const out = join(work, "tarballs");
  mkdirSync(out);
  tarballs = pack({ out, binaries: { [id.name]: localBinary } });
  const broken = pack({ out: join(work, "broken-tarballs"), dropOptional: [id.name], setVersion: BROKEN });
  registry = await startRegistry(join(work, "registry"));
  const publisher = join(work, "publisher");
  mkdirSync(publisher);
  writeFileSync(join(publisher, ".npmrc"), registry.npmrc);
  for (const t of [...tarballs, broken.at(-1)]) {
    const tag = t.version === BROKEN ? ["--tag", "broken"] : [];
    const r = await run("npm", ["publish", t.path, ...tag, "--userconfig", join(publisher, ".npmrc")], {
      cwd: publisher,
      env: { ...cleanNpmEnv(process.env), HOME: publisher, npm_config_cache: join(publisher, "cache") },
    });
    expect(r.code, `npm publish ${t.path}\n${r.stderr}\n${registry.log()}`).toBe(0);
  }
}, 300_000);

afterAll(async () => {
  await registry?.close();
});

/** A fresh user project; `npm install <spec> [extra...]` in it. */
async function install(name, spec, extra = []) {
  const dir = join(work, name);
  mkdirSync(dir);
  writeFileSync(
    join(dir, "package.json"),
    `${JSON.stringify({ name: `user-${name}`, version: "1.0.0", private: true }, null, 2)}\n`,
  );
  writeFileSync(join(dir, ".npmrc"), `registry=${registry.url}\n`);
  /** @type {NodeJS.ProcessEnv} */
  const env = {
    ...cleanNpmEnv(process.env),
    HOME: join(dir, "home"),
    PATH: pathWithoutRust(),
    npm_config_cache: join(dir, "npm-cache"),
    npm_config_userconfig: join(dir, ".npmrc"),
    NODE_PATH: "",
  };
  delete env.PI_SESSION_NATIVE_BINARY;
  delete env.NODE_OPTIONS;
  mkdirSync(env.HOME);
  const r = await run("npm", ["install", "--no-audit", "--no-fund", spec, ...extra], { cwd: dir, env });
  return { dir, env, install: r };
}

// Written and read by the installed package in the user's project; prints JSON.
const WRITE_SESSION = `
const { SessionManager } = require("pi-session-native");
const dir = process.argv[1];
const sm = SessionManager.create(process.cwd(), dir);
const u = sm.appendMessage({ role: "user", content: "hello from a user install", timestamp: 1 });
const a = sm.appendMessage({ role: "assistant", content: [{ type: "text", text: "hi" }], api: "x", provider: "p", model: "m", usage: { input: 1, output: 1, cacheRead: 0, cacheWrite: 0, totalTokens: 2, cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } }, stopReason: "stop", timestamp: 2 });
sm.appendLabelChange(u, "start");
sm.branch(u);
sm.appendMessage({ role: "user", content: "a second branch", timestamp: 3 });
sm.appendThinkingLevelChange("high");
console.log(JSON.stringify({ file: sm.getSessionFile(), context: sm.buildSessionContext(), loaded: require.resolve("pi-session-native") }));
`;
const IMPORT_ESM = `
import { SessionManager, buildSessionContext, CURRENT_SESSION_VERSION } from "pi-session-native";
const sm = SessionManager.open(process.argv[1]);
console.log(JSON.stringify({ version: CURRENT_SESSION_VERSION, context: buildSessionContext(sm.getEntries(), sm.getLeafId()) }));
`;

/** Everything a user does first; returns what happened, asserts nothing. */
async function useIt({ dir, env }) {
  const sessions = join(dir, "sessions");
  const cjs = await run(process.execPath, ["-e", WRITE_SESSION, sessions], { cwd: dir, env });
  if (cjs.code !== 0) return { ok: false, stage: "require", cjs };
  const written = JSON.parse(cjs.stdout);
  const esm = await run(process.execPath, ["--input-type=module", "-e", IMPORT_ESM, written.file], { cwd: dir, env });
  if (esm.code !== 0) return { ok: false, stage: "import", esm };
  const bin = await run(
    join(dir, "node_modules", ".bin", win ? "pi-session.cmd" : "pi-session"),
    ["ls", sessions, "--all", "--json"],
    { cwd: dir, env },
  );
  if (bin.code !== 0) return { ok: false, stage: "bin", bin };
  return { ok: true, written, esm: JSON.parse(esm.stdout), bin: JSON.parse(bin.stdout) };
}

describe("npm install pi-session-native from a registry, without Rust", () => {
  test("the tarballs hold what a user runs and nothing else", () => {
    const [platformTgz, mainTgz] = [
      tarballs.find((t) => t.name !== "pi-session-native"),
      tarballs.find((t) => t.name === "pi-session-native"),
    ];
    expect(platformTgz.files.sort()).toEqual(
      ["LICENSE", "README.md", `${BINARY_NAME}.${id.name}.node`, "package.json"].sort(),
    );
    const tops = new Set(mainTgz.files.map((f) => f.split("/")[0]));
    for (const t of tops) expect(MAIN_TARBALL_TOP).toContain(t);
    expect(mainTgz.files.filter((f) => /\.node$|^src\/|__test__|^bench|^fuzz|^target|Cargo/.test(f))).toEqual([]);
    for (const f of [
      "index.js",
      "index.mjs",
      "index.d.ts",
      "lib/native.js",
      "lib/platform.js",
      // what every pi start through the switch loads (scripts/bundle-js.mjs, made by pack.mjs)
      "lib/bundle.cjs",
      "lib/launcher.bundle.mjs",
      "lib/launcher.mjs",
      "bin/pi-native.mjs",
      "bin/pi-session.mjs",
      "LICENSE",
      "README.md",
    ]) {
      expect(mainTgz.files).toContain(f);
    }
    console.log(
      `[install] tarballs: ${tarballs.map((t) => `${t.name} ${t.size} B packed / ${t.unpackedSize} B unpacked`).join("; ")}`,
    );
  });

  test.skipIf(win)("PATH of the user project has no cargo or rustc", async () => {
    const r = await run("sh", ["-c", "command -v cargo || command -v rustc || echo none"], {
      env: { PATH: pathWithoutRust() },
    });
    expect(r.stdout.trim()).toBe("none");
  });

  test("install gives a working package: require, import, the reference reads its session, the bin runs", async () => {
    const p = await install("user", "pi-session-native");
    expect(p.install.code, p.install.stderr).toBe(0);
    const manifest = JSON.parse(readFileSync(join(p.dir, "node_modules", "pi-session-native", "package.json"), "utf8"));
    expect(manifest.optionalDependencies[`pi-session-native-${id.name}`]).toBe(version);
    expect(manifest.scripts).toBeUndefined();
    // The binary came from the platform package; nothing was built, nothing of the repo leaked.
    const platformDir = join(p.dir, "node_modules", `pi-session-native-${id.name}`);
    expect(existsSync(join(platformDir, `${BINARY_NAME}.${id.name}.node`))).toBe(true);
    expect(readdirSync(join(p.dir, "node_modules", "pi-session-native")).filter((f) => f.endsWith(".node"))).toEqual(
      [],
    );
    expect(existsSync(join(p.dir, "node_modules", "pi-session-native", "target"))).toBe(false);
    const other = readdirSync(join(p.dir, "node_modules")).filter((n) => n.startsWith("pi-session-native-"));
    expect(other).toEqual([`pi-session-native-${id.name}`]);

    const used = await useIt(p);
    expect(used.ok, JSON.stringify(used)).toBe(true);
    expect(used.written.loaded).toBe(join(p.dir, "node_modules", "pi-session-native", "index.js"));
    // The addon in the process is the platform package's (maps of the child).
    const maps = await run(
      process.execPath,
      [
        "-e",
        'require("pi-session-native"); console.log(require("fs").readFileSync("/proc/self/maps","utf8").split("\\n").filter(l=>l.endsWith(".node")).map(l=>l.split(/\\s+/).pop()).join("\\n"))',
      ],
      { cwd: p.dir, env: p.env },
    );
    if (process.platform === "linux")
      expect([...new Set(maps.stdout.trim().split("\n"))]).toEqual([
        join(platformDir, `${BINARY_NAME}.${id.name}.node`),
      ]);

    // The reference opens the file with the same context the installed package built.
    const refSm = ref.SessionManager.open(used.written.file);
    expect(refSm.buildSessionContext()).toEqual(used.written.context);
    expect(used.esm.context).toEqual(used.written.context);
    expect(used.esm.version).toBe(ref.CURRENT_SESSION_VERSION);
    expect(used.written.context.messages.map((m) => m.content)).toEqual([
      "hello from a user install",
      "a second branch",
    ]);
    expect(used.written.context.thinkingLevel).toBe("high");
    expect(statSync(used.written.file).size).toBeGreaterThan(0);
    // The bin lists it.
    expect(used.bin.map((s) => s.path)).toEqual([used.written.file]);
  });

  test("--omit=optional: the first require fails with the loader's clear error", async () => {
    const p = await install("omit", "pi-session-native", ["--omit=optional"]);
    expect(p.install.code, p.install.stderr).toBe(0);
    expect(existsSync(join(p.dir, "node_modules", `pi-session-native-${id.name}`))).toBe(false);
    const used = await useIt(p);
    expect(used.ok).toBe(false);
    expect(used.stage).toBe("require");
    assertClearError(used.cjs.stderr);
  });

  test("a release whose optionalDependencies leave this platform out fails the same checks", async () => {
    const p = await install("broken", `pi-session-native@${BROKEN}`);
    expect(p.install.code, p.install.stderr).toBe(0);
    const used = await useIt(p);
    expect(used.ok).toBe(false);
    assertClearError(used.cjs.stderr, BROKEN);
  });
});

// pi's own package manager installs us from the registry (npm install --prefix under the agent
// dir, optional dependencies included): the /sessions command then runs in the real bin.
const node22 = findNode22();
const piBin = join(root, "node_modules", "@earendil-works", "pi-coding-agent", "dist", "bundle", "cli.js");
describe.skipIf(!node22)("pi install npm:pi-session-native from the registry (real pi bin)", () => {
  test("installs with the platform binary; /sessions finds a session through the installed package", async () => {
    const dir = join(work, "pi-user");
    const home = join(dir, "home");
    const agentDir = join(home, ".pi", "agent");
    const project = join(dir, "project");
    mkdirSync(project, { recursive: true });
    mkdirSync(agentDir, { recursive: true });
    writeFileSync(join(dir, ".npmrc"), `registry=${registry.url}\n`);
    /** @type {NodeJS.ProcessEnv} */
    const env = {
      ...cleanNpmEnv(process.env),
      HOME: home,
      PI_CODING_AGENT_DIR: agentDir,
      PI_SKIP_VERSION_CHECK: "1",
      PI_TELEMETRY: "0",
      PATH: pathWithoutRust(),
      npm_config_cache: join(dir, "npm-cache"),
      npm_config_userconfig: join(dir, ".npmrc"),
      npm_config_registry: registry.url,
    };
    delete env.NODE_OPTIONS;
    const pi = (args) => run(node22, [piBin, ...args], { cwd: project, env });
    const inst = await pi(["install", `npm:pi-session-native@${version}`]);
    expect(inst.code, `${inst.stdout}\n${inst.stderr}`).toBe(0);
    const listed = await pi(["list"]);
    expect(listed.stdout).toContain("pi-session-native");
    // Where pi put it: the platform package sits beside it.
    const found = readdirSync(agentDir, { recursive: true }).filter((p) =>
      String(p).split(/[\\/]/).join("/").endsWith(`node_modules/pi-session-native-${id.name}/package.json`),
    );
    expect(found.length, "platform package installed by pi").toBeGreaterThan(0);

    // A session in pi's store with a word to find, written by the repo's reference copy.
    const sm = ref.SessionManager.create(project, ref.getDefaultSessionDir(project, agentDir));
    sm.appendMessage({ role: "user", content: "where did we put the zanzibar config?", timestamp: 1 });
    sm.appendMessage({
      role: "assistant",
      content: [{ type: "text", text: "in etc" }],
      api: "x",
      provider: "p",
      model: "m",
      usage: {
        input: 1,
        output: 1,
        cacheRead: 0,
        cacheWrite: 0,
        totalTokens: 2,
        cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 },
      },
      stopReason: "stop",
      timestamp: 2,
    });
    expect(sm.getSessionFile().startsWith(agentDir), "the reference wrote into the test's agent dir").toBe(true);

    const r = await run(node22, [piBin, "-p", "/sessions zanzibar"], {
      cwd: project,
      env: { ...env, PI_OFFLINE: "1" },
    });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toContain(sm.getSessionFile());
    expect(r.stderr).toMatch(/zanzibar/);
  });
});

// The one switch as a user gets it: `npm install -g pi-session-native` from the registry, pi's
// own bin on PATH (a symlink, as npm -g makes it), Node 22 first on PATH; `pi-native` serves the
// installed package's addon inside the real pi bin.
describe.skipIf(!node22 || win)("pi-native from a global install (real pi bin)", () => {
  test("npm install -g, then pi-native --export runs pi on the installed addon", async () => {
    const dir = join(work, "global");
    const prefix = join(dir, "prefix");
    const piDir = join(dir, "pi-bin");
    mkdirSync(piDir, { recursive: true });
    writeFileSync(join(dir, ".npmrc"), `registry=${registry.url}\n`);
    symlinkSync(piBin, join(piDir, "pi"));
    /** @type {NodeJS.ProcessEnv} */
    const env = {
      ...cleanNpmEnv(process.env),
      HOME: join(dir, "home"),
      PI_CODING_AGENT_DIR: join(dir, "home", ".pi", "agent"),
      PI_OFFLINE: "1",
      PI_SKIP_VERSION_CHECK: "1",
      PI_TELEMETRY: "0",
      PI_SESSION_NATIVE_DEBUG: "1",
      npm_config_cache: join(dir, "npm-cache"),
      npm_config_userconfig: join(dir, ".npmrc"),
      PATH: [dirname(node22), join(prefix, "bin"), piDir, pathWithoutRust()].join(delimiter),
    };
    delete env.NODE_OPTIONS;
    delete env.PI_CODING_AGENT_BIN;
    mkdirSync(env.HOME, { recursive: true });
    const inst = await run(
      "npm",
      ["install", "-g", "--prefix", prefix, "--no-audit", "--no-fund", "pi-session-native"],
      { cwd: dir, env },
    );
    expect(inst.code, inst.stderr).toBe(0);
    const installed = join(prefix, "lib", "node_modules", "pi-session-native");
    expect(
      existsSync(join(prefix, "lib", "node_modules", `pi-session-native-${id.name}`)) ||
        existsSync(join(installed, "node_modules", `pi-session-native-${id.name}`)),
    ).toBe(true);

    const sm = ref.SessionManager.create(dir, join(dir, "sessions"));
    sm.appendMessage({ role: "user", content: "export me", timestamp: 1 });
    sm.appendMessage({
      role: "assistant",
      content: [{ type: "text", text: "exported" }],
      api: "x",
      provider: "p",
      model: "m",
      usage: {
        input: 1,
        output: 1,
        cacheRead: 0,
        cacheWrite: 0,
        totalTokens: 2,
        cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 },
      },
      stopReason: "stop",
      timestamp: 2,
    });
    const html = join(dir, "out.html");
    const r = await run("pi-native", ["--export", sm.getSessionFile(), html], { cwd: dir, env });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toContain("[pi-session-native] serving session-manager");
    // The addon mapped is the globally installed platform package's, not the repo's.
    expect(r.stderr).toMatch(new RegExp(`addon [^;]*pi-session-native-${id.name}/${BINARY_NAME}\\.${id.name}\\.node`));
    const addon = /addon ([^;]*\.node)/.exec(r.stderr)?.[1] ?? "";
    expect(addon.startsWith(prefix), addon).toBe(true);
    // pi embeds the session as base64 JSON in the page.
    const page = readFileSync(html, "utf8");
    const embedded = (page.match(/[A-Za-z0-9+/]{100,}={0,2}/g) ?? []).map((b) =>
      Buffer.from(b, "base64").toString("utf8"),
    );
    expect(embedded.some((t) => t.includes("export me") && t.includes(sm.getSessionId()))).toBe(true);
  });
});

function assertClearError(stderr, v = version) {
  expect(stderr).toContain(`pi-session-native: no native binary for this platform (${id.name}`);
  expect(stderr).toContain(`pi-session-native-${id.name}@${v}`);
  expect(stderr).toContain(`npm install pi-session-native-${id.name}@${v}`);
  expect(stderr).toMatch(/build from source: .*Rust >= \d+\.\d+/);
  expect(stderr).not.toContain("Cannot find module '../binding.js'");
}
