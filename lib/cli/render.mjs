// Text renderings of a session: pi's /tree layout and the model context.
import { displayWidth, fitPieces } from "./layout.mjs";
import { contentText, oneLine, shortenHome } from "./util.mjs";

function formatToolCall(name, args = {}) {
  const a = /** @type {Record<string, unknown>} */ (args && typeof args === "object" ? args : {});
  const p = (v) => shortenHome(String(v ?? ""));
  switch (name) {
    case "read":
    case "write":
    case "edit":
      return `[${name}: ${p(a.path ?? a.file_path)}]`;
    case "bash":
      return `[bash: ${oneLine(a.command, 60)}]`;
    default: {
      const first = Object.values(a).find((v) => typeof v === "string");
      return first ? `[${name}: ${oneLine(first, 50)}]` : `[${name}]`;
    }
  }
}

/**
 * @typedef {"cyan" | "green" | "red" | "dim" | "magenta" | "blue" | "yellow" | "bold" | undefined} Style
 * @typedef {[string, Style]} Piece  a run of text and how it is drawn
 */

/**
 * One-line description of an entry, as pi's tree selector shows it, as pieces of text with
 * their style (so the whole row can be fitted to a terminal with its colours kept). Each text
 * part is cut to `width` characters on its own.
 * @returns {Piece[]}
 */
export function entryPieces(entry, toolCalls, width = 100) {
  const n = (s) => oneLine(s, width);
  switch (entry.type) {
    case "message": {
      const m = entry.message ?? {};
      if (m.role === "user")
        return [
          ["user:", "cyan"],
          [` ${n(contentText(m.content, ""))}`, undefined],
        ];
      if (m.role === "assistant") {
        const text = n(contentText(m.content, ""));
        const calls = Array.isArray(m.content) ? m.content.filter((b) => b && b.type === "toolCall") : [];
        const callText = calls.map((c) => formatToolCall(c.name, c.arguments)).join(" ");
        /** @type {Piece} */
        const head = ["assistant:", "green"];
        if (text)
          return [
            head,
            [` ${text}`, undefined],
            ...(callText ? /** @type {Piece[]} */ ([[` ${callText}`, "dim"]]) : []),
          ];
        if (callText) return [head, [` ${callText}`, "dim"]];
        if (m.stopReason === "aborted") return [head, [" (aborted)", "dim"]];
        if (m.errorMessage) return [head, [` ${oneLine(m.errorMessage, 80)}`, "red"]];
        return [head, [" (no content)", "dim"]];
      }
      if (m.role === "toolResult") {
        const tc = m.toolCallId ? toolCalls.get(m.toolCallId) : undefined;
        const head = tc ? formatToolCall(tc.name, tc.arguments) : `[${m.toolName ?? "tool"}]`;
        return [[`${head} → ${n(contentText(m.content, " "))}`, "dim"]];
      }
      if (m.role === "bashExecution") return [[`[bash]: ${n(m.command ?? "")}`, "dim"]];
      return [[`[${m.role}]`, "dim"]];
    }
    case "custom_message":
      return [
        [`[${entry.customType}]:`, "magenta"],
        [` ${n(contentText(entry.content, ""))}`, undefined],
      ];
    case "compaction":
      return [
        [`[compaction: ${Math.round((entry.tokensBefore ?? 0) / 1000)}k tokens]`, "blue"],
        [` ${n(entry.summary ?? "")}`, undefined],
      ];
    case "branch_summary":
      return [
        ["[branch summary]:", "yellow"],
        [` ${n(entry.summary ?? "")}`, undefined],
      ];
    case "model_change":
      return [[`[model: ${entry.modelId}]`, "dim"]];
    case "thinking_level_change":
      return [[`[thinking: ${entry.thinkingLevel}]`, "dim"]];
    case "custom":
      return [[`[custom: ${entry.customType}]`, "dim"]];
    case "context_edit":
      return [[`[context ${entry.replacement === null ? "omit" : "replace"}: ${entry.targetId}]`, "dim"]];
    case "label":
      return [[`[label: ${entry.label || "(cleared)"} → ${entry.targetId}]`, "dim"]];
    case "session_info":
      return [[`[title: ${entry.name || "(empty)"}]`, "dim"]];
    case "usage":
      return [[`[usage: ${entry.kind ?? "?"} ${entry.model ?? ""}]`, "dim"]];
    default:
      return [[`[${entry.type}]`, "dim"]];
  }
}

