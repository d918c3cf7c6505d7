"use strict";
// The codes of the native `appendFields` / `appendFieldsBatch` (src/node/session.rs
// `field_kind`): with them Rust indexes an entry from its type, id, parent and role alone,
// without scanning its text.

/** `kind` codes: the entry types whose index holds nothing but type, id, parentId and role. */
const FIELD_KINDS = {
  message: 0,
  custom: 1,
  session_info: 2,
  thinking_level_change: 3,
  model_change: 4,
  custom_message: 5,
  usage: 6,
};
const ROLE_ASSISTANT = 1;
const ROLE_OTHER = 4;

/** The role code of a role value. Comparisons, not a Map: this runs on every append. */
function roleCode(role) {
  if (role === "user") return 0;
  if (role === "assistant") return ROLE_ASSISTANT;
  if (role === "toolResult") return 2;
  if (role === "system") return 3;
  return ROLE_OTHER;
}

/**
 * The role code of an in-memory message, read from the object as the reference reads it
 * (`message.role === "user"`, ...): it never serializes an in-memory entry.
 */
function objectRole(message) {
  let role;
  try {
    role = typeof message === "object" && message !== null ? message.role : undefined;
  } catch {
    // A getter or a revoked Proxy: not a role the context would recognize either.
    return ROLE_OTHER;
  }
  return roleCode(role);
}

/**
 * The role code Rust's index would read from `JSON.stringify` of an entry holding `message`,
 * or -1 when that is not certain without serializing (not a plain object, a `toJSON`, a
 * non-string role): the caller then sends the text to be scanned.
 */
function messageRole(message) {
  if (typeof message !== "object" || message === null || Array.isArray(message)) return -1;
  if (typeof message.toJSON === "function") return -1;
  const role = message.role;
  if (role === undefined) return ROLE_OTHER;
  if (typeof role !== "string") return -1;
  return roleCode(role);
}

module.exports = { FIELD_KINDS, ROLE_ASSISTANT, ROLE_OTHER, roleCode, objectRole, messageRole };
