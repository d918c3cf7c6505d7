#!/usr/bin/env node
// Drives pi's real SDK (createAgentSession) against a scripted faux provider and prints a JSON
// report of everything the SessionManager influenced: session files, session.messages and the
// contexts the model received. Must run under Node >= 22.19 (see scripts/node22.mjs).
//
//   node22 __test__/pi/sdk-scenario.mjs --impl reference|native --dir <empty temp dir> [--out report.json]
//   node22 __test__/pi/sdk-scenario.mjs --impl reference|native --inspect <session.jsonl> [--roots a,b]
//
// --impl native imports SessionManager from this package (index.mjs). When additionally run with
// `--import lib/register.mjs`, pi's internal imports of session-manager.js are native too.
// --inspect opens an existing file with the chosen implementation and reports its read API
// (getHeader/getEntries/getTree/buildSessionContext/...).
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { Normalizer, plain } from "./normalize.mjs";

process.env.PI_OFFLINE ??= "1";
process.env.PI_SKIP_VERSION_CHECK ??= "1";
process.env.PI_TELEMETRY ??= "0";

const here = dirname(fileURLToPath(import.meta.url));
// faux-small's context window and the context size above which pi compacts it automatically
const AUTO_CONTEXT_WINDOW = 16384;
const AUTO_THRESHOLD = 512;
const repoRoot = resolve(here, "..", "..");

function parseArgs(argv) {
  const out = { impl: "reference" };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const next = () => {
      const v = argv[++i];
      if (v === undefined) throw new Error(`missing value for ${a}`);
      return v;
    };
    if (a === "--impl") out.impl = next();
    else if (a === "--dir") out.dir = resolve(next());
    else if (a === "--out") out.out = resolve(next());
    else if (a === "--inspect") out.inspect = resolve(next());
    else if (a === "--roots") out.roots = next().split(",").filter(Boolean);
    else throw new Error(`unknown argument ${a}`);
  }
  if (!["reference", "native"].includes(out.impl)) throw new Error(`--impl must be reference|native, got ${out.impl}`);
  if (!out.dir && !out.inspect) throw new Error("--dir <temp dir> or --inspect <file> is required");
  return out;
}

async function loadImpl(impl) {
  const pi = await import("@earendil-works/pi-coding-agent");
  if (impl === "reference") return { pi, SessionManager: pi.SessionManager, source: "reference" };
  // PI_SESSION_NATIVE_PKG: test-only override of the package root (to validate this harness
  // against a stand-in package before the native build exists)
  const entry = join(process.env.PI_SESSION_NATIVE_PKG || repoRoot, "index.mjs");
  let mod;
  try {
    mod = await import(pathToFileURL(entry).href);
  } catch (error) {
    throw new Error(`native implementation not available (${entry}): ${error.message}`);
  }
  if (typeof mod.SessionManager !== "function") throw new Error(`${entry} does not export SessionManager`);
  return {
    pi,
    SessionManager: mod.SessionManager,
    source: "native",
    // true when lib/register.mjs redirected pi's own session-manager.js to the native module
    hooked: pi.SessionManager === mod.SessionManager,
  };
}

function readLines(file) {
  return readFileSync(file, "utf8")
    .split("\n")
    .filter((l) => l.trim())
    .map((l) => JSON.parse(l));
}

function inspectManager(sm) {
  return {
    header: plain(sm.getHeader()),
    sessionId: sm.getSessionId(),
    sessionName: sm.getSessionName(),
    leafId: sm.getLeafId(),
    entryCount: typeof sm.getEntryCount === "function" ? sm.getEntryCount() : undefined,
    entries: plain(sm.getEntries()),
    branch: plain(sm.getBranch()),
    tree: plain(sm.getTree()),
    context: plain(sm.buildSessionContext()),
    labels: plain(sm.getEntries().map((e) => [e.id, sm.getLabel(e.id) ?? null])),
  };
}

async function loadSessionManagerOnly(impl) {
  if (impl === "native") return loadImpl(impl);
  // the session-manager module alone loads much faster than pi's whole index
  const file = join(
    repoRoot,
    "node_modules",
    "@earendil-works",
    "pi-coding-agent",
    "dist",
    "core",
    "session-manager.js",
  );
  const mod = await import(pathToFileURL(file).href);
  return { SessionManager: mod.SessionManager, source: "reference" };
}

async function runInspect(args) {
  const { SessionManager, source } = await loadSessionManagerOnly(args.impl);
  const sm = SessionManager.open(args.inspect);
  const norm = new Normalizer(args.roots ?? [dirname(args.inspect)]);
  norm.registerEntries(readLines(args.inspect));
  return { impl: source, file: norm.value(args.inspect), view: norm.value(inspectManager(sm)) };
}

