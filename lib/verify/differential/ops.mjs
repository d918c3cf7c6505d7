// The differential harness: operations that change a session (appends, branching, new and
// reopened sessions, fixture files), each generated from side A's state.
import fs from "node:fs";
import path from "node:path";
import { IdRef, PathRef, SideFn } from "./values.mjs";
import {
  FIXTURES,
  LABELS,
  MISSING_IDS,
  MODELS,
  PROVIDERS,
  SESSION_NAMES,
  THINKING,
  fixtureContent,
  genContentForEdit,
  genMessage,
  genString,
  genUsage,
  genUserContent,
  genValue,
} from "./generate.mjs";

// ---------------------------------------------------------------------------------------------
// Operations
// ---------------------------------------------------------------------------------------------

export function entryInfo(A) {
  const entries = A.sm.getEntries();
  const branch = new Set(A.sm.getBranch().map((e) => e.id));
  return { entries, branch };
}

export function pickId(rng, A, mode = "any") {
  const { entries, branch } = entryInfo(A);
  let pool;
  if (mode === "onBranch") pool = entries.filter((e) => branch.has(e.id));
  else if (mode === "offBranch") pool = entries.filter((e) => !branch.has(e.id));
  else if (mode === "editable")
    pool = entries.filter(
      (e) =>
        branch.has(e.id) &&
        (e.type === "custom_message" ||
          (e.type === "message" && ["user", "assistant", "toolResult"].includes(e.message?.role))),
    );
  else if (mode === "nonEditable")
    pool = entries.filter(
      (e) =>
        branch.has(e.id) &&
        !(
          e.type === "custom_message" ||
          (e.type === "message" && ["user", "assistant", "toolResult"].includes(e.message?.role))
        ),
    );
  else pool = entries;
  if (mode === "missing" || pool.length === 0) return rng.pick(MISSING_IDS);
  // Bias towards recent entries.
  const idx = rng.bool(0.5) ? pool.length - 1 - rng.int(Math.min(pool.length, 5)) : rng.int(pool.length);
  return new IdRef(pool[idx].id);
}

export function idArg(rng, A, weights) {
  return pickId(rng, A, rng.weighted(weights));
}

let uniqueCounter = 0;

export const call = (name, args, extra = {}) => ({
  name,
  args,
  run: (side) => side.sm[name](...side.mat(args)),
  ...extra,
});

