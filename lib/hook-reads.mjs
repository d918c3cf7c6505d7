// How the load hook reads pi's modules: itself, into a buffer with room for the stand-ins
// (readWithRoom, so the 2.6 MB chunk is not copied again), unless someone else's module hook may
// sit before ours in the chain (othersMayHook), which must then see pi's modules as Node loads them.
import { closeSync, fstatSync, openSync, readSync } from "node:fs";
import { resolve as resolvePath } from "node:path";
import { fileURLToPath } from "node:url";
import { statKey } from "./verify/digest-memo.mjs";

/** Bytes of room after the file in our own read: the stand-ins' assignments are ~700. */
export const ROOM = 4096;

/**
 * Reads pi's module at `url` as Node's own load would (the whole regular file), into a buffer with
 * ROOM bytes to spare, and gives `{ bytes, buffer, length, stat }`: `stat` is the digest memo's key
 * (lib/verify/digest-memo.mjs) when the file's stat was the same before and after the read, so the
 * bytes are the file at that stat. undefined when anything is unusual (not a regular file, an
 * error, the file grew while read): Node's own load then reads it, with its own errors.
 */
export function readWithRoom(url) {
  let fd;
  try {
    fd = openSync(fileURLToPath(url), "r");
    const before = fstatSync(fd, { bigint: true });
    if (!before.isFile()) return undefined;
    const size = Number(before.size);
    const buffer = Buffer.allocUnsafeSlow(size + ROOM);
    let length = 0;
    for (;;) {
      const n = readSync(fd, buffer, length, buffer.length - length, null);
      if (n === 0) break;
      length += n;
      if (length > size) return undefined;
    }
    const after = fstatSync(fd, { bigint: true });
    const key = statKey(after);
    const stat = length === size && key !== undefined && key === statKey(before) ? key : undefined;
    return { bytes: buffer.subarray(0, length), buffer, length, stat };
  } catch {
    return undefined;
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

const ownRegister = fileURLToPath(new URL("./register.mjs", import.meta.url));
const PRELOAD_FLAG = /^(--import|--require|-r|--loader|--experimental-loader)(?:=(.*))?$/;

/**
 * Whether someone else's module hook may sit before ours in the chain, so that the load hook must
 * hand pi's modules on to the next hook rather than read them itself (readWithRoom): any code Node
 * runs before the main module (--import, --require, --loader, on the command line or in
 * NODE_OPTIONS) other than this package's own register.mjs may have registered one. Arguments it
 * cannot read (quoted paths with spaces) count as someone else's.
 */
export function othersMayHook(env, execArgv) {
  const args = [...execArgv, ...(env.NODE_OPTIONS ?? "").split(/\s+/).filter(Boolean)];
  for (let i = 0; i < args.length; i++) {
    const flag = PRELOAD_FLAG.exec(args[i]);
    if (!flag) continue;
    const value = flag[2] ?? args[++i] ?? "";
    if (!isOwnRegister(value)) return true;
  }
  return false;
}

function isOwnRegister(value) {
  if (value === "pi-session-native/register") return true;
  try {
    return resolvePath(value.startsWith("file:") ? fileURLToPath(value) : value) === ownRegister;
  } catch {
    return false;
  }
}
