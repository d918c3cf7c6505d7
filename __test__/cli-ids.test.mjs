// Session ids on a real terminal (tmux): pi's ids are uuid v7, so sessions started within about a
// minute share their first 8 characters. The ids ls and search print are the shortest prefixes
// (at least 8 characters) that name one session of the store, and show, export and check take
// exactly the id as printed.
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { idPrefixes } from "../lib/cli/ids.mjs";
import { root, tmp } from "./helpers.mjs";
import { encodeCwd, hasTmux, runCommands, tmuxServer } from "./tty-helpers.mjs";

const BIN = join(root, "bin", "pi-session.mjs");

describe("idPrefixes", () => {
  it("gives the shortest prefix of at least `min` characters that no other id starts with", () => {
    const among = ["01a244d4-1111", "01a244d4-2222", "01a244d4-2223", "0200aaaa-0000", "01a244d4-2222"];
    const got = idPrefixes(["01a244d4-1111", "01a244d4-2222", "0200aaaa-0000"], among);
    expect(Object.fromEntries(got)).toEqual({
      "01a244d4-1111": "01a244d4-1",
      "01a244d4-2222": "01a244d4-2222",
      "0200aaaa-0000": "0200aaaa",
    });
    for (const [id, p] of got) expect(among.filter((a) => a.startsWith(p) && a !== id)).toEqual([]);
    expect(idPrefixes(["abc"], ["abcdef"], 2).get("abc")).toBe("abc");
  });
});

/** A session file of `cwd` with one user message. */
function writeSession(agentDir, cwd, id, text, n) {
  const dir = join(agentDir, "sessions", encodeCwd(cwd));
  mkdirSync(dir, { recursive: true });
  const ts = `2026-03-0${n}T10:00:00.000Z`;
  const lines = [
    { type: "session", version: 3, id, timestamp: ts, cwd },
    {
      type: "message",
      id: `e000000${n}`,
      parentId: null,
      timestamp: ts,
      message: { role: "user", content: text, timestamp: Date.parse(ts) },
    },
  ];
  writeFileSync(
    join(dir, `${ts.replace(/[:.]/g, "-")}_${id}.jsonl`),
    `${lines.map((l) => JSON.stringify(l)).join("\n")}\n`,
  );
}

describe.skipIf(!hasTmux)("ids printed on a terminal are accepted back (tmux)", () => {
  const server = tmuxServer("psn-cli-ids");
  const base = tmp("psn-cli-ids-");
  afterAll(() => {
    server.kill();
    rmSync(base, { recursive: true, force: true });
  });

  it("ls, search and search --all print unique prefixes; show, export and check take them", async () => {
    const agentDir = join(base, "agent");
    const project = join(base, "proj");
    const other = join(base, "other");
    mkdirSync(project, { recursive: true });
    mkdirSync(other, { recursive: true });
    // Three sessions within a minute: the same first 8 characters.
    const ids = [
      "01a244d4-1e0a-7000-8000-000000000001",
      "01a244d4-2b11-7000-8000-000000000002",
      "01a244d4-2b17-7000-8000-000000000003",
    ];
    writeSession(agentDir, project, ids[0], "reconcile the ledger totals", 1);
    writeSession(agentDir, project, ids[1], "reconcile the ledger rounding", 2);
    writeSession(agentDir, other, ids[2], "reconcile the ledger elsewhere", 3);

    const listed = await runCommands(server, "list", {
      bin: BIN,
      width: 80,
      cwd: project,
      agentDir,
      logDir: base,
      commands: [
        ["ls", "ls"],
        ["ls all", "ls --all"],
        ["search", "search ledger"],
        ["search all", "search ledger --all"],
      ],
    });
    const shownIds = (lines) => lines.map((l) => /\b(01a244d4\S*)/.exec(l)?.[1]).filter(Boolean);
    const printed = {
      ls: shownIds(listed.sections.ls.slice(1)),
      lsAll: shownIds(listed.sections["ls all"].slice(1)),
      search: shownIds(listed.sections.search.filter((l) => !l.startsWith(" "))),
      searchAll: shownIds(listed.sections["search all"].filter((l) => !l.startsWith(" "))),
    };
    // Newest first; each a prefix of its own id that no other session of the store shares.
    expect(printed.ls).toEqual(["01a244d4-2b11", "01a244d4-1"]);
    expect(printed.lsAll).toEqual(["01a244d4-2b17", "01a244d4-2b11", "01a244d4-1"]);
    expect(printed.search.sort()).toEqual(["01a244d4-1", "01a244d4-2b11"]);
    expect(printed.searchAll.sort()).toEqual(["01a244d4-1", "01a244d4-2b11", "01a244d4-2b17"]);

    const every = [...new Set(Object.values(printed).flat())];
    const used = await runCommands(server, "use", {
      bin: BIN,
      width: 160,
      cwd: project,
      agentDir,
      logDir: base,
      commands: every.flatMap((id) => [
        [`show ${id}`, `show ${id}`],
        [`export ${id}`, `export ${id} --format md`],
        [`check ${id}`, `check ${id}`],
      ]),
    });
    for (const id of every) {
      const full = ids.find((i) => i.startsWith(id));
      expect(used.sections[`show ${id}`][0], id).toBe(`Session  ${full}`);
      expect(used.sections[`export ${id}`].join("\n"), id).toContain(full);
      expect(used.sections[`check ${id}`][0], id).toMatch(new RegExp(`^ok  \\S+_${full}\\.jsonl`));
    }
    expect(used.screen).not.toContain("ambiguous");
    // The 8 characters all three share: named as ambiguous, with what to do.
    const amb = await runCommands(server, "amb", {
      bin: BIN,
      width: 200,
      cwd: project,
      agentDir,
      logDir: base,
      commands: [["show", "show 01a244d4"]],
    });
    expect(amb.sections.show.join(" ")).toMatch(
      /01a244d4: ambiguous session id prefix \(3 sessions: .*\); give more of the id/,
    );
  });
});
