"use strict";
// `nowStamp`: the ISO timestamp every new entry and session header carries.

/**
 * `new Date().toISOString()`, formatted once per millisecond: appends in a loop come many to a
 * millisecond, and formatting is about half the cost of an in-memory append. The Date is made
 * every call, so a fake clock or a replaced `Date` applies as in the reference. The cache is
 * only used while the Date's `toISOString` is V8's own (unobservable, a pure function of the
 * time value, read with V8's own `getTime`): a replaced or spied `toISOString`, or a `Date`
 * class of its own, is called every time, as the reference calls it. An invalid date (NaN
 * never equals) throws the same `RangeError`.
 */
const NATIVE_TO_ISO = Date.prototype.toISOString;
const NATIVE_GET_TIME = Date.prototype.getTime;
// V8 prints its own functions as `function toISOString() { [native code] }`: the one sure sign
// at load time that nothing replaced the method before this module captured it.
const CAN_CACHE_STAMPS = /\{\s*\[native code\]\s*\}\s*$/.test(Function.prototype.toString.call(NATIVE_TO_ISO));
let lastStampMs = Number.NaN;
let lastStamp = "";
function nowStamp() {
  const d = new Date();
  if (!CAN_CACHE_STAMPS || d.toISOString !== NATIVE_TO_ISO) return d.toISOString();
  const ms = NATIVE_GET_TIME.call(d);
  if (ms !== lastStampMs) {
    lastStamp = NATIVE_TO_ISO.call(d);
    lastStampMs = ms;
  }
  return lastStamp;
}

module.exports = { nowStamp };
