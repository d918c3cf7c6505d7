// Type declarations for pi-session-native: a native drop-in for the `session-manager` module of
// @earendil-works/pi-coding-agent. Every shape below mirrors the reference's session-manager.d.ts;
// message types are declared here (no dependency on pi's packages) and are structurally
// compatible with pi-ai / pi-agent-core / pi-coding-agent's own.

// ---------------------------------------------------------------------------------------------
// Message types (structural copies of @earendil-works/pi-ai, pi-agent-core and pi-coding-agent)
// ---------------------------------------------------------------------------------------------

export type JsonValue = null | boolean | number | string | readonly JsonValue[] | JsonObject;
export type JsonObject = {
  [key: string]: JsonValue;
};

export interface TextContent {
  type: "text";
  text: string;
  textSignature?: string;
}

export interface ThinkingContent {
  type: "thinking";
  thinking: string;
  thinkingSignature?: string;
  /** When true, the thinking content was redacted by safety filters. */
  redacted?: boolean;
}

export interface ImageContent {
  type: "image";
  /** Base64-encoded image data. */
  data: string;
  mimeType: string;
}

export interface ToolCall {
  type: "toolCall";
  id: string;
  name: string;
  arguments: JsonObject;
  thoughtSignature?: string;
  /** OpenAI Responses namespace for calls to dynamically loaded or namespaced tools. */
  namespace?: string;
  argumentsError?: string;
}

export interface Usage {
  input: number;
  output: number;
  cacheRead: number;
  cacheWrite: number;
  /** Subset of `cacheWrite` written with 1h retention. */
  cacheWrite1h?: number;
  reasoning?: number;
  totalTokens: number;
  cost: {
    input: number;
    output: number;
    cacheRead: number;
    cacheWrite: number;
    total: number;
    totalFromProvider?: boolean;
  };
}

export type StopReason = "pending" | "stop" | "length" | "toolUse" | "error" | "aborted" | "deferred";
export type ModelThinkingLevel = "off" | "minimal" | "low" | "medium" | "high" | "xhigh" | "max";

export interface AssistantMessageDiagnostic {
  type: string;
  timestamp: number;
  error?: {
    name?: string;
    message: string;
    stack?: string;
    code?: string | number;
  };
  details?: JsonObject;
}

export interface DeferredHandle {
  provider: string;
  modelId: string;
  api: string;
  id: string;
  expiresAt?: number;
  pollAfterMs?: number;
  data?: JsonValue;
}

/** Minimal structural form of pi-ai's `Tool`. */
export interface Tool<TParameters extends object = object> {
  name: string;
  description: string;
  /** JSON Schema of the tool's arguments. */
  parameters: TParameters;
  constrainedSampling?:
    | false
    | { type: "json_schema"; strict: "prefer" | "require" }
    | { type: "grammar"; variants: Partial<Record<"openai_lark" | "openai_regex", string>> };
}

/** Minimal structural form of pi-ai's `ToolReference`. */
export interface ToolReference {
  name: string;
}

export interface SystemMessage {
  role: "system";
  /** Instruction text. On the leading message this is the base prompt; later, additional instructions. */
  content: string | TextContent[];
  /** Named prompt sections; null removes a section. */
  sections?: Record<string, string | null>;
  /** Complete definitions of tools that become available at this point. */
  toolsAdded?: Tool[];
  /** Tools that stop being available at this point. */
  toolsRemoved?: ToolReference[];
  timestamp: number;
}

export interface UserMessage {
  role: "user";
  content: string | (TextContent | ImageContent)[];
  timestamp: number;
}

export interface AssistantMessage {
  role: "assistant";
  content: (TextContent | ThinkingContent | ToolCall)[];
  api: string;
  provider: string;
  model: string;
  responseModel?: string;
  responseId?: string;
  providerThinkingLevel?: string;
  thinkingLevel?: ModelThinkingLevel;
  diagnostics?: AssistantMessageDiagnostic[];
  usage: Usage;
  stopReason: StopReason;
  deferred?: DeferredHandle;
  errorMessage?: string;
  rawStopReason?: string;
  endTurn?: boolean;
  /** Unix timestamp in milliseconds when the request started. */
  timestamp: number;
  durationMs?: number;
}

