// The judging side of scripts/run-pi-suite.mjs: from vitest's JSON reports of each mode, decide
// for every test whether a native failure is ours, and what the run proves.
//
// Pure functions of their arguments (no file system, no processes), so
// __test__/pi-suite-runner.test.mjs checks the verdicts and exit codes on made-up reports.
//
// Exit codes: 0 PASS (every test that passes on pi's own code, and on 1.6.0 when the reference
// mode ran, passes natively), 1 FAIL (a native-only failure), 2 NOT TESTED (a mode produced no
// report, the native mode or both comparison modes were left out, or nothing passed on pi's own
// code, so there was nothing to compare against).

const ANSI = /\u001b\[[0-9;]*m/g;
const firstLine = (msg) =>
  String(msg ?? "")
    .replace(ANSI, "")
    .split("\n")
    .map((l) => l.trim())
    .find((l) => l) ?? "";

/**
 * File-level messages that name a cause: [pattern, kind, detail from the match], first match wins.
 * @type {[RegExp, string, (x: RegExpMatchArray) => string][]}
 */
const FILE_ERRORS = [
  [
    /Failed to (?:load|resolve) (?:url|import) ["']?([^\s"']+)/i,
    "missing-module",
    (x) => `module not in this checkout: ${x[1]}`,
  ],
  [/Cannot find (?:module|package) ['"]([^'"]+)['"]/, "missing-module", (x) => `module not in this checkout: ${x[1]}`],
  [
    /does not provide an export named ['"]?(\w+)/,
    "missing-export",
    (x) => `API not in this implementation: export ${x[1]}`,
  ],
  [
    /No "exports" main defined|ERR_PACKAGE_PATH_NOT_EXPORTED[^\n]*/,
    "missing-module",
    (x) => `module not in this checkout: ${x[0]}`,
  ],
];

/** Why a file did not load (or a hook failed), from vitest's file-level message. */
export function fileError(message) {
  const m = String(message ?? "");
  for (const [pattern, kind, detail] of FILE_ERRORS) {
    const x = m.match(pattern);
    if (x) return { kind, detail: detail(x) };
  }
  return { kind: "file-error", detail: firstLine(m) };
}

/** Why one test failed, from its message and the source line it points at. */
export function testReason(rel, failure, source = "") {
  const msg = String(failure ?? "").replace(ANSI, "");
  const x = msg.match(/(?:TypeError: )?([\w$.[\]"']+) is not a function/);
  if (x) return { kind: "missing-api", detail: `API not in this implementation: ${x[1]}()` };
  if (/ENOTFOUND|ECONNREFUSED|EAI_AGAIN|fetch failed|getaddrinfo|network/i.test(msg))
    return { kind: "network", detail: `needs network: ${firstLine(msg)}` };
  if (/API[_ ]?KEY|No API key|401|Unauthorized/i.test(msg))
    return { kind: "credentials", detail: `needs API credentials: ${firstLine(msg)}` };
  const base = rel
    .split("/")
    .pop()
    .replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
  const loc = msg.match(new RegExp(`${base}:(\\d+):\\d+`));
  if (loc) {
    const line = source.split("\n")[Number(loc[1]) - 1] ?? "";
    // Private state: the failing line reads `obj["field"]` or `(obj as any).field`.
    const priv = line.match(/\w+\[\s*["'](\w+)["']\s*\]|\(\s*\w+ as any\s*\)\.(\w+)/);
    if (priv)
      return {
        kind: "private-field",
        detail: `reads private state ${priv[1] ?? priv[2]} (line ${loc[1]}: ${line.trim()})`,
      };
    return { kind: "assertion", detail: `${firstLine(msg)} (line ${loc[1]}: ${line.trim()})` };
  }
  return { kind: "assertion", detail: firstLine(msg) };
}

/** Why a file skips its own tests (describe.skipIf(!process.env.X) ...), guessed from its source. */
export function skipReason(source = "") {
  const keys = [
    ...new Set(
      [...source.matchAll(/process\.env\.([A-Z0-9_]*(?:API_KEY|TOKEN|OAUTH|KEY)[A-Z0-9_]*)/g)].map((m) => m[1]),
    ),
  ];
  if (keys.length) return `needs API credentials / network (${keys.join(", ")})`;
  const conds = [...source.matchAll(/skipIf\(\s*!\s*([A-Z_][A-Z0-9_]*)\s*\)/g)].map((m) => m[1]);
  if (conds.some((c) => /API_KEY|AUTH|TOKEN|KEY/.test(c)))
    return `needs API credentials / network (${[...new Set(conds)].join(", ")})`;
  if (/skipIf\([^)]*platform/.test(source)) return "platform-specific";
  return "skipped by the test itself";
}

/** Attributions. `counted` ones make the run fail. */
export const VERDICT = {
  ok: { label: "ok" },
  better: { label: "native passes, baseline does not" },
  skip: { label: "skip" },
  env: { label: "environment/checkout (fails on pi's own code too)" },
  envUnbuilt: { label: "environment: unbuilt checkout (extension loader needs packages/*/dist)" },
  skew: { label: "version skew (1.6.0's own session-manager fails it too)" },
  privateState: { label: "test reads private state (not counted: pi's private fields are not API)" },
  native: { label: "NATIVE DIFFERENCE", counted: true },
  nativeApi: { label: "NATIVE DIFFERENCE (API missing here, present in 1.6.0)", counted: true },
  nativeUnconfirmed: {
    label:
      "NATIVE DIFFERENCE? (fails natively, passes on the checkout's pi; no reference mode to rule out version skew)",
    counted: true,
  },
  noNative: { label: "no native mode" },
};

/**
 * Verdict of one test, given its result in each mode ({status: pass|fail|skip|missing, reason}).
 * `missing` = the test did not run in that mode (its file failed to load).
 */
export function testVerdict(row, { needsBuild = false } = {}) {
  const b = row.baseline;
  const r = row.reference;
  const n = row.native;
  if (!n) return VERDICT.noNative;
  if (n.status === "pass") return b && b.status !== "pass" && b.status !== "skip" ? VERDICT.better : VERDICT.ok;
  if (n.status === "skip") return VERDICT.skip;
  if (b && b.status !== "pass") return needsBuild ? VERDICT.envUnbuilt : VERDICT.env;
  if (r && r.status !== "pass") return VERDICT.skew;
  if (!r) return VERDICT.nativeUnconfirmed;
  const kind = n.reason?.kind;
  if (kind === "private-field") return VERDICT.privateState;
  if (kind === "missing-api" || kind === "missing-export") return VERDICT.nativeApi;
  return VERDICT.native;
}

const toStatus = (s) => (s === "passed" ? "pass" : s === "failed" ? "fail" : "skip");

/**
 * Collect the per-file, per-test results of every mode.
 *   reports: { mode: vitest JSON report, or null when vitest produced none }
 *   relOf:   maps a report's absolute file name to the selected relative path
 * Returns Map rel -> { file: {mode -> {status: ok|error, reason}}, tests: Map name -> {mode -> result} }
 */
export function collect({ modes, selected, reports, relOf, sources = new Map() }) {
  const results = new Map(selected.map((rel) => [rel, { file: {}, tests: new Map() }]));
  for (const m of modes) {
    const report = reports[m];
    if (!report) continue;
    for (const tr of report.testResults ?? []) {
      const rel = relOf(tr.name);
      const entry = results.get(rel);
      if (!entry) continue;
      entry.file[m] =
        tr.status === "failed" && tr.message ? { status: "error", reason: fileError(tr.message) } : { status: "ok" };
      for (const a of tr.assertionResults ?? []) {
        const name = a.fullName || [...(a.ancestorTitles ?? []), a.title].join(" > ");
        if (!entry.tests.has(name)) entry.tests.set(name, {});
        const res = { status: toStatus(a.status) };
        if (res.status === "fail") res.reason = testReason(rel, (a.failureMessages ?? []).join("\n"), sources.get(rel));
        entry.tests.get(name)[m] = res;
      }
    }
    for (const rel of selected) {
      const e = results.get(rel);
      if (!e.file[m])
        e.file[m] = { status: "error", reason: { kind: "runner", detail: "file missing from vitest's report" } };
    }
  }
  // A test that ran in one mode but not in another did not run there: its file failed to load.
  for (const e of results.values()) {
    for (const row of e.tests.values()) {
      for (const m of modes) {
        if (!reports[m] || row[m]) continue;
        row[m] = {
          status: "missing",
          reason:
            e.file[m]?.status === "error"
              ? e.file[m].reason
              : { kind: "runner", detail: "test did not run in this mode" },
        };
      }
    }
  }
  return results;
}

function tally(tests, m) {
  const t = { pass: 0, fail: 0, skip: 0, missing: 0 };
  for (const row of tests.values()) if (row[m]) t[row[m].status]++;
  return t;
}

/**
 * Judge a run. Returns everything the runner prints:
 *   perMode   { mode: {files, fileErrors, pass, fail, skip, missing} }
 *   files     [{rel, tests, cells: {mode: text}, verdict}]
 *   tests     [{rel, name, statuses: {mode}, verdict, why}]  (tests that do not pass in every mode)
 *   nativeOnly  counted native differences (tests, plus files that fail to load only natively)
 *   compared  tests that pass on pi's own code (and 1.6.0): the ones native must pass
 *   nativePassedOfCompared
 *   byVerdict { label: count }
 *   problems  reasons the run tested nothing (exit 2)
 *   exitCode, result (one line)
 * @param {{ modes: string[], selected: string[], reports: Record<string, any>, results: Map<string, any>, sources?: Map<string, string>, needsBuild?: (rel: string) => boolean }} input
 */
export function judge({ modes, selected, reports, results, sources = new Map(), needsBuild = () => false }) {
  const problems = [];
  for (const m of modes) if (!reports[m]) problems.push(`${m}: vitest produced no report`);

  const perMode = {};
  for (const m of modes) {
    const pm = { files: selected.length, fileErrors: 0, pass: 0, fail: 0, skip: 0, missing: 0 };
    for (const e of results.values()) {
      if (e.file[m]?.status === "error") pm.fileErrors++;
      const t = tally(e.tests, m);
      for (const k of Object.keys(t)) pm[k] += t[k];
    }
    perMode[m] = pm;
  }
  // What native is compared against: pi's own code, else 1.6.0.
  const base = modes.includes("baseline") ? "baseline" : modes.includes("reference") ? "reference" : null;
  if (!modes.includes("native")) problems.push("the native mode did not run");
  if (!base) problems.push("neither the baseline nor the reference mode ran: nothing to compare native against");
  else if (reports[base] && perMode[base].pass === 0) {
    problems.push(
      `no test passed on ${base === "baseline" ? "pi's own code (baseline)" : "1.6.0 (reference)"}: nothing to compare against`,
    );
  }

  const files = [];
  const tests = [];
  const byVerdict = {};
  let nativeOnly = 0;
  let compared = 0;
  let nativePassedOfCompared = 0;
  for (const [rel, e] of results) {
    const nb = needsBuild(rel);
    const fileVerdicts = new Set();
    for (const [name, row] of e.tests) {
      const v = testVerdict(row, { needsBuild: nb });
      byVerdict[v.label] = (byVerdict[v.label] ?? 0) + 1;
      const mustPass =
        row.native &&
        (!row.baseline || row.baseline.status === "pass") &&
        (!row.reference || row.reference.status === "pass") &&
        (row.baseline || row.reference);
      if (mustPass) {
        compared++;
        if (row.native.status === "pass") nativePassedOfCompared++;
      }
      if (v.counted) nativeOnly++;
      if (v !== VERDICT.ok && v !== VERDICT.skip) {
        fileVerdicts.add(v.label);
        const src =
          row.native && row.native.status !== "pass"
            ? row.native
            : row.reference?.status === "fail"
              ? row.reference
              : row.baseline;
        const why = src?.reason?.detail ?? "";
        tests.push({
          rel,
          name,
          statuses: Object.fromEntries(modes.map((m) => [m, row[m]?.status ?? "-"])),
          verdict: v.label,
          why: why.length > 160 ? `${why.slice(0, 157)}...` : why,
        });
      }
    }
    // File-level errors that no test row carries: a file that loads nowhere natively while it
    // loads on pi's own code (and 1.6.0) is ours; one that fails everywhere is the environment.
    // (When native ran none of the file's tests, the rows above already judged each of them.)
    const others = ["baseline", "reference"].filter((m) => modes.includes(m));
    const nativeRanTests = [...e.tests.values()].some((row) => row.native && row.native.status !== "missing");
    if (e.file.native?.status === "error" && (e.tests.size === 0 || nativeRanTests)) {
      if (others.length && others.every((m) => e.file[m]?.status === "ok")) {
        nativeOnly++;
        fileVerdicts.add(`NATIVE DIFFERENCE (file): ${e.file.native.reason.detail}`);
      } else fileVerdicts.add(`${e.file.native.reason.detail} (fails on pi's own code too)`);
    }
    const skipOnly =
      e.tests.size > 0 &&
      modes.every((m) => {
        const t = tally(e.tests, m);
        return t.pass + t.fail === 0 && t.skip > 0;
      });
    let verdict = fileVerdicts.size ? [...fileVerdicts].join("; ") : "ok";
    if (skipOnly && !fileVerdicts.size) verdict = `skip: ${skipReason(sources.get(rel))}`;
    files.push({ rel, tests: e.tests.size, cells: Object.fromEntries(modes.map((m) => [m, fileCell(e, m)])), verdict });
  }

  let exitCode;
  let result;
  if (problems.length) {
    exitCode = 2;
    result = `RESULT: NOT TESTED: ${problems.join("; ")}`;
  } else if (nativeOnly) {
    exitCode = 1;
    result = `RESULT: FAIL: ${nativeOnly} native-only failure(s) (NATIVE DIFFERENCE above): they pass on ${againstText(modes)} but fail natively`;
  } else {
    exitCode = 0;
    const notes = Object.entries(byVerdict)
      .filter(([label]) => label !== "ok" && label !== "skip")
      .map(([label, n]) => `${n} ${label}`);
    const skipped = byVerdict.skip ?? 0;
    result =
      `RESULT: PASS: native passes all ${compared} tests that pass on ${againstText(modes)}` +
      `${notes.length ? `; not ours: ${notes.join(", ")}` : ""}${skipped ? `; ${skipped} skipped` : ""}`;
  }
  return {
    perMode,
    files,
    tests,
    nativeOnly,
    compared,
    nativePassedOfCompared,
    byVerdict,
    problems,
    exitCode,
    result: `${result} (exit ${exitCode})`,
  };
}

function againstText(modes) {
  const parts = [];
  if (modes.includes("baseline")) parts.push("pi's own code");
  if (modes.includes("reference")) parts.push("1.6.0's session-manager");
  return parts.join(" and ") || "nothing";
}

function fileCell(e, m) {
  const fs = e.file[m];
  if (!fs) return "-";
  const t = tally(e.tests, m);
  if (fs.status === "error" && t.pass + t.fail + t.skip === 0) return `ERROR (${fs.reason.kind})`;
  const cell = `${t.pass}/${t.pass + t.fail}${t.skip ? ` +${t.skip} skip` : ""}`;
  return fs.status === "error" ? `${cell} ERROR` : t.fail ? `${cell} FAIL` : cell;
}

/** One status line per mode: what ran and how it went (vitest's own exit code says little). */
export function modeLine(mode, pm, seconds) {
  const errs = pm.fileErrors ? `, ${pm.fileErrors} file(s) did not load` : "";
  return `${mode}: ${pm.files} files, ${pm.pass + pm.fail + pm.skip} tests: ${pm.pass} passed, ${pm.fail} failed, ${pm.skip} skipped${errs} (${seconds.toFixed(1)}s)`;
}

/** A plain-text table. */
export function table(headers, rows) {
  const w = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => String(r[i]).length)));
  const line = (r) => `| ${r.map((c, i) => String(c).padEnd(w[i])).join(" | ")} |`;
  return [line(headers), `|${w.map((n) => "-".repeat(n + 2)).join("|")}|`, ...rows.map(line)].join("\n");
}
