"use strict";
// Where the native addon is, without loading it (napi-rs convention; lib/native.js loads it):
//   1. PI_SESSION_NATIVE_BINARY: an explicit path to a .node file (debugging, odd layouts), and
//      nothing else (no fallback that would hide which binary runs);
//   2. `pi-session-native.<platform>.node` next to the package (a clone built with
//      `npm run build`: development builds win over an installed binary);
//   3. the platform package `pi-session-native-<platform>`, installed by npm from the main
//      package's optionalDependencies (what a user who installed from the registry gets).
// The module hook asks it before serving pi (a missing binary: pi runs unmodified) and loads the
// addon only when pi first uses the session code.
const { join } = require("node:path");
const { existsSync } = require("node:fs");
const { platformId, PACKAGE_NAME, BINARY_NAME } = require("./platform.js");

const root = join(__dirname, "..");
let version;
/** This package's version as installed (read when first asked: the usual start does not need it). */
function packageVersion() {
  version ??= require("../package.json").version;
  return version;
}

/**
 * The files to try, in order, and why the others were left out:
 * `{ explicit, id, files: string[], tried: string[] }`. `firstOnly`: stop at the first file found
 * (what a start loads; the rest are listed only when it does not load).
 */
function candidates({ firstOnly = false } = {}) {
  const tried = [];
  const explicit = process.env.PI_SESSION_NATIVE_BINARY;
  const id = platformId();
  if (explicit) return { explicit, id, files: existsSync(explicit) ? [explicit] : [], tried };
  if (!id.supported) return { id, files: [], tried };
  const files = [];
  const local = join(root, `${BINARY_NAME}.${id.name}.node`);
  if (existsSync(local)) {
    files.push(local);
    if (firstOnly) return { id, files, tried };
  } else tried.push(`${local}: not present (built only in a clone, by \`npm run build\`)`);
  const pkg = `${PACKAGE_NAME}-${id.name}`;
  let pkgVersion;
  try {
    pkgVersion = require(`${pkg}/package.json`).version;
  } catch (error) {
    tried.push(`${pkg}: ${error?.code === "MODULE_NOT_FOUND" ? "not installed" : firstLine(error)}`);
  }
  if (pkgVersion !== undefined) {
    if (pkgVersion !== packageVersion()) {
      // The JS adapter and the addon speak one protocol per release: a mismatch would
      // misbehave in ways far harder to read than this.
      tried.push(
        `${pkg}@${pkgVersion}: installed, but ${PACKAGE_NAME} is ${packageVersion()} (they must be the same version)`,
      );
    } else {
      try {
        files.push(require.resolve(pkg));
      } catch (error) {
        tried.push(`${pkg}@${pkgVersion}: ${firstLine(error)}`);
      }
    }
  }
  return { id, files, tried };
}

function firstLine(error) {
  return String(error?.message ?? error).split("\n")[0];
}

module.exports = { candidates, firstLine, packageVersion, PACKAGE_NAME };
