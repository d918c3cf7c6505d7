#!/usr/bin/env node
// Makes the npm tarballs we publish: one platform package per built binary and the main
// package, whose package.json gains `optionalDependencies` on every platform package at its own
// exact version (the napi-rs convention: npm installs the one whose os/cpu/libc fit).
// The release workflow and the install test both use this script, so what the test installs is
// what the workflow publishes.
//
//   node scripts/pack.mjs --out DIR [--artifacts DIR] [--binary PLATFORM=FILE ...]
//                         [--require-all] [--drop-optional PLATFORM] [--set-version V] [--json]
//
//   --artifacts DIR        take every `pi-session-native.<platform>.node` found under DIR
//   --binary P=FILE        take FILE as the binary of platform P (e.g. linux-x64-gnu=./x.node)
//   --require-all          fail unless a binary was given for every target in napi.targets
//   --drop-optional P      leave P out of optionalDependencies (to prove the install test fails)
//   --set-version V        publish the main package as version V (with --drop-optional)
//
// Prints one line per tarball (or JSON with --json): path, size, number of files.
import { execFileSync } from "node:child_process";
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { createRequire } from "node:module";
import { basename, dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { BUNDLE, bundleText, LAUNCHER_BUNDLE } from "./bundle-js.mjs";

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const require = createRequire(import.meta.url);
const { TARGETS, BINARY_NAME } = require("../lib/platform.js");

/** The tarball holds these top-level entries and nothing else (tests, benches, sources stay out). */
export const MAIN_TARBALL_TOP = [
  "LICENSE",
  "README.md",
  "bin",
  "extensions",
  "index.d.ts",
  "index.js",
  "index.mjs",
  "lib",
  "package.json",
];

function npm(args, cwd) {
  return execFileSync("npm", args, {
    cwd,
    encoding: "utf8",
    stdio: ["ignore", "pipe", "pipe"],
    env: /** @type {NodeJS.ProcessEnv} */ (cleanNpmEnv(process.env)),
  });
}

/** The environment without npm's per-run variables (npm_config_* of an enclosing `npm test`). */
export function cleanNpmEnv(env) {
  const out = {};
  for (const [k, v] of Object.entries(env)) if (!/^npm_/i.test(k)) out[k] = v;
  return out;
}

function packDir(dir, dest) {
  const [info] = JSON.parse(npm(["pack", "--ignore-scripts", "--json", "--pack-destination", dest], dir));
  return {
    path: join(dest, info.filename),
    name: info.name,
    version: info.version,
    size: info.size,
    unpackedSize: info.unpackedSize,
    files: info.files.map((f) => f.path),
  };
}

function findArtifacts(dir) {
  const found = {};
  const walk = (d) => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const p = join(d, e.name);
      if (e.isDirectory()) walk(p);
      const m = e.isFile() && e.name.match(new RegExp(`^${BINARY_NAME}\\.(.+)\\.node$`));
      if (m) found[m[1]] = p;
    }
  };
  walk(dir);
  return found;
}