/** Pieces drawn with `out`'s colours. */
export function drawPieces(pieces, out) {
  return pieces.map(([t, style]) => (style ? out[style](t) : t)).join("");
}

/** One-line description of an entry, as pi's tree selector shows it. */
export function describeEntry(entry, out, toolCalls, width = 100) {
  return drawPieces(entryPieces(entry, toolCalls, width), out);
}

/**
 * Flatten getTree() roots the way pi's TreeSelectorComponent.flattenTree does: the branch
 * holding the current leaf first; single-child chains stay flat; a branching parent
 * indents its children, which get ├─ / └─ connectors and │ gutters.
 */
export function flattenTree(roots, leafId) {
  const containsActive = new Map();
  const all = [];
  const pre = [...roots];
  while (pre.length) {
    const node = pre.pop();
    all.push(node);
    for (let i = node.children.length - 1; i >= 0; i--) pre.push(node.children[i]);
  }
  for (let i = all.length - 1; i >= 0; i--) {
    const node = all[i];
    let has = leafId !== null && node.entry.id === leafId;
    for (const c of node.children) if (containsActive.get(c)) has = true;
    containsActive.set(node, has);
  }
  const multipleRoots = roots.length > 1;
  const ordered = [...roots].sort((a, b) => Number(containsActive.get(b)) - Number(containsActive.get(a)));
  const stack = [];
  for (let i = ordered.length - 1; i >= 0; i--) {
    stack.push([
      ordered[i],
      multipleRoots ? 1 : 0,
      multipleRoots,
      multipleRoots,
      i === ordered.length - 1,
      [],
      multipleRoots,
    ]);
  }
  const result = [];
  while (stack.length) {
    const [node, indent, justBranched, showConnector, isLast, gutters, isVirtualRootChild] = stack.pop();
    result.push({ node, indent, showConnector, isLast, gutters, isVirtualRootChild });
    const children = node.children;
    const multi = children.length > 1;
    const oc = [...children.filter((c) => containsActive.get(c)), ...children.filter((c) => !containsActive.get(c))];
    const childIndent = multi || (justBranched && indent > 0) ? indent + 1 : indent;
    const displayed = showConnector && !isVirtualRootChild;
    const displayIndent = multipleRoots ? Math.max(0, indent - 1) : indent;
    const childGutters = displayed
      ? [...gutters, { position: Math.max(0, displayIndent - 1), show: !isLast }]
      : gutters;
    for (let i = oc.length - 1; i >= 0; i--)
      stack.push([oc[i], childIndent, multi, multi, i === oc.length - 1, childGutters, false]);
  }
  return { rows: result, multipleRoots };
}

/** The prefix (gutters + connector) of one flattened row, as pi draws it. */
export function rowPrefix(row, multipleRoots) {
  const displayIndent = multipleRoots ? Math.max(0, row.indent - 1) : row.indent;
  const connector = row.showConnector && !row.isVirtualRootChild;
  const connectorPosition = connector ? displayIndent - 1 : -1;
  // gutter by level (the first one per level, as pi's gutters.find)
  const byLevel = new Array(displayIndent);
  for (const g of row.gutters)
    if (g.position < displayIndent && byLevel[g.position] === undefined) byLevel[g.position] = g;
  let s = "";
  for (let level = 0; level < displayIndent; level++) {
    const g = byLevel[level];
    if (g) s += g.show ? "│  " : "   ";
    else if (connector && level === connectorPosition) s += row.isLast ? "└─ " : "├─ ";
    else s += "   ";
  }
  return s;
}

/** Lines of the entry tree: id column, tree prefix, • on the active path, [label], text, ← leaf. */
export function renderTree(sm, out, opts = {}) {
  return [...treeLines(sm, out, opts)];
}

