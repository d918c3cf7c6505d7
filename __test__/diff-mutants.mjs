// Deliberately broken variants of the reference, used to prove that the differential harness
// detects bugs (DIFF_IMPL=mutant:<name>, or `node __test__/diff-selftest.mjs`).
// Each mutant wraps reference SessionManager instances and overrides methods on the instance.

function patchInstance(sm, name) {
  const proto = Object.getPrototypeOf(sm);
  const orig = (m) => proto[m].bind(sm);
  switch (name) {
    case "dropLabel": {
      // The label entry is appended but the label is not recorded (getLabel/getTree lose it).
      const append = orig("appendLabelChange");
      sm.appendLabelChange = (targetId, label) => {
        const before = sm.labelsById.get(targetId);
        const beforeTs = sm.labelTimestampsById.get(targetId);
        const id = append(targetId, label);
        if (label) {
          if (before === undefined) {
            sm.labelsById.delete(targetId);
            sm.labelTimestampsById.delete(targetId);
          } else {
            sm.labelsById.set(targetId, before);
            sm.labelTimestampsById.set(targetId, beforeTs);
          }
        }
        return id;
      };
      break;
    }
    case "stripUndefinedKeys": {
      const append = orig("appendCompaction");
      sm.appendCompaction = (...args) => {
        const id = append(...args);
        const e = sm.getEntry(id);
        for (const k of Object.keys(e)) if (e[k] === undefined) delete e[k];
        return id;
      };
      break;
    }
    case "copyEntries": {
      const get = orig("getEntries");
      sm.getEntries = () => get().map((e) => ({ ...e }));
      break;
    }
    case "untrimmedName": {
      const get = orig("getSessionName");
      sm.getSessionName = () => {
        const n = get();
        return n === undefined ? undefined : ` ${n}`;
      };
      break;
    }
    case "replaceLoneSurrogates": {
      // What a naive Rust String round trip would do.
      const append = orig("appendMessage");
      const fix = (v) => {
        if (typeof v === "string") return v.toWellFormed();
        if (Array.isArray(v)) return v.map(fix);
        if (v && typeof v === "object") {
          const o = {};
          for (const k of Object.keys(v)) o[k] = fix(v[k]);
          return o;
        }
        return v;
      };
      sm.appendMessage = (m) => append(fix(m));
      break;
    }
    case "errorMessage": {
      const branch = orig("branch");
      sm.branch = (id) => {
        if (!sm.byId.has(id)) throw new Error(`Entry not found: ${id}`);
        return branch(id);
      };
      break;
    }
    case "sortedKeysInFile": {
      // Persist with sorted object keys (as a BTreeMap-backed JSON writer would).
      const sortKeys = (v) =>
        Array.isArray(v)
          ? v.map(sortKeys)
          : v && typeof v === "object"
            ? Object.fromEntries(
                Object.keys(v)
                  .sort()
                  .map((k) => [k, sortKeys(v[k])]),
              )
            : v;
      const persist = orig("_persist");
      sm._persist = (entry) => persist(sortKeys(entry));
      break;
    }
    case "compactionOffByOne": {
      // The kept range starts one entry late.
      const append = orig("appendCompaction");
      sm.appendCompaction = (summary, firstKept, ...rest) => {
        const path = sm.getBranch();
        const i = path.findIndex((e) => e.id === firstKept);
        return append(summary, i >= 0 && i + 1 < path.length ? path[i + 1].id : firstKept, ...rest);
      };
      break;
    }
    default:
      throw new Error(`unknown mutant ${name}`);
  }
  return sm;
}

/** Checks (see SKIPPABLE in lib/verify/differential.mjs) a mutant can only be caught by. */
export const REQUIRES = { copyEntries: "identity" };

export const MUTANTS = [
  "dropLabel",
  "stripUndefinedKeys",
  "copyEntries",
  "untrimmedName",
  "replaceLoneSurrogates",
  "errorMessage",
  "sortedKeysInFile",
  "compactionOffByOne",
];

export function makeMutantModule(ref, name) {
  if (!MUTANTS.includes(name)) throw new Error(`unknown mutant ${name} (known: ${MUTANTS.join(", ")})`);
  const Base = ref.SessionManager;
  const wrap = (sm) => patchInstance(sm, name);
  function SessionManager() {
    throw new Error("mutant SessionManager: use the static constructors");
  }
  Object.assign(SessionManager, {
    create: (...a) => wrap(Base.create(...a)),
    open: (...a) => wrap(Base.open(...a)),
    inMemory: (...a) => wrap(Base.inMemory(...a)),
    continueRecent: (...a) => wrap(Base.continueRecent(...a)),
    forkFrom: (...a) => wrap(Base.forkFrom(...a)),
    findById: (...a) => Base.findById(...a),
    list: (...a) => Base.list(...a),
    listAll: (...a) => Base.listAll(...a),
  });
  return { ...ref, SessionManager };
}
