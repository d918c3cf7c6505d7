#!/usr/bin/env node
// The release matrix, in one place: for every target of package.json `napi.targets`, where and
// how it is built, and where its binary is tested. .github/workflows/release.yml reads it
// (`node scripts/release-matrix.mjs --github >> "$GITHUB_OUTPUT"`); __test__/release.test.mjs
// checks that it covers napi.targets, lib/platform.js and npm/ exactly.
//
// Build methods:
//   native      cargo on a runner of that OS/arch (macOS builds x64 on arm64 with Apple's
//               toolchain; MSVC builds arm64 on x64)
//   napi-cross  --use-napi-cross: napi-rs's gcc cross toolchain with glibc 2.17, so the binary
//               runs on every glibc distribution pi supports, not only the runner's
//   zig         -x (cargo-zigbuild): musl targets
// Test: the binary is tested on a runner of its own OS/arch, on each Node of NODE_VERSIONS;
// musl binaries in an Alpine container on the Linux runner of that arch. "full" is the whole
// vitest suite (Linux glibc: parts of it use /proc, setpriv, util-linux `script` and root);
// "portable" is `npm run test:binary` (the user install from a local registry, the differential
// suite against the reference, edge cases, discovery, fixtures), which assumes none of those.
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const { TARGETS } = createRequire(import.meta.url)("../lib/platform.js");

export const NODE_VERSIONS = ["22", "24"];

/** target -> build runner and method, test runner, test kind. */
export const PLAN = {
  "x86_64-unknown-linux-gnu": {
    buildOn: "ubuntu-latest",
    method: "napi-cross",
    testOn: "ubuntu-latest",
    tests: "full",
  },
  "aarch64-unknown-linux-gnu": {
    buildOn: "ubuntu-latest",
    method: "napi-cross",
    testOn: "ubuntu-24.04-arm",
    tests: "full",
  },
  "x86_64-unknown-linux-musl": { buildOn: "ubuntu-latest", method: "zig", testOn: "ubuntu-latest", tests: "alpine" },
  "aarch64-unknown-linux-musl": {
    buildOn: "ubuntu-latest",
    method: "zig",
    testOn: "ubuntu-24.04-arm",
    tests: "alpine",
  },
  "x86_64-apple-darwin": { buildOn: "macos-latest", method: "native", testOn: "macos-15-intel", tests: "portable" },
  "aarch64-apple-darwin": { buildOn: "macos-latest", method: "native", testOn: "macos-latest", tests: "portable" },
  "x86_64-pc-windows-msvc": {
    buildOn: "windows-latest",
    method: "native",
    testOn: "windows-latest",
    tests: "portable",
  },
  "aarch64-pc-windows-msvc": {
    buildOn: "windows-latest",
    method: "native",
    testOn: "windows-11-arm",
    tests: "portable",
  },
};

const FLAGS = { native: "", "napi-cross": "--use-napi-cross", zig: "--cross-compile" };

export function matrix() {
  const pkg = JSON.parse(readFileSync(join(repoRoot, "package.json"), "utf8"));
  const build = [];
  const test = [];
  for (const target of pkg.napi.targets) {
    const plan = PLAN[target];
    const platform = TARGETS[target];
    if (!plan || !platform)
      throw new Error(`${target} is in napi.targets but not in the release plan or lib/platform.js`);
    build.push({ target, platform, runner: plan.buildOn, method: plan.method, flags: FLAGS[plan.method] });
    for (const node of NODE_VERSIONS) test.push({ target, platform, runner: plan.testOn, tests: plan.tests, node });
  }
  return { build, test };
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const m = matrix();
  if (process.argv.includes("--github")) {
    console.log(`build=${JSON.stringify(m.build)}`);
    console.log(`test=${JSON.stringify(m.test)}`);
  } else {
    console.log(JSON.stringify(m, null, 2));
  }
}
