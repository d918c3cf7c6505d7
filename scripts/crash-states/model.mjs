// From a recorded trace (strace.mjs) to the crash states a power loss could leave.
//
// buildOps() replays the trace's events over a model of the directory tree under `root`
// (inodes, names, descriptors and their offsets) and answers the operations on it, in order:
//   data  a write of bytes at an offset of an inode, or a truncation        (unit: the inode)
//   dir   a name created, removed or renamed, a directory made              (unit: the directory)
//   sync  fsync/fdatasync of an inode that completed                        (a barrier of its unit)
//   mark  a line the workload wrote to its marks file (what it was told)
//   exit  the process called exit_group
//
// A crash point k means: operations 0..k-1 were issued, none after. Which of them are on the
// device depends on the persistence model:
//   "prefix"   (ordered prefix, torn last write) every operation before k persisted, in program
//              order; the last one, if a write, may be torn (1 byte, half, all but one byte).
//              Like a file system that persists everything in order (data=journal).
//   "barrier"  (fsync barriers, directory operations ordered per directory) each unit persists
//              a prefix of its operations, independently of every other unit; the prefix holds
//              at least every operation before the unit's last completed fsync/fdatasync; the
//              last write in a file's prefix may be torn (1 byte, half). fsync of a file does
//              not persist its name (only fsync of the directory does). Like strict POSIX
//              (ALICE's weakest model without reordering within a file).
import { createHash } from "node:crypto";
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, isAbsolute, join, relative, resolve } from "node:path";
import { fdArg, hexString, pathArg } from "./strace.mjs";

/** The files and directories under `root` now (the durable initial state). */
export function snapshot(root) {
  const dirs = [""];
  const files = new Map();
  const walk = (rel) => {
    for (const name of readdirSync(join(root, rel))) {
      const r = rel ? `${rel}/${name}` : name;
      const st = statSync(join(root, r));
      if (st.isDirectory()) {
        dirs.push(r);
        walk(r);
      } else if (st.isFile()) files.set(r, readFileSync(join(root, r)));
    }
  };
  if (existsSync(root)) walk("");
  return { dirs, files };
}

const flagsOf = (s) => new Set(s.split("|"));

/**
 * Replay `events` over the tree under `root` as `snap` found it. Returns
 * { ops, init: { ns: Map<abs path, ino>, inodes: Map<ino, {dir, content}> } }.
 * Every op: { i, time, kind, unit?, ... }; data ops { ino, write: Buffer, off } or
 * { ino, trunc: len }; dir ops { dirIno, type: link|unlink|rename|mkdir|rmdir, path, to?, ino? };
 * sync ops { unit }; marks { text, ino? (the inode its path named then) }.
 */
