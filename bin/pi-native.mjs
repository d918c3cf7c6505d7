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
import {
  accessSync,
  closeSync,
  constants,
  existsSync,
  openSync,
  readFileSync,
  readSync,
  realpathSync,
  statSync,
} from "node:fs";
import { spawnSync } from "node:child_process";
import { delimiter, dirname, join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { installHooks } from "../lib/register-hooks.mjs";
import { piPackageOf, verifierEnv } from "../lib/verify/locate.mjs";

const PI_PACKAGE = "@earendil-works/pi-coding-agent";
const self = realpathSync(fileURLToPath(import.meta.url));

function fail(message) {
  process.stderr.write(`pi-native: ${message}\n`);
  process.exit(127);
}

function isExecutableFile(file) {
  try {
    if (!statSync(file).isFile()) return false;
    if (process.platform !== "win32") accessSync(file, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** pi's bin file inside an installed package directory. */
function binOfPackage(dir) {
  try {
    const pkg = JSON.parse(readFileSync(join(dir, "package.json"), "utf8"));
    if (pkg.name !== PI_PACKAGE) return undefined;
    const bin = typeof pkg.bin === "string" ? pkg.bin : pkg.bin?.pi;
    return bin ? join(dir, bin) : undefined;
  } catch {
    return undefined;
  }
}

/** First bytes of a file, to tell a JS bin from a shell shim. */
function head(file, bytes) {
  const fd = openSync(file, "r");
  try {
    const buf = Buffer.alloc(bytes);
    return buf.subarray(0, readSync(fd, buf, 0, bytes, 0)).toString("utf8");
  } finally {
    closeSync(fd);
  }
}

function isJavaScript(file) {
  if (/\.[cm]?js$/.test(file)) return true;
  try {
    return /^#!.*\bnode\b/.test(head(file, 128).split("\n")[0]);
  } catch {
    return false;
  }
}

/** A `pi` hit on PATH -> pi's JS bin (a symlink into the package, or a shim next to node_modules). */
function fromPathHit(hit) {
  const real = realpathSync(hit);
  if (real === self) return undefined;
  if (isJavaScript(real)) return real;
  // npm's shell/cmd shims: <prefix>/pi(.cmd) with the package in <prefix>/node_modules or
  // <prefix>/../lib/node_modules
  const base = dirname(hit);
  for (const dir of [join(base, "node_modules", PI_PACKAGE), join(base, "..", "lib", "node_modules", PI_PACKAGE)]) {
    const bin = binOfPackage(dir);
    if (bin && existsSync(bin)) return realpathSync(bin);
  }
  return undefined;
}

/** `pi-native --verify`: the verifier on pi's package, in a child without this package's hooks. */
function verify(piBin) {
  const pi = piPackageOf(piBin);
  if (!pi) fail(`${piBin} is not inside the pi package (${PI_PACKAGE})`);
  const cli = fileURLToPath(new URL("../lib/verify/cli.mjs", import.meta.url));
  const r = spawnSync(process.execPath, [cli, pi.dir, ...process.argv.slice(3)], {
    stdio: "inherit",
    env: verifierEnv(process.env),
  });
  process.exit(r.status ?? 1);
}

function findPi() {
  const explicit = process.env.PI_CODING_AGENT_BIN;
  if (explicit) {
    const file = resolve(explicit);
    if (!existsSync(file)) fail(`PI_CODING_AGENT_BIN=${explicit} does not exist`);
    return realpathSync(file);
  }
  const names = process.platform === "win32" ? ["pi.cmd", "pi.exe", "pi"] : ["pi"];
  const skipped = [];
  for (const dir of (process.env.PATH ?? "").split(delimiter)) {
    if (!dir) continue;
    for (const name of names) {
      const hit = join(dir, name);
      if (!isExecutableFile(hit)) continue;
      const bin = fromPathHit(hit);
      if (bin) return bin;
      skipped.push(hit);
    }
  }
  fail(
    `cannot find pi: no \`pi\` on PATH that is pi's Node bin${skipped.length ? ` (skipped ${skipped.join(", ")})` : ""}. ` +
      `Install it (npm install -g ${PI_PACKAGE}) or set PI_CODING_AGENT_BIN to pi's bin file ` +
      "(node_modules/@earendil-works/pi-coding-agent/dist/bundle/cli.js).",
  );
}

const bin = findPi();
if (process.argv[2] === "--verify") verify(bin);
installHooks();
// pi sees the argv it would see when started as `pi ...`: [node, <pi bin>, ...args]
process.argv[1] = bin;
await import(pathToFileURL(bin).href);
