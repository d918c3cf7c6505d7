// Entries that cost what the caller reads (lib/lazy-entries.js): heavy top-level
// values (128+ bytes of JSON) are parsed when first read. Each way of reading is tried FIRST,
// on a freshly opened session, so it meets entries that were never read, and compared with
// the reference exactly. The one documented difference before the first read (property
// descriptors of heavy keys, and the util.inspect.custom symbol) is asserted as such.
import { describe, test, expect } from "vitest";
import { writeFileSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { inspect } from "node:util";
import { ref, nat, tmp, j } from "./helpers.mjs";

const big = (n, s = "x") => `${s} ${"é😀".repeat(3)} ${"y".repeat(n)}`;

/** A session with heavy values in every place pi puts them, and in odd key orders. */
function sessionLines() {
  const lines = ['{"type":"session","version":3,"id":"s1","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/w"}'];
  let parent = null;
  let n = 0;
  const ts = () => `2025-01-01T00:00:${String(n % 60).padStart(2, "0")}.000Z`;
  const add = (o) => {
    const id = `e${n++}`;
    lines.push(
      JSON.stringify(
        typeof o === "function" ? o(id, parent) : { type: o.type, id, parentId: parent, timestamp: ts(), ...o.rest },
      ),
    );
    parent = id;
    return id;
  };
  for (let i = 0; i < 120; i++) {
    const t = big((i * 53) % 700, `t${i}`);
    const id = add({
      type: "message",
      rest: {
        message:
          i % 2
            ? { role: "user", content: t, timestamp: i }
            : {
                role: "assistant",
                content: [{ type: "text", text: t }],
                provider: "p",
                model: "m",
                usage: { input: i },
                stopReason: "stop",
                timestamp: i,
              },
      },
    });
    if (i % 17 === 3)
      add({
        type: "compaction",
        rest: {
          summary: big(300, "sum"),
          firstKeptEntryId: id,
          tokensBefore: 10,
          details: { readFiles: [big(200)] },
          fromHook: false,
        },
      });
    if (i % 19 === 5) add({ type: "custom", rest: { customType: "ext", data: { k: big(400) } } });
    if (i % 23 === 7) add({ type: "branch_summary", rest: { fromId: id, summary: big(500, "bs") } });
    if (i % 29 === 11)
      add({
        type: "custom_message",
        rest: { customType: "cm", content: big(300), display: true, details: { a: [1, 2] } },
      });
    if (i % 31 === 13) add({ type: "label", rest: { targetId: id, label: big(150, "long label") } });
    // Heavy key first, light keys after it, in an unusual order.
    if (i % 37 === 17)
      add((id2, p) => ({
        data: { blob: big(300) },
        type: "custom",
        customType: "first",
        id: id2,
        parentId: p,
        timestamp: ts(),
        z: 1,
      }));
    // Digit keys, __proto__, an escaped key: parsed whole (no shell).
    if (i % 41 === 19)
      add((id2, p) => ({ type: "custom", id: id2, parentId: p, timestamp: ts(), 7: "seven", data: big(200) }));
    if (i % 43 === 21)
      lines.push(
        `{"type":"custom","id":"p${i}","parentId":"${parent}","timestamp":"${ts()}","__proto__":{"x":1},"data":"${big(200)}"}`,
      );
    if (i % 47 === 23)
      lines.push(
        `{"type":"custom","id":"q${i}","parentId":"${parent}","timestamp":"${ts()}","data":"${big(200)}","\\u0061b":2}`,
      );
    // Duplicate keys (JSON.parse: first place, last value), heavy and light either way round,
    // and two message keys.
    if (i % 53 === 29)
      lines.push(
        `{"type":"custom","id":"d${i}","parentId":"${parent}","data":{"k":"${big(200)}"},"timestamp":"${ts()}","data":"${big(150, "second")}","z":1,"z":{"w":"${big(140)}"}}`,
      );
    if (i % 59 === 31)
      lines.push(
        `{"type":"message","id":"m${i}","parentId":"${parent}","message":{"role":"user","content":"${big(300)}"},"timestamp":"${ts()}","message":{"role":"assistant","content":[{"type":"text","text":"${big(200, "two")}"}],"content":"x"}}`,
      );
    // A shell whose light values no shape carries (lib/shapes.js): a digit or escaped key, a
    // repeated key or __proto__ inside a light object, nesting or width beyond the limits;
    // and light values that shapes do carry with care (whitespace, -0, huge numbers).
    if (i % 13 === 6) {
      const deep = `${'{"a":'.repeat(20)}1${"}".repeat(20)}`;
      const wide = `{${Array.from({ length: 70 }, (_, k) => `"k${k}":${k}`).join(",")}}`;
      const metas = [
        '{"7":1,"b":2}',
        '{"\\u0062":2}',
        '{"a":1,"a":2}',
        '{"__proto__":{"x":1}}',
        deep,
        wide,
        '{ "a" : [ 1 , { "b" : null } ] , "n" : -0 , "big" : 1e400 , "i" : 123456789012345678901234567890 , "t" : true }',
      ];
      const meta = metas[((i / 13) % metas.length) | 0];
      lines.push(
        `{"type":"custom","id":"w${i}","parentId":"${parent}","timestamp":"${ts()}","data":"${big(200)}","meta":${meta},"after":"z"}`,
      );
    }
    if (i % 50 === 49) parent = `e${n - 15}`;
  }
  return lines;
}

const BYTES = Buffer.from(sessionLines().join("\n") + "\n");

function openBoth(bytes = BYTES, env = {}) {
  const old = {};
  for (const [k, v] of Object.entries(env)) {
    old[k] = process.env[k];
    process.env[k] = v;
  }
  try {
    const da = tmp(),
      db = tmp();
    writeFileSync(join(da, "s.jsonl"), bytes);
    writeFileSync(join(db, "s.jsonl"), bytes);
    return [ref.SessionManager.open(join(da, "s.jsonl")), nat.SessionManager.open(join(db, "s.jsonl"))];
  } finally {
    for (const [k, v] of Object.entries(old)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  }
}

/** Whether `o` has a key that is still an accessor. */
const hasAccessor = (o) =>
  o !== null && typeof o === "object" && Object.values(Object.getOwnPropertyDescriptors(o)).some((d) => d.get);
/** How many entries of `arr` (or their messages) still have lazy keys. */
const unfilledCount = (arr) =>
  arr.filter((e) => hasAccessor(e) || hasAccessor(Object.getOwnPropertyDescriptor(e, "message")?.value)).length;

/** The last message entry whose `message` is still lazy. */
const lastLazyMessage = (arr) =>
  arr.findLast((e) => e.type === "message" && hasAccessor(Object.getOwnPropertyDescriptor(e, "message").value));

const keyPaths = (v, p = "") =>
  v && typeof v === "object" ? Object.keys(v).flatMap((k) => [`${p}.${k}`, ...keyPaths(v[k], `${p}.${k}`)]) : [];

/** Ways of reading an array of entries, each one the first thing done with it. */
const ways = {
  index: (a) => [0, 1, a.length >> 1, a.length - 1].map((k) => j(a[k])),
  cheapFields: (a) => a.map((e) => `${e.type}:${e.id}:${e.parentId}:${e.timestamp}:${e.customType}`),
  forOf: (a) => {
    const out = [];
    for (const e of a) out.push(e.type === "message" ? e.message.role : e.type);
    return out;
  },
  keys: (a) => a.map((e) => Object.keys(e).join(",")),
  ownNames: (a) => a.map((e) => Object.getOwnPropertyNames(e).join(",")),
  forIn: (a) =>
    a.map((e) => {
      const ks = [];
      for (const k in e) ks.push(k);
      return ks.join(",");
    }),
  inOperator: (a) =>
    a.map((e) => ["message", "summary", "data", "details", "nope"].map((k) => k in e && Object.hasOwn(e, k)).join()),
  some: (a) => a.some((e) => e.type === "thinking_level_change"),
  find: (a) => j(a.find((e) => e.type === "message" && e.message.role === "user")),
  findLast: (a) => j(a.findLast((e) => e.type === "message" && e.message.role === "assistant")),
  filter: (a) => j(a.filter((e) => e.type === "custom" || e.type === "compaction")),
  map: (a) => a.map((e) => (e.type === "message" ? typeof e.message.content : e.type)),
  reverseWalk: (a) => {
    for (let k = a.length - 1; k >= 0; k--)
      if (a[k].type === "message" && a[k].message.role === "assistant") return j(a[k].message.usage);
    return null;
  },
  spread: (a) => a.map((e) => j({ ...e })),
  assign: (a) => j(a.map((e) => Object.assign({}, e))),
  entries: (a) => j(a.map((e) => Object.entries(e))),
  values: (a) => j(a.map((e) => Object.values(e))),
  json: (a) => JSON.stringify(a),
  jsonIndent: (a) => JSON.stringify(a.slice(-7), null, 2),
  clone: (a) => j(structuredClone(a)),
  keyPaths: (a) => a.map((e) => keyPaths(e).join(",")),
  inspect: (a) => inspect(a.slice(0, 9), { depth: 6 }),
  inspectOne: (a) => inspect(a[a.length - 1]),
  inspectAll: (a) => inspect(a, { depth: 3, maxArrayLength: null }),
  proto: (a) =>
    a.every((e) => Object.getPrototypeOf(e) === Object.prototype && Object.isExtensible(e) && !Object.isFrozen(e)),
  // A second read of a lazily made field gives the very same object.
  strictEqual: (a) =>
    a.map((e) => {
      const first = e.message ?? e.data ?? e.summary;
      return first === (e.message ?? e.data ?? e.summary);
    }),
};

const getters = {
  getBranch: (sm) => sm.getBranch(),
  "getBranch(e40)": (sm) => sm.getBranch("e40"),
  getEntries: (sm) => sm.getEntries(),
  getChildren: (sm) => sm.getChildren("e20"),
  getTree: (sm) => {
    const out = [];
    const walk = (ns) => {
      for (const n of ns) {
        out.push(n.entry);
        walk(n.children);
      }
    };
    walk(sm.getTree());
    return out;
  },
};

describe("lazy entries: each way of reading, first, native vs reference", () => {
  for (const backed of [false, true]) {
    const env = backed ? { PI_SESSION_NATIVE_BACKED_MIN: "0" } : {};
    for (const [g, get] of Object.entries(getters)) {
      for (const [w, way] of Object.entries(ways)) {
        test(`${g} / ${w}${backed ? " (file-backed)" : ""}`, () => {
          const [a, b] = openBoth(BYTES, env);
          const ea = get(a);
          const eb = get(b);
          expect(way(eb)).toEqual(way(ea));
          // What was read is the reference's; repeated calls give the same objects.
          expect(get(b).every((e, k) => e === eb[k])).toBe(true);
          expect(JSON.stringify(get(b))).toBe(JSON.stringify(get(a)));
        });
      }
    }
  }

  test("entries are built from shapes (lib/shapes.js), and entries no shape carries are read whole", () => {
    const [a, b] = openBoth();
    const eb = b.getEntries();
    expect(b._shells.shapes.length).toBeGreaterThan(3);
    expect(b._shells.interned).toContain("assistant");
    const odd = eb.filter((e) => typeof e.id === "string" && e.id.startsWith("w"));
    expect(odd.length).toBeGreaterThan(5);
    expect(JSON.stringify(eb)).toBe(JSON.stringify(a.getEntries()));
    expect(eb.map((e) => Object.keys(e).join())).toEqual(a.getEntries().map((e) => Object.keys(e).join()));
  });

  test("entries really are lazy: cheap reads fill nothing, a read fills its entry", () => {
    const [, b] = openBoth();
    const branch = b.getBranch();
    const heavy = unfilledCount(branch);
    expect(heavy).toBeGreaterThan(100);
    ways.cheapFields(branch);
    ways.keys(branch);
    ways.some(branch);
    expect(unfilledCount(branch)).toBe(heavy);
    // pi reads the role of every branch message at start-up: that fills nothing either.
    expect(branch.filter((x) => x.type === "message" && x.message.role === "system")).toEqual([]);
    expect(unfilledCount(branch)).toBe(heavy);
    const e = lastLazyMessage(branch);
    const m = e.message;
    expect(Object.getOwnPropertyDescriptor(e, "message")).toEqual({
      value: m,
      writable: true,
      enumerable: true,
      configurable: true,
    });
    const d0 = Object.getOwnPropertyDescriptor(m, "content");
    expect([typeof d0.get, typeof d0.set, d0.enumerable, d0.configurable]).toEqual([
      "function",
      "function",
      true,
      true,
    ]);
    expect(Object.getOwnPropertySymbols(m)).toEqual([inspect.custom]);
    void m.content;
    expect(Object.getOwnPropertyDescriptor(m, "content")).toEqual({
      value: m.content,
      writable: true,
      enumerable: true,
      configurable: true,
    });
    expect(Object.getOwnPropertySymbols(m)).toEqual([]);
    expect(e.message).toBe(m);
    expect(unfilledCount(branch)).toBe(heavy - 1);
  });

  test("after a read, descriptors, symbols and key order are the reference's", () => {
    const [a, b] = openBoth();
    const ba = a.getEntries();
    const bb = b.getEntries();
    JSON.stringify(bb);
    const desc = (arr) =>
      arr.map((e) => [
        Reflect.ownKeys(e).map(String),
        Object.entries(Object.getOwnPropertyDescriptors(e)).map(
          ([k, d]) => `${k}:${"value" in d}:${d.writable}:${d.enumerable}:${d.configurable}`,
        ),
      ]);
    expect(desc(bb)).toEqual(desc(ba));
    expect(unfilledCount(bb)).toBe(0);
    // Plain objects, as the reference's (those with lazy keys are made by a constructor of
    // their layout, lib/shapes.js): prototype, constructor and how inspect names them.
    const kinds = (arr) =>
      arr
        .flatMap((e) => [e, e.message].filter(Boolean))
        .map((o) => [
          Object.getPrototypeOf(o) === Object.prototype,
          o.constructor === Object,
          inspect(o, { depth: 0 })[0],
        ]);
    expect(kinds(bb)).toEqual(kinds(ba));
  });

  test("a run of reads in either direction costs windows, and values match", () => {
    for (const dir of ["forward", "backward"]) {
      const [a, b] = openBoth();
      const ea = a.getBranch();
      const eb = b.getBranch();
      const order = [...eb.keys()];
      if (dir === "backward") order.reverse();
      const got = order.map((k) => j(eb[k].message ?? eb[k].summary ?? eb[k].data ?? null));
      const want = order.map((k) => j(ea[k].message ?? ea[k].summary ?? ea[k].data ?? null));
      expect(got).toEqual(want);
      expect(unfilledCount(eb)).toBe(0);
    }
  });

  test("context messages are the entries' own message objects, read before or after", () => {
    const [, b] = openBoth();
    const branch = b.getBranch();
    const msgs = b.buildSessionContext().messages;
    const entries = b.buildContextEntries();
    for (const e of entries.filter((x) => x.type === "message")) expect(msgs).toContain(e.message);
    expect(
      branch
        .filter((e) => e.type === "message")
        .slice(-5)
        .every((e) => msgs.includes(e.message)),
    ).toBe(true);
  });

  test("writes before the first read: assign, delete, define, freeze, seal, preventExtensions", () => {
    const [a, b] = openBoth();
    // Six message entries still lazy on the native side; the same ids on the reference.
    const ids = b
      .getBranch()
      .filter((e) => e.type === "message" && hasAccessor(Object.getOwnPropertyDescriptor(e, "message").value))
      .slice(-6)
      .map((e) => e.id);
    expect(ids).toHaveLength(6);
    const run = (sm) => {
      const arr = ids.map((id) => sm.getEntry(id));
      arr[0].message = { role: "user", content: "mine" };
      delete arr[1].message;
      arr[2].extra = 5;
      Object.freeze(arr[3]);
      Object.seal(arr[4]);
      Object.preventExtensions(arr[5]);
      const out = arr.map((e) => [
        j(e),
        Object.keys(e).join(),
        Object.isFrozen(e),
        Object.isSealed(e),
        Object.isExtensible(e),
        j(e.message?.content),
      ]);
      // Writes to a frozen entry are refused as for a frozen data property (modules are strict).
      let threw = false;
      try {
        arr[3].message = 1;
      } catch (err) {
        threw = err instanceof TypeError;
      }
      out.push(threw, j(arr[3].message?.role));
      arr[4].message = "sealed but writable";
      out.push(j(arr[4]), j(structuredClone(arr[4])));
      return out;
    };
    expect(run(b)).toEqual(run(a));
  });

  test("an object inheriting from an entry reads and writes as with the reference", () => {
    const [a, b] = openBoth();
    const run = (sm) => {
      const e = sm.getBranch().findLast((x) => x.type === "message");
      const child = Object.create(e);
      const first = j(child.message);
      child.message = "own";
      return [first, child.message, j(e.message), Object.keys(child)];
    };
    expect(run(b)).toEqual(run(a));
  });

  test("entries handed out before the session's entries are replaced keep their values", () => {
    const scenarios = {
      newSession: (sm) => sm.newSession(),
      setSessionFile: (sm) => {
        const d = tmp();
        writeFileSync(join(d, "o.jsonl"), sessionLines().slice(0, 5).join("\n") + "\n");
        sm.setSessionFile(join(d, "o.jsonl"));
      },
      createBranchedSession: (sm) => sm.createBranchedSession("e30"),
    };
    for (const [name, op] of Object.entries(scenarios)) {
      const [a, b] = openBoth();
      const ea = a.getEntries();
      const eb = b.getEntries();
      const lazyBefore = unfilledCount(eb);
      op(a);
      op(b);
      // Still lazy after the replace (they read from a retired copy of the entries), unless the
      // operation itself read them (createBranchedSession copies the path's entries).
      if (name !== "createBranchedSession") expect(unfilledCount(eb), name).toBe(lazyBefore);
      // Labels written by createBranchedSession get fresh random ids.
      const norm = (arr) => JSON.stringify(arr.map((e) => (e.type === "label" ? { ...e, id: "L", parentId: "P" } : e)));
      expect(norm(eb), name).toBe(norm(ea));
      expect(norm(b.getEntries()), name).toBe(norm(a.getEntries()));
    }
  });

  test("inMemory from another session's unread entries (pi's compaction preview)", () => {
    const [a, b] = openBoth();
    const ma = ref.SessionManager.inMemory("/w", undefined, [a.getHeader(), ...a.getBranch()]);
    const mb = nat.SessionManager.inMemory("/w", undefined, [b.getHeader(), ...b.getBranch()]);
    expect(j(mb.buildSessionContext())).toBe(j(ma.buildSessionContext()));
    expect(JSON.stringify(mb.getEntries())).toBe(JSON.stringify(ma.getEntries()));
  });

  test("a Proxy passing itself as receiver gets a clear error, and PI_SESSION_NATIVE_LAZY=0 turns laziness off", () => {
    const [, b] = openBoth();
    const e = lastLazyMessage(b.getBranch());
    // A proxied entry is fine (its message is data); a proxied lazy message is not.
    expect(new Proxy(e, {}).message).toBe(e.message);
    const p = new Proxy(e.message, { get: (t, k, r) => Reflect.get(t, k, r) });
    expect(() => p.content).toThrow(/PI_SESSION_NATIVE_LAZY=0/);
    expect(j(e.message.content)).toMatch(/t\d+/);
    const [, off] = openBoth(BYTES, { PI_SESSION_NATIVE_LAZY: "0" });
    expect(unfilledCount(off.getBranch())).toBe(0);
    expect(unfilledCount(openBoth()[1].getBranch())).toBeGreaterThan(0);
  });

  test("a file-backed entry whose text was overwritten under the session: EIO when read, never another entry's text", () => {
    const [, b] = openBoth(BYTES, { PI_SESSION_NATIVE_BACKED_MIN: "0" });
    const branch = b.getBranch();
    const e = lastLazyMessage(branch);
    const file = b.getSessionFile();
    const bytes = readFileSync(file);
    const at = bytes.indexOf(Buffer.from(`"id":"${e.id}"`));
    bytes.fill(0x20, at, at + 40);
    writeFileSync(file, bytes);
    let err;
    try {
      void e.message.content;
    } catch (x) {
      err = x;
    }
    expect(err?.code).toBe("EIO");
  });
});

// A hand-out of 4,096+ entries is encoded on a worker thread while JS builds the pieces before
// (crates/core/src/shape_stream.rs), and numbers reach JS as doubles Rust parsed, strings as
// slices of a pool (crates/core/src/shapes.rs): every value must still be the one JSON.parse
// gives, -0 and the doubles at the edges included.
describe("large hand-outs (worker thread, numbers and pool strings)", () => {
  const NUMS = [
    "0.1",
    "-0",
    "1e400",
    "-1e400",
    "5e-324",
    "9007199254740993",
    "1.7976931348623157e308",
    "123456789012345678901234567890",
    "-12.5E-3",
    "1E2",
    "0.005847",
    "1748768842904",
    "2.2250738585072011e-308",
    "0",
    "-1",
    "4.35",
    "1e-7",
    "0.30000000000000004",
  ];
  const lines = ['{"type":"session","version":3,"id":"big","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/w"}'];
  for (let i = 0; i < 6000; i++) {
    const parent = i === 0 ? "null" : `"e${i - 1}"`;
    const n = (k) => NUMS[(i + k) % NUMS.length];
    const content = i % 3 === 0 ? JSON.stringify(big(150 + (i % 40))) : JSON.stringify(`é ${i} "q" \\ ${"\u2028"}`);
    const ts = `"2025-01-01T00:${String(((i / 60) % 60) | 0).padStart(2, "0")}:${String(i % 60).padStart(2, "0")}.000Z"`;
    lines.push(
      i % 7 === 3
        ? `{"type":"custom","customType":"k${i % 4}","id":"e${i}","parentId":${parent},"timestamp":${ts},"data":{"a":${n(0)},"b":[${n(1)},${n(2)}],"s":"x${i}"}}`
        : `{"type":"message","id":"e${i}","parentId":${parent},"timestamp":${ts},"message":{"role":"assistant","content":${content},"model":"m${i % 3}","usage":{"input":${i},"output":${n(3)},"cost":{"total":${n(4)},"input":${n(5)}}},"stopReason":"stop","timestamp":${n(6)}}}`,
    );
  }
  const BIG = Buffer.from(lines.join("\n") + "\n");

  /** Every number in `v` (depth first), to compare with Object.is. */
  const numbers = (v, out = []) => {
    if (typeof v === "number") out.push(v);
    else if (v && typeof v === "object") for (const k of Object.keys(v)) numbers(v[k], out);
    return out;
  };

  for (const backed of [false, true]) {
    test(`getBranch / getEntries of 6,000 entries equal the reference's, numbers exactly${backed ? " (file-backed)" : ""}`, () => {
      const [a, b] = openBoth(BIG, backed ? { PI_SESSION_NATIVE_BACKED_MIN: "0" } : {});
      const [ba, bb] = [a.getBranch(), b.getBranch()];
      expect(bb.length).toBe(6000);
      // Before any heavy value is read: the light numbers, strings and key order.
      const light = (e) => ({ ...e, message: e.message && { ...e.message, content: undefined } });
      const na = numbers(ba.map(light));
      const nb = numbers(bb.map(light));
      expect(nb.length).toBe(na.length);
      expect(nb.every((x, k) => Object.is(x, na[k]))).toBe(true);
      expect(nb.some((x) => Object.is(x, -0))).toBe(true);
      expect(bb.map((e) => Object.keys(e).join())).toEqual(ba.map((e) => Object.keys(e).join()));
      // Then everything, heavy values included, and the entries not on the branch.
      expect(JSON.stringify(bb)).toBe(JSON.stringify(ba));
      expect(JSON.stringify(b.getEntries())).toBe(JSON.stringify(a.getEntries()));
      const [all, allB] = [numbers(a.getEntries()), numbers(b.getEntries())];
      expect(allB.length).toBe(all.length);
      expect(allB.every((x, k) => Object.is(x, all[k]))).toBe(true);
    });
  }

  test("a parentId taken as the previous entry's id only when it is that id (prefixes, other parents, long ids)", () => {
    // Ids that are prefixes of each other, parents that are not the previous entry, ids
    // past the pool's 12 characters, and entries without an id.
    const ls = ['{"type":"session","version":3,"id":"pp","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/w"}'];
    const id = (i) => (i % 11 === 5 ? `long-id-number-${i}` : `x${i}`);
    for (let i = 0; i < 5000; i++) {
      const parent =
        i === 0 ? null : i % 3 === 1 ? id(Math.max(i - 2, 0)) : i % 13 === 0 ? id(Math.floor(i / 10)) : id(i - 1);
      const e = {
        type: "message",
        id: id(i),
        parentId: parent,
        timestamp: "2025-01-01T00:00:00.000Z",
        message: { role: "user", content: big(140), timestamp: i },
      };
      if (i % 97 === 0) delete e.id;
      ls.push(JSON.stringify(e));
    }
    const [a, b] = openBoth(Buffer.from(`${ls.join("\n")}\n`));
    const ids = (es) => es.map((e) => [e.id, e.parentId]);
    expect(ids(b.getEntries())).toEqual(ids(a.getEntries()));
    expect(ids(b.getBranch())).toEqual(ids(a.getBranch()));
    expect(JSON.stringify(b.getEntries())).toBe(JSON.stringify(a.getEntries()));
  });

  test("a hand-out started again part way, and one after an append, give the reference's entries", () => {
    const [a, b] = openBoth(BIG);
    // The branch of an entry part way, then the whole branch, then from the other end.
    expect(JSON.stringify(b.getBranch("e4500"))).toBe(JSON.stringify(a.getBranch("e4500")));
    b.appendMessage({ role: "user", content: "after", timestamp: 1 });
    a.appendMessage({ role: "user", content: "after", timestamp: 1 });
    const [ea, eb] = [a.getEntries(), b.getEntries()];
    expect(eb.length).toBe(ea.length);
    expect(eb.map((e) => e.id === undefined)).toEqual(ea.map((e) => e.id === undefined));
    const strip = (e) => ({ ...e, id: undefined, parentId: undefined, timestamp: undefined });
    expect(JSON.stringify(eb.map(strip))).toBe(JSON.stringify(ea.map(strip)));
  });
});