export function buildOps(events, root, snap, marksPath) {
  let nextIno = 1;
  const inodes = new Map();
  const ns = new Map();
  const initNs = new Map();
  const newInode = (dir, content = Buffer.alloc(0)) => {
    const ino = nextIno++;
    inodes.set(ino, { dir, content });
    return ino;
  };
  for (const d of snap.dirs) {
    const ino = newInode(true);
    ns.set(d ? join(root, d) : root, ino);
  }
  for (const [f, content] of snap.files) ns.set(join(root, f), newInode(false, content));
  for (const [p, ino] of ns) initNs.set(p, ino);
  const init = { ns: initNs, inodes: new Map([...inodes].map(([k, v]) => [k, { ...v }])) };
  const sizes = new Map([...inodes].map(([ino, v]) => [ino, v.content.length]));
  const fds = new Map();
  const ops = [];
  const under = (p) => p === root || p.startsWith(`${root}/`);
  const push = (ev, op) => ops.push({ i: ops.length, time: ev.time, ...op });
  const dirOf = (p) => {
    const ino = ns.get(dirname(p));
    if (ino === undefined) throw new Error(`no directory for ${p}`);
    return ino;
  };
  /** Absolute path of a path argument relative to a dirfd argument (AT_FDCWD<cwd> or fd<dir>). */
  const at = (dirfd, p) => {
    if (isAbsolute(p)) return resolve(p);
    if (dirfd?.path === undefined) throw new Error(`relative path ${p} without a directory`);
    return resolve(dirfd.path, p);
  };
  let exited = false;
  for (const ev of events) {
    if (ev.errno !== undefined || Number.isNaN(ev.ret) || ev.ret < 0) continue;
    const a = ev.args;
    switch (ev.name) {
      case "open":
      case "openat":
      case "creat": {
        const fd = ev.ret;
        const abs = ev.retPath;
        if (abs === undefined || !under(abs)) {
          fds.delete(fd);
          break;
        }
        const flags =
          ev.name === "creat" ? flagsOf("O_CREAT|O_WRONLY|O_TRUNC") : flagsOf(a[ev.name === "open" ? 1 : 2]);
        let ino = ns.get(abs);
        if (ino === undefined) {
          if (!flags.has("O_CREAT")) throw new Error(`open of ${abs}, unknown to the model`);
          ino = newInode(false);
          sizes.set(ino, 0);
          push(ev, { kind: "dir", unit: `d${dirOf(abs)}`, type: "link", path: abs, ino });
          ns.set(abs, ino);
        } else if (flags.has("O_TRUNC") && !inodes.get(ino).dir) {
          push(ev, { kind: "data", unit: `f${ino}`, ino, trunc: 0 });
          sizes.set(ino, 0);
        }
        fds.set(fd, { ino, append: flags.has("O_APPEND"), pos: 0 });
        break;
      }
      case "write":
      case "writev":
      case "pwrite64": {
        const { fd, path } = fdArg(a[0]);
        const f = fds.get(fd);
        let bytes;
        if (ev.name === "writev") {
          const parts = [...a[1].matchAll(/iov_base=("(?:[^"\\]|\\.)*"(?:\.\.\.)?)/g)].map((m) => hexString(m[1]));
          bytes = Buffer.concat(parts).subarray(0, ev.ret);
        } else bytes = hexString(a[1]).subarray(0, ev.ret);
        if (!f) {
          if (path === marksPath)
            for (const text of bytes.toString("utf8").split("\n").filter(Boolean)) {
              const target = text.split(" ")[1];
              push(ev, { kind: "mark", text, ino: target ? ns.get(target) : undefined });
            }
          break;
        }
        if (inodes.get(f.ino).dir) break;
        const off = ev.name === "pwrite64" ? Number(a[3]) : f.append ? sizes.get(f.ino) : f.pos;
        if (ev.name !== "pwrite64") f.pos = off + bytes.length;
        if (bytes.length > 0) push(ev, { kind: "data", unit: `f${f.ino}`, ino: f.ino, write: bytes, off });
        sizes.set(f.ino, Math.max(sizes.get(f.ino), off + bytes.length));
        break;
      }
      case "pwritev":
      case "pwritev2":
        if (fds.has(fdArg(a[0]).fd)) throw new Error(`${ev.name} is not modelled`);
        break;
      case "ftruncate": {
        const f = fds.get(fdArg(a[0]).fd);
        if (!f) break;
        const len = Number(a[1]);
        push(ev, { kind: "data", unit: `f${f.ino}`, ino: f.ino, trunc: len });
        sizes.set(f.ino, len);
        break;
      }
      case "truncate": {
        const abs = resolve(pathArg(a[0]));
        const ino = ns.get(abs);
        if (ino === undefined) break;
        push(ev, { kind: "data", unit: `f${ino}`, ino, trunc: Number(a[1]) });
        sizes.set(ino, Number(a[1]));
        break;
      }
      case "lseek": {
        const f = fds.get(fdArg(a[0]).fd);
        if (f) f.pos = ev.ret;
        break;
      }
      case "rename":
      case "renameat":
      case "renameat2": {
        const [from, to] =
          ev.name === "rename"
            ? [at(undefined, pathArg(a[0])), at(undefined, pathArg(a[1]))]
            : [at(fdArg(a[0]), pathArg(a[1])), at(fdArg(a[2]), pathArg(a[3]))];
        if (!under(from) && !under(to)) break;
        if (dirname(from) !== dirname(to)) throw new Error(`rename across directories is not modelled: ${from} ${to}`);
        const ino = ns.get(from);
        if (ino === undefined) throw new Error(`rename of ${from}, unknown to the model`);
        push(ev, { kind: "dir", unit: `d${dirOf(to)}`, type: "rename", path: from, to, ino });
        ns.delete(from);
        ns.set(to, ino);
        break;
      }
      case "link":
      case "linkat": {
        const [from, to] =
          ev.name === "link"
            ? [at(undefined, pathArg(a[0])), at(undefined, pathArg(a[1]))]
            : [at(fdArg(a[0]), pathArg(a[1])), at(fdArg(a[2]), pathArg(a[3]))];
        if (!under(to)) break;
        const ino = ns.get(from);
        if (ino === undefined) throw new Error(`link of ${from}, unknown to the model`);
        push(ev, { kind: "dir", unit: `d${dirOf(to)}`, type: "link", path: to, ino });
        ns.set(to, ino);
        break;
      }
      case "unlink":
      case "unlinkat":
      case "rmdir": {
        const p = ev.name === "unlinkat" ? at(fdArg(a[0]), pathArg(a[1])) : at(undefined, pathArg(a[0]));
        if (!under(p)) break;
        const rmdir = ev.name === "rmdir" || (ev.name === "unlinkat" && a[2].includes("AT_REMOVEDIR"));
        push(ev, { kind: "dir", unit: `d${dirOf(p)}`, type: rmdir ? "rmdir" : "unlink", path: p });
        ns.delete(p);
        break;
      }
      case "mkdir":
      case "mkdirat": {
        const p = ev.name === "mkdirat" ? at(fdArg(a[0]), pathArg(a[1])) : at(undefined, pathArg(a[0]));
        if (!under(p)) break;
        const ino = newInode(true);
        push(ev, { kind: "dir", unit: `d${dirOf(p)}`, type: "mkdir", path: p, ino });
        ns.set(p, ino);
        break;
      }
      case "fsync":
      case "fdatasync": {
        const f = fds.get(fdArg(a[0]).fd);
        if (!f) break;
        push(ev, { kind: "sync", unit: `${inodes.get(f.ino).dir ? "d" : "f"}${f.ino}`, syscall: ev.name });
        break;
      }
      case "sync":
      case "syncfs":
        push(ev, { kind: "sync", unit: "*", syscall: ev.name });
        break;
      case "close":
        fds.delete(fdArg(a[0]).fd);
        break;
      case "dup":
      case "dup2":
      case "dup3":
      case "fcntl": {
        if (ev.name === "fcntl" && !/^F_DUPFD/.test(a[1])) break;
        const f = fds.get(fdArg(a[0]).fd);
        if (f) fds.set(ev.ret, f);
        else fds.delete(ev.ret);
        break;
      }
      case "exit_group":
        if (!exited) push(ev, { kind: "exit" });
        exited = true;
        break;
    }
  }
  return { ops, init };
}

/** Remove every fsync/fdatasync from the ops: the deliberately broken trace. */
export function withoutSyncs(ops) {
  return ops.filter((o) => o.kind !== "sync").map((o, i) => ({ ...o, i }));
}

/** Per unit: the indices of its ops, and its barriers ({ at, covers }). */
export function indexUnits(ops) {
  const units = new Map();
  const unit = (u) => {
    if (!units.has(u)) units.set(u, { ops: [], barriers: [] });
    return units.get(u);
  };
  for (const o of ops) {
    if (o.kind === "data" || o.kind === "dir") unit(o.unit).ops.push(o.i);
  }
  for (const o of ops) {
    if (o.kind !== "sync") continue;
    const targets = o.unit === "*" ? [...units.keys()] : [o.unit];
    for (const u of targets) {
      const x = unit(u);
      x.barriers.push({ at: o.i, covers: countBelow(x.ops, o.i) });
    }
  }
  return units;
}

/** How many of the sorted numbers `xs` are below `k`. */
function countBelow(xs, k) {
  let lo = 0;
  let hi = xs.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (xs[mid] < k) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** Byte cuts of a torn write of `len` bytes under a model. */
function tornCuts(len, model) {
  const cuts = model === "prefix" ? [1, len >> 1, len - 1] : [1, len >> 1];
  return [...new Set(cuts.filter((c) => c > 0 && c < len))];
}

/** A small deterministic PRNG (xorshift32). */
export function rng(seed) {
  let x = seed >>> 0 || 1;
  return (n) => {
    x ^= x << 13;
    x >>>= 0;
    x ^= x >>> 17;
    x ^= x << 5;
    x >>>= 0;
    return x % n;
  };
}

/**
 * The crash states at crash point k: a list of choices, each a Map unit -> { n, cut? }
 * (units not named persist all their ops before k). At most `cap` per point (all of them
 * when there are that few, else the extremes plus a seeded sample).
 */
export function statesAt(ops, units, k, model, cap, rand) {
  const free = [];
  const full = new Map();
  for (const [u, x] of units) {
    const n = countBelow(x.ops, k);
    if (n === 0) continue;
    full.set(u, { n });
    if (model === "prefix") continue;
    let min = 0;
    for (const b of x.barriers) if (b.at < k) min = Math.max(min, b.covers);
    // Options: prefixes min..n, and for each prefix ending in a write of >1 byte, its torn cuts.
    const options = [];
    for (let p = min; p <= n; p++) {
      options.push({ n: p });
      const last = p > 0 ? ops[x.ops[p - 1]] : undefined;
      if (p > min && last?.write && last.write.length > 1)
        for (const cut of tornCuts(last.write.length, model)) options.push({ n: p, cut });
    }
    if (options.length > 1) free.push({ u, options });
  }
  if (model === "prefix") {
    const out = [full];
    const last = ops[k - 1];
    if (last?.kind === "data" && last.write && last.write.length > 1) {
      for (const cut of tornCuts(last.write.length, model)) {
        const m = new Map(full);
        m.set(last.unit, { n: full.get(last.unit).n, cut });
        out.push(m);
      }
    }
    return out;
  }
  let total = 1;
  for (const f of free) total *= f.options.length;
  const make = (pick) => {
    const m = new Map(full);
    for (const [j, f] of free.entries()) m.set(f.u, f.options[pick(j)]);
    return m;
  };
  if (total <= cap) {
    const out = [];
    for (let c = 0; c < total; c++) {
      let rest = c;
      out.push(
        make((j) => {
          const len = free[j].options.length;
          const v = rest % len;
          rest = Math.floor(rest / len);
          return v;
        }),
      );
    }
    return out;
  }
  // Extremes (everything durable lost / kept, and each unit alone lost or kept), then a sample.
  const out = [make(() => 0), make((j) => free[j].options.length - 1)];
  for (let i = 0; i < free.length && out.length < cap; i++) {
    out.push(make((j) => (j === i ? 0 : free[j].options.length - 1)));
    if (out.length < cap) out.push(make((j) => (j === i ? free[j].options.length - 1 : 0)));
  }
  while (out.length < cap) out.push(make((j) => rand(free[j].options.length)));
  return out;
}

/**
 * The files and directories of a crash state: { files: Map<rel, Buffer>, dirs: Set<rel>, key }.
 * A name whose directory did not persist is not reachable and not in the state.
 */
export function materialize(ops, init, root, choice) {
  const ns = new Map(init.ns);
  const content = new Map();
  for (const [ino, v] of init.inodes) if (!v.dir) content.set(ino, v.content);
  const taken = new Map();
  const dirs = new Set([...init.inodes].filter(([, v]) => v.dir).map(([ino]) => ino));
  for (const o of ops) {
    if (o.kind !== "data" && o.kind !== "dir") continue;
    const c = choice.get(o.unit);
    if (c === undefined) continue;
    const t = (taken.get(o.unit) ?? 0) + 1;
    if (t > c.n) continue;
    taken.set(o.unit, t);
    const torn = t === c.n ? c.cut : undefined;
    if (o.kind === "dir") {
      if (o.type === "link") ns.set(o.path, o.ino);
      else if (o.type === "mkdir") {
        ns.set(o.path, o.ino);
        dirs.add(o.ino);
      } else if (o.type === "unlink" || o.type === "rmdir") ns.delete(o.path);
      else if (o.type === "rename") {
        ns.delete(o.path);
        ns.set(o.to, o.ino);
      }
      continue;
    }
    const old = content.get(o.ino) ?? Buffer.alloc(0);
    if (o.trunc !== undefined) {
      const b = Buffer.alloc(o.trunc);
      old.copy(b, 0, 0, Math.min(old.length, o.trunc));
      content.set(o.ino, b);
    } else {
      const bytes = torn === undefined ? o.write : o.write.subarray(0, torn);
      const end = o.off + bytes.length;
      const b = Buffer.alloc(Math.max(old.length, end));
      old.copy(b);
      bytes.copy(b, o.off);
      content.set(o.ino, b);
    }
  }
  const files = new Map();
  const dirSet = new Set();
  const reachable = (p) => {
    for (let d = p; d !== root; d = dirname(d)) {
      const ino = ns.get(d);
      if (ino === undefined) return false;
      if (d !== p && !dirs.has(ino)) return false;
    }
    return true;
  };
  for (const [p, ino] of ns) {
    if (p === root || !reachable(p)) continue;
    const rel = relative(root, p);
    if (dirs.has(ino)) dirSet.add(rel);
    else files.set(rel, content.get(ino) ?? Buffer.alloc(0));
  }
  const h = createHash("sha1");
  for (const d of [...dirSet].sort()) h.update(`d ${d}\n`);
  for (const f of [...files.keys()].sort())
    h.update(`f ${f} ${createHash("sha1").update(files.get(f)).digest("hex")}\n`);
  return { files, dirs: dirSet, key: h.digest("hex") };
}

/** The program-order content of `path` after ops 0..k-1 (undefined: absent). */
export function programContent(ops, init, root, k, path) {
  const choice = new Map();
  for (const o of ops.slice(0, k)) {
    if (o.kind === "data" || o.kind === "dir") choice.set(o.unit, { n: (choice.get(o.unit)?.n ?? 0) + 1 });
  }
  return materialize(ops, init, root, choice).files.get(relative(root, path));
}
