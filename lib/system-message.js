"use strict";
// The compaction `systemMessage` checkpoint: every system message on the active path
// replayed into one (pi-ai's getCurrentSystemMessage semantics: content joined by a blank
// line, sections patched by name with null deleting, tools added/removed by name).

function contentText(content) {
  if (typeof content === "string") return content;
  return content
    .filter((b) => b.type === "text")
    .map((b) => b.text)
    .join("\n");
}

function getCurrentSystemMessage(messages) {
  const texts = [];
  const sections = new Map();
  const tools = new Map();
  let timestamp;
  for (const m of messages) {
    if (m.role !== "system") continue;
    timestamp ??= m.timestamp;
    const text = contentText(m.content);
    if (text.length > 0) texts.push(text);
    for (const [name, value] of Object.entries(m.sections ?? {})) {
      if (value === null) sections.delete(name);
      else sections.set(name, value);
    }
    for (const t of m.toolsRemoved ?? []) tools.delete(t.name);
    for (const t of m.toolsAdded ?? []) tools.set(t.name, t);
  }
  if (timestamp === undefined && tools.size === 0) return undefined;
  return {
    role: "system",
    content: texts.join("\n\n"),
    ...(sections.size > 0 ? { sections: Object.fromEntries(sections) } : {}),
    ...(tools.size > 0 ? { toolsAdded: [...tools.values()] } : {}),
    timestamp: timestamp ?? 0,
  };
}

module.exports = { getCurrentSystemMessage };
