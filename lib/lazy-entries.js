"use strict";
// Entry objects that cost what the caller reads.
//
// `getBranch()`, `getEntries()`, `getChildren()` and `getTree()` hand out plain objects built
// from *shells* (crates/core/src/entry.rs `shell_of`): the entry's JSON with each heavy top-level value
// (an object, array or string of 128+ bytes: `message`, `summary`, `data`, `details`...)
// left out, plus the names of those keys; a `message` object with heavy values of its own is
// shelled the same way, so `entry.message.role` costs nothing either (pi reads it for every
// branch entry at start-up). The shells reach JS as *shapes* (crates/core/src/shapes.rs,
// lib/shapes.js): a layout compiled once per session into a function that makes the object,
// and per entry only its values. Each heavy key becomes an enumerable,
// configurable accessor in its place in the key order; the first read of any of them parses
// the entry's whole text once and turns every heavy key of that entry into the ordinary data
// property the reference has (same value, writable, enumerable, configurable). So `type`,
// `id`, `parentId`, `timestamp`, `customType`... cost nothing more, and indexing, iteration,
// `some`/`find`/`filter`, spread, `Object.keys`/`entries`, `JSON.stringify`,
// `structuredClone` and `util.inspect` see the reference's object (they read through the
// accessors). Assigning to a heavy key replaces the accessor with that value, and a later
// fill leaves it (and a deleted key) alone.
//
// What still differs before the first read (docs/compatibility.md): property descriptors of
// the heavy keys (`get`/`set`), and one non-enumerable own symbol (`util.inspect.custom`,
// so console.log shows values, not `[Getter/Setter]`), removed when the entry is filled.
// Frozen or sealed before the first read, an entry keeps its accessors (they can no longer
// be replaced) and they return the parsed values.
//
// Reads come in runs (a caller walking the whole branch, from either end): after a few
// single reads in one hand-out, the next entries in the direction of travel are parsed
// together in a window that doubles, so a whole-branch read costs about what parsing it
// eagerly costs, and a few reads from the end cost a few entries.

const { inspect } = require("node:util");
const { EntrySlot, dataProperty, hiddenValue, sharedAccessor } = require("./lazy-props.js");
const { compileShape } = require("./shapes.js");
const { stats } = require("./read-stats.js");

/** First reads of one hand-out served one entry at a time before windows start. */
const SINGLE_READS = 8;
/** First and largest window of entries parsed together. */
const FIRST_WINDOW = 64;
const MAX_WINDOW = 8192;

/** `linesText` forms and per-entry flags, and its position of an unreadable text (src/codes.rs). */
const { TextForm, UNREADABLE, SHAPED, UNREAD: UNREAD_FORM } = require("./native.js");
const FORM_SHELLS = TextForm.Shell;
const FORM_VALUES = TextForm.Values;

/**
 * The shells of one session: makes entry objects from `shapesText(want)` batches and fills
 * them when read. `core` is the NativeSession; `changedUnderUs(err)` maps a parse error of a
 * text that changed on disk to the EIO the session reports.
 *
 * An entry with lazy keys is known by its hand-out (`group`, `newGroup`) and its position in
 * it: the objects with lazy keys (the entry, its message) carry both (`EntrySlot`), and the
 * hand-out keeps per position the entry's index, its shape (lib/shapes.js: which keys are
 * lazy, in the order Rust lays out their values), its two objects and whether it is still
 * unfilled. Nothing else per entry is kept: no record object per entry.
 */
class Shells {
  constructor(core, changedUnderUs) {
    this.core = core;
    this.changedUnderUs = changedUnderUs;
    /** PI_SESSION_NATIVE_LAZY=0: every entry parsed whole (for a caller that reads entries through a Proxy). */
    this.enabled = process.env.PI_SESSION_NATIVE_LAZY !== "0";
    /** Hand-outs that still hold unfilled entries (each: its records in order, `open` count). */
    this.groups = new Set();
    /** The core's shapes, compiled (lib/shapes.js), and its interned strings, by id. */
    this.shapes = [];
    this.interned = [];
  }

