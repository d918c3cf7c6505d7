import { realpathSync, renameSync, statSync, unlinkSync, writeFileSync } from "node:fs";
import { resolve } from "node:path";
import { CliError, fileKind, fsErrorMessage, makeOut, parse, paths, readRegularFile } from "./util.mjs";

export const help = `Usage: pi-session repair FILE [--dry-run] [--move-malformed] [--backup] [--json]

Fix what can be fixed without losing data:
  - torn tail: the incomplete last line (no newline, not valid JSON) is moved to the
    sidecar FILE.corrupt-<timestamp>, the file keeps every complete line;
  - missing final newline after a complete last line: the newline is added;
  - with --move-malformed: every other line that is not valid JSON (pi skips those on
    load) is moved to the sidecar too. A lone torn tail is stored verbatim; several
    moved lines are each preceded by a "# line N" marker line.
The new content replaces the file atomically (write + rename), unless the file changed
while repairing (pi appending to it): then nothing is replaced. A symbolic link is
repaired through: the file it points to is replaced, the link stays. Only regular files
are repaired (a FIFO or a device is refused). On any failure everything the repair
wrote (temp, sidecar, backup) is removed. Nothing else is touched: tree problems
reported by 'check' are left as they are.

  --dry-run  print what would change, write nothing
  --backup   keep a byte copy FILE.bak-<timestamp> of the file as it was
  --json     {file, target, changed, dryRun, backup, sidecar, actions: [{kind, line, bytes}]}

Exit: 0 repaired or nothing to do, 2 unreadable (or write failed).`;

/** Plan the repair of a file's bytes: {content: Buffer, moved: [{line, text}], actions}. */
export function planRepair(buf, { moveMalformed = false } = {}) {
  const actions = [];
  const moved = [];
  const keep = [];
  let start = 0;
  let lineNo = 0;
  while (start < buf.length) {
    const nl = buf.indexOf(0x0a, start);
    const end = nl === -1 ? buf.length : nl;
    const lineBuf = buf.subarray(start, end);
    lineNo++;
    const hasNl = nl !== -1;
    const str = lineBuf.toString("utf8");
    let parses = true;
    if (str.trim()) {
      try {
        JSON.parse(str);
      } catch {
        parses = false;
      }
    }
    if (!hasNl) {
      if (!str.trim()) {
        // only whitespace after the last newline: keep bytes, add the newline
        keep.push(lineBuf, Buffer.from("\n"));
        actions.push({ kind: "add-final-newline", line: lineNo, bytes: 1 });
      } else if (parses) {
        keep.push(lineBuf, Buffer.from("\n"));
        actions.push({ kind: "add-final-newline", line: lineNo, bytes: 1 });
      } else {
        moved.push({ line: lineNo, buf: lineBuf, torn: true });
        actions.push({ kind: "move-torn-tail", line: lineNo, bytes: lineBuf.length });
      }
    } else if (!parses && moveMalformed) {
      moved.push({ line: lineNo, buf: lineBuf });
      actions.push({ kind: "move-malformed", line: lineNo, bytes: lineBuf.length + 1 });
    } else {
      keep.push(buf.subarray(start, end + 1));
    }
    start = end + 1;
  }
  return { content: Buffer.concat(keep), moved, actions };
}

/** Sidecar content: the moved lines verbatim; with several, each after a "# line N" marker. */
function sidecarContent(moved) {
  if (moved.length === 1 && moved[0].torn) return moved[0].buf;
  return Buffer.concat(moved.flatMap((m) => [Buffer.from(`# line ${m.line}\n`), m.buf, Buffer.from("\n")]));
}

/**
 * Repair `file` (see the help text). Returns {result, plan}; throws CliError. `beforeReplace`
 * (tests) runs after the new content is written to the temp file, before the final check.
 * @param {string} file
 * @param {{ dryRun?: boolean, moveMalformed?: boolean, backup?: boolean, shownAs?: string, beforeReplace?: () => void }} [options] `beforeReplace`: a test hook run just before the rename
 */
