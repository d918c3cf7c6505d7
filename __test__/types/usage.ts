// Type-level usage of every export of pi-session-native (ESM consumer, resolved through the
// package's own "exports" → "types"). Compiled with `tsc --noEmit`, never run.
import {
  CURRENT_SESSION_VERSION,
  SessionManager,
  assertValidSessionId,
  migrateSessionEntries,
  parseSessionEntries,
  getLatestCompactionEntry,
  sessionEntryToContextMessages,
  buildContextEntries,
  projectContextEntry,
  buildSessionProjection,
  buildSessionContext,
  getDefaultSessionDir,
  loadEntriesFromFile,
  findMostRecentSession,
} from "pi-session-native";
import type {
  // message types
  TextContent,
  ImageContent,
  ThinkingContent,
  ToolCall,
  Usage,
  UserMessage,
  AssistantMessage,
  ToolResultMessage,
  SystemMessage,
  Tool,
  ToolReference,
  Message,
  BashExecutionMessage,
  CustomMessage,
  BranchSummaryMessage,
  CompactionSummaryMessage,
  AgentMessage,
  JsonValue,
  JsonObject,
  StopReason,
  ModelThinkingLevel,
  AssistantMessageDiagnostic,
  DeferredHandle,
  NestedToolCallRecord,
  NestedToolCalls,
  CustomAgentMessages,
  // session types
  SessionHeader,
  NewSessionOptions,
  SessionEntryBase,
  SessionMessageEntry,
  ThinkingLevelChangeEntry,
  ModelChangeEntry,
  UsageEntry,
  CompactionEntry,
  BranchSummaryEntry,
  CustomEntry,
  LabelEntry,
  SessionInfoEntry,
  CustomMessageEntry,
  ContextEditableContent,
  ContextEditEntry,
  SessionEntry,
  FileEntry,
  SessionTreeNode,
  ProjectedSessionEntry,
  SessionProjection,
  SessionContext,
  SessionInfo,
  ReadonlySessionManager,
  SessionListProgress,
} from "pi-session-native";
import defaultExport from "pi-session-native";

type Equal<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;
function assertType<T extends true>(): void {}

// ---- constants ------------------------------------------------------------------------------
const version: 3 = CURRENT_SESSION_VERSION;
const sameModule: typeof SessionManager = defaultExport.SessionManager;

// ---- message values ---------------------------------------------------------------------------
const text: TextContent = { type: "text", text: "hi", textSignature: "sig" };
const image: ImageContent = { type: "image", data: "AAAA", mimeType: "image/png" };
const thinking: ThinkingContent = { type: "thinking", thinking: "hmm", thinkingSignature: "s", redacted: false };
const toolCall: ToolCall = { type: "toolCall", id: "call_1", name: "read", arguments: { path: "a.txt", n: [1, null] } };
const usage: Usage = {
  input: 1,
  output: 2,
  cacheRead: 0,
  cacheWrite: 0,
  totalTokens: 3,
  cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 },
};
const user: UserMessage = { role: "user", content: [text, image], timestamp: 1 };
const userStr: UserMessage = { role: "user", content: "plain", timestamp: 1 };
const assistant: AssistantMessage = {
  role: "assistant",
  content: [thinking, text, toolCall],
  api: "anthropic-messages",
  provider: "anthropic",
  model: "claude",
  usage,
  stopReason: "toolUse",
  thinkingLevel: "high",
  timestamp: 2,
};
const toolResult: ToolResultMessage = {
  role: "toolResult",
  toolCallId: "call_1",
  toolName: "read",
  content: [text],
  details: { bytes: 3 },
  isError: false,
  timestamp: 3,
};
const tool: Tool = { name: "read", description: "Read a file", parameters: { type: "object" } };
const toolRef: ToolReference = { name: "bash" };
const system: SystemMessage = {
  role: "system",
  content: "You are pi.",
  sections: { env: "linux", old: null },
  toolsAdded: [tool],
  toolsRemoved: [toolRef],
  timestamp: 0,
};
const bash: BashExecutionMessage = {
  role: "bashExecution",
  command: "ls",
  output: "a\n",
  exitCode: 0,
  cancelled: false,
  truncated: false,
  timestamp: 4,
};
const custom: CustomMessage<{ n: number }> = {
  role: "custom",
  customType: "ext",
  content: "note",
  display: true,
  details: { n: 1 },
  timestamp: 5,
};
const branchSummaryMsg: BranchSummaryMessage = { role: "branchSummary", summary: "s", fromId: null, timestamp: 6 };
const compactionSummaryMsg: CompactionSummaryMessage = {
  role: "compactionSummary",
  summary: "s",
  tokensBefore: 9,
  timestamp: 7,
};
const json: JsonValue = [1, "a", null, { nested: true }];
const jsonObj: JsonObject = { a: json };
const stop: StopReason = "stop";
const thinkingLevel: ModelThinkingLevel = "off";
const diagnostic: AssistantMessageDiagnostic = {
  type: "retry",
  timestamp: 1,
  error: { message: "boom" },
  details: jsonObj,
};
const deferred: DeferredHandle = { provider: "openai", modelId: "m", api: "openai-responses", id: "resp_1" };
const nested: NestedToolCalls = {
  calls: [{ id: "c", name: "read", status: "ok" } satisfies NestedToolCallRecord],
  complete: true,
};
const assistantFull: AssistantMessage = {
  ...assistant,
  stopReason: stop,
  thinkingLevel,
  diagnostics: [diagnostic],
  deferred,
};
const toolResultNested: ToolResultMessage = { ...toolResult, nestedCalls: nested };
// Empty by default: contributes no extra message types to AgentMessage.
assertType<Equal<keyof CustomAgentMessages, never>>();
const messages: Message[] = [system, user, userStr, assistant, assistantFull, toolResult, toolResultNested];
const agentMessages: AgentMessage[] = [...messages, bash, custom, branchSummaryMsg, compactionSummaryMsg];

