"use strict";
// Context building over JS entry objects: the free functions of the reference
// (`buildContextEntries`, `projectContextEntry`, ... with its semantics), plus the spec's
// compaction `retainedTail` checkpoint. The SessionManager uses Rust for the path walk and
// selection, and these functions for turning the selected entries into messages.

function createBranchSummaryMessage(summary, fromId, timestamp) {
  return { role: "branchSummary", summary, fromId, timestamp: new Date(timestamp).getTime() };
}

function createCompactionSummaryMessage(summary, tokensBefore, timestamp) {
  return { role: "compactionSummary", summary, tokensBefore, timestamp: new Date(timestamp).getTime() };
}

function createCustomMessage(customType, content, display, details, timestamp) {
  return { role: "custom", customType, content, display, details, timestamp: new Date(timestamp).getTime() };
}

/** A compaction carrying the spec's self-contained checkpoint. */
function hasRetainedTail(entry) {
  return Array.isArray(entry.retainedTail);
}

function getLatestCompactionEntry(entries) {
  for (let i = entries.length - 1; i >= 0; i--) {
    if (entries[i].type === "compaction") return entries[i];
  }
  return null;
}

function indexById(entries, byId) {
  if (byId) return byId;
  const map = new Map();
  for (const e of entries) map.set(e.id, e);
  return map;
}

/** Root-first path to `leafId` (null: none; unknown/undefined: the last entry). Cycle-safe. */
function buildSessionPath(entries, leafId, byId) {
  if (leafId === null) return [];
  const index = indexById(entries, byId);
  let leaf;
  if (leafId) leaf = index.get(leafId);
  if (leaf === undefined || leaf === null) leaf = entries[entries.length - 1];
  if (!leaf) return [];
  const path = [];
  const seen = new Set();
  let current = leaf;
  while (current && !seen.has(current)) {
    seen.add(current);
    path.push(current);
    current = current.parentId ? index.get(current.parentId) : undefined;
  }
  return path.reverse();
}

function getSessionContextSettings(path) {
  let thinkingLevel = "off";
  let model = null;
  for (const e of path) {
    if (e.type === "thinking_level_change") thinkingLevel = e.thinkingLevel;
    else if (e.type === "model_change") model = { provider: e.provider, modelId: e.modelId };
    else if (e.type === "message" && e.message?.role === "assistant") {
      model = { provider: e.message.provider, modelId: e.message.model };
    }
  }
  return { thinkingLevel, model };
}

/** The context message of a message entry's `message` (the reference's reads, in its order). */
function messageEntryContext(m) {
  // Hand-edited or old files can hold messages with null/missing content.
  if (m.role === "system" && m.content == null) return { ...m, content: "" };
  if ((m.role === "user" || m.role === "assistant" || m.role === "toolResult") && m.content == null) {
    return { ...m, content: [] };
  }
  return m;
}

function sessionEntryToContextMessages(entry) {
  switch (entry.type) {
    case "message":
      return [messageEntryContext(entry.message)];
    case "custom_message":
      return [
        createCustomMessage(entry.customType, entry.content ?? [], entry.display, entry.details, entry.timestamp),
      ];
    case "branch_summary":
      return entry.summary ? [createBranchSummaryMessage(entry.summary, entry.fromId, entry.timestamp)] : [];
    case "compaction": {
      const summary = createCompactionSummaryMessage(entry.summary, entry.tokensBefore, entry.timestamp);
      const head = entry.systemMessage ? [entry.systemMessage, summary] : [summary];
      return hasRetainedTail(entry) ? head.concat(entry.retainedTail) : head;
    }
    default:
      return [];
  }
}

/** Select the compaction-aware entries for a root-first path. */
function selectContextEntries(path) {
  let compaction = null;
  for (const e of path) if (e.type === "compaction") compaction = e;
  if (!compaction) return path;
  const cidx = path.findIndex((e) => e.id === compaction.id);
  if (cidx < 0) return path;
  const out = [compaction];
  if (!hasRetainedTail(compaction)) {
    let found = false;
    for (let i = 0; i < cidx; i++) {
      const e = path[i];
      if (e.id === compaction.firstKeptEntryId) found = true;
      if (found && !(e.type === "message" && e.message.role === "system")) out.push(e);
    }
  }
  for (let i = cidx + 1; i < path.length; i++) out.push(path[i]);
  return out;
}

function buildContextEntries(entries, leafId, byId) {
  return selectContextEntries(buildSessionPath(entries, leafId, byId));
}

const EDITABLE_ROLES = new Set(["user", "assistant", "toolResult", "custom"]);

function projectContextEntry(entry, edit) {
  const messages = sessionEntryToContextMessages(entry);
  if (!edit) return messages;
  const replacement = edit.replacement;
  if (replacement === null) return [];
  return messages.map((message) => {
    if (!EDITABLE_ROLES.has(message.role)) return message;
    const asBlocks =
      (message.role === "assistant" || message.role === "toolResult") && typeof replacement.content === "string";
    return { ...message, content: asBlocks ? [{ type: "text", text: replacement.content }] : replacement.content };
  });
}

/** Projection from already selected entries (shared by the free function and the manager). */
function projectSelected(contextEntries, editFor, thinkingLevel, model) {
  const projected = contextEntries.map((sourceEntry, index) => ({
    sourceEntry,
    // An older compaction kept inside the retained range contributes nothing; only the
    // newest one, at index 0, carries the checkpoint.
    messages:
      sourceEntry.type === "compaction" && index > 0
        ? []
        : projectContextEntry(sourceEntry, editFor(sourceEntry, index)),
  }));
  return { entries: projected, messages: projected.flatMap((p) => p.messages), thinkingLevel, model };
}

/**
 * The `messages` of `projectSelected` alone, for `buildSessionContext`, which drops the
 * per-entry records: no record object and no one-message array per entry. A message entry
 * without an edit gives what `sessionEntryToContextMessages` gives (`messageEntryContext`:
 * the same property reads in the same order, so getters and errors behave the same); every
 * other entry goes through `projectContextEntry`, as there.
 */
function selectedMessages(contextEntries, editFor) {
  const out = [];
  for (let index = 0; index < contextEntries.length; index++) {
    const entry = contextEntries[index];
    if (entry.type === "compaction" && index > 0) continue;
    const edit = editFor(entry, index);
    if (!edit && entry.type === "message") {
      // `sessionEntryToContextMessages`' message case without its one-element array.
      out.push(messageEntryContext(entry.message));
      continue;
    }
    for (const m of projectContextEntry(entry, edit)) out.push(m);
  }
  return out;
}

function buildSessionProjection(entries, leafId, byId) {
  const path = buildSessionPath(entries, leafId, byId);
  const { thinkingLevel, model } = getSessionContextSettings(path);
  const contextEntries = selectContextEntries(path);
  const edits = new Map();
  for (const e of contextEntries) if (e.type === "context_edit") edits.set(e.targetId, e);
  return projectSelected(contextEntries, (e) => edits.get(e.id), thinkingLevel, model);
}

function buildSessionContext(entries, leafId, byId) {
  const { messages, thinkingLevel, model } = buildSessionProjection(entries, leafId, byId);
  return { messages, thinkingLevel, model };
}

module.exports = {
  getLatestCompactionEntry,
  sessionEntryToContextMessages,
  buildContextEntries,
  projectContextEntry,
  projectSelected,
  selectedMessages,
  buildSessionProjection,
  buildSessionContext,
};
