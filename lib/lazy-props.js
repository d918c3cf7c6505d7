"use strict";
// The one lazy-property toolkit: objects handed to callers (session entries, SessionInfos)
// whose large values are produced when first read, yet look like the reference's plain
// objects to every use that reads values (JSON, spread, structuredClone, Object.keys, deep
// equality, util.inspect).
//
// - `PrivateSlot`: a record attached to an object as a private field. `new PrivateSlot(o, v)`
//   adds the field to `o` itself (the base constructor returns the object it is given).
//   V8 keeps it like a property that nothing else sees: not `Object.keys`,
//   `Reflect.ownKeys`, JSON, spread, `structuredClone` or `util.inspect`. Measured on the
//   100 MB session's branch (46,436 entries): 66 ms to make the entries this way against
//   87 ms with a WeakMap from object to record; and the accessors can stay shared functions
//   (one hidden class for all objects), where a closure per object cost 3x.
// - `sharedAccessor`: one accessor descriptor per (kind, key), shared by every object.
// - `dataProperty` / `hiddenValue`: the descriptors of a plain data property and of a
//   non-enumerable method (`util.inspect.custom`).

class ReturnsItsArgument {
  constructor(o) {
    return o;
  }
}

class PrivateSlot extends ReturnsItsArgument {
  #value;

  constructor(o, value) {
    super(o);
    this.#value = value;
  }

  /** The value attached to `o` itself, or undefined. */
  static of(o) {
    return o !== null && typeof o === "object" && #value in o ? o.#value : undefined;
  }

  /**
   * The object a read of `obj` reaches: `obj` itself or the nearest object it inherits from
   * that has a slot (an accessor's `this` may be `Object.create(owner)`), or undefined.
   */
  static holder(obj) {
    for (let o = obj; o !== null && typeof o === "object"; o = Object.getPrototypeOf(o)) {
      if (#value in o) return o;
    }
    return undefined;
  }
}

/**
 * Where an object made by a hand-out stands in it: the hand-out (`group`) and the position in
 * it, as two private fields (lib/lazy-entries.js). Two fields in the object rather than one
 * pointing at a record object of its own: a record was 72 bytes and an allocation for each
 * of a giant session's 290,000 lazy entries.
 */
class EntrySlot extends ReturnsItsArgument {
  #group;
  #pos;

  constructor(o, group, pos) {
    super(o);
    this.#group = group;
    this.#pos = pos;
  }

  /** `o`'s hand-out (`o` has a slot: see `holder`). */
  static group(o) {
    return o.#group;
  }

  /** `o`'s position in its hand-out. */
  static pos(o) {
    return o.#pos;
  }

  /** As `PrivateSlot.holder`: `obj` or the nearest object it inherits from with a slot. */
  static holder(obj) {
    for (let o = obj; o !== null && typeof o === "object"; o = Object.getPrototypeOf(o)) {
      if (#group in o) return o;
    }
    return undefined;
  }
}

/** The descriptor of an ordinary data property holding `value`. */
const dataProperty = (value) => ({ value, writable: true, enumerable: true, configurable: true });

/** The descriptor of a non-enumerable, replaceable method (e.g. `util.inspect.custom`). */
const hiddenValue = (value) => ({ value, writable: true, enumerable: false, configurable: true });

/**
 * An enumerable, configurable accessor whose functions are shared by every object that
 * gets it: `get(self, key)` and `set(self, key, value)` receive the receiver and the key.
 * Callers cache the descriptor per key so that objects keep one hidden class.
 */
function sharedAccessor(key, get, set) {
  return {
    get() {
      return get(this, key);
    },
    set(v) {
      set(this, key, v);
    },
    enumerable: true,
    configurable: true,
  };
}

module.exports = { PrivateSlot, EntrySlot, dataProperty, hiddenValue, sharedAccessor };
