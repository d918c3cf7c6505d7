#!/usr/bin/env node
// pi-native: runs the installed pi on the native session store. `pi-native <pi args...>` is
// `pi <pi args...>` with this package's module hooks (lib/register-hooks.mjs) installed.
//
// pi's bin is found as the `pi` on PATH (through symlinks), or named by PI_CODING_AGENT_BIN.
// It runs in this very process (same Node, same argv after the script, same stdio/TTY, signals,
// exit code and NODE_OPTIONS, since nothing is in between): the hooks are installed, then pi's
// bin is imported. PI_SESSION_NATIVE=0 runs pi unmodified; PI_SESSION_NATIVE_DEBUG=1 says which
// module was served.
//
// `pi-native --verify [--seeds N] [--json]` does not start pi: it verifies the session code of the
// pi it would start against this package (lib/verify/cli.mjs), prints the report, records the
// verdict (so the next start serves a pi that passed) and exits 0 (pass) or 1 (differs).
//
// This file only picks the launcher (lib/launcher.mjs): its one-file bundle with the hook modules,
// lib/launcher.bundle.mjs (scripts/bundle-js.mjs; made by `npm run build`, before `npm test` and
// by scripts/pack.mjs), when it is there, else the sources. One module instead of eight is ~3 ms
// less before pi starts (BENCHMARKS.md, the switch's fixed cost).
//
// pi needs Node >= 22.19 (its engines field): on an older Node, one line says so and the exit
// status is 1, before anything of pi or of the launcher is loaded (pi's bin would fail with a
// SyntaxError about a missing export). So this file imports nothing an old Node lacks.
//
// Node's compile cache is turned on first, as pi's own bin (dist/bundle/cli.js of pi 1.3.0 to
// 1.6.0) does as its first statement: the same call, so the same folder (NODE_COMPILE_CACHE, else
// <tmpdir>/node-compile-cache) and the same opt-out (NODE_DISABLE_COMPILE_CACHE=1), only a few
// milliseconds earlier, so that the launcher is compiled from the cache too (~1 ms); pi's own call
// then finds it on.
import { existsSync } from "node:fs";
import nodeModule from "node:module";

/** The oldest Node pi runs on (pi 1.6.0's engines: >=22.19.0). */
const PI_NODE = [22, 19];
const [major, minor] = process.versions.node.split(".").map(Number);
if (major < PI_NODE[0] || (major === PI_NODE[0] && minor < PI_NODE[1])) {
  process.stderr.write(
    `pi-native: pi needs Node.js >= ${PI_NODE.join(".")}; this is Node.js ${process.version} (${process.execPath})\n`,
  );
  process.exit(1);
}
nodeModule.enableCompileCache?.();
const bundled = new URL("../lib/launcher.bundle.mjs", import.meta.url);
const { launch } = await import(existsSync(bundled) ? bundled.href : "../lib/launcher.mjs");
await launch(import.meta.url);
