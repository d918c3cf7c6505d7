// Passing pi-session-native's SessionManager where pi's SDK expects its own.
//
// pi's SessionManager class declares private fields, so TypeScript compares it nominally and a
// structurally identical class is rejected without an assertion. The assertion needed is a
// plain `as` (no `unknown` detour): it is accepted because the two public surfaces are
// compatible, which the checks at the bottom of this file pin in both directions.
import { createAgentSession, type SessionManager as PiSessionManager } from "@earendil-works/pi-coding-agent";
import { SessionManager } from "pi-session-native";

const sm = SessionManager.inMemory();

// What a TS user writes:
const result = createAgentSession({ sessionManager: sm as PiSessionManager });
void result;

// Read-only views (Pick of public members) carry no private fields: no assertion needed.
type PiReadonlyView = Pick<
  PiSessionManager,
  "getCwd" | "getSessionId" | "getEntries" | "getTree" | "buildSessionProjection"
>;
const ro: PiReadonlyView = sm;
void ro;

// Without the assertion TypeScript rejects it (private fields make pi's class nominal).
// @ts-expect-error Types have separate declarations of a private property
createAgentSession({ sessionManager: sm });

// ---- public-surface compatibility, both directions ------------------------------------------
// `keyof` skips private members, so Public<T> is the structural public face of a class.
type Public<T> = { [K in keyof T]: T[K] };
const ourAsPi: Public<PiSessionManager> = sm;
declare const piSm: PiSessionManager;
const piAsOur: Public<SessionManager> = piSm;
// Statics: every static of pi's class exists on ours, and vice versa.
type PiStatics = typeof import("@earendil-works/pi-coding-agent").SessionManager;
type OurStatics = typeof SessionManager;
const noMissingStatics: [Exclude<keyof PiStatics, keyof OurStatics>] extends [never] ? true : false = true;
const noExtraStatics: [Exclude<keyof OurStatics, keyof PiStatics>] extends [never] ? true : false = true;
// Same parameter lists for the single-signature statics.
type Args<F> = F extends (...args: infer A) => unknown ? A : never;
type Params<K extends keyof PiStatics & keyof OurStatics> = [
  Args<PiStatics[K]> extends Args<OurStatics[K]> ? true : false,
  Args<OurStatics[K]> extends Args<PiStatics[K]> ? true : false,
];
const sameParams: [
  Params<"create">,
  Params<"open">,
  Params<"continueRecent">,
  Params<"inMemory">,
  Params<"forkFrom">,
  Params<"findById">,
  Params<"list">,
] = [
  [true, true],
  [true, true],
  [true, true],
  [true, true],
  [true, true],
  [true, true],
  [true, true],
];
void ourAsPi;
void piAsOur;
void noMissingStatics;
void noExtraStatics;
void sameParams;

// ---- data types: ours and pi's are mutually assignable -------------------------------------------
import type * as Pi from "@earendil-works/pi-coding-agent";
import type * as PiAi from "@earendil-works/pi-ai";
import type * as PiCore from "@earendil-works/pi-agent-core";
import type * as Ours from "pi-session-native";

type Mutual<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
const mutual: [
  Mutual<Ours.SessionEntry, Pi.SessionEntry>,
  Mutual<Ours.FileEntry, Pi.FileEntry>,
  Mutual<Ours.SessionHeader, Pi.SessionHeader>,
  Mutual<Ours.SessionContext, Pi.SessionContext>,
  Mutual<Ours.SessionInfo, Pi.SessionInfo>,
  Mutual<Ours.AgentMessage, PiCore.AgentMessage>,
  Mutual<Ours.Message, PiAi.Message>,
  Mutual<Ours.UserMessage, PiAi.UserMessage>,
  Mutual<Ours.AssistantMessage, PiAi.AssistantMessage>,
  Mutual<Ours.ToolResultMessage, PiAi.ToolResultMessage>,
  Mutual<Ours.SystemMessage, PiAi.SystemMessage>,
  Mutual<Ours.Usage, PiAi.Usage>,
  Mutual<Ours.TextContent, PiAi.TextContent>,
  Mutual<Ours.ImageContent, PiAi.ImageContent>,
  Mutual<Ours.ThinkingContent, PiAi.ThinkingContent>,
  Mutual<Ours.ToolCall, PiAi.ToolCall>,
  Mutual<Ours.Tool, PiAi.Tool>,
  Mutual<Ours.ToolReference, PiAi.ToolReference>,
] = [true, true, true, true, true, true, true, true, true, true, true, true, true, true, true, true, true, true];
void mutual;

// Guard against a vacuous pass: pi's types must have resolved to real types, not `any`.
type IsAny<T> = 0 extends 1 & T ? true : false;
const notAny: [IsAny<PiAi.Message>, IsAny<PiCore.AgentMessage>, IsAny<Pi.SessionEntry>, IsAny<PiSessionManager>] = [
  false,
  false,
  false,
  false,
];
void notAny;