// ---------------------------------------------------------------------------------------------

async function runScenario(args) {
  const { pi, SessionManager, source, hooked } = await loadImpl(args.impl);
  const { fauxProvider, fauxAssistantMessage, fauxText, fauxThinking, fauxToolCall } = await import(
    "@earendil-works/pi-ai/providers/faux"
  );
  const { createAgentSession, createExtensionRuntime, ModelRuntime, SettingsManager } = pi;

  const root = args.dir;
  const agentDir = join(root, "agent");
  const projectDir = join(root, "project");
  const sessionDir = join(root, "sessions");
  for (const d of [agentDir, projectDir, sessionDir]) mkdirSync(d, { recursive: true });
  writeFileSync(join(projectDir, "notes.txt"), "alpha\nbeta\ngamma\n");
  // stored credential: the faux provider counts as configured as soon as it is registered
  writeFileSync(join(agentDir, "auth.json"), JSON.stringify({ faux: { type: "api_key", key: "faux-test-key" } }));

  // ---- faux provider: every request records the context it received -----------------------
  const faux = fauxProvider({
    api: "faux",
    provider: "faux",
    models: [
      { id: "faux-1", name: "Faux One", reasoning: true, contextWindow: 200000, maxTokens: 8192 },
      { id: "faux-2", name: "Faux Two", reasoning: true, contextWindow: 100000, maxTokens: 4096 },
      // small-context model: its compaction threshold (see settingsManager) is crossed by one long reply
      { id: "faux-small", name: "Faux Small", reasoning: true, contextWindow: AUTO_CONTEXT_WINDOW, maxTokens: 4096 },
    ],
  });
  const received = [];
  let phase = "init";
  const reply = (label, content, opts) => (context, options, _state, model) => {
    received.push({
      label,
      phase,
      model: `${model.provider}/${model.id}`,
      reasoning: options?.reasoning ?? null,
      context: plain(context),
    });
    return fauxAssistantMessage(content, opts);
  };

  const modelRuntime = await ModelRuntime.create({
    authPath: join(agentDir, "auth.json"),
    modelsPath: join(agentDir, "models.json"),
  });
  modelRuntime.registerNativeProvider(faux.provider);
  await modelRuntime.refresh({ allowNetwork: false });

  const settingsManager = SettingsManager.inMemory({
    // Automatic compaction is on, but only faux-small can reach its threshold
    // (contextTokens > contextWindow - reserveTokens): faux-1/faux-2 keep the default reserve
    // (16384) against windows of 200k/100k, while faux-small's override leaves AUTO_THRESHOLD
    // tokens. Every compaction (manual and automatic) keeps only the most recent turn.
    compaction: {
      enabled: true,
      keepRecentTokens: 1,
      modelOverrides: { "faux/faux-small": { reserveTokens: AUTO_CONTEXT_WINDOW - AUTO_THRESHOLD } },
    },
    retry: { enabled: false },
  });
  const resourceLoader = {
    getExtensions: () => ({ extensions: [], errors: [], runtime: createExtensionRuntime() }),
    getSkills: () => ({ skills: [], diagnostics: [] }),
    getPrompts: () => ({ prompts: [], diagnostics: [] }),
    getThemes: () => ({ themes: [], diagnostics: [] }),
    getAgentsFiles: () => ({ agentsFiles: [] }),
    getSystemPrompt: () => "You are the pi-session-native scenario assistant. Be concise.",
    getSystemPromptSource: () => undefined,
    getAppendSystemPrompt: () => [],
    getAppendSystemPromptSources: () => [],
    extendResources: () => {},
    reload: async () => {},
  };
  const baseOptions = {
    cwd: projectDir,
    agentDir,
    modelRuntime,
    resourceLoader,
    settingsManager,
    tools: ["read", "bash"],
  };

  const steps = [];
  const snapshots = [];
  const step = (name, data) => steps.push({ name, ...(data === undefined ? {} : { data: plain(data) }) });
  const snapshot = (name, session) =>
    snapshots.push({
      name,
      sessionId: session.sessionId,
      sessionFile: session.sessionFile,
      sessionName: session.sessionName ?? null,
      model: session.model ? `${session.model.provider}/${session.model.id}` : null,
      thinkingLevel: session.thinkingLevel,
      leafId: session.sessionManager.getLeafId(),
      messages: plain(session.messages),
    });

  // ---- session 1: new persistent session ---------------------------------------------------
  phase = "session1";
  const sm1 = SessionManager.create(projectDir, sessionDir);
  const { session } = await createAgentSession({
    ...baseOptions,
    sessionManager: sm1,
    model: faux.getModel("faux-1"),
    thinkingLevel: "off",
  });

  faux.setResponses([
    reply("turn1", "Hello! I am the faux assistant."),
    reply(
      "turn2-tool",
      [fauxText("Let me read it."), fauxToolCall("read", { path: "notes.txt" }, { id: "call_read_1" })],
      {
        stopReason: "toolUse",
      },
    ),
    reply("turn2-final", "notes.txt contains alpha, beta and gamma."),
  ]);
  await session.prompt("Hello, who are you?");
  await session.prompt("Please read notes.txt");
  const turn2Assistant = session.sessionManager.getLeafId();
  step("after-turn2", { leaf: turn2Assistant });

  session.setThinkingLevel("high");
  faux.appendResponses([reply("turn3-thinking", [fauxThinking("The user wants a number."), fauxText("42")])]);
  await session.prompt("Think hard: what is the answer?");

  await session.setModel(faux.getModel("faux-2"));
  faux.appendResponses([
    reply("turn4-bash", [fauxToolCall("bash", { command: "echo scenario-bash-output" }, { id: "call_bash_1" })], {
      stopReason: "toolUse",
    }),
    reply("turn4-final", "The command printed scenario-bash-output."),
  ]);
  await session.prompt("Run echo via bash, on model two");
  snapshot("before-compaction", session);

  // ---- manual compaction: the faux model answers the summarization request -----------------
  phase = "compaction";
  faux.appendResponses([
    reply("compaction-summary", "## Goal\nScenario summary of the earlier turns."),
    reply("compaction-turn-prefix", "## Turn prefix\nSummary of the split turn prefix."),
  ]);
  const compaction = await session.compact("Keep it short");
  step("compaction", {
    firstKeptEntryId: compaction.firstKeptEntryId,
    summary: compaction.summary,
    tokensBefore: compaction.tokensBefore,
  });
  // pi asks for a second summary when the cut point splits a turn; drop it if unused
  const pendingAfterCompaction = faux.getPendingResponseCount();
  faux.setResponses([]);
  step("compaction-pending", { pendingAfterCompaction });

  phase = "session1";
  faux.appendResponses([reply("turn5", "Continuing after compaction.")]);
  await session.prompt("What did we do so far?");
  snapshot("after-compaction", session);

  // ---- automatic (threshold) compaction ------------------------------------------------------
  // On faux-small a long reply pushes the reported usage (the faux provider estimates it from the
  // prompt and the output, ~chars/4) above AUTO_THRESHOLD while the input stays far below the
  // context window (no overflow handling): pi compacts right after the turn, inside prompt().
  await session.setModel(faux.getModel("faux-small"));
  const compactionEvents = [];
  const unsubscribe = session.subscribe((event) => {
    if (event.type === "compaction_start") compactionEvents.push({ type: event.type, reason: event.reason });
    if (event.type === "compaction_end") {
      compactionEvents.push({
        type: event.type,
        reason: event.reason,
        aborted: event.aborted,
        willRetry: event.willRetry,
        errorMessage: event.errorMessage ?? null,
        firstKeptEntryId: event.result?.firstKeptEntryId ?? null,
        summary: event.result?.summary ?? null,
        tokensBefore: event.result?.tokensBefore ?? null,
      });
    }
  });
  const longReply = Array.from({ length: 60 }, (_, i) => `Line ${i + 1}: a deliberately long faux answer.`).join("\n");
  faux.appendResponses([
    reply("turn5b-long", longReply),
    (context, options, state, model) => {
      phase = "auto-compaction";
      return reply("auto-compaction-summary", "## Goal\nAuto summary after the long answer.")(
        context,
        options,
        state,
        model,
      );
    },
    reply("auto-compaction-turn-prefix", "## Turn prefix\nAuto summary of the split turn prefix."),
  ]);
  const compactionsBefore = session.sessionManager.getEntries().filter((e) => e.type === "compaction").length;
  await session.prompt("Give me a long answer on the small model");
  unsubscribe();
  const autoPending = faux.getPendingResponseCount();
  faux.setResponses([]);
  phase = "session1";
  const longAssistant = /** @type {{ message: { usage: unknown } } | undefined} */ (
    session.sessionManager.getBranch().findLast((e) => e.type === "message" && e.message.role === "assistant")
  );
  const autoCompactions = session.sessionManager.getEntries().filter((e) => e.type === "compaction");
  const autoCompaction = autoCompactions.at(-1);
  const autoEnd = compactionEvents.find((e) => e.type === "compaction_end");
  if (
    autoCompactions.length !== compactionsBefore + 1 ||
    session.sessionManager.getLeafId() !== autoCompaction.id ||
    autoEnd?.reason !== "threshold" ||
    autoEnd.aborted ||
    autoEnd.summary !== autoCompaction.summary
  ) {
    throw new Error(
      `expected one automatic threshold compaction after the long reply; got ${autoCompactions.length - compactionsBefore} new ` +
        `compaction entries, leaf ${session.sessionManager.getLeafId()}, events ${JSON.stringify(compactionEvents)}, ` +
        `usage of the long reply ${JSON.stringify(longAssistant?.message.usage)}`,
    );
  }
  step("auto-compaction", {
    events: compactionEvents,
    usage: longAssistant.message.usage,
    entry: autoCompaction,
    pending: autoPending,
  });
  // back to faux-2 (below every threshold) so no further automatic compaction happens
  await session.setModel(faux.getModel("faux-2"));
  faux.appendResponses([reply("turn5c-after-auto", "Still here after the automatic compaction.")]);
  await session.prompt("And after the automatic compaction?");
  snapshot("after-auto-compaction", session);

  // ---- label + tree navigation with branch summary -----------------------------------------
  session.sessionManager.appendLabelChange(turn2Assistant, "read-done");
  phase = "branch-summary";
  faux.appendResponses([reply("branch-summary", "Branch summary: explored thinking, bash and compaction.")]);
  const nav = await session.navigateTree(turn2Assistant, { summarize: true, label: "alt-branch" });
  step("navigateTree", {
    cancelled: nav.cancelled,
    editorText: nav.editorText ?? null,
    summaryEntry: nav.summaryEntry ?? null,
  });
  phase = "session1";
  faux.appendResponses([reply("turn6-branch", "Now on the alternative branch.")]);
  await session.prompt("Continue on the branch");

  // navigate to a user message without summary (leaf moves to its parent, text to editor)
  const firstUser = session.sessionManager.getEntries().find((e) => e.type === "message" && e.message.role === "user");
  const nav2 = await session.navigateTree(firstUser.id);
  step("navigateTree-user", {
    cancelled: nav2.cancelled,
    editorText: nav2.editorText ?? null,
    leaf: session.sessionManager.getLeafId(),
  });
  faux.appendResponses([reply("turn7-root", "A fresh start from the root.")]);
  await session.prompt("Start over from the top");

  // custom message (model-visible) + custom entry (not model-visible)
  await session.sendCustomMessage({
    customType: "scenario-note",
    content: "A custom note injected by the scenario.",
    display: true,
    details: { source: "sdk-scenario" },
  });
  session.sessionManager.appendCustomEntry("scenario-state", { counter: 1, nested: { ok: true } });
  faux.appendResponses([reply("turn8-custom", "Noted the custom message.")]);
  await session.prompt("Did you see the note?");

  session.setSessionName("Scenario session");
  step("sessionName", { name: session.sessionName });
  snapshot("session1-end", session);
  const file1 = session.sessionFile;
  step("session1-manager", inspectManager(session.sessionManager));
  session.dispose();

  // ---- session 2: resume with SessionManager.open (model restored from the file) -----------
  phase = "open";
  const smOpen = SessionManager.open(file1);
  const opened = await createAgentSession({ ...baseOptions, sessionManager: smOpen });
  step("open-restored", {
    model: opened.session.model ? `${opened.session.model.provider}/${opened.session.model.id}` : null,
    thinkingLevel: opened.session.thinkingLevel,
    fallback: opened.modelFallbackMessage ?? null,
  });
  faux.appendResponses([reply("resume-open", "Resumed via open.")]);
  await opened.session.prompt("Resumed with open");
  snapshot("open-end", opened.session);
  opened.session.dispose();

  // ---- session 3: continueRecent picks the most recent file ---------------------------------
  phase = "continueRecent";
  const smRecent = SessionManager.continueRecent(projectDir, sessionDir);
  const recent = await createAgentSession({ ...baseOptions, sessionManager: smRecent });
  step("continueRecent", {
    sameFile: recent.session.sessionFile === file1,
    sessionName: recent.session.sessionName ?? null,
  });
  faux.appendResponses([reply("resume-recent", "Resumed via continueRecent.")]);
  await recent.session.prompt("Resumed with continueRecent");
  snapshot("continueRecent-end", recent.session);
  recent.session.dispose();

  // ---- session 4: fork into a new file --------------------------------------------------------
  phase = "fork";
  const smFork = SessionManager.forkFrom(file1, projectDir, sessionDir);
  const forked = await createAgentSession({ ...baseOptions, sessionManager: smFork });
  faux.appendResponses([reply("fork", "Hello from the fork.")]);
  await forked.session.prompt("Hello fork");
  snapshot("fork-end", forked.session);
  forked.session.dispose();

  // ---- AgentSessionRuntime: fork (createBranchedSession), newSession, switchSession ----------
  phase = "runtime";
  const services = { cwd: projectDir, agentDir, modelRuntime };
  /** @type {import("@earendil-works/pi-coding-agent").CreateAgentSessionRuntimeFactory} */
  const createRuntime = async ({ cwd, sessionManager, sessionStartEvent }) => ({
    ...(await createAgentSession({ ...baseOptions, cwd, sessionManager, sessionStartEvent })),
    // @ts-expect-error the runtime of this scenario reads only cwd, agentDir and modelRuntime of its services
    services,
    diagnostics: [],
  });
  const runtime = await pi.createAgentSessionRuntime(createRuntime, {
    cwd: projectDir,
    agentDir,
    sessionManager: SessionManager.open(file1),
  });
  const branchUsers = runtime.session.sessionManager
    .getBranch()
    .filter((e) => e.type === "message" && e.message.role === "user");
  const forkTarget = branchUsers[branchUsers.length - 1]; // "Resumed with continueRecent"
  const forkResult = await runtime.fork(forkTarget.id);
  step("runtime-fork", {
    cancelled: forkResult.cancelled,
    selectedText: forkResult.selectedText ?? null,
    newFile: runtime.session.sessionFile !== file1,
  });
  faux.appendResponses([reply("runtime-fork", "Answer inside the runtime fork.")]);
  await runtime.session.prompt("Prompt after runtime fork");
  snapshot("runtime-fork-end", runtime.session);

  await runtime.newSession();
  faux.appendResponses([reply("runtime-new", "Answer in a brand new session.")]);
  await runtime.session.prompt("Prompt in a new session");
  snapshot("runtime-new-end", runtime.session);

  await runtime.switchSession(file1);
  step("runtime-switch", {
    sameFile: runtime.session.sessionFile === file1,
    leaf: runtime.session.sessionManager.getLeafId(),
  });
  faux.appendResponses([reply("runtime-switch", "Back in the first session.")]);
  await runtime.session.prompt("Prompt after switching back");
  snapshot("runtime-switch-end", runtime.session);
  await runtime.dispose();

  // ---- listing ------------------------------------------------------------------------------
  const list = (await SessionManager.list(projectDir, sessionDir)).map((info) => plain(info));

  // ---- report -------------------------------------------------------------------------------
  const files = readdirSync(sessionDir)
    .filter((f) => f.endsWith(".jsonl"))
    .sort()
    .map((f) => join(sessionDir, f));
  // order files by creation: the first session first, then the fork
  files.sort((a, b) => (a === file1 ? -1 : b === file1 ? 1 : a.localeCompare(b)));
  const fileLines = files.map((f) => ({ path: f, lines: readLines(f) }));

  const norm = new Normalizer([root]);
  for (const f of fileLines) norm.registerEntries(f.lines);
  const pendingAtEnd = faux.getPendingResponseCount();
  list.sort((a, b) => String(a.path).localeCompare(String(b.path)));
  return {
    impl: source,
    hooked: hooked ?? false,
    node: process.version,
    root,
    rawFiles: files,
    files: fileLines.map((f) => ({ path: norm.value(f.path), lines: norm.value(f.lines) })),
    steps: norm.value(steps),
    snapshots: norm.value(snapshots),
    contexts: norm.value(received),
    list: norm.value(list),
    faux: { callCount: faux.state.callCount, pendingAtEnd },
  };
}

async function main() {
  const args = parseArgs(process.argv.slice(2));
  const report = args.inspect ? await runInspect(args) : await runScenario(args);
  const json = `${JSON.stringify(report, null, 2)}\n`;
  if (args.out) writeFileSync(args.out, json);
  // stdout is asynchronous on pipes: exit only once the report is flushed
  else await new Promise((done) => process.stdout.write(json, done));
}

// exit explicitly: pi may leave timers (cache warming, refreshes) running
main().then(
  () => process.exit(0),
  (error) => {
    console.error(`[sdk-scenario] ${error?.stack ?? error}`);
    process.exit(1);
  },
);