  /**
   * Objects for the entries at `want` (a Uint32Array): `put(k, object, group)` for each
   * position k (`null` for a text that could not be read), which must store the object at
   * `objs[want[k]]`; entries with lazy keys come unfilled, with their hand-out (the caller
   * keeps it and k by entry index: `unfilled`, `fill`). A piece of entries is one flat JSON
   * array of values: one parse per piece.
   */
  make(want, put, objs) {
    const group = newGroup(this, want, objs);
    /** The previous entry's `id` for the next entry's `parentId` (lib/shapes.js). */
    const L = { prev: "", next: "" };
    for (let s = 0; s < want.length; ) {
      const b = this.core.shapesText(s === 0 ? want : want.subarray(s));
      const { forms, shapes: ids, refs, pool: P, starts: S, nums: F, ints: I } = b;
      const n = forms.length;
      if (n === 0) throw new Error("internal: empty entry shape batch");
      this._learn(b);
      const A = JSON.parse(b.text);
      const T = this.interned;
      let a = 0;
      let r = 0;
      let o = 0;
      let f = 0;
      let i = 0;
      for (let k = 0; k < n; k++) {
        const form = forms[k];
        if (form === SHAPED) {
          const shape = this.shapes[ids[k]];
          if (shape.build === null) {
            put(s + k, this._parseWhole(this.core, want[s + k]));
          } else if (shape.lazy) {
            const g = s + k;
            group.shapeIds[g] = ids[k];
            group.unfilled[g] = 1;
            group.open++;
            put(g, shape.build(A, a, T, refs, r, P, S, o, F, f, I, i, group, g, L), group);
          } else {
            put(s + k, shape.build(A, a, T, refs, r, P, S, o, F, f, I, i, null, 0, L));
          }
          a += shape.na;
          r += shape.nr;
          o += shape.ns;
          f += shape.nn;
          i += shape.ni;
        } else if (form === UNREAD_FORM) {
          put(s + k, null);
        } else if (form === FORM_SHELLS) {
          // A shell no shape can carry (a rare key): the entry is read whole.
          a++;
          put(s + k, this._parseWhole(this.core, want[s + k]));
        } else {
          put(s + k, A[a++]);
        }
      }
      if (a !== A.length || r !== refs.length || o + 1 !== S.length || f !== F.length || i !== I.length)
        throw new Error("internal: entry shape batch not consumed exactly");
      stats.handedOut += n;
      s += n;
    }
    if (group.open > 0) this.groups.add(group);
  }

  /** Take the shapes and strings a `shapesText` batch registered. */
  _learn(b) {
    if (b.newInterned !== "") {
      if (b.internedBase !== this.interned.length) throw new Error("internal: interned strings out of step");
      for (const t of JSON.parse(`[${b.newInterned}]`)) this.interned.push(t);
    }
    if (b.newShapes !== "") {
      if (b.shapeBase !== this.shapes.length) throw new Error("internal: entry shapes out of step");
      for (const layout of JSON.parse(`[${b.newShapes}]`)) this.shapes.push(compileShape(layout, SHAPE_TOOLS));
    }
  }

  /** Whether the entry at position `g` of hand-out `group` (from `make`; undefined: none) is not filled yet. */
  unfilled(group, g) {
    return group !== undefined && group.unfilled[g] === 1;
  }

  /**
   * Fill the unfilled entries among those at `refs` (hand-out and position pairs, `[group,
   * g]`; a group undefined: none) in one batch.
   */
  fill(refs) {
    const todo = [];
    for (const ref of refs) if (this.unfilled(ref[0], ref[1]) && ref[0].error === null) todo.push(ref);
    if (todo.length > 0) this._fillBatch(todo);
  }

  /**
   * Before the session's entries are replaced (load, new session, branch), after which an
   * index no longer names the entry a shell was made from: the unfilled entries handed out
   * so far go on reading from a retired copy of the entries as they are now (Rust's
   * `retire`: the texts are shared, not copied), which lives as long as they do. Filling
   * them all here instead cost a 100 MB session ~420 ms and ~60 MB at pi's /new.
   */
  settle() {
    if (this.groups.size === 0) return;
    const retired = this.core.retire();
    for (const g of this.groups) {
      g.core = retired;
      keepTops(g);
    }
    this.groups.clear();
  }

