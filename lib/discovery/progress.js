"use strict";
// Listing progress as the reference reports it (`onProgress(loaded, total, partial?)`: the
// same counts and publish points, in completion order), at most every ~50 ms in between.

/** `list`: a partial list with the first loaded file, every 10th and the last. */
const CURRENT_SESSION_LIST_PUBLISH_INTERVAL = 10;
/** `listAll`: a partial list once the first candidate is loaded, every 100th and the last. */
const ALL_SESSION_LIST_PUBLISH_INTERVAL = 100;

/** Least time between two progress calls (`PI_SESSION_NATIVE_PROGRESS_MS`; 0: every file). */
function progressInterval() {
  const v = Number(process.env.PI_SESSION_NATIVE_PROGRESS_MS ?? 50);
  return Number.isFinite(v) && v >= 0 ? v : 50;
}

/**
 * Progress as the reference reports it, at most every ~50 ms in between: the first file's
 * call and the last file's call are always made; a call in between is made only when the
 * last one is at least `progressInterval()` old (pi redraws its picker on every call: 1,000
 * calls cost it seconds). `loaded` and `total` mean what they mean in the reference; a
 * partial list due at a skipped publish point goes with the next call made, holding every
 * session loaded by then. `partial()` builds that list.
 */
function throttledProgress(onProgress) {
  const interval = progressInterval();
  let lastCall = -Infinity;
  let partialDue = false;
  return (loaded, total, publish, partial) => {
    partialDue ||= publish;
    const now = interval > 0 ? performance.now() : 0;
    if (loaded !== 1 && loaded !== total && now - lastCall < interval) return;
    const due = partialDue;
    partialDue = false;
    onProgress(loaded, total, due ? partial() : undefined);
    // The interval runs from the end of this call: a consumer that takes long to redraw
    // (and the partial list it was given) is not called again at once.
    if (interval > 0) lastCall = performance.now();
  };
}

module.exports = { CURRENT_SESSION_LIST_PUBLISH_INTERVAL, ALL_SESSION_LIST_PUBLISH_INTERVAL, throttledProgress };
