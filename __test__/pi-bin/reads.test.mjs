// What pi reads of a long session, through the real bin (issue 39, "what pi reads, no more"):
// `pi-native --session <file> -p` on a generated session with compactions, with
// PI_SESSION_NATIVE_READ_STATS counting what the process made of it (lib/read-stats.js):
// entries handed out as objects, entries whose heavy values were read (filled), and entries
// parsed whole. pi's start-up walks the whole branch (every entry is handed out, cheap fields
// only) but reads the heavy values of the context alone: anything more is work pi does not need.
import { appendFileSync, existsSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, test } from "vitest";
import { writeSession } from "../../bench/gen.mjs";
import { startModelServer } from "../../scripts/model-server.mjs";
import { hasTmux, shq, tmuxServer } from "../tty-helpers.mjs";
import { cleanup, makeRoot, markerCount, node22, piArgv, piEnv, runPiOk } from "./helpers.mjs";

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

  test.skipIf(!hasTmux)(
    "the TUI: resume reads the context alone; /tree reads message contents (pi's tree maps every tool call), each entry made once",
    async () => {
      const server = await startModelServer({ maxRequests: 10 });
      const tty = tmuxServer("pibin-reads");
      try {
        const root = makeRoot("pibin-reads-tui-", server.baseUrl);
        const file = makeSession(root, 6);
        const { SessionManager } = await import(REF);
        const ref = SessionManager.open(file);
        const entries = ref.getEntries();
        const messages = entries.filter((e) => e.type === "message").length;
        const context = ref.buildSessionContext().messages.length;
        /** Run the TUI on `file`, do `then` once the footer is drawn, quit: the read counts. */
        const tui = async (name, then) => {
          const statsFile = join(root, `${name}.json`);
          const env = piEnv(root, "native", { env: { PI_SESSION_NATIVE_READ_STATS: statsFile } });
          const vars = Object.entries(env).filter(([k]) => /^(HOME|PATH|TERM|NO_COLOR|PI_)/.test(k));
          const argv = [node22, ...piArgv("native", ["--session", file])];
          const cmd = `cd ${shq(join(root, "project"))} && env ${vars.map(([k, v]) => `${k}=${shq(v)}`).join(" ")} ${argv.map(shq).join(" ")}`;
          // A tmux server that dies as it starts ("server exited unexpectedly", seen once in a
          // full run) is started again, once.
          try {
            tty.run(name, cmd, { width: 160, height: 45 });
          } catch {
            await new Promise((r) => setTimeout(r, 500));
            tty.run(name, cmd, { width: 160, height: 45 });
          }
          await tty.waitFor(name, (s) => /scripted-1/.test(s), 60_000);
          await then(name);
          tty.tmux("send-keys", "-t", name, "/quit", "Enter");
          for (let i = 0; i < 300 && !existsSync(statsFile); i++) await new Promise((r) => setTimeout(r, 100));
          return JSON.parse(readFileSync(statsFile, "utf8"));
        };
        const resume = await tui("resume", async () => {});
        // Every entry is made (the footer's stats walk them all), the context parsed whole,
        // and no heavy value of the compacted history read.
        expect(resume.handedOut + resume.parsedWhole).toBeGreaterThanOrEqual(entries.length);
        expect(resume.parsedWhole).toBeLessThanOrEqual(context + 64);
        expect(resume.filled, JSON.stringify(resume)).toBeLessThanOrEqual(64);
        const tree = await tui("tree", async (name) => {
          tty.tmux("send-keys", "-t", name, "/tree", "Enter");
          await tty.waitFor(name, (s) => /\(\d+\/\d+\)/.test(s), 60_000);
          tty.tmux("send-keys", "-t", name, "Escape");
          await tty.waitFor(name, (s) => !/\(\d+\/\d+\)/.test(s), 60_000);
        });
        // pi's tree selector reads the content of every message (its tool-call map): those are
        // filled, once each; nothing is made twice or parsed whole beyond the resume's reads.
        expect(tree.handedOut + tree.parsedWhole).toBeLessThanOrEqual(entries.length + 64);
        // (A lookup or two of pi's, e.g. the selected entry, may parse an entry whole.)
        expect(tree.parsedWhole).toBeLessThanOrEqual(resume.parsedWhole + 8);
        expect(tree.filled).toBeGreaterThan(messages / 2);
        expect(tree.filled).toBeLessThanOrEqual(messages);
        console.log(
          `pi's TUI on ${entries.length} entries (${messages} messages, context ${context}): resume ${JSON.stringify(resume)}, then /tree ${JSON.stringify(tree)}`,
        );
      } finally {
        tty.tmux("kill-server");
        await server.close();
      }
    },
    TIMEOUT,
  );
});