export const SESSION_OPS = {
  appendMessage(rng, ctx) {
    const msg = genMessage(rng, ctx);
    return {
      name: "appendMessage",
      args: [msg],
      run(side) {
        const m = side.mat(msg);
        const id = side.sm.appendMessage(m);
        if (side.skip.has("argIdentity")) return { id };
        return { id, argIdentity: side.sm.getEntry(id)?.message === m };
      },
    };
  },
  appendThinkingLevelChange: (rng) => call("appendThinkingLevelChange", [rng.pick(THINKING)]),
  appendModelChange: (rng) => call("appendModelChange", [rng.pick(PROVIDERS), rng.pick(MODELS)]),
  appendUsage(rng) {
    const args = [rng.pick(["cache_warm", "subagent", ""]), rng.pick(PROVIDERS), rng.pick(MODELS), genUsage(rng)];
    const note = rng.weighted([
      [3, "omit"],
      [1, undefined],
      [1, ""],
      [3, "note ✓"],
    ]);
    if (note !== "omit") args.push(note);
    return {
      name: "appendUsage",
      args,
      run(side) {
        const a = side.mat(args);
        const ret = side.sm.appendUsage(...a);
        if (side.skip.has("identity")) return { ret };
        return { ret, sameAsGetEntry: ret === side.sm.getEntry(ret?.id), usageIdentity: ret?.usage === a[3] };
      },
    };
  },
  appendCompaction(rng, ctx) {
    const first = rng.weighted([
      [5, () => pickId(rng, ctx.A, "onBranch")],
      [1, () => pickId(rng, ctx.A, "offBranch")],
      [1, () => pickId(rng, ctx.A, "missing")],
      [2, () => null],
      [0.5, () => undefined],
    ])();
    const args = [genString(rng), first, rng.pick([0, 1000, 12345, 1.5, -1])];
    const n = rng.range(0, 3);
    if (n >= 1) args.push(rng.bool(0.6) ? genValue(rng) : undefined);
    if (n >= 2) args.push(rng.pick([true, false, undefined]));
    if (n >= 3) args.push(rng.bool(0.7) ? genUsage(rng) : undefined);
    return call("appendCompaction", args);
  },
  appendCustomEntry(rng) {
    const args = [rng.pick(["ext-state", "", "ext/ü"])];
    const k = rng.int(3);
    if (k === 1) args.push(genValue(rng));
    if (k === 2) args.push(undefined);
    return {
      name: "appendCustomEntry",
      args,
      run(side) {
        const a = side.mat(args);
        const id = side.sm.appendCustomEntry(...a);
        if (side.skip.has("argIdentity") || a[1] === null || typeof a[1] !== "object") return { id };
        return { id, argIdentity: side.sm.getEntry(id)?.data === a[1] };
      },
    };
  },
  appendSessionInfo: (rng) => call("appendSessionInfo", [rng.pick(SESSION_NAMES)]),
  appendCustomMessageEntry(rng) {
    const args = [rng.pick(["ext-msg", "", "ëxt"]), genUserContent(rng), rng.bool(0.95) ? rng.bool() : undefined];
    if (rng.bool(0.6)) args.push(rng.bool(0.7) ? genValue(rng) : undefined);
    return call("appendCustomMessageEntry", args);
  },
  appendContextEdit(rng, ctx) {
    const target = rng.weighted([
      [8, () => pickId(rng, ctx.A, "editable")],
      [1.5, () => pickId(rng, ctx.A, "offBranch")],
      [1, () => pickId(rng, ctx.A, "missing")],
      [1.5, () => pickId(rng, ctx.A, "nonEditable")],
    ])();
    const replacement = rng.weighted([
      [3, () => null],
      [4, () => ({ content: genString(rng) })],
      [4, () => ({ content: genContentForEdit(rng) })],
      [0.4, () => undefined],
      [0.4, () => "just a string"],
      [0.4, () => ({})],
      [0.4, () => ({ content: 5 })],
      [0.4, () => ({ content: null })],
      [0.3, () => []],
      [0.3, () => ({ content: "x", extra: 1 })],
    ])();
    return call("appendContextEdit", [target, replacement]);
  },
  appendLabelChange(rng, ctx) {
    const target = rng.bool(0.9) ? pickId(rng, ctx.A, "any") : pickId(rng, ctx.A, "missing");
    return call("appendLabelChange", [target, rng.pick(LABELS)]);
  },
  branch(rng, ctx) {
    return call("branch", [rng.bool(0.9) ? pickId(rng, ctx.A, "any") : pickId(rng, ctx.A, "missing")]);
  },
  resetLeaf: () => call("resetLeaf", []),
  branchWithSummary(rng, ctx) {
    const from = rng.weighted([
      [6, () => pickId(rng, ctx.A, "any")],
      [1, () => null],
      [1, () => pickId(rng, ctx.A, "missing")],
    ])();
    const args = [from, rng.bool(0.15) ? "" : genString(rng)];
    const n = rng.range(0, 3);
    if (n >= 1) args.push(rng.bool(0.6) ? genValue(rng) : undefined);
    if (n >= 2) args.push(rng.pick([true, false, undefined]));
    if (n >= 3) args.push(rng.bool(0.7) ? genUsage(rng) : undefined);
    return call("branchWithSummary", args);
  },
  createBranchedSession(rng, ctx) {
    const leaf = rng.weighted([
      [6, () => pickId(rng, ctx.A, "any")],
      [1, () => pickId(rng, ctx.A, "missing")],
      [0.5, () => undefined],
    ])();
    return call("createBranchedSession", [leaf], { fsChange: true });
  },
  newSession(rng, ctx) {
    const opt = rng.weighted([
      [3, () => "none"],
      [1, () => ({})],
      [2, () => ({ id: `sess-${ctx.seed}-${++uniqueCounter}.v${rng.int(9)}` })],
      [1, () => ({ id: rng.pick(["bad id", "", "-leading", "trailing-", "a/b", "ü", "..", "a..b", "x\n"]) })],
      [1, () => ({ parentSession: rng.pick(["/some/parent.jsonl", "", "relative.jsonl"]) })],
      [1, () => ({ parentSession: new PathRef("current") })],
      [0.5, () => ({ id: undefined, parentSession: undefined })],
    ])();
    return call("newSession", opt === "none" ? [] : [opt], { fsChange: true });
  },
  reopen(rng, _ctx) {
    /** @type {unknown[]} */
    const args = [new PathRef("current")];
    const k = rng.int(4);
    if (k >= 1) args.push(rng.bool(0.7) ? new SideFn((s) => s.dir, "<dir>") : undefined);
    if (k >= 2) args.push(rng.pick(["/tmp/override-cwd", undefined, "rel/cwd"]));
    return {
      name: "SessionManager.open",
      args,
      fsChange: true,
      run(side) {
        const sm = side.mod.SessionManager.open(...side.mat(args));
        side.sm = sm;
        return null;
      },
    };
  },
  reloadInMemory(rng) {
    const mode = rng.weighted([
      [3, "withHeader"],
      [1, "noHeader"],
      [1, "v1"],
      [0.5, "empty"],
    ]);
    const opts = rng.bool(0.3) ? { id: rng.pick(["mem-id-1", "bad id"]) } : undefined;
    const cwd = rng.pick([undefined, "/tmp/diff-mem-cwd"]);
    return {
      name: "SessionManager.inMemory",
      args: [cwd ?? "(default)", opts, `<${mode} JSON copy of own entries>`],
      run(side) {
        const header = side.sm.getHeader();
        const entries = JSON.parse(JSON.stringify(side.sm.getEntries()));
        let fileEntries;
        if (mode === "withHeader") fileEntries = [JSON.parse(JSON.stringify(header)), ...entries];
        else if (mode === "noHeader") fileEntries = entries;
        else if (mode === "empty") fileEntries = [];
        else {
          const h = JSON.parse(JSON.stringify(header));
          delete h.version;
          fileEntries = [
            h,
            ...entries
              .filter((e) => e.type !== "compaction" && e.type !== "context_edit" && e.type !== "label")
              .map(({ id, parentId, ...rest }) => rest),
          ];
        }
        const sm = side.mod.SessionManager.inMemory(cwd ?? "/tmp/diff-seq-cwd", side.mat(opts), fileEntries);
        side.sm = sm;
        if (side.skip.has("identity") || fileEntries.length === 0) return null;
        return {
          headerIdentity: sm.getHeader() === fileEntries[0],
          firstEntryIdentity: sm.getEntries()[0] === fileEntries[mode === "noHeader" ? 0 : 1],
        };
      },
    };
  },
  setSessionFile(rng, ctx) {
    let target;
    if (!ctx.persisted) target = new PathRef("abs", rng.pick(["/nonexistent-diff-dir/x.jsonl", "relative-diff.jsonl"]));
    else
      target = rng.weighted([
        [3, () => (ctx.A.files.length ? new PathRef("known", rng.int(ctx.A.files.length)) : new PathRef("current"))],
        [2, () => new PathRef("rel", `custom-${rng.int(3)}.jsonl`)],
        [1, () => new PathRef("current")],
      ])();
    return call("setSessionFile", [target], { fsChange: true });
  },
  fixture(rng, ctx) {
    const kind = rng.pick(FIXTURES);
    const name = `fixture-${kind}-${++uniqueCounter}.jsonl`;
    // loadEntriesFromFile is not among the exports of pi's bundle chunk
    const hows = ["open", "setSessionFile"];
    if (typeof ctx.A.mod.loadEntriesFromFile === "function") hows.push("loadEntriesFromFile");
    const how = rng.pick(hows);
    const content = fixtureContent(kind, ctx.cwd);
    return {
      name: `fixture:${kind}:${how}`,
      args: [name],
      fsChange: true,
      run(side) {
        const p = path.join(side.dir, name);
        fs.mkdirSync(side.dir, { recursive: true });
        fs.writeFileSync(p, content);
        if (how === "open") side.sm = side.mod.SessionManager.open(p);
        else if (how === "setSessionFile") side.sm.setSessionFile(p);
        else return { loaded: side.mod.loadEntriesFromFile(p), after: fs.readFileSync(p, "utf8") };
        return null;
      },
    };
  },
  continueRecent(_rng, ctx) {
    return {
      name: "SessionManager.continueRecent",
      args: [ctx.cwd, "<dir>"],
      fsChange: true,
      guard: (side) => {
        // With several candidate files the choice depends on mtime ties and readdir order: skip.
        if (!fs.existsSync(side.dir)) return true;
        return fs.readdirSync(side.dir).filter((f) => f.endsWith(".jsonl")).length <= 1;
      },
      run(side) {
        side.sm = side.mod.SessionManager.continueRecent(ctx.cwd, side.dir);
        return null;
      },
    };
  },
};
