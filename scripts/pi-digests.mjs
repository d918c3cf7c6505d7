#!/usr/bin/env node
// Prints the digests (lib/verify/identity.mjs) of installed pi packages, as entries of
// lib/verify/known-good.mjs:  node scripts/pi-digests.mjs <pi package dir>...
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { bundleDigest, moduleDigest } from "../lib/verify/identity.mjs";
import { findSessionChunk } from "../lib/verify/locate.mjs";

for (const dir of process.argv.slice(2)) {
  const { version } = JSON.parse(readFileSync(join(dir, "package.json"), "utf8"));
  const chunk = findSessionChunk(dir);
  if (chunk) console.log(`  "${bundleDigest(readFileSync(chunk))}": "${version}",`);
  else console.error(`${dir}: no bundle chunk defines SessionManager`);
  console.log(`  "${moduleDigest(join(dir, "dist", "core", "session-manager.js"))}": "${version}",`);
}
