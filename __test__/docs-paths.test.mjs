// Every repository path the documentation names exists: README.md, docs/*.md,
// lib/cli/README.md and BENCHMARKS.md are read for paths under the repository's top-level
// folders (`lib/discovery/headers.js`, `crates/core/src/search/`, `lib/cli/*.mjs`,
// `npm/<platform>/`) and its root files; each must match a file or folder of the checkout.
// Paths that runs create (bench/data/, target/, .tmp/) are not checked, nor a path after a
// colon (`git show <commit>:bench/x.mjs` names a file of an older commit). A renamed or
// deleted file named anywhere in these documents fails this test with the document and line.
import { describe, expect, test } from "vitest";
import fs from "node:fs";
import path from "node:path";

const ROOT = path.resolve(import.meta.dirname, "..");

/** Top-level folders whose paths are checked. */
const FOLDERS = [
  ".ci",
  ".github",
  "__test__",
  "bench",
  "bin",
  "crates",
  "docs",
  "examples",
  "extensions",
  "fuzz",
  "lib",
  "npm",
  "scripts",
  "src",
];
/** Root files that documents name without a folder. */
const ROOT_FILES = [
  "README.md",
  "BENCHMARKS.md",
  "Cargo.toml",
  "Cargo.lock",
  "package.json",
  "package-lock.json",
  "index.js",
  "index.mjs",
  "index.d.ts",
  "binding.d.ts",
  "build.rs",
  "tsconfig.json",
  "vitest.config.mjs",
  "biome.jsonc",
];
/** Made by runs, not kept in the repository. */
const GENERATED = ["bench/data"];
/** Paths the documents name that are not this repository's, each with why. */
const ELSEWHERE = new Map([
  ["src/parse.ts", "a file of the example session in README's transcript"],
  ["src/core/session-manager", "pi's module, in a pi checkout"],
  ["src/core/session-manager.ts", "a planted search fact: a path users remember from their sessions"],
  ["src/plant<i>x/session-manager.ts", "the planted paths of the search benchmark (one per session)"],
  ["extensions/runner.ts", "pi's module, in a pi checkout"],
  ["docs/design-notes.md", "deleted; named for `git log -p` of its history"],
]);

const esc = (s) => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
const PATH_RE = new RegExp(
  `(?<![\\w./@~:-])((?:${FOLDERS.map(esc).join("|")})/[\\w.\\-/*<>{},@+]*|(?:${ROOT_FILES.map(esc).join("|")})(?![\\w.-]))`,
  "g",
);

/** The repository paths named in `text`: `[{ line, path }]`, cleaned of trailing punctuation. */
function pathsIn(text) {
  const out = [];
  const lines = text.split("\n");
  for (let i = 0; i < lines.length; i++) {
    for (const m of lines[i].matchAll(PATH_RE)) {
      let p = m[1].replace(/[.,:;)]+$/, "");
      // `a.{js,mjs}` stands for both; `<platform>` for any name.
      if (p.includes(",") && !p.includes("{")) p = p.slice(0, p.indexOf(","));
      if (GENERATED.some((g) => p === g || p.startsWith(`${g}/`)) || ELSEWHERE.has(p)) continue;
      out.push({ line: i + 1, path: p });
    }
  }
  return out;
}

/** Whether `p` (maybe with `*`, `<name>`, `{a,b}`) names something under `root`. */
function exists(root, p) {
  const braces = p.match(/\{([^}]*)\}/);
  if (braces) return braces[1].split(",").every((alt) => exists(root, p.replace(braces[0], alt)));
  const parts = p.replace(/\/+$/, "").split("/");
  let here = [root];
  for (const part of parts) {
    const pattern = part.replace(/<[^>]*>/g, "*");
    const next = [];
    for (const dir of here) {
      if (!pattern.includes("*")) {
        const q = path.join(dir, pattern);
        if (fs.existsSync(q)) next.push(q);
        continue;
      }
      let names;
      try {
        names = fs.readdirSync(dir);
      } catch {
        continue;
      }
      const re = new RegExp(`^${pattern.split("*").map(esc).join(".*")}$`);
      for (const n of names) if (re.test(n)) next.push(path.join(dir, n));
    }
    here = next;
    if (here.length === 0) return false;
  }
  return true;
}

function documents() {
  const docs = fs
    .readdirSync(path.join(ROOT, "docs"))
    .filter((f) => f.endsWith(".md"))
    .map((f) => `docs/${f}`);
  return ["README.md", "BENCHMARKS.md", "lib/cli/README.md", ...docs];
}

describe("paths named in the documentation", () => {
  test("the checker finds paths and notices a missing one", () => {
    const text = [
      "See `lib/session-manager.js` and lib/cli/*.mjs, (docs/decisions.md).",
      "Platform packages: npm/<platform>/package.json; also index.{js,mjs}",
      "Not a repository path: /usr/lib/node_modules, https://x.org/src/a.rs, bench/data/x.jsonl",
      "Retired: `git show 87d24c4:bench/append-floor.mjs`",
      "Renamed: lib/discovery-bridge.js",
    ].join("\n");
    const found = pathsIn(text).map((p) => p.path);
    expect(found).toEqual([
      "lib/session-manager.js",
      "lib/cli/*.mjs",
      "docs/decisions.md",
      "npm/<platform>/package.json",
      "lib/discovery-bridge.js",
    ]);
    expect(found.filter((p) => !exists(ROOT, p))).toEqual(["lib/discovery-bridge.js"]);
    expect(exists(ROOT, "index.{js,mjs}")).toBe(true);
    expect(exists(ROOT, "index.{js,nope}")).toBe(false);
  });

  for (const doc of documents()) {
    test(doc, () => {
      const text = fs.readFileSync(path.join(ROOT, doc), "utf8");
      const named = pathsIn(text);
      const missing = named.filter((p) => !exists(ROOT, p.path)).map((p) => `${doc}:${p.line}: ${p.path}`);
      expect(missing).toEqual([]);
    });
  }
});