// ---- SessionManager statics ---------------------------------------------------------------------
const opts: NewSessionOptions = { id: "abc", parentSession: "/tmp/parent.jsonl" };
const smCreate: SessionManager = SessionManager.create("/repo");
const smCreate2: SessionManager = SessionManager.create("/repo", "/sessions", opts);
const smOpen: SessionManager = SessionManager.open("/sessions/x.jsonl");
const smOpen2: SessionManager = SessionManager.open("/sessions/x.jsonl", "/sessions", "/repo");
const smRecent: SessionManager = SessionManager.continueRecent("/repo", "/sessions");
const sm: SessionManager = SessionManager.inMemory();
const smMem2: SessionManager = SessionManager.inMemory("/repo", opts, [] as FileEntry[]);
const smFork: SessionManager = SessionManager.forkFrom("/a.jsonl", "/repo", "/sessions", opts);
const foundId: string | undefined = SessionManager.findById("/repo", "abc", "/sessions");
const progress: SessionListProgress = (loaded, total, partial) => {
  const n: number = loaded + total + (partial?.length ?? 0);
  void n;
};
const controller = new AbortController();
const listed: Promise<SessionInfo[]> = SessionManager.list("/repo", "/sessions", progress, controller.signal);
const listedAll1: Promise<SessionInfo[]> = SessionManager.listAll(progress, controller.signal);
const listedAll2: Promise<SessionInfo[]> = SessionManager.listAll("/sessions", progress, controller.signal);
const listedAll3: Promise<SessionInfo[]> = SessionManager.listAll();

async function useInfo(): Promise<void> {
  for (const info of await listed) {
    const fields: [string, string, string, string | undefined, string | undefined, Date, Date, number, string, string] =
      [
        info.path,
        info.id,
        info.cwd,
        info.name,
        info.parentSessionPath,
        info.created,
        info.modified,
        info.messageCount,
        info.firstMessage,
        info.allMessagesText,
      ];
    void fields;
  }
}

