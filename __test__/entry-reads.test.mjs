// Every way a caller reads entries, native vs reference: the entries handed out by
// getBranch / getEntries / getChildren / getTree must behave as the reference's under
// indexing, iteration, some/find/filter, spread, JSON.stringify, structuredClone, key order,
// util.inspect and property descriptors, and be the same objects on repeated calls, however
// Rust cuts their texts into batches and pieces (PI_SESSION_NATIVE_TEXT_BATCH / _TEXT_PIECE)
// and whether the session is file-backed.
import { describe, test, expect } from "vitest";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { inspect } from "node:util";
import { ref, nat, tmp, j } from "./helpers.mjs";

const H = '{"type":"session","version":3,"id":"s1","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/w"}';
const TEXTS = ["café", "日本語", "emoji 😀👍🏽", "line\u2028sep", "\ufeffbom", "esc \\u00e9", "plain", 'q"uote\\'];

/** A session with messages (string and block content), labels, custom entries, a compaction,
 * a branch, bad lines and one invalid UTF-8 byte. Ids are e0, e1, ... in file order. */
function sessionBytes() {
  const lines = [H];
  let parent = null;
  let n = 0;
  const add = (o) => {
    const id = `e${n++}`;
    lines.push(
      JSON.stringify({
        type: o.type,
        id,
        parentId: parent,
        timestamp: `2025-01-01T00:00:${String(n % 60).padStart(2, "0")}.000Z`,
        ...o.rest,
      }),
    );
    parent = id;
    return id;
  };
  for (let i = 0; i < 300; i++) {
    const t = `${TEXTS[i % TEXTS.length]} #${i} ${"x".repeat((i * 37) % 400)}`;
    const id =
      i % 3 === 0
        ? add({ type: "message", rest: { message: { role: "user", content: t, timestamp: i } } })
        : add({
            type: "message",
            rest: {
              message: {
                role: "assistant",
                content: [
                  { type: "thinking", thinking: t },
                  { type: "text", text: t },
                ],
                provider: "p",
                model: "m",
                usage: { input: i, output: 2, cost: { total: 0.5 } },
                stopReason: "stop",
                timestamp: i,
              },
            },
          });
    if (i % 41 === 3) add({ type: "label", rest: { targetId: id, label: `lab é ${i}` } });
    if (i % 53 === 7) add({ type: "custom", rest: { customType: "ext", data: { k: [1, 2.5, null, { z: "ü" }] } } });
    if (i % 97 === 50)
      add({
        type: "compaction",
        rest: { summary: `sum ${t}`, firstKeptEntryId: id, tokensBefore: 10, details: { readFiles: ["a"] } },
      });
    if (i % 67 === 66) add({ type: "thinking_level_change", rest: { thinkingLevel: "high" } });
    if (i % 89 === 88) lines.push("{broken line é");
    // A side branch now and then.
    if (i % 70 === 69) parent = `e${n - 20}`;
  }
  const bad = Buffer.from(
    JSON.stringify({
      type: "message",
      id: `e${n}`,
      parentId: parent,
      timestamp: "2025-01-01T00:00:00.000Z",
      message: { role: "user", content: "x@y", timestamp: 1 },
    }),
  );
  bad[bad.indexOf("@")] = 0xff;
  return Buffer.concat([Buffer.from(lines.join("\n") + "\n"), bad, Buffer.from("\n")]);
}

function openBoth(bytes) {
  const da = tmp(),
    db = tmp();
  writeFileSync(join(da, "s.jsonl"), bytes);
  writeFileSync(join(db, "s.jsonl"), bytes);
  return [ref.SessionManager.open(join(da, "s.jsonl")), nat.SessionManager.open(join(db, "s.jsonl"))];
}

/** Keys of an object graph, in order, at every depth. */
function keyPaths(v, out = [], p = "") {
  if (v && typeof v === "object") {
    for (const k of Object.keys(v)) {
      out.push(`${p}.${k}`);
      keyPaths(v[k], out, `${p}.${k}`);
    }
  }
  return out;
}

/** What a caller can observe of an array of entries, read in many ways. */
function observe(sm, get) {
  const arr = get();
  const again = get();
  const o = {};
  o.length = arr.length;
  o.fresh = arr !== again; // a new array each call
  o.same = arr.every((e, k) => e === again[k]); // of the same objects
  o.index = [0, 1, arr.length >> 1, arr.length - 1].map((k) => j(arr[k]));
  o.iter = [];
  for (const e of arr) o.iter.push(`${e.type}:${e.id}:${e.parentId}`);
  o.forIn = arr.length ? Object.keys(arr[arr.length - 1]) : [];
  o.some = arr.some((e) => e.type === "thinking_level_change");
  o.find = j(arr.find((e) => e.type === "message" && e.message.role === "assistant"));
  o.filter = arr.filter((e) => e.type === "label" || e.type === "custom").map((e) => e.id);
  o.map = arr.map((e) => (e.type === "message" ? typeof e.message.content : e.type));
  o.spread = arr.map((e) => j({ ...e }));
  o.assign = j(arr.map((e) => Object.assign({}, e)));
  o.json = JSON.stringify(arr);
  o.clone = j(structuredClone(arr));
  o.keys = arr.map((e) => keyPaths(e).join(","));
  o.inspect = inspect(arr.slice(0, 5), { depth: 6 });
  o.descriptors = arr.map((e) =>
    Object.entries(Object.getOwnPropertyDescriptors(e))
      .map(([k, d]) => `${k}:${"value" in d}:${d.writable}:${d.enumerable}:${d.configurable}`)
      .join(","),
  );
  o.proto = arr.every((e) => Object.getPrototypeOf(e) === Object.prototype && Object.isExtensible(e));
  o.byId = arr.every((e) => sm.getEntry(e.id) === e);
  return o;
}

