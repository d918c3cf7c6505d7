// Puts pi on the native session store: `node --import /abs/path/to/pi-session-native/lib/register.mjs <pi bin>`
// or `NODE_OPTIONS="--import /abs/path/to/pi-session-native/lib/register.mjs" pi`.
//
// Installs synchronous in-thread module hooks (lib/register-hooks.mjs) that serve pi's bundled
// session-manager chunk (recognised by content) and the unbundled dist/core/session-manager.js
// from this package. Fail-safe: when it cannot serve, pi runs unmodified and one stderr line says
// why. PI_SESSION_NATIVE=0 turns it off; PI_SESSION_NATIVE_DEBUG=1 prints
// `[pi-session-native] serving session-manager: ...` once.
//
// The hooks come from lib/launcher.bundle.mjs (the hook modules as one file, scripts/bundle-js.mjs)
// when it was made, else from the sources.
import { existsSync } from "node:fs";

const bundled = new URL("./launcher.bundle.mjs", import.meta.url);
const { installHooks } = await import(existsSync(bundled) ? bundled.href : "./register-hooks.mjs");
installHooks();
