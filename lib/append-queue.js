"use strict";
// In-memory appends not yet handed to Rust. An in-memory session's append of a type Rust
// indexes by fields alone (lib/field-codes.js) makes no native call: the entry joins the queue,
// and the next use of Rust hands the whole queue over in one `appendFieldsBatch`. A context
// built while the queue extends Rust's leaf needs no hand-over at all (`plan`). It earns its
// keep: BENCHMARKS.md "In-memory append queue" measures it against
// one `appendFields` call per append.
const { FieldKind, FieldRole } = require("./field-codes.js");
const { BatchParent, IDS_NOT_SPLIT } = require("./native.js");
const { keyOf } = require("./entry-ids.js");

/**
 * Per queued entry `k`, what Rust will index is taken when it is appended, as a persisted
 * append takes it from the line it writes (a field changed on the object later is not seen by
 * Rust's walks): kind and role codes (`kinds`, `roles`; typed arrays grown by doubling), the id
 * key (`ids`) and the parent (`parents`: `BatchParent.Null`, `BatchParent.Previous` (the id of entry `k - 1`), else an index into
 * `parentKeys`), the arguments of `appendFieldsBatch`. And, for a context built without handing
 * them over (`plan`): the key of the first one's parent (`anchor`), whether each later one's
 * parent is the one before (`chain`), and the positions of the last thinking-level entry and of
 * the last model-setting one (`lastThinking`, `lastModel`; -1: none).
 *
 * Gathering this in `push`, a small function every append runs, keeps the hand-over a copy: a
 * loop over 10,000 objects in `handOver`, run once per batch, mostly ran before V8 had
 * optimized it (~0.4 µs an entry).
 */
class AppendQueue {
  constructor() {
    this.kinds = undefined;
    this.clear();
  }

  get length() {
    return this.entries.length;
  }

  /** Empty the queue (after a hand-over). */
  clear() {
    /** The queued entry objects, in append order. */
    this.entries = [];
    this.ids = [];
    this.parentKeys = [];
    this.anchor = null;
    this.chain = true;
    this.lastThinking = -1;
    this.lastModel = -1;
    if (this.kinds === undefined || this.kinds.length > 4096) this._size(64);
  }

  /** Room for `n` queued entries in the code arrays, keeping what they hold. */
  _size(n) {
    const kinds = new Uint8Array(n);
    const roles = new Uint8Array(n);
    const parents = new Int32Array(n);
    if (this.kinds !== undefined && this.entries.length !== 0) {
      kinds.set(this.kinds);
      roles.set(this.roles);
      parents.set(this.parents);
    }
    this.kinds = kinds;
    this.roles = roles;
    this.parents = parents;
  }

  /** Queue `entry` (id final) with its `appendFields` kind and role codes. */
  push(entry, kind, role) {
    const k = this.entries.length;
    if (k === this.kinds.length) this._size(k * 2);
    this.kinds[k] = kind;
    this.roles[k] = role;
    const ids = this.ids;
    const p = entry.parentId;
    if (p === null) this.parents[k] = BatchParent.Null;
    else if (k > 0 && p === ids[k - 1]) this.parents[k] = BatchParent.Previous;
    else this.parents[k] = this.parentKeys.push(keyOf(p)) - 1;
    if (k === 0) this.anchor = p === null ? null : keyOf(p);
    else if (this.parents[k] !== BatchParent.Previous) this.chain = false;
    // The reference's walk ends at a falsy parentId (0, "", false, undefined), Rust's plan for
    // such a leaf does not: those queues are handed over for a context.
    if (p !== null && !p) this.chain = false;
    if (kind === FieldKind.ThinkingLevelChange) this.lastThinking = k;
    else if (kind === FieldKind.ModelChange || (kind === FieldKind.Message && role === FieldRole.Assistant))
      this.lastModel = k;
    ids.push(keyOf(entry.id));
    this.entries.push(entry);
  }

  /**
   * Hand the queue to Rust's `core` in one call and empty it. The ids go as one `\n`-joined
   * string (cheapest to hand over; Rust answers `IDS_NOT_SPLIT` if an id held a newline, and they go again
   * as an array). Returns Rust's index of the first entry and the entries handed over.
   */
  handOver(core) {
    const entries = this.entries;
    const n = entries.length;
    const kinds = this.kinds.subarray(0, n);
    const roles = this.roles.subarray(0, n);
    const parents = this.parents.subarray(0, n);
    const ids = this.ids;
    let start = core.appendFieldsBatch(kinds, roles, ids.join("\n"), parents, this.parentKeys);
    if (start === IDS_NOT_SPLIT) start = core.appendFieldsBatch(kinds, roles, ids, parents, this.parentKeys);
    this.clear();
    return { start, entries };
  }

  /**
   * Rust's context plan for the leaf the queued appends started from, when they extend it as
   * they are: then the context is that plan followed by the queued entries, and nothing is
   * handed over (a run of in-memory appends and a context, pi's turn, costs no batch). That
   * holds when the queue is one chain (each entry's parent the one before), its first entry's
   * parent is Rust's leaf and an entry of Rust's (or null: a path of queued entries only), and
   * no selected `context_edit` targets a queued id. Queued entries are never compactions,
   * labels or edits (not field kinds), so they cannot change what is selected before them;
   * they come after it on the path and are all selected, and the last thinking-level and model
   * entries among them win (`getSessionContextSettings`). `null` otherwise (the caller hands
   * the queue over and asks again).
   */
  plan(core) {
    if (this.entries.length === 0 || !this.chain) return null;
    const anchor = this.anchor;
    if (core.leafKey() !== anchor || (anchor !== null && core.indexOf(anchor) === null)) return null;
    const plan = core.contextPlan();
    const targets = plan.editTargets;
    if (targets.length !== 0) {
      const queuedIds = new Set(this.ids);
      if (targets.some((t) => queuedIds.has(t))) return null;
    }
    return plan;
  }
}

module.exports = { AppendQueue };
