// scripts/pack.mjs run from another folder, as a release script might: the checkout is left
// untouched (its generated bundles neither rewritten nor created), and the tarball's bytes are
// those of a pack from the repository itself (the bundles name their modules relative to the
// repository, never to the folder pack ran from).
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, test } from "vitest";
import { BUNDLE, LAUNCHER_BUNDLE } from "../scripts/bundle-js.mjs";
import { root, tmp } from "./helpers.mjs";

const base = tmp("psn-pack-");
afterAll(() => rmSync(base, { recursive: true, force: true }));

/** Runs pack.mjs from `cwd` into a fresh folder; the main tarball's path. */
function packFrom(cwd, name) {
  const out = join(base, name);
  execFileSync(process.execPath, [join(root, "scripts", "pack.mjs"), "--out", out], { cwd, stdio: "pipe" });
  const tgz = readdirSync(out).filter((f) => f.endsWith(".tgz"));
  expect(tgz).toHaveLength(1);
  return join(out, tgz[0]);
}

/** The text of `path` inside a tarball. */
const member = (tgz, path) => execFileSync("tar", ["-xzOf", tgz, `package/${path}`], { encoding: "utf8" });

/** What the checkout's generated files are now (content and mtime, or absent). */
const snapshot = () =>
  [BUNDLE, LAUNCHER_BUNDLE].map((f) =>
    existsSync(f) ? { f, text: readFileSync(f, "utf8"), mtime: statSync(f).mtimeMs } : { f, absent: true },
  );

describe("scripts/pack.mjs", () => {
  test("from another folder: the checkout untouched, the same bytes as from the repository", () => {
    const elsewhere = join(base, "some", "other", "folder");
    mkdirSync(elsewhere, { recursive: true });
    const before = snapshot();
    const far = packFrom(elsewhere, "far");
    expect(snapshot()).toEqual(before);
    const near = packFrom(root, "near");
    expect(snapshot()).toEqual(before);
    expect(readFileSync(far).equals(readFileSync(near))).toBe(true);
    for (const path of ["lib/bundle.cjs", "lib/launcher.bundle.mjs"]) {
      const text = member(far, path);
      // no module named by a path out of the repository (`// ../../…/lib/x.js`, `"../../…/lib/x.js"(`)
      expect(text, path).not.toMatch(/^\s*(\/\/ |")(\.\.\/)+\S*lib\//m);
      expect(text, path).not.toContain(base);
    }
    // module names relative to the repository
    expect(member(far, "lib/bundle.cjs")).toContain('"lib/platform.js"');
  }, 120_000);
});
