"use strict";
// The codes of the native `appendFields` / `appendFieldsBatch`: with them Rust indexes an entry
// from its type, id, parent and role alone, without scanning its text. The codes themselves are
// the binding's (`FieldKind`, `FieldRole`, src/codes.rs); this maps JS values onto them.
const { FieldKind, FieldRole } = require("./native.js");

// Read once: these run on every append.
const USER = FieldRole.User;
const ASSISTANT = FieldRole.Assistant;
const TOOL_RESULT = FieldRole.ToolResult;
const SYSTEM = FieldRole.System;
const OTHER = FieldRole.Other;

/** `messageRole`'s answer when the role is not certain without serializing (never sent to Rust). */
const ROLE_UNKNOWN = -1;

/** The role code of a role value. Comparisons, not a Map: this runs on every append. */
function roleCode(role) {
  if (role === "user") return USER;
  if (role === "assistant") return ASSISTANT;
  if (role === "toolResult") return TOOL_RESULT;
  if (role === "system") return SYSTEM;
  return OTHER;
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
    return OTHER;
  }
  return roleCode(role);
}

/**
 * The role code Rust's index would read from `JSON.stringify` of an entry holding `message`,
 * or `ROLE_UNKNOWN` when that is not certain without serializing (not a plain object, a
 * `toJSON`, a non-string role): the caller then sends the text to be scanned.
 */
function messageRole(message) {
  if (typeof message !== "object" || message === null || Array.isArray(message)) return ROLE_UNKNOWN;
  if (typeof message.toJSON === "function") return ROLE_UNKNOWN;
  const role = message.role;
  if (role === undefined) return OTHER;
  if (typeof role !== "string") return ROLE_UNKNOWN;
  return roleCode(role);
}

module.exports = { FieldKind, FieldRole, ROLE_UNKNOWN, roleCode, objectRole, messageRole };
