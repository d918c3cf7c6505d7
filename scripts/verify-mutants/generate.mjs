// Mutants of pi's session code for the verifier's mutation test (scripts/verify-mutants.mjs): small
// behaviour changes of the kind an upstream release makes, each one edit of the source text of
// pi's dist/core/session-manager.js, found with TypeScript's parser:
//   cmp     a comparison turned into its neighbour or its negation (< <=, === !==, ...)
//   logic   && and || swapped, ?? turned into ||, one side of && / || dropped, a ! removed
//   cond    an if's condition forced to true or false, a ?: with its branches swapped
//   const   a number one more (or 0), a string emptied (or filled), true and false swapped
//   args    the first two arguments of a call swapped
//   arith   + and - swapped
//   stmt    an expression statement (a call, an assignment) removed
// A mutant is named by its operator and place: `cmp@415:20 < -> <=`.
import ts from "typescript";

const CMP = {
  "<": ["<=", ">="],
  "<=": ["<", ">"],
  ">": [">=", "<="],
  ">=": [">", "<"],
  "===": ["!=="],
  "!==": ["==="],
  "==": ["!="],
  "!=": ["=="],
};

/**
 * The mutants of `src`: `{ id, op, line, col, start, end, original, replacement }`, in source order.
 * @param {string} src
 */
export function generateMutants(src) {
  const sf = ts.createSourceFile("session-manager.js", src, ts.ScriptTarget.Latest, true, ts.ScriptKind.JS);
  const out = [];
  const ids = new Set();
  const text = (node) => src.slice(node.getStart(sf), node.getEnd());
  const add = (op, from, to, replacement) => {
    const original = src.slice(from, to);
    if (original === replacement) return;
    const { line, character } = sf.getLineAndCharacterOfPosition(from);
    const short = (s) => (s.length > 40 ? `${s.slice(0, 37)}...` : s).replace(/\s+/g, " ");
    // shortened texts can make two ids alike: the second is numbered
    let id = `${op}@${line + 1}:${character + 1} ${short(original)} -> ${short(replacement)}`;
    for (let n = 2; ids.has(id); n++) id = `${id.replace(/ #\d+$/, "")} #${n}`;
    ids.add(id);
    out.push({
      id,
      op,
      line: line + 1,
      col: character + 1,
      start: from,
      end: to,
      original,
      replacement,
    });
  };
  const replaceNode = (op, node, replacement) => add(op, node.getStart(sf), node.getEnd(), replacement);

  const visit = (node) => {
    if (ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) return;
    if (ts.isBinaryExpression(node)) {
      const tok = node.operatorToken;
      const op = tok.getText(sf);
      const at = [tok.getStart(sf), tok.getEnd()];
      for (const r of CMP[op] ?? []) add("cmp", ...at, r);
      if (op === "&&" || op === "||") {
        add("logic", ...at, op === "&&" ? "||" : "&&");
        replaceNode("logic", node, text(node.left));
        replaceNode("logic", node, text(node.right));
      }
      if (op === "??") add("logic", ...at, "||");
      if (op === "+" || op === "-") add("arith", ...at, op === "+" ? "-" : "+");
    }
    if (ts.isPrefixUnaryExpression(node) && node.operator === ts.SyntaxKind.ExclamationToken)
      replaceNode("logic", node, `(${text(node.operand)})`);
    if (ts.isIfStatement(node) || ts.isWhileStatement(node)) {
      if (!(ts.isWhileStatement(node) && node.expression.kind === ts.SyntaxKind.TrueKeyword)) {
        replaceNode("cond", node.expression, "true");
        if (ts.isIfStatement(node)) replaceNode("cond", node.expression, "false");
      }
    }
    if (ts.isConditionalExpression(node))
      replaceNode("cond", node, `(${text(node.condition)}) ? (${text(node.whenFalse)}) : (${text(node.whenTrue)})`);
    if (ts.isNumericLiteral(node)) {
      const n = Number(node.text);
      replaceNode("const", node, String(n + 1));
      if (n !== 0) replaceNode("const", node, "0");
    }
    if (ts.isStringLiteral(node) && !ts.isPropertyAssignment(node.parent) && !ts.isLiteralTypeNode(node.parent)) {
      replaceNode("const", node, node.text === "" ? '"x"' : '""');
    }
    if (node.kind === ts.SyntaxKind.TrueKeyword) replaceNode("const", node, "false");
    if (node.kind === ts.SyntaxKind.FalseKeyword) replaceNode("const", node, "true");
    if (ts.isCallExpression(node) && node.arguments.length >= 2) {
      const [a, b] = node.arguments;
      add("args", a.getStart(sf), b.getEnd(), `${text(b)}, ${text(a)}`);
    }
    if (ts.isExpressionStatement(node) && ts.isBlock(node.parent)) replaceNode("stmt", node, ";");
    ts.forEachChild(node, visit);
  };
  visit(sf);
  return out;
}

/** `src` with mutant `m` applied. */
export function applyMutant(src, m) {
  return src.slice(0, m.start) + m.replacement + src.slice(m.end);
}
