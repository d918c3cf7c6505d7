"use strict";
// Which prebuilt binary fits this process: the napi-rs platform names
// (`<platform>-<arch>[-<abi>]`, as in `pi-session-native.linux-x64-gnu.node` and the package
// `pi-session-native-linux-x64-gnu`). package.json `napi.targets` is the one list of what we
// build; __test__/release.test.mjs checks that it, this table, `npm/` and the
// optionalDependencies agree.
const { readFileSync } = require("node:fs");

const PACKAGE_NAME = "pi-session-native";
const BINARY_NAME = "pi-session-native";

/** Rust target triple -> napi platform name, for every target we ship. */
const TARGETS = {
  "x86_64-unknown-linux-gnu": "linux-x64-gnu",
  "x86_64-unknown-linux-musl": "linux-x64-musl",
  "aarch64-unknown-linux-gnu": "linux-arm64-gnu",
  "aarch64-unknown-linux-musl": "linux-arm64-musl",
  "x86_64-apple-darwin": "darwin-x64",
  "aarch64-apple-darwin": "darwin-arm64",
  "x86_64-pc-windows-msvc": "win32-x64-msvc",
  "aarch64-pc-windows-msvc": "win32-arm64-msvc",
};
const SUPPORTED = Object.values(TARGETS);

/** musl or glibc, for Linux: the loader of /usr/bin/ldd first (cheap), then Node's report. */
function isMusl() {
  try {
    return readFileSync("/usr/bin/ldd", "latin1").includes("musl");
  } catch {
    // no ldd (minimal images): ask the process report
  }
  try {
    const report = /** @type {{ header?: { glibcVersionRuntime?: string } } | undefined} */ (
      process.report?.getReport?.()
    );
    const header = report?.header;
    return !header?.glibcVersionRuntime;
  } catch {
    return false;
  }
}

/**
 * This process's platform: `{ name, supported, describe }`.
 * @param {{ platform?: NodeJS.Platform, arch?: NodeJS.Architecture, musl?: boolean }} [target] another target than this process (tests, the release matrix)
 */
function platformId({ platform = process.platform, arch = process.arch, musl } = {}) {
  let abi = "";
  if (platform === "linux") abi = (musl ?? isMusl()) ? "musl" : "gnu";
  else if (platform === "win32") abi = "msvc";
  const name = [platform, arch, abi].filter(Boolean).join("-");
  const libc = platform === "linux" ? ` (${abi === "musl" ? "musl" : "glibc"})` : "";
  return { name, supported: SUPPORTED.includes(name), describe: `${name}: ${platform} ${arch}${libc}` };
}

module.exports = { PACKAGE_NAME, BINARY_NAME, TARGETS, SUPPORTED, platformId };
