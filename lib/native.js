"use strict";
// Loads the native addon, once.
//
// Order (napi-rs convention):
//   1. PI_SESSION_NATIVE_BINARY: an explicit path to a .node file (debugging, odd layouts);
//   2. `pi-session-native.<platform>.node` next to the package (a clone built with
//      `npm run build`: development builds win over an installed binary);
//   3. the platform package `pi-session-native-<platform>`, installed by npm from the main
//      package's optionalDependencies (what a user who installed from the registry gets).
// When none loads, one error names the platform looked for, what was tried and why each failed,
// and the two ways out. The platform table lives in lib/platform.js.
const { join } = require("node:path");
const { existsSync } = require("node:fs");
const { platformId, PACKAGE_NAME, BINARY_NAME } = require("./platform.js");

const root = join(__dirname, "..");
const { version } = require("../package.json");

function load() {
  const tried = [];
  const explicit = process.env.PI_SESSION_NATIVE_BINARY;
  if (explicit) {
    // Named explicitly: no fallback that would hide which binary runs.
    try {
      return require(explicit);
    } catch (error) {
      throw Object.assign(
        new Error(`pi-session-native: PI_SESSION_NATIVE_BINARY=${explicit} does not load: ${firstLine(error)}`),
        {
          code: "PI_SESSION_NATIVE_NO_BINARY",
        },
      );
    }
  }

  const id = platformId();
  if (!id.supported) throw noBinaryError(id, tried);

  const local = join(root, `${BINARY_NAME}.${id.name}.node`);
  if (existsSync(local)) {
    try {
      return require(local);
    } catch (error) {
      tried.push(`${local}: ${firstLine(error)}`);
    }
  } else {
    tried.push(`${local}: not present (built only in a clone, by \`npm run build\`)`);
  }

  const pkg = `${PACKAGE_NAME}-${id.name}`;
  let pkgVersion;
  try {
    pkgVersion = require(`${pkg}/package.json`).version;
  } catch (error) {
    tried.push(`${pkg}: ${error?.code === "MODULE_NOT_FOUND" ? "not installed" : firstLine(error)}`);
  }
  if (pkgVersion !== undefined) {
    if (pkgVersion !== version) {
      // The JS adapter and the addon speak one protocol per release: a mismatch would
      // misbehave in ways far harder to read than this.
      tried.push(`${pkg}@${pkgVersion}: installed, but ${PACKAGE_NAME} is ${version} (they must be the same version)`);
    } else {
      try {
        return require(pkg);
      } catch (error) {
        tried.push(`${pkg}@${pkgVersion}: ${firstLine(error)}`);
      }
    }
  }
  throw noBinaryError(id, tried);
}

function firstLine(error) {
  return String(error?.message ?? error).split("\n")[0];
}

function noBinaryError(id, tried) {
  const lines = [
    `pi-session-native: no native binary for this platform (${id.describe}).`,
    id.supported
      ? `Looked for the package ${PACKAGE_NAME}-${id.name}@${version} (installed by npm from this package's optionalDependencies).`
      : `Prebuilt binaries exist for: ${require("./platform.js").SUPPORTED.join(", ")}; this platform is not one of them.`,
  ];
  if (tried.length) lines.push("Tried:", ...tried.map((t) => `  - ${t}`));
  lines.push(
    "Ways out:",
    id.supported
      ? `  1. install the binary for this platform: npm install ${PACKAGE_NAME}-${id.name}@${version}` +
          " (or reinstall without --omit=optional / --no-optional; delete node_modules and the lockfile if npm skipped it)"
      : "  1. (no prebuilt binary for this platform)",
    "  2. build from source: git clone the repository, then `npm install` (needs Rust >= 1.89 from https://rustup.rs;" +
      " it runs `npm run build`), and use that checkout (npm install <path to the clone>)",
  );
  return Object.assign(new Error(lines.join("\n")), { code: "PI_SESSION_NATIVE_NO_BINARY" });
}

/** The addon's exports, as napi declares them in binding.d.ts. */
module.exports = /** @type {typeof import("../binding.js")} */ (load());