// ---- SessionManager instance methods ----------------------------------------------------------
sm.setSessionFile("/sessions/y.jsonl");
const newFile: string | undefined = sm.newSession();
const newFile2: string | undefined = sm.newSession(opts);
const persisted: boolean = sm.isPersisted();
const cwd: string = sm.getCwd();
const dir: string = sm.getSessionDir();
const defaultDir: boolean = sm.usesDefaultSessionDir();
const sid: string = sm.getSessionId();
const file: string | undefined = sm.getSessionFile();
const id1: string = sm.appendMessage(user);
const id2: string = sm.appendMessage(assistant);
const id3: string = sm.appendMessage(toolResult);
const id4: string = sm.appendMessage(system);
const id5: string = sm.appendMessage(custom);
const id6: string = sm.appendMessage(bash);
const id7: string = sm.appendThinkingLevelChange("high");
const id8: string = sm.appendModelChange("anthropic", "claude");
const usageEntry: UsageEntry = sm.appendUsage("cache_warm", "anthropic", "claude", usage);
const usageEntry2: UsageEntry = sm.appendUsage("cache_warm", "anthropic", "claude", usage, "note");
const id9: string = sm.appendCompaction("summary", id1, 1000);
const id10: string = sm.appendCompaction<{ v: number }>("summary", null, 1000, { v: 1 }, true, usage);
const id11: string = sm.appendCustomEntry("ext");
const id12: string = sm.appendCustomEntry("ext", { anything: true });
const id13: string = sm.appendSessionInfo("My session");
const name: string | undefined = sm.getSessionName();
const id14: string = sm.appendCustomMessageEntry("ext", "text", true);
const id15: string = sm.appendCustomMessageEntry<{ n: number }>("ext", [text, image], false, { n: 1 });
const id16: string = sm.appendContextEdit(id1, { content: "edited" });
const id17: string = sm.appendContextEdit(id2, { content: [text, thinking, toolCall] });
const id18: string = sm.appendContextEdit(id3, null);
const leafId: string | null = sm.getLeafId();
const leaf: SessionEntry | undefined = sm.getLeafEntry();
const entry: SessionEntry | undefined = sm.getEntry(id1);
const children: SessionEntry[] = sm.getChildren(id1);
const label: string | undefined = sm.getLabel(id1);
const id19: string = sm.appendLabelChange(id1, "bookmark");
const id20: string = sm.appendLabelChange(id1, undefined);
const branchAll: SessionEntry[] = sm.getBranch();
const branchFrom: SessionEntry[] = sm.getBranch(id2);
const ctxEntries: SessionEntry[] = sm.buildContextEntries();
const projection: SessionProjection = sm.buildSessionProjection();
const ctx: SessionContext = sm.buildSessionContext();
const header: SessionHeader | null = sm.getHeader();
const count: number = sm.getEntryCount();
const entries: SessionEntry[] = sm.getEntries();
const tree: SessionTreeNode[] = sm.getTree();
sm.branch(id1);
sm.resetLeaf();
const id21: string = sm.branchWithSummary(id1, "abandoned");
const id22: string = sm.branchWithSummary(null, "abandoned", { x: 1 }, false, usage);
const branched: string | undefined = sm.createBranchedSession(id2);
if (leaf) sm._persist(leaf);

// @ts-expect-error the constructor is private, as in the reference
new SessionManager();

// ---- ReadonlySessionManager ---------------------------------------------------------------------
const ro: ReadonlySessionManager = sm;
const roCalls = [
  ro.getCwd(),
  ro.getSessionDir(),
  ro.getSessionId(),
  ro.getSessionFile(),
  ro.getLeafId(),
  ro.getLeafEntry(),
  ro.getEntry("x"),
  ro.getLabel("x"),
  ro.getBranch(),
  ro.buildContextEntries(),
  ro.buildSessionProjection(),
  ro.getHeader(),
  ro.getEntries(),
  ro.getTree(),
  ro.getSessionName(),
];
// @ts-expect-error appendMessage is not part of the read-only view
ro.appendMessage(user);

// ---- entry types (narrowing on `type`) ---------------------------------------------------------
function describe(e: SessionEntry): string {
  const base: SessionEntryBase = e;
  switch (e.type) {
    case "message": {
      const m: SessionMessageEntry = e;
      return m.message.role;
    }
    case "thinking_level_change": {
      const t: ThinkingLevelChangeEntry = e;
      return t.thinkingLevel;
    }
    case "model_change": {
      const m: ModelChangeEntry = e;
      return `${m.provider}/${m.modelId}`;
    }
    case "usage": {
      const u: UsageEntry = e;
      return `${u.kind} ${u.usage.totalTokens} ${u.note ?? ""}`;
    }
    case "compaction": {
      const c: CompactionEntry = e;
      const tail: AgentMessage[] | undefined = c.retainedTail;
      const sys: SystemMessage | undefined = c.systemMessage;
      return `${c.summary} ${c.firstKeptEntryId} ${c.tokensBefore} ${c.fromHook} ${tail?.length} ${sys?.role} ${c.usage?.input}`;
    }
    case "branch_summary": {
      const b: BranchSummaryEntry = e;
      return `${b.fromId} ${b.summary}`;
    }
    case "custom": {
      const c: CustomEntry = e;
      return c.customType;
    }
    case "custom_message": {
      const c: CustomMessageEntry = e;
      return `${c.customType} ${c.display}`;
    }
    case "context_edit": {
      const c: ContextEditEntry = e;
      const content: ContextEditableContent | undefined = c.replacement?.content;
      return `${c.targetId} ${typeof content}`;
    }
    case "label": {
      const l: LabelEntry = e;
      return `${l.targetId} ${l.label}`;
    }
    case "session_info": {
      const s: SessionInfoEntry = e;
      return s.name ?? base.id;
    }
    default: {
      const never: never = e;
      return never;
    }
  }
}

