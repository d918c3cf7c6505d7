// extensions/sessions.ts compiles (strict) against pi 1.6.0's extension types and this
// package's index.d.ts, resolved by the package's own name as an installed user gets it.
import { execFile } from "node:child_process";
import { join } from "node:path";
import { expect, it } from "vitest";
import { repoRoot } from "./helpers.mjs";

it("the pi extension typechecks", async () => {
  const { code, output } = await new Promise((resolve) => {
    execFile(
      process.execPath,
      [
        join(repoRoot, "node_modules/typescript/bin/tsc"),
        "--pretty",
        "false",
        "-p",
        join("__test__", "pi-ext", "tsconfig.json"),
      ],
      { cwd: repoRoot, maxBuffer: 16 * 1024 * 1024 },
      (err, stdout, stderr) =>
        resolve({ code: err ? (typeof err.code === "number" ? err.code : 1) : 0, output: `${stdout}${stderr}` }),
    );
  });
  expect(output).toBe("");
  expect(code).toBe(0);
});
