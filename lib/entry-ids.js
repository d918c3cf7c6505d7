"use strict";
// Entry ids: drawing new ones as the reference does, and the keys ids have in Rust's id space.
// `crypto` is looked up at call time (not destructured) so a test can stub
// `crypto.randomUUID`, as it can for the reference after `syncBuiltinESMExports()`.
const crypto = require("node:crypto");

/** One id candidate as the reference draws it: the first 8 characters of a random UUID. */
function drawShortId() {
  return crypto.randomUUID().slice(0, 8);
}

/**
 * The reference's id loop: short candidates from try `first` on until one is not `taken`
 * (100 tries), then a whole UUID, unchecked.
 */
function drawFreshId(taken, first = 0) {
  for (let i = first; i < 100; i++) {
    const id = drawShortId();
    if (!taken(id)) return id;
  }
  return crypto.randomUUID();
}

/**
 * A label id for `createBranchedSession` as the reference draws it: a short candidate, or the
 * whole UUID as its last resort (`full`). Rust's text route (`branchInto`) calls it too, so
 * both routes draw the same ids from the same `crypto.randomUUID` (a test may stub it).
 */
function drawLabelId(full) {
  return full ? crypto.randomUUID() : drawShortId();
}

/**
 * Key of a JS id value in Rust's id space. String ids are themselves; other primitives get a
 * tagged key that follows `Map` equality; objects never match anything.
 */
function keyOf(v) {
  switch (typeof v) {
    case "string":
      return v;
    case "undefined":
      return "\u0000undefined";
    case "number":
      return `\u0000n${String(v)}`;
    case "boolean":
      return `\u0000${v}`;
    default:
      return v === null ? "\u0000null" : "\u0000obj-unmatchable";
  }
}

/** Whether `key` (from Rust) is a tagged key of a non-string id (see `keyOf`). */
function isTaggedKey(key) {
  return key.startsWith("\u0000");
}

/**
 * An id that reaches Rust as the same key its JSON text would give (no lone surrogates) and
 * can travel in a newline-separated batch (lib/append-queue.js).
 */
function plainId(id) {
  return typeof id === "string" && !/[\n\ud800-\udfff]/.test(id);
}

module.exports = { drawShortId, drawFreshId, drawLabelId, keyOf, isTaggedKey, plainId };
