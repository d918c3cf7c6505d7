// Recording a workload's file-system operations with strace, and reading the record back.
//
// strace is run with -f (every thread: the batch flusher syncs on its own), -ttt (times),
// -y (the path behind every descriptor), -xx and a large -s (every byte of every write, as
// hex). parseTrace() turns its output into one event per completed system call, in order of
// completion (a call strace split into "<unfinished ...>" and "<... resumed>" counts where it
// completed: an fsync is a barrier only once it has returned).
import { spawnSync } from "node:child_process";

/** The system calls that change files or directories, or order them (fsync), or name fds. */
export const TRACED = [
  "open",
  "openat",
  "creat",
  "write",
  "writev",
  "pwrite64",
  "pwritev",
  "pwritev2",
  "ftruncate",
  "truncate",
  "lseek",
  "rename",
  "renameat",
  "renameat2",
  "link",
  "linkat",
  "unlink",
  "unlinkat",
  "mkdir",
  "mkdirat",
  "rmdir",
  "fsync",
  "fdatasync",
  "sync",
  "syncfs",
  "sync_file_range",
  "close",
  "dup",
  "dup2",
  "dup3",
  "fcntl",
  "exit_group",
];

/** Largest single write recorded whole (bytes); a longer one fails the parse. */
const STRING_LIMIT = 1 << 22;

/** strace's arguments to record `argv` into `out`. */
export function straceArgs(out) {
  return ["-f", "-ttt", "-y", "-xx", "-s", String(STRING_LIMIT), "-e", `trace=${TRACED.join(",")}`, "-o", out];
}

/** Whether strace runs here (it may be missing, or ptrace may be forbidden in a container). */
export function straceWorks() {
  const r = spawnSync("strace", ["-f", "-e", "trace=exit_group", "-o", "/dev/null", "true"], { encoding: "utf8" });
  return r.status === 0;
}

/** `"\x41\x42"` (strace -xx) to bytes. */
function hexString(s) {
  if (!s.startsWith('"')) throw new Error(`not a string: ${s.slice(0, 40)}`);
  const end = s.lastIndexOf('"');
  if (s.slice(end + 1) === "...") throw new Error("strace cut a string short (raise -s)");
  const body = s.slice(1, end);
  const out = Buffer.alloc(body.length / 4);
  for (let i = 0, j = 0; i < body.length; i += 4, j++) out[j] = Number.parseInt(body.slice(i + 2, i + 4), 16);
  return out;
}

/** Split an argument list at its top-level commas. */
function splitArgs(s) {
  const out = [];
  let depth = 0;
  let inStr = false;
  let start = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s[i];
    if (inStr) {
      if (c === "\\") i++;
      else if (c === '"') inStr = false;
    } else if (c === '"') inStr = true;
    else if (c === "[" || c === "{" || c === "(" || c === "<") depth++;
    else if (c === "]" || c === "}" || c === ")" || c === ">") depth--;
    else if (c === "," && depth === 0) {
      out.push(s.slice(start, i).trim());
      start = i + 1;
    }
  }
  const last = s.slice(start).trim();
  if (last !== "") out.push(last);
  return out;
}

/** `18<\x2f\x74>` or `AT_FDCWD<\x2f>` to {fd, path}; a bare number to {fd}. */
function fdArg(s) {
  const m = /^(-?\d+|AT_FDCWD)(?:<(.*)>)?$/.exec(s);
  if (!m) return { fd: s, path: undefined };
  return { fd: m[1] === "AT_FDCWD" ? "AT_FDCWD" : Number(m[1]), path: m[2] === undefined ? undefined : hexPath(m[2]) };
}

/** The hex path strace -xx -y prints inside `<...>`. */
function hexPath(s) {
  return s.replace(/\\x([0-9a-f]{2})/g, (_, h) => String.fromCharCode(Number.parseInt(h, 16)));
}

function pathArg(s) {
  return hexString(s).toString("utf8");
}

/** Return value: {ret, retPath, errno}. */
function parseRet(s) {
  const m = /^(-?\d+|\?|0x[0-9a-f]+)(?:<(.*?)>)?(?:\s+(E[A-Z0-9]+))?/.exec(s);
  if (!m) return { ret: Number.NaN };
  return {
    ret: m[1] === "?" ? 0 : Number(m[1]),
    retPath: m[2] === undefined ? undefined : hexPath(m[2]),
    errno: m[3],
  };
}

/**
 * Events of a trace: { seq, tid, time (s), name, args (raw strings), ret, retPath, errno }.
 * Calls that failed are kept (errno set): the model skips them.
 */
export function parseTrace(text) {
  const pending = new Map();
  const events = [];
  for (const line of text.split("\n")) {
    const m = /^(\d+)\s+(\d+\.\d+)\s+(.*)$/.exec(line);
    if (!m) continue;
    const tid = Number(m[1]);
    const time = Number(m[2]);
    let rest = m[3];
    if (rest.startsWith("+++") || rest.startsWith("---")) continue;
    const unfinished = / <unfinished \.\.\.>$/.exec(rest);
    if (unfinished) {
      const call = /^(\w+)\((.*)$/.exec(rest.slice(0, unfinished.index));
      if (call) pending.set(tid, { name: call[1], head: call[2] });
      continue;
    }
    const resumed = /^<\.\.\. (\w+) resumed>(.*)$/.exec(rest);
    if (resumed) {
      const p = pending.get(tid);
      pending.delete(tid);
      if (!p) continue;
      rest = `${p.name}(${p.head}${resumed[2]}`;
    }
    const call = /^(\w+)\((.*)\)\s+=\s+(.*)$/.exec(rest);
    if (!call) {
      // exit_group's "= ?" comes on the same line; anything else unparsable is a bug.
      if (/^exit_group\(/.test(rest)) events.push({ seq: events.length, tid, time, name: "exit_group", args: [] });
      continue;
    }
    const { ret, retPath, errno } = parseRet(call[3]);
    events.push({ seq: events.length, tid, time, name: call[1], args: splitArgs(call[2]), ret, retPath, errno });
  }
  return events;
}

export { fdArg, hexString, pathArg };
