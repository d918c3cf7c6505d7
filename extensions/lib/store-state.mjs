// What pi-native's module hooks did in this pi process, for the TUI: pi-native says it on stderr
// (lib/register-hooks.mjs), where a TUI user never sees it (it scrolls away before the first
// frame). The hooks keep their state on globalThis (Symbol.for("pi-session-native.hooks")); this
// extension runs in the same process and reads it. No state: the hooks are not installed (plain
// `pi`), and there is nothing to say.

/** Key of the footer status that marks the session store in use. */
export const STORE_STATUS_KEY = "pi-session-native";

/**
 * @typedef {{ outcome?: { served: boolean, reason?: string }, trust?: string, version?: string, storeNoticeShown?: boolean }} HooksState
 * @typedef {{ kind: "native", trust: string } | { kind: "unmodified", reason: string, deliberate: boolean }} StoreState
 */

/** The hooks' state in this process, if pi-native (or the register.mjs import) installed them. */
function hooksState() {
  return /** @type {HooksState | undefined} */ (
    /** @type {Record<symbol, unknown>} */ (globalThis)[Symbol.for("pi-session-native.hooks")]
  );
}

/**
 * Whether pi's session store is this package's, and if not why: undefined when the hooks are not
 * installed or have not decided yet.
 * @returns {StoreState | undefined}
 */
export function storeState() {
  const outcome = hooksState()?.outcome;
  if (!outcome) return undefined;
  if (outcome.served) return { kind: "native", trust: hooksState()?.trust ?? "" };
  const reason = outcome.reason ?? "unknown reason";
  // Turned off on purpose (PI_SESSION_NATIVE=0) or a Node without module hooks: not a fault.
  return { kind: "unmodified", reason, deliberate: reason === "PI_SESSION_NATIVE=0" };
}

/**
 * Shows the store state in pi's UI: a quiet footer mark ("sessions: native" or "sessions: pi's
 * own"), and once per process, when pi runs unmodified because something failed, a notice that
 * says so and why.
 * @param {{ setStatus(key: string, text: string | undefined): void, notify(message: string, type?: "info" | "warning" | "error"): void }} ui
 */
export function showStoreState(ui) {
  const state = storeState();
  if (!state) return;
  if (state.kind === "native") {
    ui.setStatus(STORE_STATUS_KEY, "sessions: native");
    return;
  }
  ui.setStatus(STORE_STATUS_KEY, "sessions: pi's own");
  const hooks = hooksState();
  if (state.deliberate || !hooks || hooks.storeNoticeShown) return;
  hooks.storeNoticeShown = true;
  ui.notify(`pi-session-native is not serving the session store, pi runs unmodified: ${state.reason}`, "warning");
}
