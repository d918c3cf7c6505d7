#!/usr/bin/env node
// Runs the verifier (lib/verify/run.mjs) on an installed pi:
//   node lib/verify/cli.mjs <pi package folder, or a file inside it such as its bin>
//     [--seeds N] [--all] [--no-record] [--background] [--json]
// --all also verifies session code whose digest is known-good (lib/verify/known-good.mjs).
// Prints the report and exits 0 when every piece of pi's session code behaves as ours, 1 when one
// differs, 2 on bad arguments. --background (what the module hook starts when it meets session
// code it does not know): one verifier per user at a time, lower CPU priority, no output; the
// verdicts and the report go to the cache folder (lib/verify/verdicts.mjs); a verification that
// runs past BACKGROUND_LIMIT_S (pi's code in an endless loop) is stopped and refuses the install.
// `pi-native --verify` runs this on the pi it would start.
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { setPriority } from "node:os";
import { resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { bundleDigest, moduleDigest } from "./identity.mjs";
import { installDigest } from "./install.mjs";
import { findSessionChunks, findSessionModule, piPackageOf, verifierEnv } from "./locate.mjs";
import { formatReport, verifyPi } from "./run.mjs";
import { takeLock, VERIFIER, writeReport, writeVerdict } from "./verdicts.mjs";

/** Seconds a background verification may take (it takes ~10 s here): then the install is refused. */
const BACKGROUND_LIMIT_S = 300;

const HOOKS_KEY = Symbol.for("pi-session-native.hooks");

function usage(message) {
  process.stderr.write(
    `${message ? `${message}\n` : ""}usage: node lib/verify/cli.mjs <pi package folder or a file in it> [--seeds N] [--all] [--no-record] [--background] [--json]\n`,
  );
  process.exit(2);
}

async function main() {
  let parsed;
  try {
    parsed = parseArgs({
      allowPositionals: true,
      options: {
        seeds: { type: "string" },
        "no-record": { type: "boolean" },
        background: { type: "boolean" },
        "background-child": { type: "boolean" },
        json: { type: "boolean" },
        all: { type: "boolean" },
      },
    });
  } catch (error) {
    usage(error.message);
  }
  const { values, positionals } = parsed;
  if (positionals.length !== 1) usage("one pi package folder (or a file in it) is needed");
  // our hooks would hand the verifier our own code as pi's: run again without them
  if (globalThis[HOOKS_KEY]?.installed) {
    const r = spawnSync(process.execPath, [fileURLToPath(import.meta.url), ...process.argv.slice(2)], {
      stdio: "inherit",
      env: verifierEnv(process.env),
    });
    process.exit(r.status ?? 1);
  }
  const target = resolve(positionals[0]);
  const pi = piPackageOf(`${target}/package.json`) ?? piPackageOf(target);
  if (!pi) usage(`${target}: not inside the pi package (@earendil-works/pi-coding-agent)`);
  const seeds = values.seeds === undefined ? 40 : Number(values.seeds);
  if (!Number.isInteger(seeds) || seeds < 1) usage("--seeds: a positive integer");

  if (values["background-child"]) {
    const outcome = await verifyPi({ ...pi, seeds, all: values.all, record: !values["no-record"] });
    writeReport(formatReport(pi, outcome));
    return outcome.ok ? 0 : 1;
  }
  if (values.background) {
    const release = takeLock();
    if (!release) return 0; // another verifier is at work
    try {
      setPriority(10);
    } catch {
      // not allowed: run at the normal priority
    }
    try {
      return watch(pi, process.argv.slice(2), values["no-record"]);
    } finally {
      release();
    }
  }
  const outcome = await verifyPi({
    ...pi,
    seeds,
    all: values.all,
    record: !values["no-record"],
    onTarget: values.json ? undefined : (t) => process.stderr.write(`verifying ${t.kind} ${t.file} ...\n`),
  });
  const report = formatReport(pi, outcome);
  if (!values["no-record"]) writeReport(report);
  process.stdout.write(values.json ? `${JSON.stringify({ pi, ...outcome }, null, 1)}\n` : report);
  return outcome.ok ? 0 : 1;
}

/**
 * The background verification runs in a child that is given BACKGROUND_LIMIT_S: pi's session code
 * runs in it, and code that never returns (an endless loop) would otherwise keep a process busy
 * for good. A child stopped at the limit leaves a "no" for the install: not served.
 */
function watch(pi, args, noRecord) {
  const limit = Number(process.env.PI_SESSION_NATIVE_VERIFY_LIMIT_S) || BACKGROUND_LIMIT_S;
  const childArgs = args.map((a) => (a === "--background" ? "--background-child" : a));
  const r = spawnSync(process.execPath, [fileURLToPath(import.meta.url), ...childArgs], {
    stdio: "ignore",
    timeout: limit * 1000,
    killSignal: "SIGKILL",
  });
  if (r.status !== null) return r.status;
  const failure = `the verification did not finish within ${limit} s (pi's session code may never return)`;
  if (!noRecord) {
    const module = findSessionModule(pi.dir);
    const parts = { module: module ? moduleDigest(module) : undefined };
    const chunks = findSessionChunks(pi.dir).map((f) => bundleDigest(readFileSync(f)));
    for (const chunk of chunks.length ? chunks : [undefined])
      writeVerdict(installDigest({ ...parts, chunk }), VERIFIER, { ok: false, failure, pi: pi.version });
    writeReport(`pi ${pi.version} at ${pi.dir}\nverifier ${VERIFIER}\n${failure}\nRESULT: FAIL\n`);
  }
  return 1;
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  main().then(
    (code) => process.exit(code),
    (error) => {
      process.stderr.write(`pi-session-native verify: ${error?.stack ?? error}\n`);
      process.exit(1);
    },
  );
}
