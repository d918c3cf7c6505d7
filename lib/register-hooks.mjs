// Loader hooks installed by lib/register.mjs (runs on Node's loader-hooks thread).
import { writeSync } from "node:fs";

const SUFFIX = "/@earendil-works/pi-coding-agent/dist/core/session-manager.js";

let target;
let packageRoot;
let debug = false;
let announced = false;

export async function initialize(data = {}) {
	target = data.target;
	packageRoot = data.packageRoot;
	debug = Boolean(data.debug);
}

function isSessionManagerUrl(url) {
	if (!url.startsWith("file:")) return false;
	try {
		return new URL(url).pathname.endsWith(SUFFIX);
	} catch {
		return false;
	}
}

// Importers inside this package (but not its node_modules) get the original module, so the
// native entry may itself delegate to the reference implementation without a cycle.
function isOwnModule(parentURL) {
	if (!parentURL || !packageRoot || !parentURL.startsWith(packageRoot)) return false;
	return !parentURL.slice(packageRoot.length).includes("node_modules/");
}

export async function resolve(specifier, context, nextResolve) {
	const resolved = await nextResolve(specifier, context);
	if (!target || !isSessionManagerUrl(resolved.url) || isOwnModule(context.parentURL)) return resolved;
	if (debug && !announced) {
		announced = true;
		try {
			writeSync(2, "[pi-session-native] serving session-manager\n");
		} catch {
			// stderr closed
		}
	}
	return { url: target, format: "module", shortCircuit: true };
}
