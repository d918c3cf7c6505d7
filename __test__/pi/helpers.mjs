// Shared helpers for the pi end-to-end tests (run by vitest under Node 20; pi itself runs in a
// Node 22 child process).
import { execFile } from "node:child_process";
import { existsSync, mkdtempSync, realpathSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { findNode22 } from "../../scripts/node22.mjs";

const here = dirname(fileURLToPath(import.meta.url));
export const repoRoot = resolve(here, "..", "..");
// Test-only override: PI_SESSION_NATIVE_PKG points at another package root (index.js, index.mjs,
// lib/register.mjs) to validate the harness with a stand-in before the native build exists.
export const nativePkg = process.env.PI_SESSION_NATIVE_PKG ? resolve(process.env.PI_SESSION_NATIVE_PKG) : repoRoot;
export const scenarioScript = join(here, "sdk-scenario.mjs");
export const registerScript = join(nativePkg, "lib", "register.mjs");
export const piCli = join(repoRoot, "node_modules", "@earendil-works", "pi-coding-agent", "dist", "cli.js");
export const node22 = findNode22();

function probeNative() {
  try {
    const mod = createRequire(join(nativePkg, "package.json"))("./index.js");
    if (typeof mod?.SessionManager !== "function")
      return { ok: false, reason: "index.js does not export SessionManager" };
    if (!existsSync(join(nativePkg, "index.mjs"))) return { ok: false, reason: "index.mjs is missing" };
    return { ok: true };
  } catch (error) {
    return { ok: false, reason: `require("index.js") failed: ${error.message.split("\n")[0]}` };
  }
}
export const nativeProbe = probeNative();
export const nativeAvailable = nativeProbe.ok;
if (!nativeAvailable) {
  console.warn(`[pi e2e] native half skipped: ${nativeProbe.reason}`);
}

/** Fresh temp dir; prefixes of equal length keep token estimates (which include paths) equal. */
export function tempDir(prefix) {
  return realpathSync(mkdtempSync(join(tmpdir(), prefix)));
}

export function piEnv(extra = {}) {
  const env = { ...process.env };
  // inherited settings must not leak into the child; callers opt in through `extra`
  delete env.PI_SESSION_NATIVE_DEBUG;
  delete env.NODE_OPTIONS;
  Object.assign(env, { PI_OFFLINE: "1", PI_SKIP_VERSION_CHECK: "1", PI_TELEMETRY: "0", NO_COLOR: "1" }, extra);
  for (const [k, v] of Object.entries(extra)) if (v === undefined) delete env[k];
  return env;
}

/**
 * Run node22 with args; resolves {code, stdout, stderr} (never rejects on non-zero exit).
 * @param {string[]} args
 * @param {{ cwd?: string, env?: NodeJS.ProcessEnv, timeout?: number, input?: string }} [options]
 */
export function runNode22(args, { cwd = repoRoot, env = piEnv(), timeout = 120_000, input } = {}) {
  if (!node22) {
    throw new Error("No Node >= 22.19 binary: run `node scripts/node22.mjs --ensure` or set PI_NODE22");
  }
  return new Promise((resolvePromise) => {
    const child = execFile(
      node22,
      args,
      { cwd, env, timeout, maxBuffer: 256 * 1024 * 1024 },
      (error, stdout, stderr) => {
        resolvePromise({ code: error ? (error.code ?? 1) : 0, signal: error?.signal ?? null, stdout, stderr });
      },
    );
    if (input !== undefined) child.stdin.end(input);
    else child.stdin.end();
  });
}

/**
 * Run the SDK scenario; returns the parsed report or throws with the child's stderr.
 * @param {string} impl
 * @param {string} dir
 * @param {{ hook?: boolean, env?: NodeJS.ProcessEnv }} [options]
 */
export async function runScenario(impl, dir, { hook = false, env } = {}) {
  const args = [...(hook ? ["--import", registerScript] : []), scenarioScript, "--impl", impl, "--dir", dir];
  const r = await runNode22(args, { env: env ?? piEnv() });
  if (r.code !== 0)
    throw new Error(`sdk-scenario --impl ${impl}${hook ? " (hooked)" : ""} exited ${r.code}\n${r.stderr}`);
  return { report: JSON.parse(r.stdout), stderr: r.stderr };
}

/** Open a session file with an implementation and report its read API, normalized. */
export async function inspectFile(impl, file, roots) {
  const args = [scenarioScript, "--impl", impl, "--inspect", file, "--roots", roots.join(",")];
  const r = await runNode22(args);
  if (r.code !== 0) throw new Error(`sdk-scenario --inspect (${impl}) exited ${r.code}\n${r.stderr}`);
  return JSON.parse(r.stdout);
}

/** Report without fields that legitimately differ between runs. */
export function comparable(report) {
  const { impl: _impl, hooked: _hooked, node: _node, root: _root, rawFiles: _rawFiles, ...rest } = report;
  return rest;
}
