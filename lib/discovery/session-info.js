"use strict";
// A native listing record -> the reference's SessionInfo, with lazily produced texts.
//
// A SessionInfo's `firstMessage` and `allMessagesText` are the only large values of a
// listing (101 million characters for 10,000 sessions, built whether or not the caller
// reads them). They are produced when first read: each is an enumerable accessor,
// defined in the reference's key order, whose getter reads the text (Rust, a pass over the
// session file that keeps the text: `discoveryText`) and replaces itself with a data
// property holding it. Every use that reads values sees the reference's object:
// `JSON.stringify`, spread, `Object.assign`, `structuredClone`, `Object.keys` / `entries`
// (order included), `for...in`, deep equality; `util.inspect` too, through a
// non-enumerable `util.inspect.custom` that makes the texts data properties, removes
// itself and lets inspect print the now plain object. What can tell: a descriptor read
// (`Object.getOwnPropertyDescriptor`) before the first read, `Reflect.ownKeys` /
// `Object.getOwnPropertySymbols` (the inspect symbol, until the first inspect), and an
// assignment to a text of a frozen SessionInfo, which throws TypeError as in strict mode
// (an accessor cannot know the caller's mode). __test__/store-scale.test.mjs holds the
// objects against the reference's.
//
// Which text: the bytes the listing saw (same size, mtime, ctime and inode; or, for a file
// that has only grown since, its first listed bytes, checked by a fingerprint: pi appends
// to the session it works in), so the text is exactly what the reference built at list
// time. A file rewritten or replaced since gives the text it holds when read (what a new
// listing would show); a deleted, unreadable or no-longer-session file gives no text
// (`firstMessage` "(no messages)", `allMessagesText` ""), as a session without messages.

const { statSync } = require("node:fs");
const native = require("../native.js");
const { PrivateSlot, dataProperty, hiddenValue, sharedAccessor } = require("../lazy-props.js");

const INSPECT = Symbol.for("nodejs.util.inspect.custom");
/** `discoveryText`'s `which` (src/discovery.rs `ListedText`); also the index of a kept text. */
const FIRST = native.ListedText.FirstMessage;
const ALL = native.ListedText.AllMessagesText;
const WHICH = { firstMessage: FIRST, allMessagesText: ALL };

function readText(path, key, which) {
  const t = native.discoveryText(path, key, which);
  if (which === FIRST) return t || "(no messages)";
  return t ?? "";
}

/**
 * A lazy text's getter. The SessionInfo's slot (`PrivateSlot`, lib/lazy-props.js) holds
 * [path, text key, firstMessage kept, allMessagesText kept] (one field: one shape step).
 */
function getText(self, prop) {
  const h = PrivateSlot.holder(self);
  if (h === undefined) return undefined;
  const src = PrivateSlot.of(h);
  const which = WHICH[prop];
  const kept = src[2 + which];
  if (kept !== undefined) return kept;
  const v = readText(src[0], src[1], which);
  // From now on a plain data property, as the reference's; a frozen or sealed object
  // keeps the accessor and the value is kept in the slot.
  if (!Reflect.defineProperty(h, prop, dataProperty(v))) src[2 + which] = v;
  return v;
}

/**
 * A lazy text's setter: as an assignment to a data property, on the object itself or an
 * own property of an object that inherits from it; a frozen object refuses it (strict
 * mode's TypeError).
 */
function setText(self, prop, v) {
  if (!Reflect.defineProperty(self, prop, dataProperty(v))) {
    throw new TypeError(`Cannot assign to read only property '${prop}' of object '#<Object>'`);
  }
}

const LAZY_FIRST = sharedAccessor("firstMessage", getText, setText);
const LAZY_ALL = sharedAccessor("allMessagesText", getText, setText);

/** `util.inspect.custom` of a SessionInfo with lazy texts: read them, then print it plainly. */
function inspectPlain() {
  void this.firstMessage;
  void this.allMessagesText;
  Reflect.deleteProperty(this, INSPECT);
  return this;
}
const INSPECT_PLAIN = hiddenValue(inspectPlain);

/** A value of a remembered header, as a fresh `JSON.parse` would give it (not shared). */
const fresh = (v) => (typeof v === "object" && v !== null ? structuredClone(v) : v);

// A native record's slots (src/discovery.rs `RecordSlot`), read once.
const S_HEADER = native.RecordSlot.Header;
const S_NAME = native.RecordSlot.Name;
const S_COUNT = native.RecordSlot.Count;
const S_ACTIVITY = native.RecordSlot.Activity;
const S_DEFERRED = native.RecordSlot.Deferred;
const S_FIRST_LENGTH = native.RecordSlot.FirstLength;
const S_ALL_LENGTH = native.RecordSlot.AllLength;
const S_KEEP = native.RecordSlot.Keep;
const S_TEXT_KEY = native.RecordSlot.TextKey;

/**
 * A native record -> the reference's SessionInfo (or null), same keys in the same order.
 * Record (parsed from the native JSON): an array of `RecordSlot`s (header object, name | 0,
 * count, activity, deferred timestamps | 0, firstMessage length, allMessagesText length,
 * keep 1 | 0, text key). `shared`: the record was remembered from an earlier listing.
 */
function toSessionInfo(filePath, r, stats, shared) {
  if (!r) return null;
  try {
    const header = r[S_HEADER];
    let lastActivityTime = r[S_ACTIVITY];
    if (r[S_DEFERRED] !== 0) {
      for (const ts of r[S_DEFERRED]) {
        const t = new Date(ts).getTime();
        if (!Number.isNaN(t)) lastActivityTime = Math.max(lastActivityTime, t);
      }
    }
    const name = r[S_NAME] === 0 ? undefined : r[S_NAME].trim() || undefined;
    const cwd = typeof header.cwd === "string" ? header.cwd : "";
    const id = shared ? fresh(header.id) : header.id;
    const parentSessionPath = shared ? fresh(header.parentSession) : header.parentSession;
    const headerTime = typeof header.timestamp === "string" ? new Date(header.timestamp).getTime() : NaN;
    const modified =
      lastActivityTime > 0
        ? new Date(lastActivityTime)
        : !Number.isNaN(headerTime)
          ? new Date(headerTime)
          : (stats ?? statSync(filePath)).mtime;
    const created = new Date(header.timestamp);
    // An empty text is a plain value; a text is lazy (any first user text is in all texts).
    if (r[S_ALL_LENGTH] === 0) {
      return {
        path: filePath,
        id,
        cwd,
        name,
        parentSessionPath,
        created,
        modified,
        messageCount: r[S_COUNT],
        firstMessage: "(no messages)",
        allMessagesText: "",
      };
    }
    let info;
    if (r[S_FIRST_LENGTH] === 0) {
      info = {
        path: filePath,
        id,
        cwd,
        name,
        parentSessionPath,
        created,
        modified,
        messageCount: r[S_COUNT],
        firstMessage: "(no messages)",
      };
    } else {
      info = { path: filePath, id, cwd, name, parentSessionPath, created, modified, messageCount: r[S_COUNT] };
      Object.defineProperty(info, "firstMessage", LAZY_FIRST);
    }
    Object.defineProperty(info, "allMessagesText", LAZY_ALL);
    Object.defineProperty(info, INSPECT, INSPECT_PLAIN);
    new PrivateSlot(info, [filePath, r[S_TEXT_KEY], undefined, undefined]);
    return info;
  } catch {
    return null;
  }
}

module.exports = { toSessionInfo, S_KEEP, S_TEXT_KEY };
