// Listing runs off the main thread: timers keep firing while a large listing is in flight,
// and progress reaches JS from the workers while the pass runs (not replayed at the end).
import { test, expect } from "vitest";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { nat, ref, tmp } from "./helpers.mjs";

// Progress for every file, as the reference calls it (the ~50 ms throttle is
// tested in progress-throttle.test.mjs).
process.env.PI_SESSION_NATIVE_PROGRESS_MS = "0";

/** A dir of 150 sessions of ~0.8 MB each (~120 MB), created once. */
let bigDir = null;
function makeBigDir() {
  if (bigDir) return bigDir;
  const dir = join(tmp("psn-async-"), "s");
  mkdirSync(dir);
  const body = "x".repeat(2000);
  for (let f = 0; f < 150; f++) {
    const lines = [
      JSON.stringify({ type: "session", version: 3, id: `s${f}`, timestamp: "2025-01-01T00:00:00.000Z", cwd: "/w" }),
    ];
    let parent = null;
    for (let i = 0; i < 400; i++) {
      const id = `${f}-${i}`;
      lines.push(
        JSON.stringify({
          type: "message",
          id,
          parentId: parent,
          timestamp: "2025-01-01T00:00:01.000Z",
          message: { role: i % 2 ? "assistant" : "user", content: [{ type: "text", text: body }], timestamp: 1 + i },
        }),
      );
      parent = id;
    }
    writeFileSync(join(dir, `2025-01-01T00-00-00-000Z_s${f}.jsonl`), lines.join("\n") + "\n");
  }
  bigDir = dir;
  return dir;
}

/** Run `fn` without the sidecar index (every file is scanned). */
async function noIndex(fn) {
  process.env.PI_SESSION_NATIVE_NO_INDEX = "1";
  try {
    return await fn();
  } finally {
    delete process.env.PI_SESSION_NATIVE_NO_INDEX;
  }
}

test("a timer keeps firing during a large native listing (no event-loop blocking)", async () => {
  const dir = makeBigDir();
  process.env.PI_SESSION_NATIVE_NO_INDEX = "1";
  try {
    let ticks = 0;
    const timer = setInterval(() => ticks++, 1);
    const t0 = performance.now();
    const sessions = await nat.SessionManager.listAll(dir);
    const elapsed = performance.now() - t0;
    clearInterval(timer);
    expect(sessions).toHaveLength(150);
    // ~120 MB scanned: the main thread stayed free to run timers meanwhile.
    expect(ticks).toBeGreaterThan(Math.min(5, Math.floor(elapsed / 20)));
    console.log(`[discovery] listAll of 150 x 0.8 MB in ${elapsed.toFixed(0)} ms; timer fired ${ticks} times`);
  } finally {
    delete process.env.PI_SESSION_NATIVE_NO_INDEX;
  }
});

test("progress calls arrive while the workers run (timers fire between them)", async () => {
  const dir = makeBigDir();
  await noIndex(async () => {
    let ticks = 0;
    const timer = setInterval(() => ticks++, 1);
    const seen = [];
    let settled = false;
    const p = nat.SessionManager.listAll(dir, (loaded, total, partial) => {
      seen.push({ loaded, total, ticks, settled, partial: partial?.length });
    });
    p.then(() => (settled = true));
    const sessions = await p;
    clearInterval(timer);
    expect(sessions).toHaveLength(150);
    expect(seen.map((c) => c.loaded)).toEqual(Array.from({ length: 150 }, (_, i) => i + 1));
    expect(seen.every((c) => c.total === 150 && !c.settled)).toBe(true);
    // A replay after the pass would make every call in one synchronous loop (same tick count).
    expect(seen.at(-1).ticks).toBeGreaterThan(seen[0].ticks);
    // Partial lists at the reference's publish points (file 0 loaded, every 100th, last).
    const published = seen.filter((c) => c.partial !== undefined);
    expect(published.at(-1)).toMatchObject({ loaded: 150, partial: 150 });
  });
});

test("an abort from inside onProgress stops the pass and rejects with the reason (as the reference)", async () => {
  const dir = makeBigDir();
  await noIndex(async () => {
    for (const SM of [ref.SessionManager, nat.SessionManager]) {
      const controller = new AbortController();
      const reason = new Error("stop listing");
      let calls = 0;
      let err = null;
      try {
        await SM.list(
          "/w",
          dir,
          () => {
            calls++;
            if (calls === 1) controller.abort(reason);
          },
          controller.signal,
        );
      } catch (e) {
        err = e;
      }
      expect(err).toBe(reason);
      expect(calls).toBeGreaterThanOrEqual(1);
      expect(calls).toBeLessThan(150);
    }
  });
});

test("a throwing onProgress makes the listing resolve to [] (as the reference)", async () => {
  const dir = makeBigDir();
  await noIndex(async () => {
    for (const SM of [ref.SessionManager, nat.SessionManager]) {
      const throwingAtCall3 = () => {
        let calls = 0;
        return () => {
          calls++;
          if (calls === 3) throw new Error("boom");
        };
      };
      expect(await SM.list("/w", dir, throwingAtCall3())).toEqual([]);
      expect(await SM.listAll(dir, throwingAtCall3())).toEqual([]);
    }
  });
});
