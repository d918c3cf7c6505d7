// A real npm registry on 127.0.0.1 (verdaccio, a devDependency) for tests that install our
// tarballs the way users do. No uplinks: it serves only what was published to it, so nothing
// of the public registry can stand in for our packages.
//
//   const reg = await startRegistry(dir);   // dir: empty temp dir for storage and config
//   reg.url, reg.npmrc                      // registry URL; an .npmrc with a publish token
//   await reg.close();
import { spawn } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { createRequire } from "node:module";
import { join } from "node:path";

const require = createRequire(import.meta.url);

async function freePort() {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const { port } = /** @type {import("node:net").AddressInfo} */ (s.address());
      s.close(() => resolve(port));
    });
  });
}

async function waitFor(url, child, log, ms = 30_000) {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (child.exitCode !== null) throw new Error(`verdaccio exited with ${child.exitCode}:\n${log()}`);
    try {
      const r = await fetch(url);
      if (r.ok) return;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`verdaccio did not answer ${url} within ${ms} ms:\n${log()}`);
}

export async function startRegistry(dir) {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}/`;
  mkdirSync(join(dir, "storage"), { recursive: true });
  const config = join(dir, "config.yaml");
  writeFileSync(
    config,
    [
      `storage: ${JSON.stringify(join(dir, "storage"))}`,
      "auth:",
      "  htpasswd:",
      `    file: ${JSON.stringify(join(dir, "htpasswd"))}`,
      "    max_users: 10",
      "uplinks: {}",
      "packages:",
      "  '**':",
      "    access: $all",
      "    publish: $authenticated",
      "    unpublish: $authenticated",
      "log: { type: stdout, format: pretty, level: warn }",
      "",
    ].join("\n"),
  );
  const bin = require.resolve("verdaccio/bin/verdaccio");
  let output = "";
  const child = spawn(process.execPath, [bin, "--config", config, "--listen", `127.0.0.1:${port}`], {
    stdio: ["ignore", "pipe", "pipe"],
    env: { ...process.env, VERDACCIO_HANDLE_KILL_SIGNALS: "true" },
  });
  child.stdout.on("data", (d) => (output += d));
  child.stderr.on("data", (d) => (output += d));
  const close = () =>
    new Promise((resolve) => {
      if (child.exitCode !== null) return resolve();
      child.once("exit", () => resolve());
      child.kill("SIGTERM");
      setTimeout(() => child.kill("SIGKILL"), 5_000).unref();
    });
  try {
    await waitFor(`${url}-/ping`, child, () => output);
    // A user, as `npm adduser` makes one: its token publishes.
    const r = await fetch(`${url}-/user/org.couchdb.user:ci`, {
      method: "PUT",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ name: "ci", password: "ci-password", email: "ci@example.invalid" }),
    });
    const body = /** @type {{ token?: string }} */ (await r.json());
    if (!r.ok || !body.token) throw new Error(`verdaccio adduser: ${r.status} ${JSON.stringify(body)}`);
    const hostPath = url.replace(/^http:/, "");
    const npmrc = `registry=${url}\n${hostPath}:_authToken=${body.token}\n`;
    return { url, port, npmrc, close, log: () => output };
  } catch (error) {
    await close();
    throw error;
  }
}
