// The Windows user's path, run by node.exe under Wine (scripts/cross/windows-user-path.sh):
// pi installed with npm for Windows (its `pi.cmd` shim on PATH), `pi-native` finding pi through
// that shim, and `pi-native --export` writing the same page as `pi --export`, for a session
// written by the reference SessionManager with Windows paths (drive letter, `\`) and for the
// same session with CRLF line ends. Prints one line per check; exits 1 on the first mismatch.
//
// Environment: PI_PREFIX (npm's global prefix holding pi.cmd), PI_SESSION_NATIVE_BINARY (the
// windows addon), PI_NATIVE_BIN (bin/pi-native.mjs of this repository).
import { spawnSync } from "node:child_process";
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { delimiter, dirname, join } from "node:path";
import { pathToFileURL } from "node:url";

const prefix = process.env.PI_PREFIX;
const piNative = process.env.PI_NATIVE_BIN;
if (process.platform !== "win32" || !prefix || !piNative) {
  console.error("windows-user-path.mjs: run under node.exe with PI_PREFIX and PI_NATIVE_BIN set");
  process.exit(2);
}

let failures = 0;
function check(name, ok, detail = "") {
  console.log(`${ok ? "ok  " : "FAIL"} ${name}${ok || !detail ? "" : `: ${detail}`}`);
  if (!ok) failures++;
}

const work = join(tmpdir(), `pi-cross-user-${process.pid}`);
rmSync(work, { recursive: true, force: true });
mkdirSync(work, { recursive: true });
check(`work folder is a Windows path (${work})`, /^[A-Za-z]:\\/.test(work));

/** @type {NodeJS.ProcessEnv} */
const env = {
  ...process.env,
  // npm's shims find node.exe on PATH, as on a user's machine.
  PATH: [prefix, dirname(process.execPath), process.env.PATH ?? ""].join(delimiter),
  USERPROFILE: join(work, "home"),
  HOME: join(work, "home"),
  PI_CODING_AGENT_DIR: join(work, "home", ".pi", "agent"),
  PI_OFFLINE: "1",
  PI_SKIP_VERSION_CHECK: "1",
  PI_TELEMETRY: "0",
};
delete env.PI_CODING_AGENT_BIN;
mkdirSync(env.HOME, { recursive: true });

// The reference SessionManager of the installed pi writes the session (Windows cwd and file).
const piPackage = join(prefix, "node_modules", "@earendil-works", "pi-coding-agent");
const { SessionManager } = await import(pathToFileURL(join(piPackage, "dist", "core", "session-manager.js")).href);
const cwd = join(work, "Project Dir");
mkdirSync(cwd, { recursive: true });
const sm = SessionManager.create(cwd, join(work, "sessions"));
sm.appendMessage({ role: "user", content: "export me from C:\\ with a \\ path", timestamp: 1 });
sm.appendMessage({
  role: "assistant",
  content: [{ type: "text", text: "exported" }],
  api: "x",
  provider: "p",
  model: "m",
  usage: {
    input: 1,
    output: 1,
    cacheRead: 0,
    cacheWrite: 0,
    totalTokens: 2,
    cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 },
  },
  stopReason: "stop",
  timestamp: 2,
});
const session = sm.getSessionFile();
check(`session file has a drive letter and \\ (${session})`, /^[A-Za-z]:\\.*\\/.test(session ?? ""));
const crlf = join(work, "crlf.jsonl");
writeFileSync(crlf, readFileSync(session, "utf8").replace(/\n/g, "\r\n"));

// Case-insensitive paths, as pi >= 1.5 compares them on Windows: the same session is found from
// the cwd spelled in another case, by the reference and by this package (the Windows addon).
const native = await import(pathToFileURL(join(dirname(dirname(piNative)), "index.mjs")).href);
const upper = cwd.toUpperCase();
const sessionDir = join(work, "sessions");
const refRecent = SessionManager.continueRecent(upper, sessionDir).getSessionFile();
const natRecent = native.SessionManager.continueRecent(upper, sessionDir).getSessionFile();
check(
  `continueRecent from ${upper}: the same file`,
  refRecent === natRecent && refRecent === session,
  `${refRecent} / ${natRecent}`,
);
const refList = (await SessionManager.list(upper, sessionDir)).map((i) => i.path);
const natList = (await native.SessionManager.list(upper, sessionDir)).map((i) => i.path);
check(
  `list from ${upper}: same sessions (${refList.length})`,
  JSON.stringify(refList) === JSON.stringify(natList),
  `${refList} / ${natList}`,
);

/** Run a .cmd shim or node.exe; answers { code, stdout, stderr }. */
function run(file, args, extraEnv = {}) {
  // .cmd files need cmd.exe (shell) since Node 18.20.2/20.12.2 (CVE-2024-27980).
  const r = spawnSync(file, args, {
    cwd,
    env: { ...env, ...extraEnv },
    encoding: "utf8",
    shell: file.endsWith(".cmd"),
    timeout: 300_000,
  });
  return { code: r.status ?? -1, stdout: r.stdout ?? "", stderr: `${r.stderr ?? ""}${r.error ? String(r.error) : ""}` };
}

const version = run(join(prefix, "pi.cmd"), ["--version"]);
check(`pi.cmd --version runs pi (${version.stdout.trim() || version.stderr.trim()})`, version.code === 0);

for (const [label, file] of [
  ["LF", session],
  ["CRLF", crlf],
]) {
  const refHtml = join(work, `ref-${label}.html`);
  const natHtml = join(work, `native-${label}.html`);
  const ref = run(join(prefix, "pi.cmd"), ["--export", file, refHtml]);
  check(`${label}: pi.cmd --export`, ref.code === 0, ref.stderr);
  const nat = run(process.execPath, [piNative, "--export", file, natHtml], { PI_SESSION_NATIVE_DEBUG: "1" });
  check(`${label}: pi-native --export (found pi through pi.cmd)`, nat.code === 0, nat.stderr);
  check(
    `${label}: pi-native served the native session manager`,
    /serving session-manager/.test(nat.stderr),
    nat.stderr,
  );
  if (ref.code === 0 && nat.code === 0) {
    const a = readFileSync(refHtml, "utf8");
    const b = readFileSync(natHtml, "utf8");
    check(`${label}: same HTML (${a.length} bytes)`, a === b, `reference ${a.length} bytes, native ${b.length} bytes`);
  }
}

rmSync(work, { recursive: true, force: true });
console.log(failures ? `windows user path: ${failures} FAILED` : "windows user path: all checks passed");
process.exit(failures ? 1 : 0);
