// Errors crossing the JS↔Rust boundary arrive as the objects Node's `fs` throws: own
// properties `errno, code, syscall, path` in Node's order and values (errno from the OS), and
// the same message; nothing on the JS side parses a message (src/error.rs). Compared here with
// the errors Node itself throws for the same failures.
import { describe, expect, test } from "vitest";
import fs from "node:fs";
import { getSystemErrorMap } from "node:util";
import { join } from "node:path";
import { createRequire } from "node:module";
import { ref, tmp } from "./helpers.mjs";

const binding = createRequire(import.meta.url)("../lib/native.js");

/** Node's `errno` for an error code on this platform (libuv's own numbers on Windows). */
function errnoOf(code) {
  for (const [errno, [name]] of getSystemErrorMap()) if (name === code) return errno;
  throw new Error(`no errno for ${code}`);
}
const win = process.platform === "win32";

/** What the thrown value of `fn` is (it must throw). */
function thrown(fn) {
  try {
    fn();
  } catch (e) {
    return e;
  }
  throw new Error("did not throw");
}

/** The parts of an error a caller can see besides its stack. */
const shape = (e) => ({
  isError: e instanceof Error,
  keys: Object.keys(e),
  own: Object.fromEntries(Object.keys(e).map((k) => [k, e[k]])),
  message: e.message,
});

const H = JSON.stringify({ type: "session", version: 3, id: "s", timestamp: "2026-01-01T00:00:00.000Z", cwd: "/" });
const msg = (id, parentId) =>
  JSON.stringify({ type: "message", id, parentId, timestamp: "t", message: { role: "user", content: id } });

describe("native filesystem errors have Node's shape", () => {
  // Windows has no ENOTDIR for a path below a file: Node reports ENOENT there, and ENOENT is a
  // missing file, which the load reads as empty (the reference's loadEntriesFromFile returns []
  // before opening: its existsSync is false). The open error's shape on Windows is the next test's.
  test("open: ENOTDIR (ENOENT on Windows) with errno, code, syscall, path as fs.openSync gives them", () => {
    const p = join(tmp(), "file");
    fs.writeFileSync(p, "x");
    const bad = join(p, "below");
    const node = thrown(() => fs.openSync(bad, "r"));
    expect(node.code).toBe(win ? "ENOENT" : "ENOTDIR");
    if (win) {
      expect(new binding.NativeSession(true).loadFile(bad)).toEqual({ count: 0, repaired: false });
      expect(ref.loadEntriesFromFile(bad)).toEqual([]);
      return;
    }
    const ours = thrown(() => new binding.NativeSession(true).loadFile(bad));
    expect(shape(ours)).toEqual(shape(node));
    expect(Object.keys(ours)).toEqual(["errno", "code", "syscall", "path"]);
    expect(ours.errno).toBe(errnoOf("ENOTDIR"));
  });

  // Windows: a file another handle opened without sharing (libuv's UV_FS_O_EXLOCK, 0x10000000
  // in uv/win.h; not in fs.constants) cannot be opened: EBUSY from the open, with the path.
  test.runIf(win)("open: EBUSY (a file held without sharing, Windows) as fs.openSync gives it", () => {
    const p = join(tmp(), "held.jsonl");
    fs.writeFileSync(p, `${H}\n`);
    const UV_FS_O_EXLOCK = 0x10000000;
    const held = fs.openSync(p, fs.constants.O_RDONLY | UV_FS_O_EXLOCK);
    try {
      const ours = thrown(() => new binding.NativeSession(true).loadFile(p));
      const node = thrown(() => fs.openSync(p, "r"));
      expect(shape(ours)).toEqual(shape(node));
      expect(Object.keys(ours)).toEqual(["errno", "code", "syscall", "path"]);
      expect(ours.errno).toBe(errnoOf("EBUSY"));
      // The reference's load throws the same error (its existsSync is true, its openSync fails).
      expect(shape(thrown(() => ref.loadEntriesFromFile(p)))).toEqual(shape(node));
    } finally {
      fs.closeSync(held);
    }
  });

  test("read: EISDIR without a path, as fs.readSync on a descriptor gives it", () => {
    const d = tmp();
    const ours = thrown(() => new binding.NativeSession(true).loadFile(d));
    const fd = fs.openSync(d, "r");
    const node = thrown(() => fs.readSync(fd, Buffer.alloc(8)));
    fs.closeSync(fd);
    expect(shape(ours)).toEqual(shape(node));
    expect("path" in ours).toBe(false);
    expect(ours.errno).toBe(errnoOf("EISDIR"));
  });

  test("exclusive create: EEXIST as fs.openSync(path, 'wx') gives it", () => {
    const p = join(tmp(), "taken.jsonl");
    fs.writeFileSync(p, "x");
    const s = new binding.NativeSession(false);
    s.append(H);
    const ours = thrown(() => s.forkInto(p, H));
    const node = thrown(() => fs.openSync(p, "wx"));
    expect(shape(ours)).toEqual(shape(node));
    expect(ours.errno).toBe(errnoOf("EEXIST"));
  });

  // Unix only: on Windows appended entries keep their texts in memory (docs/compatibility.md).
  test.skipIf(win)("a truncated session file asks for texts by code, not message", () => {
    const f = join(tmp(), "s.jsonl");
    const s = new binding.NativeSession(true);
    s.setFile(f, false);
    s.append(H);
    s.append(msg("a", null));
    s.rewrite();
    s.append(msg("b", "a"));
    fs.truncateSync(f, 0);
    const e = thrown(() => s.append(msg("c", "b")));
    expect(e).toBeInstanceOf(Error);
    expect(Object.keys(e)).toEqual(["code"]);
    expect(e.code).toBe("PI_SESSION_NATIVE_NEEDS_TEXTS");
    expect(Array.from(s.neededTexts())).toEqual([2]);
  });
});