export interface NestedToolCallRecord {
  id: string;
  name: string;
  arguments?: JsonObject;
  argumentsBytes?: number;
  status: "ok" | "error" | "unfinished";
  durationMs?: number;
  error?: string;
}

export interface NestedToolCalls {
  calls: NestedToolCallRecord[];
  complete: boolean;
}

export interface ToolResultMessage<TDetails = JsonValue> {
  role: "toolResult";
  toolCallId: string;
  toolName: string;
  content: (TextContent | ImageContent)[];
  details?: TDetails;
  /** Usage from the tool execution itself, if available. */
  usage?: Usage;
  /** Calls this tool made to other tools. */
  nestedCalls?: NestedToolCalls;
  isError: boolean;
  timestamp: number;
  durationMs?: number;
}

export type Message = SystemMessage | UserMessage | AssistantMessage | ToolResultMessage;

/** Message type for bash executions via the ! command. */
export interface BashExecutionMessage {
  role: "bashExecution";
  command: string;
  output: string;
  exitCode: number | undefined;
  cancelled: boolean;
  truncated: boolean;
  fullOutputPath?: string;
  timestamp: number;
  /** If true, this message is excluded from LLM context (!! prefix) */
  excludeFromContext?: boolean;
}

/** Message type for extension-injected messages via sendMessage(). */
export interface CustomMessage<T = unknown> {
  role: "custom";
  customType: string;
  content: string | (TextContent | ImageContent)[];
  display: boolean;
  details?: T;
  timestamp: number;
}

export interface BranchSummaryMessage {
  role: "branchSummary";
  summary: string;
  fromId: string | null;
  timestamp: number;
}

export interface CompactionSummaryMessage {
  role: "compactionSummary";
  summary: string;
  tokensBefore: number;
  timestamp: number;
}

/**
 * Extension point, like pi-agent-core's: augment with
 * `declare module "pi-session-native" { interface CustomAgentMessages { mine: MyMessage } }`.
 */
// biome-ignore lint/suspicious/noEmptyInterface: empty on purpose, users add members by declaration merging (a type alias cannot be augmented).
export interface CustomAgentMessages {}

/** LLM messages plus the coding agent's own message types (pi's AgentMessage as the coding agent augments it). */
export type AgentMessage =
  | Message
  | BashExecutionMessage
  | CustomMessage
  | BranchSummaryMessage
  | CompactionSummaryMessage
  | CustomAgentMessages[keyof CustomAgentMessages];

// ---------------------------------------------------------------------------------------------
// Session entries (same names and shapes as the reference's session-manager.d.ts)
// ---------------------------------------------------------------------------------------------

export declare const CURRENT_SESSION_VERSION = 3;

export interface SessionHeader {
  type: "session";
  version?: number;
  id: string;
  timestamp: string;
  cwd: string;
  parentSession?: string;
}

export interface NewSessionOptions {
  id?: string;
  parentSession?: string;
}

export interface SessionEntryBase {
  type: string;
  id: string;
  parentId: string | null;
  timestamp: string;
}

export interface SessionMessageEntry extends SessionEntryBase {
  type: "message";
  message: AgentMessage;
}

export interface ThinkingLevelChangeEntry extends SessionEntryBase {
  type: "thinking_level_change";
  thinkingLevel: string;
}

export interface ModelChangeEntry extends SessionEntryBase {
  type: "model_change";
  provider: string;
  modelId: string;
}

export interface UsageEntry extends SessionEntryBase {
  type: "usage";
  /** Arbitrary usage category, such as "cache_warm". */
  kind: string;
  provider: string;
  model: string;
  usage: Usage;
  /** Optional human-readable qualifier for usage notices. */
  note?: string;
}

