// The search index's diacritic folding table (crates/core/src/search/fold_table.rs) is the
// output of its generator, scripts/gen-fold-table.mjs: an edit of either alone fails here.
import { expect, test } from "vitest";
import fs from "node:fs";
import path from "node:path";
import { foldEntries, renderTable } from "../scripts/gen-fold-table.mjs";

const TABLE = path.resolve(import.meta.dirname, "../crates/core/src/search/fold_table.rs");

test("the committed fold table is the generator's output", () => {
  expect(fs.readFileSync(TABLE, "utf8")).toBe(renderTable());
});

test("the generator folds what the search promises", () => {
  const fold = new Map(foldEntries().map(([cp, s]) => [String.fromCodePoint(cp), s]));
  expect(["é", "É", "ß", "ø", "ł", "Œ", "ṩ", "ỹ"].map((c) => fold.get(c))).toEqual([
    "e",
    "e",
    "ss",
    "o",
    "l",
    "oe",
    "s",
    "y",
  ]);
  // Only letters with an ASCII base are folded; others are left to the tokenizer.
  expect(fold.has("×")).toBe(false);
  expect([...fold.values()].every((s) => /^[a-z]+$/.test(s))).toBe(true);
});
