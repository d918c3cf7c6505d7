// onProgress of list / listAll at most every ~50 ms between the first and the last call:
// the first and last calls are the reference's, `loaded`/`total` mean the same,
// and a partial list due at a skipped publish point goes with the next call made.
import { test, expect, beforeAll, afterEach } from "vitest";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { nat, ref, tmp } from "./helpers.mjs";

let dir;
const N = 240;
beforeAll(() => {
  dir = join(tmp("psn-progress-"), "s");
  mkdirSync(dir);
  const body = "y".repeat(3000);
  for (let f = 0; f < N; f++) {
    const lines = [
      JSON.stringify({ type: "session", version: 3, id: `s${f}`, timestamp: "2025-01-01T00:00:00.000Z", cwd: "/w" }),
    ];
    let parent = null;
    for (let i = 0; i < 30; i++) {
      const id = `${f}-${i}`;
      lines.push(
        JSON.stringify({
          type: "message",
          id,
          parentId: parent,
          timestamp: "2025-01-01T00:00:01.000Z",
          message: {
            role: i % 2 ? "assistant" : "user",
            content: [{ type: "text", text: `${f} ${body}` }],
            timestamp: 1 + i,
          },
        }),
      );
      parent = id;
    }
    writeFileSync(
      join(dir, `2025-01-01T00-00-${String(f % 60).padStart(2, "0")}-${String(f).padStart(3, "0")}Z_s${f}.jsonl`),
      lines.join("\n") + "\n",
    );
  }
  process.env.PI_SESSION_NATIVE_NO_INDEX = "1";
});
afterEach(() => {
  delete process.env.PI_SESSION_NATIVE_PROGRESS_MS;
});

const paths = (list) => (list ? list.map((s) => s.path).sort() : null);

async function calls(run) {
  const seen = [];
  const result = await run((loaded, total, partial) => seen.push({ loaded, total, partial, at: performance.now() }));
  return { result, seen };
}

const runs = {
  list: (SM) => (p) => SM.list("/w", dir, p),
  "listAll(dir)": (SM) => (p) => SM.listAll(dir, p),
};

for (const [name, run] of Object.entries(runs)) {
  test(`${name}: first and last call as the reference, nothing between when the interval is long`, async () => {
    process.env.PI_SESSION_NATIVE_PROGRESS_MS = "1000000";
    const a = await calls(run(ref.SessionManager));
    const b = await calls(run(nat.SessionManager));
    expect(paths(b.result)).toEqual(paths(a.result));
    expect(b.seen.map((c) => [c.loaded, c.total])).toEqual([
      [1, N],
      [N, N],
    ]);
    // The first call is the reference's first (a partial list of one); the last carries the
    // full partial list (publish points in between were skipped, the list was not).
    expect(b.seen[0].partial).toHaveLength(1);
    expect(paths(b.seen[1].partial)).toEqual(paths(a.seen.at(-1).partial));
    expect(b.seen[1].partial).toEqual([...b.seen[1].partial].sort((x, y) => y.modified - x.modified));
  });

  test(`${name}: between first and last, calls at least the interval apart, loaded increasing`, async () => {
    process.env.PI_SESSION_NATIVE_PROGRESS_MS = "3";
    const b = await calls(run(nat.SessionManager));
    const s = b.seen;
    expect(s[0].loaded).toBe(1);
    expect(s.at(-1).loaded).toBe(N);
    expect(s.every((c) => c.total === N)).toBe(true);
    for (let k = 1; k < s.length; k++) expect(s[k].loaded).toBeGreaterThan(s[k - 1].loaded);
    // Every call but the last comes at least the interval after the previous one (timer
    // granularity: 1 ms of slack).
    for (let k = 1; k < s.length - 1; k++) expect(s[k].at - s[k - 1].at).toBeGreaterThanOrEqual(2);
    // Partial lists are sorted and hold exactly the sessions loaded so far (never more).
    for (const c of s) if (c.partial) expect(c.partial.length).toBeLessThanOrEqual(c.loaded);
    expect(s.at(-1).partial).toHaveLength(N);
  });

  test(`${name}: interval 0 calls for every file, as the reference`, async () => {
    process.env.PI_SESSION_NATIVE_PROGRESS_MS = "0";
    const a = await calls(run(ref.SessionManager));
    const b = await calls(run(nat.SessionManager));
    expect(b.seen.map((c) => [c.loaded, c.total, c.partial === undefined])).toEqual(
      a.seen.map((c) => [c.loaded, c.total, c.partial === undefined]),
    );
  });

  test(`${name}: default interval: fewer calls on a slow callback, same first, last and result`, async () => {
    const a = await calls(run(ref.SessionManager));
    const slow = [];
    const result = await run(nat.SessionManager)((loaded, total, partial) => {
      slow.push({ loaded, total, partial });
      const until = performance.now() + 5; // a redraw
      while (performance.now() < until);
    });
    expect(paths(result)).toEqual(paths(a.result));
    expect(slow[0].loaded).toBe(1);
    expect(slow.at(-1)).toMatchObject({ loaded: N, total: N });
    expect(paths(slow.at(-1).partial)).toEqual(paths(a.seen.at(-1).partial));
    expect(slow.length).toBeLessThan(a.seen.length);
  });

  test(`${name}: a throwing first call resolves to [] and an abort in it rejects, as the reference`, async () => {
    for (const SM of [ref.SessionManager, nat.SessionManager]) {
      expect(
        await run(SM)(() => {
          throw new Error("boom");
        }),
      ).toEqual([]);
    }
    const reasons = [];
    for (const SM of [ref.SessionManager, nat.SessionManager]) {
      const c = new AbortController();
      const reason = new Error("stop");
      const p =
        name === "list"
          ? SM.list("/w", dir, () => c.abort(reason), c.signal)
          : SM.listAll(dir, () => c.abort(reason), c.signal);
      reasons.push(
        await p.then(
          () => null,
          (e) => e === reason,
        ),
      );
    }
    expect(reasons).toEqual([true, true]);
  });
}