  /**
   * The session's entries were replaced without `settle` (a bug): unfilled entries can no
   * longer be filled, and throw when read instead of reading another entry's text.
   */
  detach() {
    if (this.groups.size === 0) return;
    const err = new Error("internal: the session's entries were replaced before this entry was read");
    for (const g of this.groups) g.error = err;
    this.groups.clear();
  }

  // ---------------------------------------------------------------------------------------

  /** Entry `index`'s whole text from `core`, parsed. */
  _parseWhole(core, index) {
    const text = core.line(index);
    if (text == null) throw this.changedUnderUs(new SyntaxError("entry text could not be read back"));
    try {
      return JSON.parse(text);
    } catch (err) {
      throw this.changedUnderUs(err);
    }
  }

  /** Fill the entry at position `g` of `group` (an accessor of it was read). */
  _read(group, g) {
    if (group.error !== null) throw group.error;
    this._load(group, g);
  }

  /** A first read: this entry alone, or a window of its neighbours in a run of reads. */
  _load(group, g) {
    const forward = g >= group.last;
    group.last = g;
    if (++group.reads <= SINGLE_READS) {
      this._fillOne(group, g);
      return;
    }
    const refs = [[group, g]];
    const step = forward ? 1 : -1;
    const { unfilled } = group;
    for (let p = g + step; refs.length < group.window && p >= 0 && p < unfilled.length; p += step) {
      if (unfilled[p] === 1) refs.push([group, p]);
    }
    group.window = Math.min(group.window * 2, MAX_WINDOW);
    this._fillBatch(refs);
  }

  _fillOne(group, g) {
    if (group.unfilled[g] !== 1) return;
    this._apply(group, g, this._parseWhole(group.core, group.want[g]));
  }

  /** Fill entries (`[group, g]` pairs) in one batch: Rust hands over just the values their shells left out. */
  _fillBatch(refs) {
    // Entries of a retired session read from it (see `settle`): one batch per session.
    const core = refs[0][0].core;
    const other = refs.filter((r) => r[0].core !== core);
    if (other.length > 0) {
      this._fillBatch(refs.filter((r) => r[0].core === core));
      this._fillBatch(other);
      return;
    }
    const want = Uint32Array.from(refs, ([group, g]) => group.want[g]);
    let gone = false;
    try {
      eachEntry(core, want, FORM_VALUES, (k, value, form) => {
        const [group, g] = refs[k];
        if (form === UNREAD) gone = true;
        else if (group.unfilled[g] !== 1) return;
        else if (form !== FORM_VALUES) this._apply(group, g, value);
        // The values in the order the shell left them out; anything else is not ours to
        // guess at: the entry is read whole.
        else if (Array.isArray(value) && value.length === this.shapes[group.shapeIds[g]].lazyKeys.length)
          this._applyValues(group, g, value);
        else this._fillOne(group, g);
      });
    } catch (err) {
      throw this.changedUnderUs(err);
    }
    // A text that can no longer be read: the EIO of a single read.
    if (gone) for (const [group, g] of refs) if (group.unfilled[g] === 1) this._fillOne(group, g);
  }

  /** `_apply` from the left-out values alone, in the shape's order of its lazy keys. */
  _applyValues(group, g, values) {
    const { lazyKeys, lazyInMsg } = this.shapes[group.shapeIds[g]];
    const top = {};
    const msg = {};
    for (let j = 0; j < values.length; j++) (lazyInMsg[j] ? msg : top)[lazyKeys[j]] = values[j];
    this._fillObjects(group, g, top, msg);
  }

  /** Give the entry's lazy objects their heavy values (`value`: the parsed entry). */
  _apply(group, g, value) {
    this._fillObjects(group, g, value, value?.[this.shapes[group.shapeIds[g]].msgKey]);
  }

  _fillObjects(group, g, top, msg) {
    const { firstTop, firstMsg } = this.shapes[group.shapeIds[g]];
    const [entry, message] = [topAt(group, g), group.msg[g]];
    this._settled(group, g);
    // Frozen or sealed before the fill: the accessors stay and serve these values.
    if (firstTop !== undefined && !fillObject(entry, firstTop, top)) keptValues.set(entry, top ?? {});
    if (firstMsg !== undefined && !fillObject(message, firstMsg, msg)) keptValues.set(message, msg ?? {});
  }

