// Where /sessions continues when the user continues "from the hit" and the hit is a tool call
// (or one of several tool results): an assistant message's tool calls are answered by the
// toolResult messages that follow it, one entry each. Continuing from the call itself, or from
// the first of its results, would leave calls without a result on the new branch, and pi would
// send the model `No result provided` for each. So the leaf goes to the last result of the
// call's turn instead: the call and every result it got stay in the context.

/**
 * @typedef {{ id: string, parentId?: string | null, type: string, message?: { role?: string, content?: unknown, toolCallId?: string } }} Entry
 * @typedef {{ getEntry(id: string): Entry | undefined, getEntries(): Entry[], getBranch(fromId?: string): Entry[] }} Tree
 *   (what pi's ReadonlySessionManager, the extension ctx's sessionManager, offers)
 */

/** Ids of the tool calls of an assistant message entry (empty for anything else). */
function callIds(entry) {
  const m = entry?.type === "message" ? entry.message : undefined;
  if (m?.role !== "assistant" || !Array.isArray(m.content)) return [];
  return m.content.filter((b) => b && b.type === "toolCall" && typeof b.id === "string").map((b) => b.id);
}

/** The call id a toolResult message entry answers, or undefined. */
function resultOf(entry) {
  const m = entry?.type === "message" ? entry.message : undefined;
  return m?.role === "toolResult" && typeof m.toolCallId === "string" ? m.toolCallId : undefined;
}

/**
 * The entry to continue from for a hit on `entryId` in `sm` (a SessionManager, its leaf still
 * the session's own): the hit itself, or, when the hit is a tool call or a tool result of a turn
 * with calls, the last result of that turn (following the session's current branch where it
 * passes, else the first child that answers a call). `missing`: calls of the turn that have no
 * result on that path (a turn cut short), which pi will report as `No result provided`.
 * @param {Tree} sm
 * @param {string} entryId
 * @returns {{ id: string, results: number, missing: number }}
 */
export function continuePoint(sm, entryId) {
  const hit = sm.getEntry(entryId);
  if (!hit) return { id: entryId, results: 0, missing: 0 };
  // The turn's assistant message: the hit, or the one above the results leading to the hit.
  let turn = hit;
  const answered = new Set();
  while (resultOf(turn) !== undefined) {
    answered.add(/** @type {string} */ (resultOf(turn)));
    const parent = turn.parentId ? sm.getEntry(turn.parentId) : undefined;
    if (!parent) return { id: entryId, results: 0, missing: 0 };
    turn = parent;
  }
  const calls = callIds(turn);
  if (!calls.length) return { id: entryId, results: 0, missing: 0 };
  const pending = new Set(calls.filter((id) => !answered.has(id)));
  const onBranch = new Set(sm.getBranch().map((e) => e.id));
  // The tool results of the session by parent (getChildren is not part of the read-only API).
  /** @type {Map<string, Entry[]>} */
  const answersTo = new Map();
  for (const e of sm.getEntries()) {
    if (resultOf(e) === undefined || !e.parentId) continue;
    const list = answersTo.get(e.parentId);
    if (list) list.push(e);
    else answersTo.set(e.parentId, [e]);
  }
  let at = hit;
  while (pending.size) {
    const answers = (answersTo.get(at.id) ?? []).filter((c) => pending.has(/** @type {string} */ (resultOf(c))));
    const next = answers.find((c) => onBranch.has(c.id)) ?? answers[0];
    if (!next) break;
    pending.delete(/** @type {string} */ (resultOf(next)));
    at = next;
  }
  return { id: at.id, results: calls.length - pending.size, missing: pending.size };
}