export interface CompactionEntry<T = unknown> extends SessionEntryBase {
  type: "compaction";
  summary: string;
  firstKeptEntryId: string;
  tokensBefore: number;
  /** Extension-specific data (e.g., ArtifactIndex, version markers for structured compaction) */
  details?: T;
  /** Usage from the LLM call(s) that generated this summary, if available */
  usage?: Usage;
  /** True if generated by an extension, undefined/false if pi-generated (backward compatible) */
  fromHook?: boolean;
  /** Complete prompt and tool state at this compaction boundary. */
  systemMessage?: SystemMessage;
  /**
   * pi-session-native addition: messages kept verbatim after the summary. When present, the
   * context after this compaction is the summary followed by these messages (instead of the
   * entries from firstKeptEntryId on), followed by the entries after the compaction entry.
   */
  retainedTail?: AgentMessage[];
}

export interface BranchSummaryEntry<T = unknown> extends SessionEntryBase {
  type: "branch_summary";
  fromId: string;
  summary: string;
  /** Extension-specific data (not sent to LLM) */
  details?: T;
  /** Usage from the LLM call that generated this summary, if available */
  usage?: Usage;
  /** True if generated by an extension, false if pi-generated */
  fromHook?: boolean;
}

/** Custom entry for extensions to store extension-specific data in the session (not in LLM context). */
export interface CustomEntry<T = unknown> extends SessionEntryBase {
  type: "custom";
  customType: string;
  data?: T;
}

/** Label entry for user-defined bookmarks/markers on entries. */
export interface LabelEntry extends SessionEntryBase {
  type: "label";
  targetId: string;
  label: string | undefined;
}

/** Session metadata entry (e.g., user-defined display name). */
export interface SessionInfoEntry extends SessionEntryBase {
  type: "session_info";
  name?: string;
}

/** Custom message entry for extensions to inject messages into LLM context. */
export interface CustomMessageEntry<T = unknown> extends SessionEntryBase {
  type: "custom_message";
  customType: string;
  content: string | (TextContent | ImageContent)[];
  details?: T;
  display: boolean;
}

/** Content that an append-only context edit may replace without changing message metadata. */
export type ContextEditableContent =
  | UserMessage["content"]
  | AssistantMessage["content"]
  | ToolResultMessage["content"]
  | CustomMessage["content"];

/** Append-only change to one earlier entry's contribution to model context. */
export interface ContextEditEntry extends SessionEntryBase {
  type: "context_edit";
  targetId: string;
  /** Null omits the target from model context. A value replaces only its content. */
  replacement: {
    content: ContextEditableContent;
  } | null;
}

/** Session entry - has id/parentId for tree structure (returned by "read" methods in SessionManager) */
export type SessionEntry =
  | SessionMessageEntry
  | ThinkingLevelChangeEntry
  | ModelChangeEntry
  | UsageEntry
  | CompactionEntry
  | BranchSummaryEntry
  | CustomEntry
  | CustomMessageEntry
  | ContextEditEntry
  | LabelEntry
  | SessionInfoEntry;

/** Raw file entry (includes header) */
export type FileEntry = SessionHeader | SessionEntry;

/** Tree node for getTree() - defensive copy of session structure */
export interface SessionTreeNode {
  entry: SessionEntry;
  children: SessionTreeNode[];
  /** Resolved label for this entry, if any */
  label?: string;
  /** Timestamp of the latest label change for this entry, if any */
  labelTimestamp?: string;
}

export interface ProjectedSessionEntry {
  /** Raw append-only entry that owns this projected contribution. */
  sourceEntry: SessionEntry;
  /** Model-visible messages after context edits. Empty for state-only entries and omissions. */
  messages: AgentMessage[];
}

export interface SessionProjection {
  entries: ProjectedSessionEntry[];
  messages: AgentMessage[];
  thinkingLevel: string;
  model: {
    provider: string;
    modelId: string;
  } | null;
}

export interface SessionContext {
  messages: AgentMessage[];
  thinkingLevel: string;
  model: {
    provider: string;
    modelId: string;
  } | null;
}

export interface SessionInfo {
  path: string;
  id: string;
  /** Working directory where the session was started. Empty string for old sessions. */
  cwd: string;
  /** User-defined display name from session_info entries. */
  name?: string;
  /** Path to the parent session (if this session was forked). */
  parentSessionPath?: string;
  created: Date;
  modified: Date;
  messageCount: number;
  firstMessage: string;
  allMessagesText: string;
}