  /**
   * Mark the entry at `g` filled (its hand-out no longer waits for it) and let go of what
   * the hand-out kept for it.
   */
  _settled(group, g) {
    stats.filled++;
    group.unfilled[g] = 0;
    group.msg[g] = undefined;
    if (group.tops !== null) group.tops[g] = undefined;
    if (--group.open === 0) {
      this.groups.delete(group);
      // Every entry is filled: nothing reads these again (the flags stay, for the accessors
      // of a frozen entry), and the objects keep their hand-out for as long as they live.
      group.shapeIds = null;
      group.objs = null;
      group.tops = null;
      group.msg = null;
    }
  }
}

/**
 * One hand-out (a `make` call of the entries at `want`): per position, the entry's index
 * (`want`), whether it is unfilled (`unfilled`, 1), its shape's id (`shapeIds`, into
 * `Shells.shapes`) and its message object (`msg`: set for entries with lazy keys, dropped
 * once filled); how many are unfilled (`open`), the run of reads, and what its unfilled
 * entries read from: `core` (a retired copy after `settle`), or `error` (after `detach`).
 * Windows of fills walk the positions.
 *
 * The entry objects themselves are not kept per position: the entry at position g is the
 * caller's `objs[want[g]]` (lib/entry-cache.js), which no one replaces while the session's
 * entries stand; `settle` copies the unfilled ones into `tops` before they are replaced. On
 * a giant session's branch (323,000 entries, 8-byte references) that is 2.6 MB less, and
 * shape ids in 2 bytes instead of references 2 MB less.
 */
function newGroup(shells, want, objs) {
  const n = want.length;
  return {
    shells,
    core: shells.core,
    error: null,
    want,
    unfilled: new Uint8Array(n),
    shapeIds: new Uint16Array(n),
    objs,
    tops: null,
    msg: new Array(n),
    open: 0,
    reads: 0,
    last: -1,
    window: FIRST_WINDOW,
  };
}

/** The entry object at position `g` of hand-out `group`. */
function topAt(group, g) {
  return group.tops !== null ? group.tops[g] : group.objs[group.want[g]];
}

/**
 * Before the session's entries (and so the caller's `objs`) are replaced: the hand-out keeps
 * its unfilled entries' objects itself, and lets go of `objs` (which held every entry of the
 * session before).
 */
function keepTops(group) {
  const { unfilled, want, objs } = group;
  if (objs === null) return;
  const tops = new Array(unfilled.length);
  for (let g = 0; g < unfilled.length; g++) if (unfilled[g] === 1) tops[g] = objs[want[g]];
  group.tops = tops;
  group.objs = null;
}

/**
 * Object (an entry or its message) -> the values read through its accessors, when it was
 * frozen or sealed before its fill: nearly no entry is, so they are kept apart from the
 * hand-outs.
 */
const keptValues = new WeakMap();

/**
 * Give one object `o` its heavy values (`value`: an object holding them) as ordinary data
 * properties, in their places; `first` is its first lazy key. The properties from the first
 * heavy key on are taken off the end (V8 then returns the object to the hidden class it had
 * before them, still fast and shared) and put back in order as data: heavy keys with the
 * parsed values, the others as they are now. A key assigned or deleted meanwhile is left as
 * the caller made it. Frozen, sealed or non-extensible objects keep their accessors (false:
 * the caller keeps the values for them to serve).
 */
function fillObject(o, first, value) {
  const keys = Reflect.ownKeys(o);
  const from = keys.indexOf(first);
  // The properties from the first heavy key on, and their descriptors, as they are now.
  /** @type {(string | symbol)[]} */
  const tailKeys = [];
  /** @type {PropertyDescriptor[]} */
  const tailDescs = [];
  // Not extensible: what is taken off could not be put back.
  let sealed = from < 0 || !Object.isExtensible(o);
  for (let j = Math.max(from, 0); j < keys.length && !sealed; j++) {
    const key = keys[j];
    const d = Object.getOwnPropertyDescriptor(o, key);
    if (!d.configurable) sealed = true;
    else if (!(key === inspect.custom && d.value === inspectShell)) {
      tailKeys.push(key);
      tailDescs.push(d);
    }
  }
  if (sealed) return false;
  for (let j = keys.length - 1; j >= from; j--) delete o[keys[j]];
  for (let j = 0; j < tailKeys.length; j++) {
    const key = tailKeys[j];
    const d = tailDescs[j];
    if (typeof key === "string" && d.get !== undefined && d.get === accessors.get(key)?.get) o[key] = value?.[key];
    else if (d.writable && d.enumerable && "value" in d) o[key] = d.value;
    else Object.defineProperty(o, key, d);
  }
  return true;
}

