"use strict";
// Entry objects built from *shapes* (crates/core/src/shapes.rs): Rust sends the layout of an
// entry's object (keys in order, and what each value is) once per session, then per entry
// only the values that differ. Each layout is compiled here, once, into a function that makes
// the object with a literal in the text's key order, takes repeated short strings from the
// session's table and the other values from the piece's parsed value array, and gives the
// heavy keys lazy accessors (lib/lazy-entries.js).
//
// Why: `JSON.parse` of every entry's shell made handing out a giant session's branch cost
// ~2.5 µs an entry, most of it making the same strings and matching the same keys again for
// each entry. A compiled literal per layout is what V8 makes objects fastest from.

/** A member's kind in a layout (crates/core/src/shapes.rs). */
const VALUE = 0;
const INTERNED = 1;
const LAZY = 2;
const CONSTANTS = { 3: "true", 4: "false", 5: "null" };
const STRING = 6;
const NUMBER = 7;
const INT = 8;

/** Whether a layout (array of `[key, kind]`) has a lazy member, at any depth. */
function hasLazy(members) {
  return members.some(([, kind]) => kind === LAZY || (Array.isArray(kind) && hasLazy(kind)));
}

/**
 * Compile one layout into `{ build, na, nr, ns, nn, ni, lazy, lazyKeys, lazyInMsg, firstTop,
 * firstMsg, msgKey }`. `build(A, a, T, R, r, P, S, o, F, f, I, i, G, g, L)` makes the entry from
 * the values `A[a..a+na)`, the interned strings `T[R[r..r+nr)]`, the pool strings
 * `P.slice(S[o + k], S[o + k + 1])` for k < ns, the numbers `F[f..f+nn)` and the integers
 * `I[i..i+ni)`; `L` (`{ prev, next }`, one per hand-out, `prev` "" at first) carries the
 * previous entry's `id` to the next. With `lazy`, `G` is the entry's hand-out and `g` its
 * position in it (lib/lazy-entries.js): the nested object holding lazy keys (under key
 * `msgKey`: the message) goes to `G.msg[g]`, and the entry and its message, where they have
 * lazy keys of their own, get the slot `EntrySlot(G, g)` and the shared accessors. `lazyKeys` /
 * `lazyInMsg`: the lazy keys in the order Rust lays out their values (depth first, text
 * order) and whether each is the message's; `firstTop` / `firstMsg`: the first lazy key of
 * each object (undefined: none). `tools`: `{ EntrySlot, accessorFor, INSPECT, inspectKey }`.
 */
