// Fitting text to terminal columns (lib/cli/layout.mjs) and the /sessions list rows
// (extensions/lib/session-search.mjs): widths as drawn, cuts with an ellipsis, matches kept.
import { describe, expect, it } from "vitest";
import { displayWidth, fitEnd, fitMarked, fitStart, padTo } from "../lib/cli/layout.mjs";
import { listRow, quoted, windowLines } from "../extensions/lib/session-search.mjs";

describe("layout", () => {
  it("measures what is drawn: wide CJK and emoji two columns, combining marks none, controls as shown", () => {
    expect(displayWidth("abc")).toBe(3);
    expect(displayWidth("修复解析器")).toBe(10);
    expect(displayWidth("e\u0301")).toBe(1);
    expect(displayWidth("😀")).toBe(2);
    expect(displayWidth("a\u001bb")).toBe(4); // drawn as a\eb
  });

  it("cuts at the end or the start, never wider than asked, whole code points", () => {
    expect(fitEnd("hello world", 20)).toBe("hello world");
    expect(fitEnd("hello world", 8)).toBe("hello w…");
    expect(fitEnd("修复解析器", 7)).toBe("修复解…");
    expect(displayWidth(fitEnd("修复解析器", 6))).toBeLessThanOrEqual(6);
    expect(fitEnd("a\nb\tc", 10)).toBe("a b c");
    expect(fitStart("/home/user/projects/app", 12)).toBe("…rojects/app");
    expect(fitStart("/a/b", 12)).toBe("/a/b");
    for (let w = 1; w < 30; w++) {
      expect(displayWidth(fitEnd("the 😀 quick 修复 brown fox jumps", w))).toBeLessThanOrEqual(w);
      expect(displayWidth(fitStart("the 😀 quick 修复 brown fox jumps", w))).toBeLessThanOrEqual(w);
    }
    expect(padTo("ab", 4)).toBe("ab  ");
  });

  it("keeps an engine snippet's marks while cutting it", () => {
    expect(fitMarked("a «Foo» and «bar»", Infinity)).toEqual([
      ["a ", false],
      ["Foo", true],
      [" and ", false],
      ["bar", true],
    ]);
    const cut = fitMarked("a «Foo» and «bar» and more text", 12);
    expect(cut.map(([t]) => t).join("")).toBe("a Foo and b…");
    expect(cut.filter(([, m]) => m).map(([t]) => t)).toEqual(["Foo", "b"]);
    for (let w = 1; w < 40; w++)
      expect(
        displayWidth(
          fitMarked("…x «修复» y «walrus» z", w)
            .map(([t]) => t)
            .join(""),
        ),
      ).toBeLessThanOrEqual(w);
  });
});

describe("/sessions rows", () => {
  const modified = new Date(2026, 0, 5, 9, 0);
  const hit = (text, word) => ({ text, matches: [[text.indexOf(word), text.indexOf(word) + word.length]] });

  it("title, snippet, cwd and date on one line of at most the width", () => {
    const row = listRow({
      n: 1,
      info: { name: "parser work", firstMessage: "x", cwd: "/work/app", modified },
      hit: hit("fix the needle parser", "needle"),
      width: 100,
    });
    expect(row).toBe("1. parser work — fix the needle parser  /work/app  2026-01-05 09:00");
    for (const width of [40, 60, 80, 120]) {
      const r = listRow({
        n: 12,
        info: {
          firstMessage: "a long first message ".repeat(10),
          cwd: `/very/long/path/${"x".repeat(80)}/app`,
          modified,
        },
        hit: hit(`${"lorem ".repeat(30)}needle ${"ipsum ".repeat(30)}`, "needle"),
        width,
      });
      expect(displayWidth(r), r).toBeLessThanOrEqual(width);
      expect(r).toMatch(/ {2}2026-01-05 09:00$/);
      // Narrow (an 80-column terminal): the cwd goes first, title and snippet keep their room;
      // wider: cwd (its end) and the snippet's match are shown.
      if (width >= 60) expect(r).toMatch(/^12\. a long first m.* — .*needle/);
      if (width >= 120) expect(r).toMatch(/needle.*\/app {2}2026/);
      else expect(r).not.toContain("/app");
    }
  });

  it("leaves the snippet out when the title (the first message) already shows the match", () => {
    const first = "where is the needle in the parser?";
    const row = listRow({
      n: 2,
      info: { firstMessage: first, cwd: "/p", modified },
      hit: hit(first, "needle"),
      width: 100,
    });
    expect(row).toBe(`2. ${first}  /p  2026-01-05 09:00`);
    // A named session: the name does not show the match, the snippet does.
    const named = listRow({
      n: 2,
      info: { name: "parser", firstMessage: first, cwd: "/p", modified },
      hit: hit(first, "needle"),
      width: 100,
    });
    expect(named).toContain("— where is the needle");
  });

  it("quotes a query once; windows one line per entry, the hit marked", () => {
    expect(quoted("token bucket")).toBe('"token bucket"');
    expect(quoted('"token bucket"')).toBe('"token bucket"');
    expect(quoted('"token bucket" rate')).toBe('"token bucket" rate');
    const lines = windowLines(
      [
        { id: "a", role: "user", type: "message", text: "line one\nline two", hit: false },
        { id: "b", role: "toolCall", type: "message", text: "edit src/x.ts", hit: true },
      ],
      30,
    );
    expect(lines).toEqual(["  user: line one line two", "▶ tool call: edit src/x.ts"]);
  });
});
