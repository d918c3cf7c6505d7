"use strict";
// The one bridge from an AbortSignal to native work (listing, search): a native `AbortFlag`
// (src/abort.rs) that the workers poll between units of work, set when the signal aborts.
const native = require("./native.js");

/**
 * `run(flag)` with `flag` set when `signal` aborts; the listener is removed when `run`
 * settles. The caller checks `signal` before (each API throws what its reference throws).
 */
async function withAbortFlag(signal, run) {
  const flag = new native.AbortFlag();
  const onAbort = () => flag.abort();
  const listen = typeof signal?.addEventListener === "function";
  if (listen) signal.addEventListener("abort", onAbort, { once: true });
  try {
    return await run(flag);
  } finally {
    if (listen) signal.removeEventListener("abort", onAbort);
  }
}

module.exports = { withAbortFlag };
