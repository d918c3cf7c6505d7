#!/usr/bin/env node
// Prints the digests (lib/verify/identity.mjs) of installed pi packages, as entries of
// lib/verify/known-good.mjs:  node scripts/pi-digests.mjs <pi package dir>...
// A chunk is printed only when it matches the hook's signature with every session export bound
// under its own name: the hook takes that match as given for a known-good digest (and skips it).
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { knownChunkMatches } from "../lib/chunk-signature.mjs";
import { bundleDigest, moduleDigest } from "../lib/verify/identity.mjs";
import { findSessionChunk } from "../lib/verify/locate.mjs";

let failed = false;
for (const dir of process.argv.slice(2)) {
  const { version } = JSON.parse(readFileSync(join(dir, "package.json"), "utf8"));
  const chunk = findSessionChunk(dir);
  if (!chunk) {
    console.error(`${dir}: no bundle chunk defines SessionManager`);
    failed = true;
  } else {
    const bytes = readFileSync(chunk);
    const why = knownChunkMatches(bytes);
    if (why === true) console.log(`  "${bundleDigest(bytes)}": "${version}",`);
    else {
      console.error(`${chunk}: cannot be a known-good chunk as it is: ${why}`);
      failed = true;
    }
  }
  console.log(`  "${moduleDigest(join(dir, "dist", "core", "session-manager.js"))}": "${version}",`);
}
process.exitCode = failed ? 1 : 0;
