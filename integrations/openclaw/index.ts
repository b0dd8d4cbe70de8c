// ctxstore's OpenClaw plugin: a context engine ("ctxstore") over `ctxstore serve`
// (docs/service.md). Install: `openclaw plugins install -l /path/to/ctxstore/integrations/openclaw
// --force --accept-capabilities`, then select it with plugins.slots.contextEngine = "ctxstore"
// (docs/openclaw.md). Written against OpenClaw 2026.9.6; TypeScript, no build step.
//
// The engine stays thin, as the Pi extension does (integrations/pi/index.ts): OpenClaw's messages
// are pi-agent-core AgentMessages, the shape Pi sends, so they go through the one Pi converter of
// the service (context/harness/pi); the session is opened with harness "openclaw".
//
//   assemble     PUT /v1/sessions/{sid} once per process (cwd: the workspace; no system prompt:
//                the session's prompt is then ctxstore's guide alone), then POST
//                /v1/sessions/{sid}/context with the history OpenClaw hands over; the answer's
//                messages are the context, its system_prompt (fixed for the session, so
//                cache-stable) the systemPromptAddition. The service's ingestion cursor takes only
//                the messages it has not seen. A later assemble of the same run is handed the
//                previous answer; the log it was made from is sent instead.
//   ingest       acknowledged: the next assemble sends the log, and the cursor ingests it.
//   commitTurn   answers "committed", or "duplicate" for an advancementKey seen before in this
//                process; it writes nothing: the transcript is OpenClaw's durable record, and the
//                next turn's assemble ingests the turn from it (docs/openclaw.md says why).
//   compact      declined (ownsCompaction: ctxstore collapses and rebases the context itself).
//   tools        activate, deactivate, pin, unpin, search, query_session from GET /v1/tools,
//                run through POST /v1/sessions/{sid}/tools/{tool}. ctxstore's read is not
//                registered: OpenClaw's own read keeps its name, and its output is ingested from
//                the log as any tool output.
//
// If the service is unreachable, assemble throws: OpenClaw quarantines the engine for the process
// and runs its legacy engine (its documented failure isolation). The plugin logs it once.
//
// Configuration: plugins.entries.ctxstore.config.serviceUrl / .token, else CTXSTORE_SERVICE_URL
// (default http://127.0.0.1:7411) and CTXSTORE_TOKEN; CTXSTORE_TIMEOUT_MS per request (30000).

import { execFileSync } from "node:child_process";

/** The tools registered from the service's definitions (openclaw.plugin.json names them too). */
const TOOLS = ["activate", "deactivate", "pin", "unpin", "search", "query_session"];

interface ToolDefinition {
  name: string;
  description: string;
  parameters: Record<string, unknown>;
}

interface ContextResponse {
  messages?: any[];
  keep: number;
  system_prompt: string;
  call: number;
  commit_id: string;
  tokens: number;
}

interface ToolResponse {
  ok: boolean;
  message: string;
  id?: string;
  content?: string;
}

class ServiceError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

