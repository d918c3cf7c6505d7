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
  writeSync,
} from "node:fs";
import { delimiter, dirname, join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { installHooks, locateAddon } from "./register-hooks.mjs";
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

/** This package's version (its package.json, next to lib/ in a clone and in an install). */
function ownVersion() {
  try {
    return JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8")).version ?? "?";
  } catch {
    return "?";
  }
}

/**
 * `pi-native --version` and `--help` (`-v`, `-h`; pi's own options, which pi prints and exits on):
 * pi's output stays as it is on stdout (scripts read `--version`), and when pi exits this package
 * adds its lines on stderr: its name, version and whether it serves pi's session store, and for
 * `--help` what pi-native adds to pi. A pi subcommand's help (`pi-native install --help`) is
 * pi's alone.
 * @param {string[]} args
 * @param {{ outcome?: { served: boolean, reason?: string }, trust?: string, native?: unknown }} state the hooks' state
 */
function ownNotes(args, state) {
  if (!args[0]?.startsWith("-")) return;
  const version = args.includes("--version") || args.includes("-v");
  const help = args.includes("--help") || args.includes("-h");
  if (!version && !help) return;
  process.once("exit", () => {
    let o = state.outcome;
    // The addon loads when pi first uses its session code, which --version and --help do not:
    // looked for here, so the line does not say "serves" where it could not.
    if (o?.served && !state.native) {
      const addon = locateAddon();
      if (!addon.file) o = { served: false, reason: `the native addon does not load (${addon.why})` };
    }
    const serving = o?.served
      ? `serves the session store (${state.trust || "native"})`
      : `is not serving the session store; pi runs unmodified${o?.reason ? ` (${o.reason})` : ""}`;
    const lines = [`pi-session-native ${ownVersion()} ${serving}`];
    if (help)
      lines.push(
        "pi-native runs the pi above on pi-session-native's session store; the options above are pi's.",
        "pi-native's own:",
        "  pi-native --verify [--seeds N] [--all] [--json]",
        "      verify this pi's session code against pi-session-native now, print the",
        "      report and record the verdict (exit 0: served from now on; 1: it differs)",
        "  PI_SESSION_NATIVE=0         run pi unmodified",
        "  PI_SESSION_NATIVE_DEBUG=1   say on stderr which module is served, and from where",
        "  PI_CODING_AGENT_BIN=FILE    the pi bin to run (default: the pi on PATH)",
      );
    try {
      writeSync(2, `${lines.join("\n")}\n`);
    } catch {
      // stderr closed
    }
  });
}

/**
 * Runs pi in this process on the native session store. `binUrl`: the URL of the bin file that was
 * started (bin/pi-native.mjs).
 */
export async function launch(binUrl) {
  self = realpathSync(fileURLToPath(binUrl));
  const bin = findPi();
  if (process.argv[2] === "--verify") return verify(bin);
  const state = installHooks();
  ownNotes(process.argv.slice(2), state);
  // pi sees the argv it would see when started as `pi ...`: [node, <pi bin>, ...args]
  process.argv[1] = bin;
  await import(pathToFileURL(bin).href);
}
