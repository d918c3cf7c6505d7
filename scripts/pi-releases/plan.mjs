// The pure parts of scripts/pi-releases.mjs, kept apart so __test__/pi-releases.test.mjs can
// check them without the registry: which pi versions a run covers, whether a cached install is
// intact, how the hook's and the verifier's answers read, and vitest's JSON report in counts.
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";

export const PI_PACKAGE = "@earendil-works/pi-coding-agent";
/** The first pi release this package serves; every stable release since is covered by default. */
export const FIRST_RELEASE = "1.3.0";
export const MARKER = "[pi-session-native] serving session-manager";
export const FAILSAFE = "[pi-session-native] not serving session-manager, pi runs unmodified:";

/** Parses "1.5.2" to [1, 5, 2]; undefined for anything else (prereleases included). */
export function parseStable(version) {
  const m = /^(\d+)\.(\d+)\.(\d+)$/.exec(version);
  return m ? [Number(m[1]), Number(m[2]), Number(m[3])] : undefined;
}

export function compareVersions(a, b) {
  const pa = parseStable(a);
  const pb = parseStable(b);
  if (!pa || !pb) throw new Error(`not a stable version: ${pa ? b : a}`);
  for (let i = 0; i < 3; i++) if (pa[i] !== pb[i]) return pa[i] - pb[i];
  return 0;
}

/**
 * The rows of a run. `requested` is the --versions list (undefined: every stable release since
 * `since`, plus `latest`); `registry` is `npm view <pi> versions dist-tags --json` (needed only
 * when a tag or the default list has to be resolved). Returns [{ version, labels }] in version
 * order, one row per version (latest = 1.6.0 is one row labelled both).
 * @param {string[] | undefined} requested
 * @param {{ versions: string[], "dist-tags": Record<string, string> } | undefined} registry
 * @param {string} [since]
 */
export function selectVersions(requested, registry, since = FIRST_RELEASE) {
  const wanted = requested ?? [
    ...(registry?.versions ?? []).filter((v) => parseStable(v) && compareVersions(v, since) >= 0),
    "latest",
  ];
  if (!requested && !registry) throw new Error("the default version list needs the registry's answer");
  const rows = new Map();
  for (const item of wanted) {
    let version = item;
    if (!parseStable(item)) {
      const tagged = registry?.["dist-tags"]?.[item];
      if (!tagged) {
        if (!registry) throw new Error(`"${item}" is not a version number and the registry was not asked`);
        throw new Error(`"${item}" is neither a published version nor a dist-tag of ${PI_PACKAGE}`);
      }
      version = tagged;
    } else if (registry && !registry.versions.includes(item)) {
      throw new Error(`${PI_PACKAGE}@${item} is not published (npm view lists ${registry.versions.length} versions)`);
    }
    const row = rows.get(version) ?? { version, labels: [] };
    if (item !== version && !row.labels.includes(item)) row.labels.push(item);
    rows.set(version, row);
  }
  return [...rows.values()].sort((a, b) =>
    parseStable(a.version) && parseStable(b.version) ? compareVersions(a.version, b.version) : 0,
  );
}

/** <dir>/node_modules/@earendil-works/pi-coding-agent: where a release is installed. */
export function packageDirOf(installDir) {
  return join(installDir, "node_modules", ...PI_PACKAGE.split("/"));
}

/**
 * Whether the install in `installDir` is complete and of `version`: the marker written after a
 * successful `npm install` names it, and the package on disk is that version with its bin.
 * Returns undefined when intact, else what is wrong (for the log).
 */
export function installProblem(installDir, version) {
  const marker = join(installDir, "installed.json");
  if (!existsSync(marker)) return "not installed";
  let recorded;
  try {
    recorded = JSON.parse(readFileSync(marker, "utf8"));
  } catch {
    return "installed.json is not JSON";
  }
  if (recorded?.version !== version) return `installed.json names ${recorded?.version}, not ${version}`;
  const pkgDir = packageDirOf(installDir);
  let pkg;
  try {
    pkg = JSON.parse(readFileSync(join(pkgDir, "package.json"), "utf8"));
  } catch {
    return `${PI_PACKAGE} is missing`;
  }
  if (pkg.name !== PI_PACKAGE || pkg.version !== version) return `package.json says ${pkg.name}@${pkg.version}`;
  if (!existsSync(join(pkgDir, "dist", "bundle", "cli.js"))) return "dist/bundle/cli.js is missing";
  return undefined;
}

/** The hook's one line on stderr: { served: true } or { served: false, reason }. */
export function serveStatus(stderr) {
  const line = stderr.split("\n").find((l) => l.includes("[pi-session-native]"));
  if (line?.includes(MARKER)) return { served: true, line };
  if (line?.startsWith(FAILSAFE)) return { served: false, reason: line.slice(FAILSAFE.length).trim(), line };
  return { served: false, reason: line ? line.trim() : "the hook said nothing (no [pi-session-native] line)" };
}

/**
 * What `pi-native --verify` answered. Before the verifier exists, pi-native hands `--verify` to
 * pi, which refuses it as an unknown option: that is "not available", not a failure.
 * @param {{ status: number | null, signal?: string | null, stdout: string, stderr: string }} run
 * @param {boolean} verifierShipped whether lib/verify/ exists in this checkout
 */
export function verifyVerdict(run, verifierShipped) {
  const out = `${run.stdout}\n${run.stderr}`;
  const piRefused = /unknown option:?\s*--verify/i.test(out);
  if (!verifierShipped || piRefused)
    return {
      status: "n/a",
      text: piRefused ? "verifier not available (pi got --verify)" : "verifier not available",
    };
  // the report is on stdout (progress on stderr): its last line is the verdict
  const lines = (run.stdout?.trim() ? run.stdout : out)
    .split("\n")
    .map((l) => l.trim())
    .filter(Boolean);
  const last = lines.at(-1) ?? "";
  if (run.status === 0) return { status: "ok", text: last ? `ok: ${last}` : "ok" };
  const why = run.signal ? `killed by ${run.signal}` : `exit ${run.status}`;
  return { status: "fail", text: `FAILED (${why})${last ? `: ${last}` : ""}` };
}

/**
 * vitest's JSON report in counts, plus the full names of the failed tests.
 * @param {any} report
 */
export function e2eCounts(report) {
  const failedNames = [];
  for (const file of report?.testResults ?? [])
    for (const t of file.assertionResults ?? []) if (t.status === "failed") failedNames.push(t.fullName ?? t.title);
  // a file that fails before its tests run (an import error) counts as one failure
  for (const file of report?.testResults ?? [])
    if (file.status === "failed" && !(file.assertionResults ?? []).some((t) => t.status === "failed"))
      failedNames.push(`${file.name}: ${String(file.message ?? "failed to run").split("\n")[0]}`);
  return {
    passed: report?.numPassedTests ?? 0,
    failed: Math.max(report?.numFailedTests ?? 0, failedNames.length),
    skipped: (report?.numPendingTests ?? 0) + (report?.numTodoTests ?? 0),
    failedNames,
  };
}

/** Seconds with one decimal, for the table. */
export function seconds(ms) {
  return `${(ms / 1000).toFixed(1)} s`;
}
