// The differential harness: operations that only read (getters, free functions) and the
// constructors a sequence starts with; genOp draws the next operation of a sequence.
import fs from "node:fs";
import path from "node:path";
import { PathRef, SideFn } from "./values.mjs";
import { FIX_TS, genContentForEdit, genMessage, genUserContent, genValue } from "./generate.mjs";
import { SESSION_OPS, call, idArg, pickId } from "./ops.mjs";

export const PROBE_OPS = {
  probe(rng, ctx) {
    const A = ctx.A;
    const idW = [
      [5, "any"],
      [1, "missing"],
    ];
    const kind = rng.weighted([
      [4, "getEntry"],
      [3, "getChildren"],
      [3, "getLabel"],
      [3, "getBranch"],
      [1, "getBranchNoArg"],
      [ctx.skip.has("looseArgs") ? 0 : 0.5, "loose"],
      [1, "misc"],
    ]);
    if (kind === "getBranchNoArg") return call("getBranch", []);
    if (kind === "loose") {
      const m = rng.pick(["getChildren", "getEntry", "getLabel", "getBranch"]);
      return call(m, [rng.pick([null, undefined])]);
    }
    if (kind === "misc") {
      const m = rng.pick([
        "getLeafId",
        "getLeafEntry",
        "getEntryCount",
        "getHeader",
        "getSessionName",
        "getCwd",
        "getSessionDir",
        "isPersisted",
        "getSessionFile",
        "getSessionId",
        "usesDefaultSessionDir",
        "buildContextEntries",
        "buildSessionProjection",
        "buildSessionContext",
        "getTree",
        "getEntries",
      ]);
      return call(m, []);
    }
    return call(kind, [idArg(rng, A, idW)]);
  },
  freeFn(rng, ctx) {
    const A = ctx.A;
    // pi's bundle chunk exports only some of the free functions: the others get no weight
    const has = (name) => typeof A.mod[name] !== "undefined";
    const fn = rng.weighted([
      [has("buildSessionContext") ? 3 : 0, "buildSessionContext"],
      [has("buildContextEntries") ? 2 : 0, "buildContextEntries"],
      [has("buildSessionProjection") ? 2 : 0, "buildSessionProjection"],
      [has("getLatestCompactionEntry") ? 1 : 0, "getLatestCompactionEntry"],
      [has("sessionEntryToContextMessages") ? 2 : 0, "sessionEntryToContextMessages"],
      [has("projectContextEntry") ? 2 : 0, "projectContextEntry"],
      [has("parseSessionEntries") ? 1 : 0, "parseSessionEntries"],
      [has("assertValidSessionId") ? 1 : 0, "assertValidSessionId"],
      [has("migrateSessionEntries") ? 0.5 : 0, "migrateSessionEntries"],
      [has("loadEntriesFromFile") && ctx.persisted ? 1 : 0, "loadEntriesFromFile"],
      [has("findMostRecentSession") && ctx.persisted ? 0.3 : 0, "findMostRecentSession"],
      [has("getDefaultSessionDir") && ctx.persisted ? 0.3 : 0, "getDefaultSessionDir"],
      [has("CURRENT_SESSION_VERSION") ? 0.2 : 0, "CURRENT_SESSION_VERSION"],
    ]);
    const n = A.sm.getEntryCount();
    switch (fn) {
      case "buildSessionContext":
      case "buildContextEntries":
      case "buildSessionProjection": {
        const leaf = rng.weighted([
          [2, () => "omit"],
          [1, () => undefined],
          [1, () => null],
          [4, () => pickId(rng, A, "any")],
          [1, () => pickId(rng, A, "missing")],
        ])();
        const withMap = rng.bool(0.3);
        const entriesMode = rng.bool(0.8) ? "own" : "json";
        return {
          name: fn,
          args: [`<${entriesMode} entries>`, leaf, withMap ? "<byId map>" : "omit"],
          run(side) {
            let entries = side.sm.getEntries();
            if (entriesMode === "json") entries = JSON.parse(JSON.stringify(entries));
            const args = [entries];
            if (leaf !== "omit" || withMap) args.push(leaf === "omit" ? undefined : side.mat(leaf));
            if (withMap) args.push(new Map(entries.map((e) => [e.id, e])));
            const out = side.mod[fn](...args);
            if (side.skip.has("identity") || entriesMode === "json") return out;
            const byId = new Map(entries.map((e) => [e.id, e]));
            const list =
              fn === "buildContextEntries"
                ? out
                : fn === "buildSessionProjection"
                  ? out.entries.map((x) => x.sourceEntry)
                  : [];
            return { out, identity: list.map((e) => (byId.get(e?.id) === e ? 1 : 0)).join("") };
          },
        };
      }
      case "getLatestCompactionEntry":
        return {
          name: fn,
          args: ["<own entries>"],
          run: (side) => side.mod.getLatestCompactionEntry(side.sm.getEntries()),
        };
      case "sessionEntryToContextMessages": {
        const k = n ? rng.int(n) : -1;
        const synthetic = k < 0 || rng.bool(0.3) ? syntheticEntry(rng, ctx) : null;
        return {
          name: fn,
          args: [synthetic ?? `<entries[${k}]>`],
          run: (side) =>
            side.mod.sessionEntryToContextMessages(synthetic ? side.mat(synthetic) : side.sm.getEntries()[k]),
        };
      }
      case "projectContextEntry": {
        const k = n ? rng.int(n) : -1;
        const synthetic = k < 0 || rng.bool(0.3) ? syntheticEntry(rng, ctx) : null;
        const edit = rng.weighted([
          [1, () => undefined],
          [
            2,
            () => ({
              type: "context_edit",
              id: "e0000001",
              parentId: null,
              timestamp: FIX_TS,
              targetId: "x",
              replacement: rng.bool(0.3) ? null : { content: genContentForEdit(rng) },
            }),
          ],
        ])();
        return {
          name: fn,
          args: [synthetic ?? `<entries[${k}]>`, edit],
          run: (side) =>
            side.mod.projectContextEntry(synthetic ? side.mat(synthetic) : side.sm.getEntries()[k], side.mat(edit)),
        };
      }
      case "parseSessionEntries": {
        const decor = rng.pick(["plain", "crlf", "garbage", "padded", "empty", "bom"]);
        return {
          name: fn,
          args: [`<own JSONL, ${decor}>`],
          run(side) {
            const lines = [side.sm.getHeader(), ...side.sm.getEntries()].map((e) => JSON.stringify(e));
            let text;
            if (decor === "plain") text = lines.join("\n");
            else if (decor === "crlf") text = lines.join("\r\n");
            else if (decor === "garbage") text = ["{oops", ...lines, "", "[", "42", "null", '"str"'].join("\n");
            else if (decor === "padded") text = `\n\n  ${lines.join("\n  \n")}  \n\n`;
            else if (decor === "bom") text = `\ufeff${lines.join("\n")}`;
            else text = "";
            return side.mod.parseSessionEntries(text);
          },
        };
      }
      case "assertValidSessionId": {
        const id = rng.pick([
          "abc",
          "a",
          "a.b-c_d",
          "bad id",
          "",
          "-a",
          "a-",
          "ü",
          "A1",
          "0",
          "a/b",
          "..",
          "a\n",
          "x".repeat(300),
        ]);
        return { name: fn, args: [id], run: (side) => side.mod.assertValidSessionId(id) ?? "<returned undefined>" };
      }
      case "migrateSessionEntries": {
        const version = rng.pick([undefined, 1, 2, 3, 4]);
        return {
          name: fn,
          args: [`<own entries as v${version}>`],
          pairResult: true,
          run(side) {
            const header = { type: "session", id: "mig", timestamp: FIX_TS, cwd: "/x" };
            if (version !== undefined) header.version = version;
            const entries = JSON.parse(JSON.stringify(side.sm.getEntries())).map((e, i) => {
              if (version === undefined || version < 2) {
                delete e.id;
                delete e.parentId;
              }
              if (e.type === "compaction" && i % 2 === 0) e.firstKeptEntryIndex = i;
              if (e.type === "message" && e.message && i % 3 === 0) e.message.role = "hookMessage";
              return e;
            });
            const arr = [header, ...entries];
            const ret = side.mod.migrateSessionEntries(arr);
            return { ret: ret ?? "<returned undefined>", arr };
          },
        };
      }
      case "loadEntriesFromFile": {
        const which = rng.weighted([
          [4, () => new PathRef("current")],
          [1, () => new PathRef("rel", "does-not-exist.jsonl")],
          [1, () => (A.files.length ? new PathRef("known", rng.int(A.files.length)) : new PathRef("current"))],
        ])();
        return { name: fn, args: [which], run: (side) => side.mod.loadEntriesFromFile(side.mat(which)) };
      }
      case "findMostRecentSession": {
        const withCwd = rng.pick([undefined, ctx.cwd, "/tmp/other-cwd"]);
        return {
          name: fn,
          args: ["<dir>", withCwd],
          guard: (side) =>
            !fs.existsSync(side.dir) || fs.readdirSync(side.dir).filter((f) => f.endsWith(".jsonl")).length <= 1,
          run: (side) => side.mod.findMostRecentSession(side.dir, withCwd),
        };
      }
      case "getDefaultSessionDir": {
        const cwd = rng.pick([ctx.cwd, "/tmp/a:b\\c", "rel/dir"]);
        const withAgent = rng.bool();
        return {
          name: fn,
          args: [cwd, withAgent ? "<root>/agent2" : "omit"],
          run: (side) =>
            withAgent
              ? side.mod.getDefaultSessionDir(cwd, path.join(side.root, "agent2"))
              : side.mod.getDefaultSessionDir(cwd),
        };
      }
      default:
        return { name: fn, args: [], run: (side) => side.mod.CURRENT_SESSION_VERSION };
    }
  },
};