export type ReadonlySessionManager = Pick<
  SessionManager,
  | "getCwd"
  | "getSessionDir"
  | "getSessionId"
  | "getSessionFile"
  | "getLeafId"
  | "getLeafEntry"
  | "getEntry"
  | "getLabel"
  | "getBranch"
  | "buildContextEntries"
  | "buildSessionProjection"
  | "getHeader"
  | "getEntries"
  | "getTree"
  | "getSessionName"
>;

export type SessionListProgress = (
  loaded: number,
  total: number,
  /** Sessions loaded so far, sorted by activity. Present on periodic updates. */
  partialSessions?: readonly SessionInfo[],
) => void;

// ---------------------------------------------------------------------------------------------
// Free functions
// ---------------------------------------------------------------------------------------------

export declare function assertValidSessionId(id: string): void;
export declare function migrateSessionEntries(entries: FileEntry[]): void;
export declare function parseSessionEntries(content: string): FileEntry[];
export declare function getLatestCompactionEntry(entries: SessionEntry[]): CompactionEntry | null;
/** Project one selected session entry into LLM/runtime messages. */
export declare function sessionEntryToContextMessages(entry: SessionEntry): AgentMessage[];
/** Build the active, compaction-aware session entry list along the leaf path. */
export declare function buildContextEntries(
  entries: SessionEntry[],
  leafId?: string | null,
  byId?: Map<string, SessionEntry>,
): SessionEntry[];
/** Project one entry into model-visible messages, applying its latest context edit if any. */
export declare function projectContextEntry(entry: SessionEntry, edit: ContextEditEntry | undefined): AgentMessage[];
/** Build provenance-preserving, compaction-aware model context. */
export declare function buildSessionProjection(
  entries: SessionEntry[],
  leafId?: string | null,
  byId?: Map<string, SessionEntry>,
): SessionProjection;
/** Build the finalized model context from the canonical session projection. */
export declare function buildSessionContext(
  entries: SessionEntry[],
  leafId?: string | null,
  byId?: Map<string, SessionEntry>,
): SessionContext;
export declare function getDefaultSessionDir(cwd: string, agentDir?: string): string;
export declare function loadEntriesFromFile(filePath: string): FileEntry[];
export declare function findMostRecentSession(sessionDir: string, cwd?: string): string | null;

// ---------------------------------------------------------------------------------------------
// SessionManager
// ---------------------------------------------------------------------------------------------

/**
 * Manages conversation sessions as append-only trees stored in JSONL files (native storage).
 *
 * Same public API as pi's SessionManager. pi's class has private fields, so TypeScript treats
 * it nominally: to pass this class where pi's SDK expects its own, write
 * `sm as import("@earendil-works/pi-coding-agent").SessionManager`.
 */