const ways = {
  getBranch: (sm) => () => sm.getBranch(),
  "getBranch(mid)": (sm) => () => sm.getBranch("e150"),
  getEntries: (sm) => () => sm.getEntries(),
  getChildren: (sm) => () => sm.getChildren("e20"),
  "getTree entries": (sm) => {
    const flat = (nodes, out = []) => {
      for (const n of nodes) {
        out.push(n.entry);
        flat(n.children, out);
      }
      return out;
    };
    return () => flat(sm.getTree());
  },
};

const configs = [
  { name: "default" },
  { name: "piece=1", env: { PI_SESSION_NATIVE_TEXT_PIECE: "1" } },
  { name: "piece=97 batch=700", env: { PI_SESSION_NATIVE_TEXT_PIECE: "97", PI_SESSION_NATIVE_TEXT_BATCH: "700" } },
  { name: "batch=1", env: { PI_SESSION_NATIVE_TEXT_BATCH: "1" } },
  {
    name: "backed, piece=300 batch=5000",
    env: {
      PI_SESSION_NATIVE_BACKED_MIN: "0",
      PI_SESSION_NATIVE_TEXT_PIECE: "300",
      PI_SESSION_NATIVE_TEXT_BATCH: "5000",
    },
  },
  { name: "backed", env: { PI_SESSION_NATIVE_BACKED_MIN: "0" } },
];

function withEnv(env, fn) {
  const old = {};
  for (const [k, v] of Object.entries(env ?? {})) {
    old[k] = process.env[k];
    process.env[k] = v;
  }
  try {
    return fn();
  } finally {
    for (const [k, v] of Object.entries(old)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  }
}

describe("every way of reading entries, native vs reference", () => {
  const bytes = sessionBytes();
  for (const c of configs) {
    for (const [way, getter] of Object.entries(ways)) {
      test(`${way}: ${c.name}`, () =>
        withEnv(c.env, () => {
          const [a, b] = openBoth(bytes);
          expect(observe(b, getter(b))).toEqual(observe(a, getter(a)));
        }));
    }
    test(`partial reads first, then whole-branch reads, same objects throughout: ${c.name}`, () =>
      withEnv(c.env, () => {
        const [a, b] = openBoth(bytes);
        for (const sm of [a, b]) {
          sm._e = [sm.getEntry("e200"), sm.getChildren("e10")[0], sm.getLeafEntry(), sm.buildContextEntries()[3]];
        }
        for (const w of Object.keys(ways)) expect(observe(b, ways[w](b)), w).toEqual(observe(a, ways[w](a)));
        for (const sm of [a, b]) {
          const branch = sm.getBranch();
          sm._same = [
            branch.includes(sm._e[2]),
            branch.indexOf(sm._e[0]),
            sm.getEntries().indexOf(sm._e[1]),
            sm.getEntries().includes(sm._e[3]),
          ];
          // A caller's change to an entry object is seen by every later read.
          branch[5].extra = { é: 1 };
          sm._seen = [j(sm.getEntry(branch[5].id)), j(sm.getEntries().find((e) => e.id === branch[5].id))];
        }
        expect(b._same).toEqual(a._same);
        expect(b._seen).toEqual(a._seen);
      }));
  }
  test("two sessions materialized in turn keep their own texts", () => {
    withEnv({ PI_SESSION_NATIVE_TEXT_PIECE: "50", PI_SESSION_NATIVE_TEXT_BATCH: "400" }, () => {
      const [a1, b1] = openBoth(bytes);
      const [a2, b2] = openBoth(bytes);
      for (const [x, y] of [
        [a1, b1],
        [a2, b2],
      ]) {
        x.appendMessage({ role: "user", content: `only in ${x === a1 ? 1 : 2}`, timestamp: 1 });
        y.appendMessage({ role: "user", content: `only in ${x === a1 ? 1 : 2}`, timestamp: 1 });
      }
      const ra = [
        j(a1.getBranch("e100")),
        j(a2.getBranch("e120")),
        j(
          a1
            .getEntries()
            .slice(-3)
            .map((e) => e.message?.content),
        ),
        j(
          a2
            .getEntries()
            .slice(-3)
            .map((e) => e.message?.content),
        ),
      ];
      const rb = [
        j(b1.getBranch("e100")),
        j(b2.getBranch("e120")),
        j(
          b1
            .getEntries()
            .slice(-3)
            .map((e) => e.message?.content),
        ),
        j(
          b2
            .getEntries()
            .slice(-3)
            .map((e) => e.message?.content),
        ),
      ];
      expect(rb).toEqual(ra);
    });
  });
});