function compileShape(layout, tools) {
  const lines = [];
  /** Accessor descriptors the function closes over (`D[k]`). */
  const descs = [];
  /** Constructors of the objects with lazy keys (`K[k]`, see `objectOf`). */
  const ctors = [];
  const lazyKeys = [];
  const lazyInMsg = [];
  let firstTop;
  let firstMsg;
  let msgKey;
  let na = 0;
  let nr = 0;
  let ns = 0;
  let nn = 0;
  let ni = 0;
  const q = JSON.stringify;

  /** Whether the entry's own `id` is a pool string (it is then kept for the next entry's `parentId`). */
  let idInPool = false;
  /** The expression of one member's value (statements for a lazy object go to `lines` first). */
  const valueExpr = (key, kind, depth) => {
    if (kind === VALUE) return `A[a + ${na++}]`;
    if (kind === INTERNED) return `T[R[r + ${nr++}]]`;
    if (kind === STRING) {
      const k = ns++;
      const from = `S[o + ${k}]`;
      const slice = `P.slice(${from}, S[o + ${k + 1}])`;
      // Entries come in runs of parent and child (a branch, a file): a `parentId` equal to
      // the previous entry's `id` is that very string, not a copy (8-char ids: 24 bytes an
      // entry of a giant session's heap). Compared in the pool, so no copy is made for it.
      if (depth === 0 && key === "id") {
        idInPool = true;
        return `(L.next = ${slice})`;
      }
      if (depth === 0 && key === "parentId")
        return `(S[o + ${k + 1}] - ${from} === L.prev.length && P.startsWith(L.prev, ${from}) ? L.prev : ${slice})`;
      return slice;
    }
    if (kind === NUMBER) return `F[f + ${nn++}]`;
    if (kind === INT) return `I[i + ${ni++}]`;
    if (Array.isArray(kind)) return objectOf(kind, key, depth + 1);
    const c = CONSTANTS[kind];
    if (c === undefined) throw new Error(`internal: unknown shape member kind ${kind}`);
    return c;
  };
  const literal = (members, depth) => members.map(([k, kind]) => `${q(k)}: ${valueExpr(k, kind, depth)}`).join(", ");

  /**
   * The expression of an object: a literal when nothing in it is lazy; else statements that
   * make it (its slot first, then its lazy keys as accessors in their places) and its name.
   * Lazy keys live in the entry (depth 0) and in one object under it (the message).
   */
  const objectOf = (members, key, depth) => {
    if (depth > 0 && !hasLazy(members)) return `{${literal(members, depth)}}`;
    const inMsg = depth > 0;
    if (depth > 1 || (inMsg && msgKey !== undefined)) throw new Error("internal: a shape with lazy keys too deep");
    if (inMsg) msgKey = key;
    const o = inMsg ? "msg" : "top";
    const firstLazy = members.findIndex(([, kind]) => kind === LAZY);
    const prefixEnd = firstLazy < 0 ? members.length : firstLazy;
    // Made by a constructor of this layout's own whose prototype is Object.prototype, not
    // by a literal: a literal has room for its own keys only, so the slot, the keys after
    // the first lazy one and util.inspect's symbol went to a second allocation (a property
    // array, ~60 bytes an entry); V8 sizes a constructor's objects to what they end up
    // holding. The object is the literal's in every way a program can see (prototype,
    // `constructor`, key order, descriptors).
    lines.push(`const ${o} = new K[${ctors.length}]();`);
    // Its fields: the members but lazy ones (accessors need none), the slot's two and
    // util.inspect's symbol.
    ctors.push(plainConstructor(members.filter(([, kind]) => kind !== LAZY).length + 3));
    // Values are taken in text order: each member's expression is made in turn.
    for (const [k, kind] of members.slice(0, prefixEnd)) lines.push(`${o}[${q(k)}] = ${valueExpr(k, kind, depth)};`);
    // The slot is on the objects whose accessors need it: the entry's hand-out and position
    // are also kept by index (lib/entry-cache.js `handOutOf`, `positions`), so an entry
    // without lazy keys of its own (its message has them) carries no slot.
    if (firstLazy >= 0) lines.push(`new EntrySlot(${o}, G, g);`);
    // The hand-out keeps the message object per position; the entry itself the caller keeps
    // by index (lib/lazy-entries.js `newGroup`).
    if (inMsg) lines.push(`G.msg[g] = ${o};`);
    for (const [k, kind] of members.slice(prefixEnd)) {
      if (kind === LAZY) {
        lines.push(`Object.defineProperty(${o}, ${q(k)}, D[${descs.length}]);`);
        descs.push(tools.accessorFor(k));
        lazyKeys.push(k);
        lazyInMsg.push(inMsg);
      } else {
        const v = valueExpr(k, kind, depth);
        lines.push(`${o}[${q(k)}] = ${v};`);
      }
    }
    if (firstLazy >= 0) {
      lines.push(`Object.defineProperty(${o}, INSPECT_KEY, INSPECT);`);
      if (inMsg) firstMsg = members[firstLazy][0];
      else firstTop = members[firstLazy][0];
    }
    return o;
  };

  const lazy = hasLazy(layout);
  try {
    const result = lazy ? objectOf(layout, null, 0) : `{${literal(layout, 0)}}`;
    // The next entry compares its `parentId` with this one's `id` (none: an empty string).
    const last = idInPool ? "L.prev = L.next;" : 'L.prev = "";';
    const body = `return function build(A, a, T, R, r, P, S, o, F, f, I, i, G, g, L) {\n${lines.join("\n")}\nconst entry = ${result};\n${last}\nreturn entry;\n};`;
    const build = new Function("EntrySlot", "D", "K", "INSPECT", "INSPECT_KEY", body)(
      tools.EntrySlot,
      descs,
      ctors,
      tools.INSPECT,
      tools.inspectKey,
    );
    return { build, na, nr, ns, nn, ni, lazy, lazyKeys, lazyInMsg, firstTop, firstMsg, msgKey };
  } catch {
    // A layout this compiler does not take (never made by Rust today): its entries are read
    // whole, their values skipped.
    const c = counts(layout, { na: 0, nr: 0, ns: 0, nn: 0, ni: 0 });
    return { build: null, ...c, lazy: false, lazyKeys, lazyInMsg, firstTop, firstMsg, msgKey };
  }
}

/**
 * A constructor whose objects are plain objects: `Object.prototype` as their prototype (so
 * `constructor` is `Object`), made empty, with room for `fields` fields. One per object of a
 * layout, so that V8's slack tracking fits its objects to exactly that layout's keys.
 */
function plainConstructor(fields) {
  // V8 gives a constructor's first objects room for as many fields as it counts `this.x =`
  // in its body (dead code counts), and later shrinks it to what they used: without this,
  // an assistant message's 10 fields spilled into a second allocation.
  const C = new Function(`if (false) { ${Array.from({ length: fields }, (_, k) => `this.f${k} = 0;`).join(" ")} }`);
  C.prototype = Object.prototype;
  Object.defineProperty(C, "name", { value: "Object" });
  return C;
}

/** How many values, interned-string refs, pool strings, numbers and integers a layout takes (added to `c`). */
function counts(members, c) {
  for (const [, kind] of members) {
    if (kind === VALUE) c.na++;
    else if (kind === INTERNED) c.nr++;
    else if (kind === STRING) c.ns++;
    else if (kind === NUMBER) c.nn++;
    else if (kind === INT) c.ni++;
    else if (Array.isArray(kind)) counts(kind, c);
  }
  return c;
}

module.exports = { compileShape };