export declare class SessionManager {
  private constructor();
  /** Switch to a different session file (used for resume and branching) */
  setSessionFile(sessionFile: string): void;
  newSession(options?: NewSessionOptions): string | undefined;
  isPersisted(): boolean;
  getCwd(): string;
  getSessionDir(): string;
  usesDefaultSessionDir(): boolean;
  getSessionId(): string;
  getSessionFile(): string | undefined;
  _persist(entry: SessionEntry): void;
  /** Append a message as child of current leaf, then advance leaf. Returns entry id. */
  appendMessage(message: Message | CustomMessage | BashExecutionMessage): string;
  /** Append a thinking level change as child of current leaf, then advance leaf. Returns entry id. */
  appendThinkingLevelChange(thinkingLevel: string): string;
  /** Append a model change as child of current leaf, then advance leaf. Returns entry id. */
  appendModelChange(provider: string, modelId: string): string;
  /** Append model-attributed usage that does not participate in LLM context. Returns the appended entry. */
  appendUsage(kind: string, provider: string, model: string, usage: Usage, note?: string): UsageEntry;
  /** Append a compaction summary as child of current leaf, then advance leaf. Returns entry id. */
  appendCompaction<T = unknown>(
    summary: string,
    firstKeptEntryId: string | null,
    tokensBefore: number,
    details?: T,
    fromHook?: boolean,
    usage?: Usage,
  ): string;
  /** Append a custom entry (for extensions) as child of current leaf, then advance leaf. Returns entry id. */
  appendCustomEntry(customType: string, data?: unknown): string;
  /** Append a session info entry (e.g., display name). Returns entry id. */
  appendSessionInfo(name: string): string;
  /** Get the current session name from the latest session_info entry, if any. */
  getSessionName(): string | undefined;
  /** Append a custom message entry (for extensions) that participates in LLM context. Returns entry id. */
  appendCustomMessageEntry<T = unknown>(
    customType: string,
    content: string | (TextContent | ImageContent)[],
    display: boolean,
    details?: T,
  ): string;
  /** Append a branch-local edit to an earlier model-visible entry. */
  appendContextEdit(targetId: string, replacement: ContextEditEntry["replacement"]): string;
  getLeafId(): string | null;
  getLeafEntry(): SessionEntry | undefined;
  getEntry(id: string): SessionEntry | undefined;
  /** Get all direct children of an entry. */
  getChildren(parentId: string): SessionEntry[];
  /** Get the label for an entry, if any. */
  getLabel(id: string): string | undefined;
  /** Set or clear a label on an entry. Pass undefined or empty string to clear the label. */
  appendLabelChange(targetId: string, label: string | undefined): string;
  /** Walk from entry to root, returning all entries in path order. */
  getBranch(fromId?: string): SessionEntry[];
  /** Build the active, compaction-aware entry list for context/rendering. */
  buildContextEntries(): SessionEntry[];
  /** Build the session projection (provenance-preserving model context) from the current leaf. */
  buildSessionProjection(): SessionProjection;
  /** Build the session context (what gets sent to the LLM) from the current leaf. */
  buildSessionContext(): SessionContext;
  /** Get session header. */
  getHeader(): SessionHeader | null;
  /** Number of session entries (excludes header), without copying them like `getEntries()`. */
  getEntryCount(): number;
  /** Get all session entries (excludes header). Returns a shallow copy. */
  getEntries(): SessionEntry[];
  /** Get the session as a tree structure. */
  getTree(): SessionTreeNode[];
  /** Start a new branch from an earlier entry (moves the leaf pointer). */
  branch(branchFromId: string): void;
  /** Reset the leaf pointer to null (before any entries). */
  resetLeaf(): void;
  /** Start a new branch with a summary of the abandoned path. Returns entry id. */
  branchWithSummary(
    branchFromId: string | null,
    summary: string,
    details?: unknown,
    fromHook?: boolean,
    usage?: Usage,
  ): string;
  /** Create a new session file containing only the path from root to the given leaf. */
  createBranchedSession(leafId: string): string | undefined;

  /** Create a new session. */
  static create(cwd: string, sessionDir?: string, options?: NewSessionOptions): SessionManager;
  /** Open a specific session file. */
  static open(path: string, sessionDir?: string, cwdOverride?: string): SessionManager;
  /** Continue the most recent session, or create new if none. */
  static continueRecent(cwd: string, sessionDir?: string): SessionManager;
  /** Create an in-memory session (no file persistence), optionally from entries held outside the filesystem. */
  static inMemory(cwd?: string, options?: NewSessionOptions, entries?: FileEntry[]): SessionManager;
  /** Fork a session from another project directory into the current project. */
  static forkFrom(
    sourcePath: string,
    targetCwd: string,
    sessionDir?: string,
    options?: NewSessionOptions,
  ): SessionManager;
  /** Find an exact session ID without loading transcript bodies. */
  static findById(cwd: string, id: string, sessionDir?: string): string | undefined;
  /** List all sessions for a directory. */
  static list(
    cwd: string,
    sessionDir?: string,
    onProgress?: SessionListProgress,
    signal?: AbortSignal,
  ): Promise<SessionInfo[]>;
  /** List all sessions across all project directories. */
  static listAll(onProgress?: SessionListProgress, signal?: AbortSignal): Promise<SessionInfo[]>;
  static listAll(sessionDir?: string, onProgress?: SessionListProgress, signal?: AbortSignal): Promise<SessionInfo[]>;
}

