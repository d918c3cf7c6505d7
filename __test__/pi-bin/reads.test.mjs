// What pi reads of a long session, through the real bin (issue 39, "what pi reads, no more"):
// `pi-native --session <file> -p` on a generated session with compactions, with
// PI_SESSION_NATIVE_READ_STATS counting what the process made of it (lib/read-stats.js):
// entries handed out as objects, entries whose heavy values were read (filled), and entries
// parsed whole. pi's start-up walks the whole branch (every entry is handed out, cheap fields
// only) but reads the heavy values of the context alone: anything more is work pi does not need.
import { appendFileSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, test } from "vitest";
import { writeSession } from "../../bench/gen.mjs";
import { startModelServer } from "../../scripts/model-server.mjs";
import { cleanup, makeRoot, markerCount, node22, runPiOk } from "./helpers.mjs";

const TIMEOUT = 180_000;
const REF = join(
  import.meta.dirname,
  "..",
  "..",
  "node_modules/@earendil-works/pi-coding-agent/dist/core/session-manager.js",
);

afterAll(cleanup);

/** A session of ~`mb` MB in `root`'s project (compactions every ~0.5-1 MB), on the scripted model. */
function makeSession(root, mb) {
  const file = join(root, "long.jsonl");
  const res = writeSession(file, {
    seed: `reads-${mb}`,
    targetBytes: mb * 1024 * 1024,
    cwd: join(root, "project"),
    startMs: Date.UTC(2025, 5, 1, 9),
  });
  const lines = readFileSync(file, "utf8").trimEnd().split("\n");
  const last = JSON.parse(lines[lines.length - 1]);
  const ts = new Date(res.lastMs + 60_000).toISOString();
  appendFileSync(
    file,
    `${JSON.stringify({ type: "model_change", id: "mc000001", parentId: last.id, timestamp: ts, provider: "scripted", modelId: "scripted-1" })}\n`,
  );
  return file;
}

describe.skipIf(!node22)("what pi reads of a long session (real pi bin, pi-native)", () => {
  test(
    "`--session <file> -p`: the whole branch handed out, heavy values read for the context only",
    async () => {
      const server = await startModelServer({ maxRequests: 10 });
      try {
        const root = makeRoot("pibin-reads-", server.baseUrl);
        const file = makeSession(root, 6);
        const { SessionManager } = await import(REF);
        const before = SessionManager.open(file);
        const branch = before.getBranch().length;
        const context = before.buildSessionContext().messages.length;
        const size = statSync(file).size;
        const statsFile = join(root, "read-stats.json");
        const r = await runPiOk(root, "native", ["--session", file, "-p", "where were we?"], {
          env: { PI_SESSION_NATIVE_READ_STATS: statsFile },
        });
        expect(markerCount(r.stderr), r.stderr).toBe(1);
        expect(statSync(file).size).toBeGreaterThan(size);
        const stats = JSON.parse(readFileSync(statsFile, "utf8"));
        // The session really is long and compacted: the context is a small part of the branch.
        expect(branch).toBeGreaterThan(1000);
        expect(context).toBeLessThan(branch / 4);
        // Every branch entry was made as an object (pi walks the branch at start-up)...
        expect(stats.handedOut + stats.parsedWhole).toBeGreaterThanOrEqual(branch);
        // ...but heavy values were read for about the context only (its entries, the settings
        // entries and the new turn): nothing of the compacted history was parsed or filled.
        const read = stats.filled + stats.parsedWhole;
        expect(read, JSON.stringify({ stats, branch, context })).toBeLessThanOrEqual(context + 64);
        console.log(
          `pi --session -p on ${(size / 1048576).toFixed(1)} MB: branch ${branch}, context ${context} messages; handed out ${stats.handedOut}, filled ${stats.filled}, parsed whole ${stats.parsedWhole}`,
        );
      } finally {
        await server.close();
      }
    },
    TIMEOUT,
  );
});
