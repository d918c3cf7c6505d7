#!/usr/bin/env node
// pi-session: inspect, check, repair, search and export pi coding-agent session stores.
import { nearest } from "../lib/cli/suggest.mjs";
import { CliError, EXIT, errLine } from "../lib/cli/util.mjs";

// The CLI reads every entry it shows or exports: lazy heavy values (lib/lazy-entries.js)
// would only add a second pass. An explicit PI_SESSION_NATIVE_LAZY wins.
process.env.PI_SESSION_NATIVE_LAZY ??= "0";

const COMMANDS = {
  ls: () => import("../lib/cli/ls.mjs"),
  show: () => import("../lib/cli/show.mjs"),
  search: () => import("../lib/cli/search.mjs"),
  check: () => import("../lib/cli/check.mjs"),
  repair: () => import("../lib/cli/repair.mjs"),
  stats: () => import("../lib/cli/stats.mjs"),
  export: () => import("../lib/cli/export.mjs"),
};

const HELP = `Usage: pi-session <command> [options]

Commands:
  ls [DIR]               list sessions, newest first
  show FILE|ID           header and stats; --tree, --context
  search TEXT            ranked search of session text (messages, tool calls), grouped by session
  check FILE|DIR|ID      validate session files (exit 1 on problems)
  repair FILE            fix a torn tail / missing final newline (--backup keeps a copy)
  stats [DIR]            totals: sessions, bytes, messages, tokens, cost by model
  export FILE|ID         the active branch as Markdown or as a single-branch session

Run 'pi-session <command> --help' for a command's options.

Store: pi's session store, $PI_CODING_AGENT_DIR/sessions (default ~/.pi/agent/sessions).
ls, search and stats cover the current project; --all every project.
Colour only on a terminal, never with NO_COLOR. --json output is stable (see each command).
Exit codes: 0 ok, 1 problems found (check) / no match (search), 2 usage or I/O error.`;

async function main(argv) {
  const [cmd, ...rest] = argv;
  if (cmd === undefined || cmd === "--help" || cmd === "-h" || cmd === "help") {
    if (cmd === "help" && rest[0] && COMMANDS[rest[0]]) return main([rest[0], "--help"]);
    process.stdout.write(`${HELP}\n`);
    return cmd === undefined ? EXIT.ERROR : EXIT.OK;
  }
  if (cmd === "--version" || cmd === "-V") {
    const { createRequire } = await import("node:module");
    process.stdout.write(`${createRequire(import.meta.url)("../package.json").version}\n`);
    return EXIT.OK;
  }
  const load = COMMANDS[cmd];
  if (!load) {
    const near = nearest(cmd, Object.keys(COMMANDS));
    throw new CliError(`unknown command '${cmd}'${near ? `; did you mean '${near}'?` : ""} (see pi-session --help)`);
  }
  const mod = await load();
  return mod.run(rest);
}

// Output piped into `head` etc.: stop quietly.
process.stdout.on("error", (/** @type {NodeJS.ErrnoException} */ err) => {
  if (err.code === "EPIPE") process.exit(EXIT.OK);
  throw err;
});

try {
  process.exitCode = (await main(process.argv.slice(2))) ?? EXIT.OK;
} catch (err) {
  const msg = err instanceof CliError ? err.message : `internal error: ${String(err?.stack ?? err).split("\n")[0]}`;
  // Messages quote paths and session ids: sanitised like every other sink.
  errLine(`pi-session: ${msg}`);
  process.exitCode = err instanceof CliError ? err.exitCode : EXIT.ERROR;
}