/** Options of {@link searchSessions}. */
export interface SearchSessionsOptions {
  /** Sessions directory searched: its `*.jsonl` files and those of its subdirectories. Default: pi's sessions root (`<agentDir>/sessions`, all projects, like `listAll`). The index is `<sessionDir>/.pi-session-search.sqlite`. */
  sessionDir?: string;
  /** Only sessions whose header `cwd` is this directory (resolved). */
  cwd?: string;
  /** Only these roles (see {@link SearchHit.role}): `user`, `assistant`, `toolCall`, `toolResult`, `bash`, `custom:<type>`, `compaction`, `branch_summary`, `label`, `session_info`. */
  roles?: string[];
  /** Only texts naming one of these tools: a tool call of that tool, a result of that tool, and the text of an assistant message that calls it. */
  tools?: string[];
  /** Entries at or after this time (Date, ms since the epoch, or a date string). */
  since?: Date | number | string;
  /** Entries before this time. */
  until?: Date | number | string;
  /** `"active"` (default): only entries on the path from the session's last entry to its root; `"all"`: abandoned branches too. */
  branch?: "active" | "all";
  /** Most hits (default 20, at most 1000). */
  limit?: number;
  /** Hits skipped first (paging). */
  offset?: number;
  /** Most hits per session (default: no cap). */
  perSession?: number;
  /** Session files left out (e.g. the current session). */
  exclude?: string[];
  /** Characters of a snippet (default 160). */
  snippetChars?: number;
  /** Called while the index is brought up to date before the query, only when it has files to index (see {@link SearchProgress}). */
  onProgress?: (progress: SearchProgress) => void;
  signal?: AbortSignal;
}

/**
 * Progress of the index refresh that runs before a query ({@link searchSessions}) or in
 * {@link warmSearchIndex}. Made only when there are files to index (a first build, new or
 * changed sessions; never on an index that is up to date): first `{ done: 0, total }`,
 * then at most every ~100 ms as files are parsed and as chunks of a large file are read
 * (`bytesDone` grows then), then `{ done: total, total }` before the promise settles.
 * `done` and `bytesDone` only grow (each report grows one of them), `total` and
 * `bytesTotal` stay the same. An append to one session is
 * work too (`0/1`, `1/1`): show a progress line only when a build lasts (e.g. after
 * 200 ms). A call that waits for another call's build of the same directory (see
 * {@link searchSessions}) reports that build, from where it is when the call starts. A
 * refresh that finds its index damaged rebuilds it (reports of the rebuild are dropped:
 * `done` and `total` keep their meaning).
 * No call is made once `signal` has aborted. A throwing `onProgress` aborts the work, and
 * the promise rejects with its error.
 */
export interface SearchProgress {
  phase: "indexing";
  /** Session files indexed so far. */
  done: number;
  /** Session files this refresh indexes. */
  total: number;
  /**
   * Bytes of those files read and parsed so far: grows while a large file is read (a
   * report at least every ~100 ms while bytes are read, whatever the size of the file),
   * `bytesTotal` once `done === total`.
   */
  bytesDone: number;
  /** Bytes of the session files this refresh indexes (their sizes). */
  bytesTotal: number;
}

/** One hit of {@link searchSessions}. */
export interface SearchHit {
  sessionPath: string;
  sessionId: string | null;
  cwd: string | null;
  entryId: string | null;
  /**
   * Which text of the entry matched: `user`, `assistant` (its text blocks), `toolCall` (one
   * tool call: the tool's name, then the strings of its arguments, one per line: paths,
   * commands, patterns, an edit's old and new text, a written file's content),
   * `toolResult` (its text blocks), `bash` (a `!` command and its output),
   * `custom:<type>` (an extension's message), `compaction`, `branch_summary` (the
   * summary), `label` (a label's text; the entry is the label entry, its `targetId` the
   * labelled one) or `session_info` (the session's name). Not indexed: thinking blocks,
   * images, tool results' `details`, `custom` entries. An entry can give several hits
   * (e.g. two of its tool calls).
   */
  role: string;
  timestamp: string | null;
  /** At most `snippetChars` characters of the entry's text around the first match, every matching word marked `«…»`, `…` where cut, line breaks as spaces. Raw session text: sanitise before printing to a terminal. */
  snippet: string;
  /**
   * Relevance, higher is better: BM25's length part with every query term counted once per
   * text (the index keeps which texts hold a token, not how often): shorter texts first,
   * newer first among equally long ones; a session-id match scores 1e9.
   */
  score: number;
  /** The entry is on the path from the session's last entry (its leaf) to the root. */
  onActiveBranch: boolean;
  /** `"text"`, or `"sessionId"` when the query is the session's id or an id prefix. */
  match: "text" | "sessionId";
}