export function syntheticEntry(rng, ctx) {
  const base = { id: "s0000001", parentId: null, timestamp: FIX_TS };
  return rng.pick([
    () => ({ type: "message", ...base, message: { role: "system", content: null, timestamp: 5 } }),
    () => ({ type: "message", ...base, message: { role: "assistant", content: undefined, provider: "p", model: "m" } }),
    () => ({ type: "message", ...base, message: { role: "toolResult", toolCallId: "c", content: null } }),
    () => ({ type: "message", ...base, message: genMessage(rng, ctx) }),
    () => ({ type: "custom_message", ...base, customType: "t", content: undefined, display: true }),
    () => ({
      type: "custom_message",
      ...base,
      customType: "t",
      content: genUserContent(rng),
      display: false,
      details: genValue(rng),
    }),
    () => ({ type: "branch_summary", ...base, fromId: "root", summary: rng.pick(["", "sum"]) }),
    () => ({ type: "compaction", ...base, summary: "s", firstKeptEntryId: "x", tokensBefore: 3 }),
    () => ({
      type: "compaction",
      ...base,
      summary: "s",
      firstKeptEntryId: "x",
      tokensBefore: 3,
      systemMessage: { role: "system", content: "sys", timestamp: 7 },
    }),
    () => ({ type: "custom", ...base, customType: "c", data: 1 }),
    () => ({ type: "label", ...base, targetId: "x", label: "l" }),
    () => ({ type: "mystery", ...base }),
  ])();
}