const typedCompaction: CompactionEntry<{ artifacts: string[] }> = {
  type: "compaction",
  id: "c1",
  parentId: null,
  timestamp: "2024-01-01T00:00:00.000Z",
  summary: "s",
  firstKeptEntryId: "e1",
  tokensBefore: 10,
  details: { artifacts: [] },
  retainedTail: [user, assistant],
};
const typedBranch: BranchSummaryEntry<number> = {
  type: "branch_summary",
  id: "b1",
  parentId: "c1",
  timestamp: "t",
  fromId: "e1",
  summary: "s",
  details: 1,
};
const typedCustom: CustomEntry<string[]> = {
  type: "custom",
  id: "x",
  parentId: null,
  timestamp: "t",
  customType: "ext",
  data: [],
};
const typedCustomMessage: CustomMessageEntry<boolean> = {
  type: "custom_message",
  id: "y",
  parentId: null,
  timestamp: "t",
  customType: "ext",
  content: [text],
  display: false,
  details: true,
};
const headerValue: SessionHeader = { type: "session", version: 3, id: "abc", timestamp: "t", cwd: "/repo" };
const fileEntries: FileEntry[] = [headerValue, typedCompaction, typedBranch, typedCustom, typedCustomMessage];

function walk(nodes: SessionTreeNode[]): number {
  return nodes.reduce(
    (n, node) => n + 1 + walk(node.children) + (node.label?.length ?? 0) + (node.labelTimestamp ? 1 : 0),
    0,
  );
}
const projected: ProjectedSessionEntry[] = projection.entries;
const firstSource: SessionEntry | undefined = projected[0]?.sourceEntry;
const projectedMessages: AgentMessage[] | undefined = projected[0]?.messages;
const model: { provider: string; modelId: string } | null = ctx.model;
const level: string = projection.thinkingLevel;

// ---- free functions -------------------------------------------------------------------------------
assertValidSessionId("abc");
migrateSessionEntries(fileEntries);
const parsed: FileEntry[] = parseSessionEntries('{"type":"session","id":"a","timestamp":"t","cwd":"/"}\n');
const latest: CompactionEntry | null = getLatestCompactionEntry(entries);
const asMessages: AgentMessage[] = sessionEntryToContextMessages(entries[0]!);
const byId = new Map<string, SessionEntry>(entries.map((e) => [e.id, e]));
const ctxE1: SessionEntry[] = buildContextEntries(entries);
const ctxE2: SessionEntry[] = buildContextEntries(entries, null, byId);
const projectedOne: AgentMessage[] = projectContextEntry(entries[0]!, undefined);
const proj1: SessionProjection = buildSessionProjection(entries);
const proj2: SessionProjection = buildSessionProjection(entries, "leaf", byId);
const ctx1: SessionContext = buildSessionContext(entries);
const ctx2: SessionContext = buildSessionContext(entries, "leaf", byId);
const defDir: string = getDefaultSessionDir("/repo");
const defDir2: string = getDefaultSessionDir("/repo", "/home/u/.pi/agent");
const loaded: FileEntry[] = loadEntriesFromFile("/sessions/x.jsonl");
const recent: string | null = findMostRecentSession("/sessions");
const recent2: string | null = findMostRecentSession("/sessions", "/repo");

// ---- exact signatures of a few members -----------------------------------------------------------
assertType<Equal<ReturnType<typeof SessionManager.inMemory>, SessionManager>>();
assertType<Equal<Parameters<SessionManager["appendMessage"]>[0], Message | CustomMessage | BashExecutionMessage>>();
assertType<Equal<ContextEditEntry["replacement"], { content: ContextEditableContent } | null>>();
assertType<Equal<FileEntry, SessionHeader | SessionEntry>>();
