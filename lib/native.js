"use strict";
// Loads the native addon, once, from the first of lib/binary.js's candidates that loads. When
// none loads, one error names the platform looked for, what was tried and why each failed, and the
// two ways out. The platform table lives in lib/platform.js.
const { candidates, firstLine, packageVersion, PACKAGE_NAME } = require("./binary.js");

function load() {
  // the usual case first: the first file found loads (the others are looked for only when it
  // does not, and then it is tried again, to say why it failed)
  const first = candidates({ firstOnly: true });
  if (!first.explicit && first.files.length) {
    try {
      return require(first.files[0]);
    } catch {
      // listed below with the reason
    }
  }
  const { explicit, id, files, tried } = candidates();
  if (explicit) {
    try {
      return require(explicit);
    } catch (error) {
      throw Object.assign(
        new Error(`pi-session-native: PI_SESSION_NATIVE_BINARY=${explicit} does not load: ${firstLine(error)}`),
        { code: "PI_SESSION_NATIVE_NO_BINARY" },
      );
    }
  }
  if (!id.supported) throw noBinaryError(id, tried);
  for (const file of files) {
    try {
      return require(file);
    } catch (error) {
      tried.push(`${file}: ${firstLine(error)}`);
    }
  }
  throw noBinaryError(id, tried);
}

function noBinaryError(id, tried) {
  const lines = [
    `pi-session-native: no native binary for this platform (${id.describe}).`,
    id.supported
      ? `Looked for the package ${PACKAGE_NAME}-${id.name}@${packageVersion()} (installed by npm from this package's optionalDependencies).`
      : `Prebuilt binaries exist for: ${require("./platform.js").SUPPORTED.join(", ")}; this platform is not one of them.`,
  ];
  if (tried.length) lines.push("Tried:", ...tried.map((t) => `  - ${t}`));
  lines.push(
    "Ways out:",
    id.supported
      ? `  1. install the binary for this platform: npm install ${PACKAGE_NAME}-${id.name}@${packageVersion()}` +
          " (or reinstall without --omit=optional / --no-optional; delete node_modules and the lockfile if npm skipped it)"
      : "  1. (no prebuilt binary for this platform)",
    "  2. build from source: git clone the repository, then `npm install` (needs Rust >= 1.89 from https://rustup.rs;" +
      " it runs `npm run build`), and use that checkout (npm install <path to the clone>)",
  );
  return Object.assign(new Error(lines.join("\n")), { code: "PI_SESSION_NATIVE_NO_BINARY" });
}

/** The addon's exports, as napi declares them in binding.d.ts. */
module.exports = /** @type {typeof import("../binding.js")} */ (load());
