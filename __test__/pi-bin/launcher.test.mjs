// bin/pi-native.mjs as a user meets it: it finds the `pi` on PATH through symlinks, keeps pi's
// exit codes, signals and the caller's NODE_OPTIONS, and says clearly when there is no pi.
import { spawnSync } from "node:child_process";
import { mkdirSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { afterAll, describe, expect, test } from "vitest";
import {
  cleanup,
  launcher,
  makeRoot,
  MARKER,
  markerCount,
  node22,
  piBin,
  piPackage,
  piVersion,
  repoRoot,
  runPi,
  startRpc,
} from "./helpers.mjs";

afterAll(cleanup);

describe.skipIf(!node22)("pi-native launcher", () => {
  test("finds pi on PATH through a chain of symlinks (no PI_CODING_AGENT_BIN)", async () => {
    const root = makeRoot("pilaunch-", "http://127.0.0.1:9/v1");
    const lib = join(root, "prefix", "lib");
    const bin = join(root, "prefix", "bin");
    mkdirSync(lib, { recursive: true });
    mkdirSync(bin, { recursive: true });
    symlinkSync(piBin, join(lib, "cli.js"));
    symlinkSync(join(lib, "cli.js"), join(bin, "pi"));
    const env = { PI_CODING_AGENT_BIN: undefined, PATH: `${join(root, "nothing-here")}:${bin}:${process.env.PATH}` };
    const r = await runPi(root, "native", ["--version"], { env });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout.trim()).toBe(piVersion);
    expect(markerCount(r.stderr), r.stderr).toBe(1);
    expect(r.stderr).toContain("dist/bundle/chunks/");
  });

  test("finds pi behind a shell shim (npm's layout with node_modules next to the shim)", async () => {
    const root = makeRoot("pilaunch-", "http://127.0.0.1:9/v1");
    const prefix = join(root, "prefix");
    mkdirSync(join(prefix, "node_modules", "@earendil-works"), { recursive: true });
    symlinkSync(piPackage, join(prefix, "node_modules", "@earendil-works", "pi-coding-agent"));
    writeFileSync(join(prefix, "pi"), '#!/bin/sh\necho "a shim, not pi" >&2\nexit 3\n', { mode: 0o755 });
    const r = await runPi(root, "native", ["--version"], {
      env: { PI_CODING_AGENT_BIN: undefined, PATH: `${prefix}:${process.env.PATH}` },
    });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout.trim()).toBe(piVersion);
    expect(r.stderr).not.toContain("a shim, not pi");
    expect(markerCount(r.stderr), r.stderr).toBe(1);
  });

  test("no pi anywhere: exit 127 and a message that says what to do", async () => {
    const root = makeRoot("pilaunch-", "http://127.0.0.1:9/v1");
    const r = await runPi(root, "native", ["--version"], {
      env: { PI_CODING_AGENT_BIN: undefined, PATH: join(root, "empty") },
    });
    expect(r.code).toBe(127);
    expect(r.stderr).toContain("pi-native: cannot find pi");
    expect(r.stderr).toContain("PI_CODING_AGENT_BIN");
  });

  test("pi's exit code and error output are kept", async () => {
    const root = makeRoot("pilaunch-", "http://127.0.0.1:9/v1");
    const [a, b] = await Promise.all([
      runPi(root, "ref", ["--no-such-flag"]),
      runPi(root, "native", ["--no-such-flag"], { env: { PI_SESSION_NATIVE_DEBUG: undefined } }),
    ]);
    expect(a.code).not.toBe(0);
    expect(b.code).toBe(a.code);
    expect(b.stderr).toBe(a.stderr);
    expect(b.stdout).toBe(a.stdout);
  });

  test("the caller's NODE_OPTIONS still apply (nothing replaces them)", async () => {
    const root = makeRoot("pilaunch-", "http://127.0.0.1:9/v1");
    const pre = join(root, "pre.cjs");
    writeFileSync(pre, 'process.stderr.write("preloaded by NODE_OPTIONS\\n");\n');
    const r = await runPi(root, "native", ["--version"], { env: { NODE_OPTIONS: `--require ${pre}` } });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toContain("preloaded by NODE_OPTIONS");
    expect(r.stderr).toContain(MARKER);
  });

  test("a module hook registered before ours still sees pi's modules, the session chunk included", async () => {
    // Without other preloads the load hook reads pi's modules itself (room for the stand-ins, the
    // digest memo); with one it must hand every module to the next hook, as Node's chain does.
    const root = makeRoot("pilaunch-", "http://127.0.0.1:9/v1");
    const seen = join(root, "seen.txt");
    const pre = join(root, "pre.mjs");
    writeFileSync(
      pre,
      [
        'import { appendFileSync } from "node:fs";',
        'import { registerHooks } from "node:module";',
        "registerHooks({",
        "  load(url, context, nextLoad) {",
        `    if (url.includes("/pi-coding-agent/dist/bundle/")) appendFileSync(${JSON.stringify(seen)}, url + "\\n");`,
        "    return nextLoad(url, context);",
        "  },",
        "});",
        "",
      ].join("\n"),
    );
    const r = await runPi(root, "native", ["--version"], { env: { NODE_OPTIONS: `--import ${pre}` } });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout.trim()).toBe(piVersion);
    expect(markerCount(r.stderr), r.stderr).toBe(1);
    const served = /serving session-manager: (\S+) /.exec(r.stderr)?.[1];
    expect(served, r.stderr).toMatch(/chunk-[^/]*\.js$/);
    const urls = readFileSync(seen, "utf8").trim().split("\n");
    expect(urls.some((u) => u.endsWith(served.split("/").pop()))).toBe(true);
  });

  test("from the sources (where lib/launcher.bundle.mjs was not made) it serves pi the same", async () => {
    // bin/pi-native.mjs loads the bundle when it is there (always, after `npm test`'s pretest):
    // this stub takes the path it takes without one
    const root = makeRoot("pilaunch-", "http://127.0.0.1:9/v1");
    const stub = join(root, "pi-native-sources.mjs");
    const sources = join(import.meta.dirname, "..", "..", "lib", "launcher.mjs");
    writeFileSync(
      stub,
      `import { launch } from ${JSON.stringify(pathToFileURL(sources).href)};\nawait launch(import.meta.url);\n`,
    );
    const r = await runPi(root, "native", ["--version"], { launcherFile: stub });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout.trim()).toBe(piVersion);
    expect(markerCount(r.stderr), r.stderr).toBe(1);
    expect(r.stderr).toContain(`hooks in ${join(import.meta.dirname, "..", "..", "lib", "register-hooks.mjs")}, `);
    // and the bin file itself: the bundle
    const bundled = await runPi(root, "native", ["--version"]);
    expect(bundled.stderr).toContain(
      `hooks in ${join(import.meta.dirname, "..", "..", "lib", "launcher.bundle.mjs")}, `,
    );
  });

  test("--version and --help: pi's stdout as it is; this package's name, version and state on stderr", async () => {
    const root = makeRoot("pilaunch-", "http://127.0.0.1:9/v1");
    const own = JSON.parse(readFileSync(join(repoRoot, "package.json"), "utf8")).version;
    const quiet = { PI_SESSION_NATIVE_DEBUG: undefined };
    for (const flag of ["--version", "-v", "--help"]) {
      const [a, b] = await Promise.all([
        runPi(root, "ref", [flag], { env: quiet }),
        runPi(root, "native", [flag], { env: quiet }),
      ]);
      expect(b.code, b.stderr).toBe(0);
      expect(b.stdout, flag).toBe(a.stdout);
      expect(b.stderr.split("\n")[0], flag).toMatch(
        new RegExp(
          `^pi-session-native ${own.replace(/\./g, "\\.")} serves the session store \\(session code known-good \\(pi ${piVersion.replace(/\./g, "\\.")}\\)`,
        ),
      );
      if (flag === "--help") {
        expect(b.stderr).toContain("pi-native --verify [--seeds N] [--all] [--json]");
        expect(b.stderr).toContain("PI_SESSION_NATIVE=0");
      } else expect(b.stderr.trim().split("\n"), flag).toHaveLength(1);
    }
    // Where it would not serve, it says so (the addon is looked for, though --version loads none).
    const missing = await runPi(root, "native", ["--version"], {
      env: { ...quiet, PI_SESSION_NATIVE_BINARY: join(root, "none.node") },
    });
    expect(missing.stdout.trim()).toBe(piVersion);
    expect(missing.stderr.trim()).toBe(
      `pi-session-native ${own} is not serving the session store; pi runs unmodified (the native addon does not load (PI_SESSION_NATIVE_BINARY=${join(root, "none.node")} does not exist))`,
    );
    // A pi subcommand's help is pi's alone.
    const sub = await runPi(root, "native", ["install", "--help"], { env: quiet });
    expect(sub.stderr).not.toContain("pi-session-native");
  });

  test("SIGTERM reaches pi (rpc mode shuts down the same way as plain pi)", async () => {
    const root = makeRoot("pilaunch-", "http://127.0.0.1:9/v1");
    const outcome = async (how) => {
      const rpc = startRpc(root, how, ["--no-session"]);
      const { res } = await rpc.send({ type: "get_state" });
      expect(res.success).toBe(true);
      const exited = new Promise((resolve) => rpc.child.on("exit", (code, signal) => resolve({ code, signal })));
      rpc.child.kill("SIGTERM");
      return exited;
    };
    const [a, b] = await Promise.all([outcome("ref"), outcome("native")]);
    expect(b).toEqual(a);
  });
});

// The Node running the tests is the machine's (Node 20 here and in CI); pi needs 22.19.
const [major, minor] = process.versions.node.split(".").map(Number);
const oldNode = major < 22 || (major === 22 && minor < 19);
if (!oldNode) console.warn(`[launcher] the old-Node test is skipped: ${process.version} is new enough for pi`);

describe.skipIf(!oldNode)("pi-native on a Node older than pi needs", () => {
  test("one line saying what pi needs and which Node this is, exit status 1, pi not started", () => {
    for (const args of [["--version"], ["-p", "hello"], ["--verify"]]) {
      const r = spawnSync(process.execPath, [launcher, ...args], {
        encoding: "utf8",
        env: { ...process.env, PI_CODING_AGENT_BIN: piBin },
      });
      expect(r.status, r.stderr).toBe(1);
      expect(r.stdout).toBe("");
      expect(r.stderr).toBe(
        `pi-native: pi needs Node.js >= 22.19; this is Node.js ${process.version} (${process.execPath})\n`,
      );
    }
  });
});
