import { existsSync, mkdirSync, renameSync, writeFileSync } from "node:fs";
import { dirname, resolve } from "node:path";
import {
  CliError,
  SessionManager,
  errLine,
  contentText,
  isoOrNull,
  loadSession,
  makeOut,
  parse,
  paths,
} from "./util.mjs";
import { resolveSession } from "./ids.mjs";

export const help = `Usage: pi-session export FILE|ID --format md|jsonl-branch [-o OUT] [--leaf ID] [--dir DIR]

Export the active branch (root → current leaf, or → --leaf ID).

  --format md            Markdown: header, then each message of the branch (user,
                         assistant with tool calls, tool results, summaries)
  --format jsonl-branch  a new single-branch session file, as pi's /fork does
                         (SessionManager.open(FILE, dir).createBranchedSession(leaf)):
                         the path only, labels re-attached, header parentSession = FILE.
                         Written into OUT's directory and renamed to OUT; without -o, a
                         <timestamp>_<uuid>.jsonl next to FILE. Opening FILE this way is
                         pi's own loader: it may add a missing final newline to FILE.
  -o, --output OUT       output file (md default: stdout); never overwritten
  --leaf ID              export the branch ending at this entry instead of the leaf

Exit: 0 ok, 2 usage error, not found, or unwritable output.`;

function mdBlock(text, lang = "") {
  const fence = text.includes("```") ? "~~~~" : "```";
  return `${fence}${lang}\n${text}\n${fence}`;
}

export function branchMarkdown(sm, header, leafId) {
  const out = [];
  const name = sm.getSessionName();
  out.push(`# ${name ?? `Session ${header.id}`}`, "");
  out.push(`- Session: \`${header.id}\``);
  out.push(`- Cwd: \`${header.cwd ?? ""}\``);
  out.push(`- Created: ${isoOrNull(header.timestamp) ?? String(header.timestamp)}`);
  if (header.parentSession) out.push(`- Parent session: \`${header.parentSession}\``);
  out.push(`- Leaf: \`${leafId ?? "(none)"}\``, "");
  const branch = sm.getBranch(leafId ?? undefined);
  for (const e of branch) {
    const label = sm.getLabel(e.id);
    const tag = label ? ` [${label}]` : "";
    if (e.type === "message") {
      const m = e.message ?? {};
      if (m.role === "user") {
        const images = Array.isArray(m.content) ? m.content.filter((b) => b && b.type === "image").length : 0;
        out.push(`## User${tag}`, "", contentText(m.content, "\n\n"), "");
        if (images) out.push(`_[${images} image${images === 1 ? "" : "s"}]_`, "");
      } else if (m.role === "assistant") {
        out.push(`## Assistant${m.model ? ` (${m.model})` : ""}${tag}`, "");
        const blocks = Array.isArray(m.content) ? m.content : [{ type: "text", text: String(m.content ?? "") }];
        for (const b of blocks) {
          if (!b || typeof b !== "object") continue;
          if (b.type === "text" && b.text) out.push(b.text, "");
          else if (b.type === "thinking" && b.thinking)
            out.push(
              b.thinking
                .split("\n")
                .map((l) => `> ${l}`)
                .join("\n"),
              "",
            );
          else if (b.type === "toolCall")
            out.push(
              `**Tool call** \`${b.name}\``,
              "",
              mdBlock(JSON.stringify(b.arguments ?? {}, null, 2), "json"),
              "",
            );
        }
        if (m.errorMessage) out.push(`_Error: ${m.errorMessage}_`, "");
      } else if (m.role === "toolResult") {
        out.push(
          `### Tool result: \`${m.toolName ?? "tool"}\`${m.isError ? " (error)" : ""}${tag}`,
          "",
          mdBlock(contentText(m.content)),
          "",
        );
      } else if (m.role === "bashExecution") {
        out.push(`### Bash${tag}`, "", mdBlock(`$ ${m.command ?? ""}\n${m.output ?? ""}`), "");
      }
    } else if (e.type === "custom_message") {
      out.push(`### ${e.customType}${tag}`, "", contentText(e.content, "\n\n"), "");
    } else if (e.type === "compaction") {
      out.push(`## Compaction summary (${e.tokensBefore ?? "?"} tokens before)${tag}`, "", String(e.summary ?? ""), "");
    } else if (e.type === "branch_summary") {
      out.push(`## Branch summary${tag}`, "", String(e.summary ?? ""), "");
    } else if (e.type === "model_change") {
      out.push(`_Model: ${e.provider}/${e.modelId}_`, "");
    }
  }
  return `${out
    .join("\n")
    .replace(/\n{3,}/g, "\n\n")
    .trimEnd()}\n`;
}

export async function run(argv) {
  const { values, positionals } = parse(
    argv,
    {
      format: { type: "string", short: "f" },
      output: { type: "string", short: "o" },
      leaf: { type: "string" },
      dir: { type: "string" },
    },
    { command: "export" },
  );
  const out = makeOut();
  if (values.help) {
    out.line(help);
    return 0;
  }
  if (positionals.length !== 1)
    throw new CliError("export: expected one FILE or session ID (see pi-session export --help)");
  if (values.format !== "md" && values.format !== "jsonl-branch") {
    throw new CliError(
      `export: --format must be md or jsonl-branch${values.format ? `, got ${JSON.stringify(values.format)}` : ""}`,
    );
  }
  const file = await resolveSession(positionals[0], { dir: values.dir });
  const output = values.output === undefined ? undefined : resolve(paths.normalizePath(values.output));
  if (output && existsSync(output)) throw new CliError(`${values.output}: already exists (not overwritten)`);
  const { sm, header } = loadSession(file);
  const leafId = values.leaf ?? sm.getLeafId();
  if (values.leaf !== undefined && !sm.getEntry(values.leaf))
    throw new CliError(`${file}: no entry with id ${values.leaf}`);
  if (values.format === "md") {
    const md = branchMarkdown(sm, header, leafId);
    if (!output) {
      out.write(md);
      return 0;
    }
    try {
      mkdirSync(dirname(output), { recursive: true });
      writeFileSync(output, md, { flag: "wx" });
    } catch (err) {
      throw new CliError(`${values.output}: ${String(err.message).split("\n")[0]}`);
    }
    errLine(`wrote ${output}`);
    return 0;
  }
  if (leafId === null) throw new CliError(`${file}: session has no entries to export`);
  const targetDir = output ? dirname(output) : dirname(file);
  let written;
  try {
    mkdirSync(targetDir, { recursive: true });
    const full = SessionManager.open(file, targetDir);
    written = full.createBranchedSession(leafId);
  } catch (err) {
    throw new CliError(`${file}: ${String(err.message).split("\n")[0]}`);
  }
  if (!written || !existsSync(written)) {
    throw new CliError(`${file}: the branch has no user or assistant message; pi writes no file for it`);
  }
  if (output) {
    try {
      renameSync(written, output);
    } catch (err) {
      throw new CliError(`${values.output}: ${String(err.message).split("\n")[0]}`);
    }
    written = output;
  }
  out.line(written);
  return 0;
}
