// A scripted OpenAI-compatible chat-completions server on 127.0.0.1 for tests and benchmarks
// that run the real `pi` bin (pi 1.6.0 talks to it as a custom provider with
// `api: "openai-completions"`; it only sends streaming requests).
//
//   const server = await startModelServer({ respond });   // respond(body, index) -> reply
//   writeAgentConfig(agentDir, server.baseUrl);           // models.json + settings.json
//   ... run pi ...
//   server.requests                                        // every request body, parsed
//   await server.close();
//
// A reply is `{ text }`, `{ toolCalls: [{ name, arguments }] }` or both. The default
// responder answers "ok: <last user text>" and never calls a tool, so runs are deterministic.
// The server stops itself after `maxRequests` requests or `lifetimeMs` (bounded test traffic).
import { mkdirSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import { join } from "node:path";

export const PROVIDER = "scripted";
export const MODEL = "scripted-1";
export const API_KEY = "test-key";

/** The usage of a scripted answer, a fresh object each call (for sessions tests make themselves). */
export function scriptedUsage() {
  return {
    input: 1,
    output: 1,
    cacheRead: 0,
    cacheWrite: 0,
    totalTokens: 2,
    cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 },
  };
}

/**
 * An assistant message as the scripted model answers it (for sessions tests make themselves).
 * @param {unknown[]} content
 * @param {{ stopReason?: string, timestamp?: number }} [options]
 */
export function scriptedAssistant(content, { stopReason = "stop", timestamp = 1 } = {}) {
  return {
    role: "assistant",
    content,
    api: "openai-completions",
    provider: PROVIDER,
    model: MODEL,
    usage: scriptedUsage(),
    stopReason,
    timestamp,
  };
}

/** Text of the last user message of a chat-completions request body. */
export function lastUserText(body) {
  const msgs = Array.isArray(body?.messages) ? body.messages : [];
  for (let i = msgs.length - 1; i >= 0; i--) {
    if (msgs[i]?.role !== "user") continue;
    const c = msgs[i].content;
    if (typeof c === "string") return c;
    if (Array.isArray(c))
      return c
        .filter((p) => p?.type === "text")
        .map((p) => p.text)
        .join("\n");
    return "";
  }
  return "";
}

export const defaultRespond = (body) => ({ text: `ok: ${lastUserText(body)}` });

function sse(res, obj) {
  res.write(`data: ${JSON.stringify(obj)}\n\n`);
}

function streamReply(res, reply, index, model) {
  const id = `chatcmpl-${index}`;
  const base = { id, object: "chat.completion.chunk", created: 1_700_000_000, model };
  res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache", connection: "keep-alive" });
  sse(res, { ...base, choices: [{ index: 0, delta: { role: "assistant", content: "" }, finish_reason: null }] });
  if (reply.text) {
    // Two chunks, so the client's delta accumulation is exercised.
    const t = String(reply.text);
    const cut = Math.ceil(t.length / 2);
    for (const part of [t.slice(0, cut), t.slice(cut)]) {
      if (part) sse(res, { ...base, choices: [{ index: 0, delta: { content: part }, finish_reason: null }] });
    }
  }
  const calls = reply.toolCalls ?? [];
  calls.forEach((call, i) => {
    sse(res, {
      ...base,
      choices: [
        {
          index: 0,
          delta: {
            tool_calls: [
              {
                index: i,
                id: call.id ?? `call_${index}_${i}`,
                type: "function",
                function: { name: call.name, arguments: JSON.stringify(call.arguments ?? {}) },
              },
            ],
          },
          finish_reason: null,
        },
      ],
    });
  });
  sse(res, { ...base, choices: [{ index: 0, delta: {}, finish_reason: calls.length ? "tool_calls" : "stop" }] });
  sse(res, { ...base, choices: [], usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 } });
  res.write("data: [DONE]\n\n");
  res.end();
}

/**
 * Start the server on 127.0.0.1 (port 0 = any free port).
 * @param {{ respond?: (body: any, index: number) => ({text?: string, toolCalls?: {name: string, arguments?: object, id?: string}[]}), port?: number, maxRequests?: number, lifetimeMs?: number }} [options]
 */
export async function startModelServer({
  respond = defaultRespond,
  port = 0,
  maxRequests = 10_000,
  lifetimeMs = 30 * 60_000,
} = {}) {
  const requests = [];
  const server = createServer((req, res) => {
    const chunks = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", () => {
      if (req.method === "GET" && req.url?.endsWith("/models")) {
        res.writeHead(200, { "content-type": "application/json" });
        res.end(JSON.stringify({ object: "list", data: [{ id: MODEL, object: "model" }] }));
        return;
      }
      if (req.method !== "POST" || !req.url?.endsWith("/chat/completions")) {
        res.writeHead(404).end();
        return;
      }
      let body;
      try {
        body = JSON.parse(Buffer.concat(chunks).toString("utf8"));
      } catch {
        res.writeHead(400).end();
        return;
      }
      const index = requests.length;
      requests.push(body);
      if (requests.length > maxRequests) {
        res.writeHead(429).end();
        return;
      }
      let reply;
      try {
        reply = respond(body, index) ?? defaultRespond(body);
      } catch (error) {
        res.writeHead(500, { "content-type": "application/json" });
        res.end(JSON.stringify({ error: { message: String(error?.message ?? error) } }));
        return;
      }
      streamReply(res, reply, index, body.model ?? MODEL);
    });
  });
  await new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, "127.0.0.1", () => resolve(undefined));
  });
  const timer = setTimeout(() => server.close(), lifetimeMs);
  timer.unref();
  const address = /** @type {import("node:net").AddressInfo} */ (server.address());
  const baseUrl = `http://127.0.0.1:${address.port}/v1`;
  return {
    baseUrl,
    port: address.port,
    requests,
    close: () =>
      new Promise((resolve) => {
        clearTimeout(timer);
        server.closeAllConnections?.();
        server.close(() => resolve());
      }),
  };
}

/** Write pi's agent-dir config for the scripted provider: models.json and settings.json. */
export function writeAgentConfig(agentDir, baseUrl, settings = {}) {
  mkdirSync(agentDir, { recursive: true });
  const models = {
    providers: {
      [PROVIDER]: {
        baseUrl,
        api: "openai-completions",
        apiKey: API_KEY,
        models: [{ id: MODEL, name: "Scripted One", contextWindow: 200_000, maxTokens: 8_192 }],
      },
    },
  };
  writeFileSync(join(agentDir, "models.json"), `${JSON.stringify(models, null, 2)}\n`);
  writeFileSync(
    join(agentDir, "settings.json"),
    `${JSON.stringify({ defaultProvider: PROVIDER, defaultModel: MODEL, ...settings }, null, 2)}\n`,
  );
}
