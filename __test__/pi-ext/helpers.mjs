// Helpers for the tests that run the real bundled pi bin with this package's pi extension.
import { spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, realpathSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { findNode22 } from "../../scripts/node22.mjs";

const here = dirname(fileURLToPath(import.meta.url));
export const repoRoot = resolve(here, "../..");
export const piBin = join(repoRoot, "node_modules/@earendil-works/pi-coding-agent/dist/bundle/cli.js");
export const extensionPath = join(repoRoot, "extensions/sessions.ts");
export const node22 = findNode22();

const require = createRequire(import.meta.url);
export const { SessionManager, getDefaultSessionDir } = require("../../index.js");

/** A fresh sandbox: its own HOME, agent dir and project directory. */
export function sandbox(prefix = "pi-ext-") {
	const root = realpathSync(mkdtempSync(join(tmpdir(), prefix)));
	const home = join(root, "home");
	const agentDir = join(home, ".pi", "agent");
	const project = join(root, "project");
	for (const d of [home, agentDir, project]) mkdirSync(d, { recursive: true });
	return {
		root,
		home,
		agentDir,
		project,
		env: {
			...process.env,
			HOME: home,
			PI_CODING_AGENT_DIR: agentDir,
			PI_OFFLINE: "1",
			PI_SKIP_VERSION_CHECK: "1",
			PI_TELEMETRY: "0",
			NO_COLOR: "1",
		},
		cleanup: () => rmSync(root, { recursive: true, force: true }),
	};
}

/** pi's session directory of `cwd` inside an agent dir. */
export function sessionDirOf(agentDir, cwd) {
	return getDefaultSessionDir(cwd, agentDir);
}

let clock = Date.parse("2026-01-05T09:00:00.000Z");

/**
 * A persisted session in `cwd`'s directory of the agent dir, made with this package's
 * SessionManager: `turns` is a list of [userText, assistantText]. Returns {path, id}.
 */
export function makeSession(agentDir, cwd, turns, { name } = {}) {
	const sm = SessionManager.create(cwd, sessionDirOf(agentDir, cwd));
	for (const [user, assistant] of turns) {
		sm.appendMessage({ role: "user", content: user, timestamp: (clock += 1000) });
		sm.appendMessage({
			role: "assistant",
			content: [{ type: "text", text: assistant }],
			api: "openai-completions",
			provider: "scripted",
			model: "scripted-1",
			usage: { input: 1, output: 1, cacheRead: 0, cacheWrite: 0, totalTokens: 2, cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } },
			stopReason: "stop",
			timestamp: (clock += 1000),
		});
	}
	if (name) sm.appendSessionInfo(name);
	return { path: sm.getSessionFile(), id: sm.getSessionId(), sm };
}

/** Run the real pi bin to completion (stdin /dev/null unless `input`). */
export function runPi(args, { cwd, env, input, timeoutMs = 60_000 } = {}) {
	return new Promise((resolvePromise, reject) => {
		const child = spawn(node22, [piBin, ...args], { cwd, env, stdio: [input === undefined ? "ignore" : "pipe", "pipe", "pipe"] });
		let stdout = "";
		let stderr = "";
		child.stdout.setEncoding("utf8").on("data", (d) => (stdout += d));
		child.stderr.setEncoding("utf8").on("data", (d) => (stderr += d));
		if (input !== undefined) child.stdin.end(input);
		const timer = setTimeout(() => child.kill("SIGKILL"), timeoutMs);
		child.on("error", reject);
		child.on("close", (code, signal) => {
			clearTimeout(timer);
			resolvePromise({ code, signal, stdout, stderr });
		});
	});
}

/**
 * pi in rpc mode: send(cmd) writes one JSONL record; `records` collects stdout records;
 * waitFor(pred) resolves with the first record (already seen or later) matching pred.
 */
export function startRpc(args, { cwd, env, timeoutMs = 60_000 } = {}) {
	const child = spawn(node22, [piBin, "--mode", "rpc", ...args], { cwd, env, stdio: ["pipe", "pipe", "pipe"] });
	const records = [];
	const waiters = [];
	let buf = "";
	let stderr = "";
	let exited = null;
	child.stderr.setEncoding("utf8").on("data", (d) => (stderr += d));
	child.stdout.on("data", (chunk) => {
		buf += chunk.toString("utf8");
		let nl;
		while ((nl = buf.indexOf("\n")) >= 0) {
			const line = buf.slice(0, nl).replace(/\r$/, "");
			buf = buf.slice(nl + 1);
			if (!line.trim()) continue;
			let rec;
			try {
				rec = JSON.parse(line);
			} catch {
				rec = { type: "unparsed", line };
			}
			records.push(rec);
			for (const w of [...waiters]) {
				if (w.pred(rec)) {
					waiters.splice(waiters.indexOf(w), 1);
					clearTimeout(w.timer);
					w.resolve(rec);
				}
			}
		}
	});
	const exitPromise = new Promise((r) =>
		child.on("close", (code, signal) => {
			exited = { code, signal };
			for (const w of waiters.splice(0)) {
				clearTimeout(w.timer);
				w.reject(new Error(`pi exited (${code ?? signal}) while waiting; stderr:\n${stderr}`));
			}
			r(exited);
		}),
	);
	let seq = 0;
	return {
		child,
		records,
		get stderr() {
			return stderr;
		},
		send(cmd) {
			child.stdin.write(`${JSON.stringify(cmd)}\n`);
		},
		/** Send a command with an id and wait for its response. */
		async request(cmd) {
			const id = `req-${++seq}`;
			const p = this.waitFor((r) => r.type === "response" && r.id === id);
			this.send({ ...cmd, id });
			return p;
		},
		waitFor(pred, ms = timeoutMs) {
			const seen = records.find(pred);
			if (seen) return Promise.resolve(seen);
			if (exited) return Promise.reject(new Error(`pi already exited (${exited.code ?? exited.signal}); stderr:\n${stderr}`));
			return new Promise((res, rej) => {
				const w = { pred, resolve: res, reject: rej };
				w.timer = setTimeout(() => {
					waiters.splice(waiters.indexOf(w), 1);
					rej(new Error(`timed out waiting for an rpc record; got ${records.map((r) => r.type).join(", ")}; stderr:\n${stderr}`));
				}, ms);
				waiters.push(w);
			});
		},
		async close() {
			if (!exited) {
				child.stdin.end();
				const t = setTimeout(() => child.kill("SIGKILL"), 10_000);
				await exitPromise;
				clearTimeout(t);
			}
			return exited;
		},
	};
}

/** Text of a chat-completions `tool` message (string or text parts). */
export function toolMessageText(msg) {
	const c = msg?.content;
	if (typeof c === "string") return c;
	if (Array.isArray(c)) return c.filter((p) => p?.type === "text").map((p) => p.text).join("\n");
	return "";
}
