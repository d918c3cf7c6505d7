// Listing runs off the main thread: timers keep firing while a large listing is in flight.
import { test, expect } from "vitest";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { nat, tmp } from "./helpers.mjs";

test("a timer keeps firing during a large native listing (no event-loop blocking)", async () => {
  const dir = join(tmp("psn-async-"), "s");
  mkdirSync(dir);
  const body = "x".repeat(2000);
  for (let f = 0; f < 150; f++) {
    const lines = [JSON.stringify({ type: "session", version: 3, id: `s${f}`, timestamp: "2025-01-01T00:00:00.000Z", cwd: "/w" })];
    let parent = null;
    for (let i = 0; i < 400; i++) {
      const id = `${f}-${i}`;
      lines.push(JSON.stringify({ type: "message", id, parentId: parent, timestamp: "2025-01-01T00:00:01.000Z", message: { role: i % 2 ? "assistant" : "user", content: [{ type: "text", text: body }], timestamp: 1 + i } }));
      parent = id;
    }
    writeFileSync(join(dir, `2025-01-01T00-00-00-000Z_s${f}.jsonl`), lines.join("\n") + "\n");
  }
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