export function repairFile(
  file,
  { dryRun = false, moveMalformed = false, backup: keepBackup = false, shownAs = file, beforeReplace } = {},
) {
  let buf;
  let before;
  let target;
  try {
    // Through a symbolic link: the file it points to is the one repaired (renaming onto
    // the link would replace the link with a copy and leave the target as it was).
    target = realpathSync(file);
    before = statSync(target);
    if (!before.isFile()) throw new Error(`not a regular file (${fileKind(before)})`);
    buf = readRegularFile(target);
  } catch (err) {
    throw new CliError(fsErrorMessage(err, shownAs));
  }
  if (buf.length !== before.size)
    throw new CliError(`${file}: changed while being read (is pi writing to it?); nothing done`);
  const plan = planRepair(buf, { moveMalformed });
  const ts = new Date().toISOString().replace(/[:.]/g, "-");
  const dry = Boolean(dryRun);
  const result = { file, target, changed: false, dryRun: dry, backup: null, sidecar: null, actions: plan.actions };
  if (plan.actions.length && !dry) {
    const backup = keepBackup ? `${target}.bak-${ts}` : null;
    const sidecar = plan.moved.length ? `${target}.corrupt-${ts}` : null;
    const tmp = `${target}.tmp-${ts}-${process.pid}`;
    const made = [];
    const write = (p, data) => {
      writeFileSync(p, data, { flag: "wx", mode: before.mode & 0o777 });
      made.push(p);
    };
    try {
      // The backup holds exactly the bytes the repair was planned from.
      if (backup) write(backup, buf);
      if (sidecar) write(sidecar, sidecarContent(plan.moved));
      write(tmp, plan.content);
      beforeReplace?.();
      // Someone (pi) appended meanwhile: replacing the file would lose that. Give up.
      const now = statSync(target);
      if (now.size !== before.size || now.mtimeMs !== before.mtimeMs || now.ino !== before.ino) {
        throw new CliError(`${file}: changed during the repair (is pi writing to it?); file left as it is`);
      }
      renameSync(tmp, target);
    } catch (err) {
      // Leave nothing behind: the file is as it was.
      for (const p of made) {
        try {
          unlinkSync(p);
        } catch {
          // already gone
        }
      }
      if (err instanceof CliError) throw err;
      throw new CliError(`${fsErrorMessage(err, file)}; file left as it is`);
    }
    result.backup = backup;
    result.sidecar = sidecar;
    result.changed = true;
  }
  return { result, plan };
}

export async function run(argv) {
  const { values, positionals } = parse(
    argv,
    {
      "dry-run": { type: "boolean", short: "n" },
      "move-malformed": { type: "boolean" },
      backup: { type: "boolean" },
      json: { type: "boolean" },
    },
    { command: "repair" },
  );
  const out = makeOut();
  if (values.help) {
    out.line(help);
    return 0;
  }
  if (positionals.length !== 1) throw new CliError("repair: expected one FILE (see pi-session repair --help)");
  const file = resolve(paths.normalizePath(positionals[0]));
  const { result, plan } = repairFile(file, {
    dryRun: values["dry-run"],
    moveMalformed: values["move-malformed"],
    backup: values.backup,
    shownAs: positionals[0],
  });
  const dry = result.dryRun;
  if (values.json) {
    out.json(result);
    return 0;
  }
  if (!plan.actions.length) {
    out.line(`${file}: nothing to repair`);
    return 0;
  }
  const verb = dry ? "would" : "did";
  for (const a of plan.actions) {
    const what =
      a.kind === "add-final-newline"
        ? "add the missing final newline"
        : a.kind === "move-torn-tail"
          ? `move the torn last line (${a.bytes} bytes) to the sidecar`
          : `move the malformed line (${a.bytes} bytes) to the sidecar`;
    out.line(`${file}:${a.line}: ${verb === "would" ? "would " : ""}${what}`);
  }
  if (!dry) {
    if (result.target !== file) out.line(`repaired through the link: ${result.target}`);
    if (result.backup) out.line(`backup:  ${result.backup}`);
    if (result.sidecar) out.line(`sidecar: ${result.sidecar}`);
  } else out.line(out.dim("dry run: nothing written"));
  return 0;
}
