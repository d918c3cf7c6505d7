// Vitest config used by scripts/run-pi-suite.mjs to run pi's own session tests from a pi checkout.
// It is driven by environment variables (set by the runner; not meant to be used by hand):
//
//   PI_SUITE_AGENT_DIR  absolute path of <checkout>/packages/coding-agent (the vitest root)
//   PI_SUITE_CHECKOUT   absolute path of the checkout root (workspace packages live in packages/*)
//   PI_SUITE_TARGET     file that replaces pi's src/core/session-manager for importers inside the
//                       checkout; empty = no redirect (baseline run on pi's own code)
//   PI_SUITE_FILES      JSON array of test files (relative to PI_SUITE_AGENT_DIR) to include
//   PI_SUITE_VITEST     directory of the vitest package that runs the suite (so that the test files'
//                       `import ... from "vitest"` gets the same instance as the runner)
//
// Deliberately no `import "vitest/config"`: a plain object is a valid config and keeps this file
// independent of which vitest (ours or the checkout's) loads it.
import { existsSync, readdirSync, readFileSync, realpathSync } from "node:fs";
import { join, resolve, sep } from "node:path";

const env = process.env;
const agentDir = realpathSync(env.PI_SUITE_AGENT_DIR);
const checkout = realpathSync(env.PI_SUITE_CHECKOUT);
const target = env.PI_SUITE_TARGET ? realpathSync(env.PI_SUITE_TARGET) : "";
const files = JSON.parse(env.PI_SUITE_FILES || "[]");
const vitestDir = env.PI_SUITE_VITEST || "";

const smTs = join(agentDir, "src", "core", "session-manager.ts");
// Any specifier that names pi's session-manager module: "../src/core/session-manager(.js|.ts)",
// "./session-manager.js" (from src/core), "../core/session-manager.js" (from src/modes/...), ...
const SM_SPECIFIER = /(^|\/)session-manager(\.[cm]?[jt]s)?$/;

const inside = (file) => file === checkout || file.startsWith(checkout + sep);
const stripQuery = (id) => id.replace(/[?#].*$/, "");

// Workspace packages (@mariozechner/pi-ai, pi-agent-core, pi-tui, ...) point their "main"/"exports"
// at dist/, which only exists after a build. When dist/ is missing, serve them from src/ instead.
const workspace = new Map();
const packagesDir = join(checkout, "packages");
if (existsSync(packagesDir)) {
  for (const name of readdirSync(packagesDir)) {
    const dir = join(packagesDir, name);
    const pj = join(dir, "package.json");
    if (!existsSync(pj)) continue;
    try {
      const pkg = JSON.parse(readFileSync(pj, "utf8"));
      if (pkg.name && existsSync(join(dir, "src"))) workspace.set(pkg.name, dir);
    } catch {}
  }
}
function workspaceSource(id) {
  for (const [name, dir] of workspace) {
    if (id !== name && !id.startsWith(name + "/")) continue;
    const sub = id === name ? "index" : id.slice(name.length + 1).replace(/\.js$/, "");
    const pkg = JSON.parse(readFileSync(join(dir, "package.json"), "utf8"));
    const main = pkg.exports?.["."]?.import ?? pkg.exports?.["."] ?? pkg.main ?? "dist/index.js";
    const built = typeof main === "string" && existsSync(join(dir, id === name ? main : `dist/${sub}.js`));
    if (built) return null; // built: let normal resolution use dist/
    for (const cand of [join(dir, "src", `${sub}.ts`), join(dir, "src", sub, "index.ts"), join(dir, `${sub}.ts`)]) {
      if (existsSync(cand)) return cand;
    }
  }
  return null;
}

const redirectPlugin = {
  name: "pi-suite-session-manager-redirect",
  enforce: "pre",
  async resolveId(id, importer, options) {
    const bare = stripQuery(id);
    if (importer && inside(stripQuery(importer)) && !bare.startsWith(".") && !bare.startsWith("/")) {
      const src = workspaceSource(bare);
      if (src) return src;
    }
    if (!target || !importer) return null;
    const imp = stripQuery(importer);
    if (!inside(imp) || !SM_SPECIFIER.test(bare)) return null;
    const resolved = await this.resolve(id, importer, { ...options, skipSelf: true });
    const file = resolved && stripQuery(resolved.id);
    if (file && resolve(file) === smTs) return target;
    // A specifier of pi's module that the checkout lacks (e.g. ".ts" spelled ".js" the resolver
    // did not map): still redirect when it points at src/core/session-manager.
    const abs = resolve(imp, "..", bare).replace(/\.[cm]?[jt]s$/, "");
    if (abs === smTs.replace(/\.ts$/, "")) return target;
    return null;
  },
};

export default {
  root: agentDir,
  plugins: [redirectPlugin],
  resolve: {
    alias: vitestDir ? [{ find: /^vitest$/, replacement: join(vitestDir, "dist", "index.js") }] : [],
  },
  server: { fs: { strict: false } },
  test: {
    // Mirrors packages/coding-agent/vitest.config.ts of the checkout.
    globals: true,
    environment: "node",
    testTimeout: 30000,
    hookTimeout: 30000,
    include: files.length ? files : ["test/session-manager/**/*.test.ts"],
    pool: "forks",
    maxWorkers: 2,
    minWorkers: 1,
    server: {
      deps: {
        // Our native entry loads a .node addon through createRequire: never inline it.
        external: [/@silvia-odwyer\/photon-node/, /\/node_modules\//, ...(target ? [target] : [])],
      },
    },
  },
};