export function genConstructor(rng, ctx) {
  const { persisted, cwd } = ctx;
  const opts = rng.weighted([
    [5, () => "omit"],
    [1, () => undefined],
    [1, () => ({ id: `init-${ctx.seed}.x` })],
    [0.5, () => ({ parentSession: "/parent/session.jsonl" })],
  ])();
  if (!persisted) {
    const c = rng.weighted([
      [5, cwd],
      [1, "omit"],
    ]);
    const args = c === "omit" ? [] : opts === "omit" ? [c] : [c, opts];
    return {
      name: "SessionManager.inMemory",
      args,
      run: (side) => {
        side.sm = side.mod.SessionManager.inMemory(...side.mat(args));
        return null;
      },
    };
  }
  const how = rng.weighted([
    [6, "create"],
    [1, "createDefaultDir"],
    [1, "openMissing"],
  ]);
  if (how === "openMissing") {
    const args = [new PathRef("rel", "opened-missing.jsonl")];
    return {
      name: "SessionManager.open",
      args,
      fsChange: true,
      run: (side) => {
        side.sm = side.mod.SessionManager.open(...side.mat(args));
        return null;
      },
    };
  }
  const dir = how === "create" ? new SideFn((s) => s.dir, "<dir>") : undefined;
  const args = opts === "omit" ? [cwd, dir] : [cwd, dir, opts];
  return {
    name: "SessionManager.create",
    args,
    fsChange: true,
    run(side) {
      side.sm = side.mod.SessionManager.create(...side.mat(args));
      if (how === "createDefaultDir") side.dir = side.sm.getSessionDir();
      return null;
    },
  };
}

export function genOp(rng, ctx) {
  const { persisted, skip } = ctx;
  const table = [
    [30, "appendMessage"],
    [3, "appendThinkingLevelChange"],
    [3, "appendModelChange"],
    [3, "appendUsage"],
    [5, "appendCompaction"],
    [3, "appendCustomEntry"],
    [3, "appendSessionInfo"],
    [5, "appendCustomMessageEntry"],
    [8, "appendContextEdit"],
    [6, "appendLabelChange"],
    [6, "branch"],
    [1, "resetLeaf"],
    [4, "branchWithSummary"],
    [1.5, "createBranchedSession"],
    [1.2, "newSession"],
    [persisted ? 2 : 0, "reopen"],
    [persisted ? 0 : 1.5, "reloadInMemory"],
    [persisted ? 1.5 : 0.3, "setSessionFile"],
    [persisted ? 1 : 0, "fixture"],
    [persisted ? 0.3 : 0, "continueRecent"],
    [12, "probe"],
    [skip.has("freeFns") ? 0 : 4, "freeFn"],
  ];
  const name = rng.weighted(table);
  return (SESSION_OPS[name] ?? PROBE_OPS[name])(rng, ctx);
}