/**
 * Ranked full-text search over all sessions (SQLite FTS5 index beside the listing index,
 * brought up to date before each query). Query: words (all must match), `"exact phrases"`,
 * prefixes (`auth*`), a session id or id prefix. Case- and accent-insensitive for Latin text;
 * CJK found by substring. Paths and identifiers are found whole and by their parts:
 * `src/core/session-manager.ts`, `session-manager` and `manager.ts` find that path;
 * `idSummaryTree`, `summaryTree` and `summary` find that identifier. Runs off the JS
 * thread. Best first (BM25); when more than 20,000 texts match, the newest 20,000 of them
 * are ranked first and older ones follow only when those give too few hits (a word found
 * almost everywhere stays fast). Only one refresh or query runs per sessions directory at
 * a time in a process: a search started while another (or {@link warmSearchIndex}) is
 * indexing waits for it, its `onProgress` receiving that build's reports, and then finds
 * the index up to date.
 */
export function searchSessions(query: string, options?: SearchSessionsOptions): Promise<SearchHit[]>;

/**
 * Bring the search index of `sessionDir` (default: pi's sessions root, as
 * {@link searchSessions}) up to date without a query, so that the next search is fast: for
 * a host that keeps the index warm in the background (e.g. once at start, then after its
 * session changes). The work runs on libuv's pool, parsing on one worker thread at a lower
 * OS priority (Linux) and stopping at the next file when aborted, so that it weighs little on
 * the host; a search started meanwhile waits for it (at that pace).
 * Resolves when done (at once where no index file can be kept, e.g. a read-only directory:
 * each search then indexes in memory); rejects on abort (`signal`) or on an error of the
 * index. `onProgress`: see {@link SearchProgress}.
 */
export function warmSearchIndex(options?: {
  sessionDir?: string;
  onProgress?: (progress: SearchProgress) => void;
  signal?: AbortSignal;
}): Promise<void>;

/** The file an index build is reading: see {@link searchIndexReading}. */
export interface SearchIndexReading {
  /** The session file. */
  path: string;
  /** Bytes of it read and parsed so far (updated every 256 KiB). */
  bytesDone: number;
  /** Its size. */
  bytes: number;
  /** Milliseconds spent on it so far. */
  ms: number;
}

/**
 * The session file that index builds in this process ({@link searchSessions},
 * {@link warmSearchIndex}) have been reading the longest, or null when none is being read:
 * for a progress line that keeps moving while one large file takes long (the build's own
 * `onProgress` counts whole files). Cheap; poll it, e.g. once a second.
 */
export function searchIndexReading(): SearchIndexReading | null;

/** One entry of {@link readSessionWindow}. */
export interface SessionWindowEntry {
  id: string | null;
  parentId: string | null;
  type: string | null;
  role: string | null;
  timestamp: string | null;
  /** The entry's searchable text, cut to the budgets. */
  text: string;
  truncated: boolean;
  /** This is the entry asked for. */
  hit: boolean;
}

/**
 * The entries around `entryId` on its branch (ancestors before it; after it, the path to the
 * latest leaf descending from it), oldest first: at most `before`/`after` entries (default 3,
 * at most 200) and `maxChars` characters of text in all (default 8000; `maxEntryChars` per
 * entry, default 2000). `[]` when the file cannot be read or has no such entry.
 */
export function readSessionWindow(
  sessionPath: string,
  entryId: string,
  options?: { before?: number; after?: number; maxChars?: number; maxEntryChars?: number; signal?: AbortSignal },
): Promise<SessionWindowEntry[]>;