/** @param {{ out?: string, artifacts?: string, binaries?: Record<string, string>, requireAll?: boolean, dropOptional?: string[], setVersion?: string }} [options] */
export function pack({ out, artifacts, binaries = {}, requireAll = false, dropOptional = [], setVersion } = {}) {
  const mainPkg = JSON.parse(readFileSync(join(repoRoot, "package.json"), "utf8"));
  const platforms = mainPkg.napi.targets.map((t) => {
    if (!TARGETS[t]) throw new Error(`napi.targets has ${t}, which lib/platform.js does not map`);
    return TARGETS[t];
  });
  const given = { ...(artifacts ? findArtifacts(resolve(artifacts)) : {}), ...binaries };
  for (const p of Object.keys(given))
    if (!platforms.includes(p)) throw new Error(`binary for ${p}, which is not in napi.targets`);
  if (requireAll) {
    const missing = platforms.filter((p) => !given[p]);
    if (missing.length) throw new Error(`no binary for: ${missing.join(", ")}`);
  }
  out = resolve(out);
  const stage = join(out, ".stage");
  rmSync(stage, { recursive: true, force: true });
  mkdirSync(stage, { recursive: true });
  const results = [];
  const version = setVersion ?? mainPkg.version;

  // Platform packages: npm/<platform>/package.json at the main version, plus the binary.
  for (const platform of platforms) {
    if (!given[platform]) continue;
    const src = join(repoRoot, "npm", platform);
    const dir = join(stage, platform);
    mkdirSync(dir);
    const pkg = JSON.parse(readFileSync(join(src, "package.json"), "utf8"));
    Object.assign(pkg, {
      version,
      repository: mainPkg.repository,
      homepage: mainPkg.homepage,
      license: mainPkg.license,
    });
    writeFileSync(join(dir, "package.json"), `${JSON.stringify(pkg, null, 2)}\n`);
    copyFileSync(join(src, "README.md"), join(dir, "README.md"));
    if (existsSync(join(repoRoot, "LICENSE"))) copyFileSync(join(repoRoot, "LICENSE"), join(dir, "LICENSE"));
    const binary = `${BINARY_NAME}.${platform}.node`;
    if (pkg.main !== binary) throw new Error(`npm/${platform}/package.json main is ${pkg.main}, expected ${binary}`);
    if (statSync(given[platform]).size === 0) throw new Error(`${given[platform]} is empty`);
    copyFileSync(given[platform], join(dir, binary));
    results.push(packDir(dir, out));
  }

  // Main package: what `npm pack` of the repo gives (package.json `files`), then the manifest
  // a user installs: optionalDependencies on every platform package at the exact version (the
  // repo's own point at npm/<platform> with `file:`), no dev-only fields.
  const mainStage = join(stage, "main");
  mkdirSync(mainStage);
  const raw = packDir(repoRoot, mainStage);
  execFileSync("tar", ["-xzf", raw.path, "-C", mainStage]);
  const dir = join(mainStage, "package");
  // lib/bundle.cjs and lib/launcher.bundle.mjs (git-ignored) as the sources give them now, into
  // the staged package: a tarball never ships a stale one, and the checkout is left as it was
  for (const file of [BUNDLE, LAUNCHER_BUNDLE]) writeFileSync(join(dir, relative(repoRoot, file)), bundleText(file));
  const pkg = JSON.parse(readFileSync(join(dir, "package.json"), "utf8"));
  pkg.version = version;
  pkg.optionalDependencies = Object.fromEntries(
    platforms.filter((p) => !dropOptional.includes(p)).map((p) => [`${mainPkg.name}-${p}`, version]),
  );
  delete pkg.devDependencies;
  // prepare builds from source (a clone's `npm install`); the other scripts need the repo.
  delete pkg.scripts;
  writeFileSync(join(dir, "package.json"), `${JSON.stringify(pkg, null, 2)}\n`);
  const stray = readdirSync(dir).filter((f) => !MAIN_TARBALL_TOP.includes(f));
  if (stray.length) throw new Error(`main tarball would hold ${stray.join(", ")}: not in the list of shipped files`);
  const nodeFiles = raw.files.filter((f) => f.endsWith(".node"));
  if (nodeFiles.length) throw new Error(`main tarball would hold binaries: ${nodeFiles.join(", ")}`);
  results.push(packDir(dir, out));
  rmSync(stage, { recursive: true, force: true });
  return results;
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const { values } = parseArgs({
    options: {
      out: { type: "string" },
      artifacts: { type: "string" },
      binary: { type: "string", multiple: true, default: [] },
      "require-all": { type: "boolean", default: false },
      "drop-optional": { type: "string", multiple: true, default: [] },
      "set-version": { type: "string" },
      json: { type: "boolean", default: false },
    },
  });
  if (!values.out) {
    console.error("usage: node scripts/pack.mjs --out DIR [--artifacts DIR] [--binary PLATFORM=FILE] [--require-all]");
    process.exit(2);
  }
  const binaries = Object.fromEntries(
    values.binary.map((b) => {
      const i = b.indexOf("=");
      if (i < 1) throw new Error(`--binary ${b}: expected PLATFORM=FILE`);
      return [b.slice(0, i), resolve(b.slice(i + 1))];
    }),
  );
  const results = pack({
    out: values.out,
    artifacts: values.artifacts,
    binaries,
    requireAll: values["require-all"],
    dropOptional: values["drop-optional"],
    setVersion: values["set-version"],
  });
  if (values.json) console.log(JSON.stringify(results, null, 2));
  else
    for (const r of results)
      console.log(`${basename(r.path)}  ${r.size} bytes packed, ${r.unpackedSize} unpacked, ${r.files.length} files`);
}