/** `each`'s form for an entry whose text could not be read. */
const UNREAD = -1;

/**
 * `core.linesText(want, form)` piece by piece (forms 1 and 2 separate texts by commas, so a
 * piece is one JSON array body: one parse each): `each(k, value, form)` for every position k
 * of `want`, with the form that entry's text came in, or `UNREAD` (and no value).
 */
function eachEntry(core, want, form, each) {
  for (let s = 0; s < want.length; ) {
    const { text, starts, shells } = core.linesText(s === 0 ? want : want.subarray(s), form);
    const n = starts.length;
    if (n === 0) throw new Error("internal: empty entry text batch");
    const values = JSON.parse(`[${text}]`);
    for (let k = 0, v = 0; k < n; k++) {
      if (starts[k] === UNREADABLE) each(s + k, undefined, UNREAD);
      else each(s + k, values[v++], shells[k]);
    }
    s += n;
  }
}

/**
 * The object holding the record of the entry an accessor was called on (the entry or its
 * message). `this` is that object, or an object that inherits from it (`Object.create(entry)`);
 * a Proxy whose get trap passes itself as the receiver (`Reflect.get(target, key, proxy)`) is
 * not an entry and cannot be served: that is the one use lazy entries do not support
 * (PI_SESSION_NATIVE_LAZY=0).
 */
function holderOf(self, key) {
  const holder = EntrySlot.holder(self);
  if (holder !== undefined) return holder;
  throw new TypeError(
    `pi-session-native: the lazy property '${key}' of a session entry was read through an object that is not the entry (a Proxy passing itself as receiver?); read the entry directly, or set PI_SESSION_NATIVE_LAZY=0`,
  );
}

/** key -> the accessor descriptor every unfilled entry has for that heavy key. */
const accessors = new Map();

function accessorFor(key) {
  let d = accessors.get(key);
  if (d === undefined) {
    d = sharedAccessor(key, readHeavy, writeHeavy);
    accessors.set(key, d);
  }
  return d;
}

function readHeavy(self, key) {
  const o = holderOf(self, key);
  const group = EntrySlot.group(o);
  const g = EntrySlot.pos(o);
  if (group.unfilled[g] === 1) group.shells._read(group, g);
  const values = keptValues.get(o);
  return values === undefined ? o[key] : values[key];
}

function writeHeavy(self, key, v) {
  const o = holderOf(self, key);
  // Assigning through an inheriting object defines the key on it, as for data.
  if (self !== o) {
    Object.defineProperty(self, key, dataProperty(v));
    return;
  }
  if (define(o, key, v)) return;
  // Sealed or frozen: the accessor stays. A frozen entry refuses the write as a frozen
  // data property does in strict code; a sealed one keeps the value for its getter.
  if (Object.isFrozen(o)) throw new TypeError(`Cannot assign to read only property '${key}' of object`);
  const group = EntrySlot.group(o);
  const g = EntrySlot.pos(o);
  if (group.unfilled[g] === 1) group.shells._read(group, g);
  const values = keptValues.get(o);
  if (values !== undefined) values[key] = v;
}

const INSPECT = hiddenValue(inspectShell);

/** What compiled shapes give their objects (lib/shapes.js): the same slots and accessors as `_build`. */
const SHAPE_TOOLS = { EntrySlot, accessorFor, INSPECT, inspectKey: inspect.custom };

/** Set `key` of `o` to an ordinary data property holding `value` (its place in the key order is kept). */
function define(o, key, value) {
  try {
    Object.defineProperty(o, key, dataProperty(value));
    return true;
  } catch {
    // Frozen or sealed after the shell was made: the accessor stays (and serves the value).
    return false;
  }
}

/**
 * `util.inspect` of an unfilled entry: read every key (which fills it) and let inspect
 * format the object itself, now holding only data properties.
 */
function inspectShell() {
  for (const k of Object.keys(this)) void this[k];
  return this;
}

module.exports = { Shells };
