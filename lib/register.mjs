// Module-loader registration: `node --import pi-session-native/register <pi entry>`.
//
// Redirects every import of @earendil-works/pi-coding-agent/dist/core/session-manager.js to this
// package's ESM entry (index.mjs), so pi's CLI and SDK run on the native SessionManager.
// Set PI_SESSION_NATIVE_DEBUG=1 to get `[pi-session-native] serving session-manager` on stderr
// (once, on the first redirected import).
import { existsSync } from "node:fs";
import { register } from "node:module";
import { fileURLToPath } from "node:url";

const target = new URL("../index.mjs", import.meta.url);
const packageRoot = new URL("../", import.meta.url);

if (!existsSync(fileURLToPath(target))) {
	throw new Error(
		`[pi-session-native] cannot serve session-manager: ${fileURLToPath(target)} is missing (build the package first)`,
	);
}

register("./register-hooks.mjs", import.meta.url, {
	data: {
		target: target.href,
		packageRoot: packageRoot.href,
		debug: process.env.PI_SESSION_NATIVE_DEBUG === "1",
	},
});
