"use strict";
// The native listing pass: per-file SessionInfos from `discoveryExtract` (worker threads,
// records streamed back as they finish), with an in-process memo of unchanged files.
//
// Rust does the per-file work (bounded header scan; the streamed line-by-line pass of
// buildSessionInfo) and returns one compact JSON record per file. Raw JSON values (header
// id/cwd/parentSession/timestamp, the name literal) are embedded verbatim, so JSON.parse
// here reproduces the reference's values exactly (lone surrogates included). An optional
// per-directory sidecar index (`<dir>/.pi-session-index`) caches records keyed by (size,
// mtime ns, ctime ns, inode), CRC-checked per record, opened O_NOFOLLOW, written 0600
// (docs/durability.md); PI_SESSION_NATIVE_NO_INDEX=1 disables it and the memo. Records hold
// no texts: `firstMessage` / `allMessagesText` are read when a caller reads them
// (./session-info.js).
//
// Abort: an abort during the native pass stops the workers between files (and between
// chunks of a file); the caller then throws signal.reason, as throwIfAborted does. No
// progress calls are made after the abort.

const native = require("../native.js");
const { withAbortFlag } = require("../abort.js");
const { toSessionInfo, S_KEEP, S_TEXT_KEY } = require("./session-info.js");

const PROFILE = process.env.PI_SESSION_NATIVE_PROFILE !== undefined;

function useIndex() {
  return process.env.PI_SESSION_NATIVE_NO_INDEX !== "1";
}

// In-process memo of the last records per path, keyed by the native stamp (size, mtime ns,
// inode; only files older than a second get one): an unchanged file is answered by the
// native side with `true` and its record is reused. Records hold no texts (a few hundred
// bytes each); bounded by count. Disabled with the index (PI_SESSION_NATIVE_NO_INDEX=1).
const memo = new Map();
const MEMO_MAX = 200_000;

function remember(path, r) {
  memo.delete(path);
  if (r?.[S_KEEP] !== 1) return;
  if (memo.size >= MEMO_MAX) memo.clear();
  memo.set(path, { key: r[S_TEXT_KEY], rec: r });
}

/**
 * Per-file SessionInfo (or null) for `files` ({ path, stats? }), in order.
 *
 * With `onInfo(info, index)`, each file is reported as it completes, in completion order,
 * like the reference's buildSessionInfosWithConcurrency callback: the workers hand finished
 * records to a thread-safe function in batches (whatever finished since the last batch), so
 * conversion and progress run on this thread while the workers go on. Records the native
 * pass still holds at the end are reported then, in file order. If `onInfo` throws, the
 * pass is aborted and the error is rethrown (the callers turn it into `[]`, as the
 * reference's rejected Promise.all does).
 */
async function buildSessionInfos(files, signal, onInfo, pre) {
  if (files.length === 0) return [];
  signal?.throwIfAborted();
  const memoOn = useIndex();
  const prof = PROFILE ? performance.now() : 0;
  const out = new Array(files.length).fill(null);
  let stopped = false;
  /** @type {{ error: unknown } | null} */
  let failure = null;
  const take = (i, r) => {
    const path = files[i].path;
    if (r === true) return toSessionInfo(path, memo.get(path).rec, files[i].stats, true);
    if (!memoOn) return toSessionInfo(path, r, files[i].stats, false);
    remember(path, r);
    return toSessionInfo(path, r, files[i].stats, r?.[S_KEEP] === 1);
  };
  const run = (abort) => {
    const report = (i) => {
      try {
        onInfo(out[i], i);
      } catch (error) {
        stopped = true;
        failure = { error };
        abort.abort();
      }
    };
    const onRecord = onInfo
      ? (json) => {
          // Called from the native side's thread-safe function: must not throw.
          let batch;
          try {
            batch = JSON.parse(json);
          } catch (error) {
            // Only a native bug could write JSON that does not parse: the listing fails.
            stopped = true;
            failure ??= { error };
            abort.abort();
            return;
          }
          for (let k = 0; k + 1 < batch.length; k += 2) {
            const i = batch[k];
            out[i] = take(i, batch[k + 1]);
            if (!stopped && !signal?.aborted) report(i);
          }
        }
      : undefined;
    return native.discoveryExtract(
      files.map((f) => f.path),
      files.map((f) => (memoOn ? (memo.get(f.path)?.key ?? "") : "")),
      memoOn,
      abort,
      onRecord,
      pre?.stats,
      pre?.order,
    );
  };
  let res;
  try {
    res = await withAbortFlag(signal, run);
  } finally {
    stopped = true;
  }
  if (failure) throw failure.error;
  if (res.aborted || signal?.aborted) signal?.throwIfAborted();
  const prof2 = PROFILE ? performance.now() : 0;
  const records = JSON.parse(res.records);
  const late = [];
  for (let i = 0; i < files.length; i++) {
    const r = records[i];
    if (r === false) continue; // handed to onRecord
    out[i] = take(i, r);
    late.push(i);
  }
  if (onInfo) {
    for (const i of late) onInfo(out[i], i);
  }
  if (PROFILE) {
    const t = performance.now();
    process.stderr.write(
      `discovery: ${files.length} files native ${(prof2 - prof).toFixed(1)} ms, records ${(t - prof2).toFixed(1)} ms\n`,
    );
  }
  return out;
}

module.exports = { buildSessionInfos, PROFILE };
