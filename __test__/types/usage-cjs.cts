// CommonJS consumer: `require("pi-session-native")` gets the same types.
import native = require("pi-session-native");

const sm: native.SessionManager = native.SessionManager.inMemory("/repo");
const id: string = sm.appendMessage({ role: "user", content: "hi", timestamp: 1 });
const ctx: native.SessionContext = native.buildSessionContext(sm.getEntries(), id);
const v: 3 = native.CURRENT_SESSION_VERSION;
void ctx;
void v;
