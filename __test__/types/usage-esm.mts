// ESM consumer (`import` condition of the package's "exports"): named and default imports.
import { SessionManager, buildSessionContext, type SessionContext, type AgentMessage } from "pi-session-native";
import piSessionNative from "pi-session-native";

const sm: SessionManager = SessionManager.inMemory("/repo");
const id: string = sm.appendMessage({ role: "user", content: "hi", timestamp: 1 });
const ctx: SessionContext = buildSessionContext(sm.getEntries(), id);
const msgs: AgentMessage[] = ctx.messages;
const viaDefault: SessionManager = piSessionNative.SessionManager.inMemory();
void msgs;
void viaDefault;
