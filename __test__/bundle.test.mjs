// lib/bundle.cjs: index.js and its lib/ modules as one file, which the module hook loads when pi
// first uses its session code; lib/launcher.bundle.mjs: the launcher and the hook modules as one
// file, which bin/pi-native.mjs and lib/register.mjs load (scripts/bundle-js.mjs; `npm test` makes
// both first).
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import { describe, expect, test } from "vitest";
import { BUNDLE, bundleText, LAUNCHER_BUNDLE } from "../scripts/bundle-js.mjs";
import { root } from "./helpers.mjs";

const require = createRequire(import.meta.url);

describe("lib/bundle.cjs", () => {
  test("is what the sources give now (not stale)", () => {
    expect(readFileSync(BUNDLE, "utf8") === bundleText(), "stale: run node scripts/bundle-js.mjs").toBe(true);
  });

  test("exports what index.js exports, of the same kinds and names", () => {
    const bundled = require(BUNDLE);
    const sources = require(join(root, "index.js"));
    expect(Object.keys(bundled).sort()).toEqual(Object.keys(sources).sort());
    for (const [name, value] of Object.entries(sources)) {
      expect(typeof bundled[name], name).toBe(typeof value);
      if (typeof value === "function") expect(bundled[name].name, name).toBe(value.name);
    }
    expect(Object.getOwnPropertyNames(bundled.SessionManager.prototype).sort()).toEqual(
      Object.getOwnPropertyNames(sources.SessionManager.prototype).sort(),
    );
    // one addon in the process, whichever copy loaded it
    const sm = bundled.SessionManager.inMemory("/tmp/p");
    sm.appendMessage({ role: "user", content: "hi", timestamp: 1 });
    expect(sm.getEntries().map((e) => e.type)).toEqual(["message"]);
  });

  test("its module bodies are function expressions V8 compiles with the top level (so the compile cache keeps them)", () => {
    const text = readFileSync(BUNDLE, "utf8");
    const wrappers = text.match(/= __commonJS\(\{$/gm)?.length ?? 0;
    expect(wrappers).toBeGreaterThan(10);
    expect(text.match(/^ {2}"[^"\n]+\.js": \(function\(exports\d*, module\d*\) \{$/gm)?.length).toBe(wrappers);
  });

  test("reads the package version at run time (scripts/pack.mjs sets it in package.json)", () => {
    const text = readFileSync(BUNDLE, "utf8");
    expect(text).toContain('require("../package.json")');
    expect(text).not.toContain('"devDependencies"');
  });
});

describe("lib/launcher.bundle.mjs", () => {
  test("is what the sources give now (not stale)", () => {
    expect(
      readFileSync(LAUNCHER_BUNDLE, "utf8") === bundleText(LAUNCHER_BUNDLE),
      "stale: run node scripts/bundle-js.mjs",
    ).toBe(true);
  });

  test("exports what lib/launcher.mjs exports, and is one module (only node: builtins imported)", async () => {
    const bundled = await import(LAUNCHER_BUNDLE);
    const sources = await import(join(root, "lib", "launcher.mjs"));
    expect(Object.keys(bundled).sort()).toEqual(Object.keys(sources).sort());
    expect(Object.keys(bundled).sort()).toEqual(["installHooks", "launch"]);
    const text = readFileSync(LAUNCHER_BUNDLE, "utf8");
    const imported = [...text.matchAll(/^import .* from "([^"]+)";$/gm)].map((m) => m[1]);
    expect(imported.length).toBeGreaterThan(0);
    expect(imported.filter((s) => !s.startsWith("node:"))).toEqual([]);
  });
});
