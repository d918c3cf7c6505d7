// The launcher behind bin/pi-native.mjs (which loads it, or its one-file bundle
// lib/launcher.bundle.mjs), as described there: find pi's bin, install the module hooks
// (register-hooks.mjs), run pi in this process; or `--verify`.
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
import { delimiter, dirname, join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { installHooks } from "./register-hooks.mjs";
import { piPackageOf, verifierEnv } from "./verify/locate.mjs";

export { installHooks };

const PI_PACKAGE = "@earendil-works/pi-coding-agent";
/** The launcher's own bin file (bin/pi-native.mjs, links resolved): a `pi` on PATH that is it is not pi. */
let self;

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
async function verify(piBin) {
  const { spawnSync } = await import("node:child_process");
  const pi = piPackageOf(piBin);
  if (!pi) fail(`${piBin} is not inside the pi package (${PI_PACKAGE})`);
  const cli = fileURLToPath(new URL("./verify/cli.mjs", import.meta.url));
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

/**
 * Runs pi in this process on the native session store. `binUrl`: the URL of the bin file that was
 * started (bin/pi-native.mjs).
 */
export async function launch(binUrl) {
  self = realpathSync(fileURLToPath(binUrl));
  const bin = findPi();
  if (process.argv[2] === "--verify") return verify(bin);
  installHooks();
  // pi sees the argv it would see when started as `pi ...`: [node, <pi bin>, ...args]
  process.argv[1] = bin;
  await import(pathToFileURL(bin).href);
}
