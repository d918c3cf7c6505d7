// Must NOT compile: __test__/types.test.mjs asserts tsc rejects each line below.
import { SessionManager, buildSessionContext } from "pi-session-native";

const sm = SessionManager.inMemory();
sm.appendMessage(42);
sm.appendMessage({ role: "user", content: "hi" });
sm.appendModelChange("anthropic");
const n: number = sm.getSessionId();
buildSessionContext("not entries");
SessionManager.listAll(42);
void n;