export default function register(api: any) {
  const cfg = (api.pluginConfig ?? {}) as { serviceUrl?: string; token?: string };
  const BASE = (cfg.serviceUrl || process.env.CTXSTORE_SERVICE_URL || "http://127.0.0.1:7411").replace(/\/+$/, "");
  const TOKEN = cfg.token || process.env.CTXSTORE_TOKEN || "";
  const TIMEOUT_MS = Number(process.env.CTXSTORE_TIMEOUT_MS || 30000);
  const log = api.logger ?? { info: console.error, warn: console.error, error: console.error };

  let warned = false; // said once that the service is down
  const failed = (err: unknown) => {
    if (warned) return;
    warned = true;
    log.warn(`[ctxstore] ${(err as Error)?.message ?? err}; OpenClaw uses its legacy context engine for this run`);
  };

  async function request<T>(method: string, path: string, body?: unknown): Promise<T> {
    const headers: Record<string, string> = { "content-type": "application/json" };
    if (TOKEN) headers.authorization = `Bearer ${TOKEN}`;
    let res: Response;
    try {
      res = await fetch(BASE + path, {
        method,
        headers,
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: AbortSignal.timeout(TIMEOUT_MS),
      });
    } catch (err: any) {
      throw new ServiceError(0, "unreachable", `ctxstore at ${BASE} is unreachable: ${err?.cause?.code ?? err?.message ?? err}`);
    }
    const text = await res.text();
    let json: any;
    try {
      json = JSON.parse(text);
    } catch {
      throw new ServiceError(res.status, "bad_response", `ctxstore answered ${res.status} with a body that is not JSON`);
    }
    if (!res.ok) throw new ServiceError(res.status, json.code ?? "error", json.message ?? text);
    return json as T;
  }

  // Sessions opened by this process, and the log last sent for each (commitTurn extends it).
  const opened = new Map<string, Promise<unknown>>();
  const last = new Map<string, { log: any[]; answer: any[]; answerJSON: string[] }>();
  const committed = new Set<string>();
  let cwd = process.cwd();

  const open = (sid: string) => {
    let p = opened.get(sid);
    if (!p) {
      p = request("PUT", `/v1/sessions/${encodeURIComponent(sid)}`, { cwd, system_prompt: "", harness: "openclaw" });
      p.catch(() => opened.delete(sid));
      opened.set(sid, p);
    }
    return p;
  };

  const session = async <T>(sid: string, path: string, body: unknown): Promise<T> => {
    await open(sid);
    try {
      return await request<T>("POST", `/v1/sessions/${encodeURIComponent(sid)}${path}`, body);
    } catch (err) {
      if (!(err instanceof ServiceError) || err.code !== "session_not_open") throw err;
      opened.delete(sid); // the server restarted: reopen once
      await open(sid);
      return await request<T>("POST", `/v1/sessions/${encodeURIComponent(sid)}${path}`, body);
    }
  };

  /**
   * One context call with the whole log (the service's cursor takes what is new). OpenClaw hands
   * a later assemble of the same run the messages the previous one answered (its agent state
   * holds them); those are replaced by the log that answer was made from, so the service sees
   * the transcript, never its own output.
   */
  const context = async (sid: string, given: any[]) => {
    let messages = given;
    const prev = last.get(sid);
    if (prev && given.length >= prev.answer.length) {
      const head = given.slice(0, prev.answer.length).map((m) => JSON.stringify(m));
      if (head.every((j, i) => j === prev.answerJSON[i])) messages = prev.log.concat(given.slice(prev.answer.length));
    }
    const r = await session<ContextResponse>(sid, "/context", { messages });
    const answer = r.messages ?? [];
    last.set(sid, { log: messages, answer, answerJSON: answer.map((m) => JSON.stringify(m)) });
    warned = false;
    return r;
  };

  api.registerContextEngine("ctxstore", (ctx: any) => {
    if (ctx?.workspaceDir) cwd = ctx.workspaceDir;
    return {
      info: {
        id: "ctxstore",
        name: "ctxstore",
        ownsCompaction: true,
        transcriptSemantics: {
          currentTurnFence: "before-current-turn-entry-v1",
          turnAdvancementIdempotency: "atomic-idempotent-v1",
        },
      },

      async ingest() {
        return { ingested: true };
      },

      async assemble(p: { sessionId: string; messages: any[] }) {
        try {
          const r = await context(p.sessionId, p.messages ?? []);
          return {
            messages: r.messages ?? [],
            estimatedTokens: r.tokens ?? 0,
            systemPromptAddition: r.system_prompt,
          };
        } catch (err) {
          failed(err);
          throw err; // OpenClaw falls back to its legacy engine (failure isolation)
        }
      },

      async commitTurn(p: { advancementKey: string; sessionId: string; messages: any[] }) {
        if (committed.has(p.advancementKey)) return { status: "duplicate" };
        committed.add(p.advancementKey);
        return { status: "committed" };
      },

      async compact() {
        return { ok: true, compacted: false, reason: "ctxstore bounds the context itself (collapse, rebase)" };
      },

      async afterTurn() {},
    };
  });

  // ctxstore's tool definitions are the service's (GET /v1/tools). register is synchronous, so
  // they are read with one short child process; if the service is unreachable, no tool is
  // registered (OpenClaw keeps its own tools).
  let defs: ToolDefinition[] = [];
  try {
    const script =
      "const r=await fetch(process.argv[1]+'/v1/tools',{headers:process.argv[2]?{authorization:'Bearer '+process.argv[2]}:{},signal:AbortSignal.timeout(" +
      TIMEOUT_MS +
      ")});if(!r.ok)throw new Error('GET /v1/tools: '+r.status);process.stdout.write(await r.text())";
    const out = execFileSync(process.execPath, ["--input-type=module", "-e", script, BASE, TOKEN], {
      encoding: "utf8",
      stdio: ["ignore", "pipe", "pipe"],
      timeout: TIMEOUT_MS + 5000,
    });
    defs = (JSON.parse(out).tools as ToolDefinition[]).filter((d) => TOOLS.includes(d.name));
  } catch (err) {
    log.warn(`[ctxstore] reading ctxstore's tools from ${BASE}: ${(err as Error).message?.split("\n")[0]}; they are not registered`);
  }
  for (const def of defs) {
    api.registerTool(
      (tc: any) => ({
        name: def.name,
        label: `${def.name} (ctxstore)`,
        description: def.description,
        parameters: def.parameters,
        async execute(toolCallId: string, params: any) {
          const sid = tc?.sessionId;
          if (!sid) throw new Error(`${def.name}: no OpenClaw session id for this run`);
          const r = await session<ToolResponse>(sid, `/tools/${def.name}`, { tool_call_id: toolCallId, args: { ...params } });
          if (!r.ok) throw new Error(r.message);
          return { content: [{ type: "text", text: r.message }], details: { ctxstore: { id: r.id ?? null } } };
        },
      }),
      { name: def.name },
    );
  }
}