/** renderTree's lines, one at a time (large sessions: nothing accumulates). */
export function* treeLines(sm, out, { width = 100 } = {}) {
  const roots = sm.getTree();
  const leafId = sm.getLeafId();
  const active = new Set(sm.getBranch().map((e) => e.id));
  const toolCalls = new Map();
  for (const e of sm.getEntries()) {
    if (e.type === "message" && e.message?.role === "assistant" && Array.isArray(e.message.content)) {
      for (const b of e.message.content) if (b && b.type === "toolCall") toolCalls.set(b.id, b);
    }
  }
  const { rows, multipleRoots } = flattenTree(roots, leafId);
  for (const row of rows) {
    const e = row.node.entry;
    const id = String(e.id ?? "").padEnd(8);
    const prefix = rowPrefix(row, multipleRoots);
    const head = `${out.dim(id)}  ${out.dim(prefix)}${active.has(e.id) ? out.cyan("• ") : ""}`;
    const leaf = e.id === leafId ? ` ${out.bold(out.cyan("← leaf"))}` : "";
    /** @type {import("./render.mjs").Piece[]} */
    const body = [
      ...(row.node.label ? /** @type {import("./render.mjs").Piece[]} */ ([[`[${row.node.label}] `, "yellow"]]) : []),
      ...entryPieces(e, toolCalls, width),
    ];
    // On a terminal every row fits its width: the tree and the leaf mark are kept whole, the
    // label and the entry's text (tool tags included) are cut.
    if (!out.columns) {
      yield `${head}${drawPieces(body, out)}${leaf}`;
      continue;
    }
    const room = out.columns - displayWidth(`${id}  ${prefix}${active.has(e.id) ? "• " : ""}`) - (leaf ? 7 : 0);
    yield `${head}${drawPieces(fitPieces(body, Math.max(8, room)), out)}${leaf}`;
  }
}

/** What the model sees (buildSessionProjection), one block per message with its provenance. */
export function renderContext(sm, out, { full = false } = {}) {
  const proj = sm.buildSessionProjection();
  const lines = [];
  const header = `thinking: ${proj.thinkingLevel}  model: ${proj.model ? `${proj.model.provider}/${proj.model.modelId}` : "(none)"}  messages: ${proj.messages.length}`;
  lines.push(out.dim(header));
  // The newest compaction on the path comes first; its messages are [systemMessage?,
  // compactionSummary, ...retainedTail]. Without a retainedTail, the entries from
  // firstKeptEntryId up to the compaction are kept ("[kept]").
  const ctxEntries = proj.entries;
  const compaction =
    ctxEntries.length && ctxEntries[0].sourceEntry.type === "compaction" ? ctxEntries[0].sourceEntry : null;
  const path = sm.getBranch();
  const compIdx = compaction ? path.findIndex((e) => e.id === compaction.id) : -1;
  const before = new Set(compIdx >= 0 ? path.slice(0, compIdx).map((e) => e.id) : []);
  const editOf = new Map();
  for (const { sourceEntry: x } of ctxEntries) if (x.type === "context_edit") editOf.set(x.targetId, x.id);
  let n = 0;
  ctxEntries.forEach(({ sourceEntry: e, messages }, entryIndex) => {
    let afterSummary = false;
    for (const m of messages) {
      n++;
      const tags = [];
      if (e.type === "compaction" && entryIndex === 0) {
        if (m.role === "compactionSummary") {
          tags.push(out.blue("[compaction summary]"));
          afterSummary = true;
        } else if (afterSummary) tags.push(out.magenta("[retained tail]"));
        else tags.push(out.blue("[compaction system message]"));
      } else if (before.has(e.id)) tags.push(out.magenta("[kept]"));
      if (m.role === "branchSummary") tags.push(out.yellow("[branch summary]"));
      if (editOf.has(e.id)) tags.push(out.dim(`[edited by ${editOf.get(e.id)}]`));
      const role = m.role === "custom" ? `custom:${m.customType}` : m.role;
      lines.push(
        `${out.dim(String(n).padStart(3))} ${out.bold(role)} ${out.dim(String(e.id))}${tags.length ? ` ${tags.join(" ")}` : ""}`,
      );
      for (const l of messageBody(m, full)) lines.push(`      ${l}`);
    }
  });
  return lines;
}

function messageBody(m, full) {
  const text = [];
  const c = m.role === "compactionSummary" || m.role === "branchSummary" ? m.summary : m.content;
  if (typeof c === "string") text.push(c);
  else if (Array.isArray(c)) {
    for (const b of c) {
      if (!b || typeof b !== "object") continue;
      if (b.type === "text") text.push(b.text);
      else if (b.type === "toolCall") text.push(`→ ${formatToolCall(b.name, b.arguments)}`);
      else if (b.type === "thinking") text.push(`(thinking) ${b.thinking ?? ""}`);
      else if (b.type === "image") text.push("(image)");
    }
  } else if (m.role === "bashExecution") text.push(`$ ${m.command ?? ""}`);
  const all = text.join("\n").split("\n");
  if (full) return all;
  const shown = all.slice(0, 4).map((l) => oneLine(l, 110));
  if (all.length > 4) shown.push(`… (${all.length - 4} more lines)`);
  return shown;
}
