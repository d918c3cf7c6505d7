// Shared helpers for the JS tests: the reference module, temp dirs, id/timestamp normalizing.
import { mkdtempSync, existsSync, rmSync } from "node:fs";
import { afterAll } from "vitest";
import { tmpdir } from "node:os";
import { join, dirname } from "node:path";
import { fileURLToPath } from "node:url";

export const root = join(dirname(fileURLToPath(import.meta.url)), "..");
// pi's package index needs Node 22; its session-manager module itself loads on Node 20.
export const ref = await import(
  join(root, "node_modules/@earendil-works/pi-coding-agent/dist/core/session-manager.js")
);
export const nat = await import(join(root, "index.mjs"));

export const FIXTURES = process.env.PI_SESSION_FIXTURES ?? join(root, "..", "shared", "fixtures", "pi-real");
export const haveFixtures = existsSync(FIXTURES);
if (!haveFixtures) console.warn(`[skip] real pi sessions not found at ${FIXTURES}: fixture tests are skipped`);

/** Temp dirs made by `tmp()` in this test file; removed when the file's tests are done. */
const made = [];
afterAll(() => {
  for (const d of made.splice(0)) rmSync(d, { recursive: true, force: true });
});

export function tmp(prefix = "psn-") {
  const d = mkdtempSync(join(tmpdir(), prefix));
  made.push(d);
  return d;
}

/**
 * Replace generated ids (8 hex chars, uuids) by tokens in order of first appearance, and ISO
 * timestamps by <ts>, so two independently generated sessions compare structurally.
 */
export function normalizer() {
  const map = new Map();
  const tok = (s) => {
    if (!map.has(s)) map.set(s, `<id${map.size}>`);
    return map.get(s);
  };
  const norm = (text) =>
    text
      .replace(/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g, tok)
      .replace(/"([0-9a-f]{8})"/g, (_m, id) => `"${tok(id)}"`)
      .replace(/\d{4}-\d\d-\d\dT\d\d[-:]\d\d[-:]\d\d[.-]\d{3}Z/g, "<ts>")
      // Message timestamps derived from "now" (compaction/custom messages): compare by shape.
      .replace(/"timestamp":1[78]\d{11}\b/g, '"timestamp":"<ms>"');
  return norm;
}

export const j = (v) => JSON.stringify(v, (_k, x) => (x === undefined ? "<undefined>" : x));
