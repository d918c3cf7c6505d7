"use strict";
// The entry objects a SessionManager has handed out or been given, by Rust's entry index, so
// repeated calls return the very same objects (the reference's object identity). Entries are
// parsed from Rust's texts lazily, once, many in one batch.
const { parseEntries } = require("./materialize.js");
const { stats } = require("./read-stats.js");

class EntryCache {
  /**
   * `core`: the NativeSession whose texts are read (never a hand-over of queued appends:
   * every index asked for comes from a Rust answer). `shells`: lib/lazy-entries.js `Shells`.
   * `changedUnderUs(err)`: maps a text that no longer parses to the session's EIO.
   */
  constructor(core, shells, changedUnderUs) {
    this.core = core;
    this.shells = shells;
    this.changedUnderUs = changedUnderUs;
    this.reset(0);
  }

  /** Forget every object; Rust now holds `length` entries (of which nothing is parsed). */
  reset(length) {
    /** The current leaf's branch: `{ leaf, n, arr }` (see SessionManager `_leafBranch`). */
    this.branch = null;
    /** The current leaf's context plan: `{ leaf, n, plan }` (see SessionManager `_leafPlan`). */
    this.plan = null;
    // Unfilled entries move to a retired copy before Rust's entries are replaced
    // (`Shells.settle`); one left here would read another entry's text, so it is cut off.
    this.shells.detach();
    /**
     * Entry index -> object (sparse). Sized to the entries up front: an empty array written
     * first at an index past ~1,024 turns into a slow dictionary-mode array in V8.
     */
    this.objs = new Array(length);
    /**
     * Entry index -> the hand-out of an entry handed out unfilled (lib/lazy-entries.js), as
     * its number in `handOuts` (0: none), and its position in that hand-out. Two typed
     * arrays, 8 bytes an entry, where two arrays of references took 16 (a giant session's
     * 354,000 entries: 2.8 MB less). They grow if an index past them is handed out.
     */
    this.handOuts = [undefined];
    this.handOutOf = new Uint32Array(length);
    this.positions = new Uint32Array(length);
    /** getEntries() result once fully materialized (copied on return). */
    this.entries = null;
    /**
     * id -> entry object for ids already looked up or appended. With `idsComplete`, it also
     * has every other id of the session (as a key whose value is undefined), so a fresh id
     * candidate is checked without asking Rust.
     */
    this.byId = new Map();
    this.idsComplete = false;
  }

  /** Known objects for the first entries (a load from objects: same objects handed back). */
  adopt(objs) {
    this.objs = objs.slice();
  }

  /** Give `byId` every id key Rust holds (`keys`, once per load). */
  completeIds(keys) {
    for (const k of keys) if (!this.byId.has(k)) this.byId.set(k, undefined);
    this.idsComplete = true;
  }

  /** An entry appended at index `i` (its id already drawn and checked). */
  appended(i, entry) {
    this.objs[i] = entry;
    if (this.entries !== null) this.entries.push(entry);
    this.byId.set(entry.id, entry);
  }

  /** Entries Rust took at `start`, `start + 1`, ... (queued appends handed over). */
  placeRun(start, entries) {
    const objs = this.objs;
    for (let k = 0; k < entries.length; k++) objs[start + k] = entries[k];
  }

  /** The object of Rust's entry `i`, parsed whole if not known yet. */
  obj(i) {
    let o = this.objs[i];
    if (o === undefined) {
      const text = this.core.line(i);
      // No text: it could not be read back (its file was cut or overwritten under us).
      if (text == null) throw this.changedUnderUs(new SyntaxError("entry text could not be read back"));
      try {
        o = JSON.parse(text);
      } catch (err) {
        throw this.changedUnderUs(err);
      }
      stats.parsedWhole++;
      this.objs[i] = o;
    }
    return o;
  }

  /**
   * Objects for entry indices, making the missing ones in one batch. With `lazy` (what the
   * public getters hand out), entries with heavy values come as shells whose heavy values are
   * parsed when first read (lib/lazy-entries.js); without it (the context, which reads every
   * selected message), objects are parsed whole and shells among them filled.
   */
  objsAt(indices, lazy = false) {
    const missing = [];
    const shells = this.shells;
    const check = !lazy && shells.groups.size > 0;
    let unfilled = false;
    for (const i of indices) {
      const o = this.objs[i];
      if (o === undefined) missing.push(i);
      else if (check && shells.unfilled(this.handOut(i), this.positions[i])) unfilled = true;
    }
    if (missing.length > 0) this.parseBatch(missing, lazy);
    const out = new Array(indices.length);
    for (let k = 0; k < indices.length; k++) out[k] = this.objs[indices[k]];
    if (unfilled) shells.fill(Array.from(indices, (i) => [this.handOut(i), this.positions[i]]));
    return out;
  }

  /** The hand-out entry `i` was handed out unfilled by, or undefined. */
  handOut(i) {
    const h = this.handOutOf[i];
    return h ? this.handOuts[h] : undefined;
  }

  /** Entry `i` was handed out unfilled at position `pos` of hand-out number `h`. */
  _setHandOut(i, h, pos) {
    if (i >= this.handOutOf.length) {
      const n = Math.max(i + 1, this.handOutOf.length * 2);
      const of = new Uint32Array(n);
      of.set(this.handOutOf);
      const at = new Uint32Array(n);
      at.set(this.positions);
      this.handOutOf = of;
      this.positions = at;
    }
    this.handOutOf[i] = h;
    this.positions[i] = pos;
  }

  parseBatch(missing, lazy = false) {
    const want = Uint32Array.from(missing);
    const objs = this.objs;
    let gone = false;
    /** This batch's hand-out's number in `handOuts` (0: none yet). */
    let h = 0;
    const put = (k, o, group) => {
      if (o === null) gone = true;
      else {
        objs[want[k]] = o;
        if (group !== undefined) {
          if (h === 0) {
            h = this.handOuts.length;
            this.handOuts.push(group);
          }
          this._setHandOut(want[k], h, k);
        }
      }
    };
    try {
      if (lazy && this.shells.enabled) this.shells.make(want, put, objs);
      else parseEntries(this.core, want, put);
    } catch (err) {
      throw this.changedUnderUs(err);
    }
    // A text that can no longer be read back (its file was cut or overwritten under this
    // session): the EIO of that read, as a single-entry read reports it.
    if (gone) for (const i of missing) if (this.objs[i] === undefined) this.obj(i);
  }
}

module.exports = { EntryCache };
