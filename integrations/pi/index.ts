// ctxstore's Pi extension: `pi -e integrations/pi/index.ts` (Pi 0.73.1; no build step).
//
// ctxstore decides what the model sees. The extension stays thin: it forwards Pi's events to
// `ctxstore serve` (docs/service.md) and applies the answers.
//
//   before_agent_start   opens the ctxstore session (keyed to Pi's session id) and returns its
//                        system prompt (Pi's own, followed by ctxstore's guide);
//   context              one POST per LLM call with Pi's messages; the answer replaces them;
//   tool_result          the tools Pi runs (bash, edit, write, ls, find, grep, ...) are observed;
//   read                 replaced by ctxstore's read (the file joins the active content);
//   activate, deactivate, pin, unpin (registered from the service's GET /v1/tools at load)
//                        ctxstore's context tools;
//   session_before_compact
//                        cancelled: ctxstore bounds the context (collapses, rebases);
//   session_shutdown     closes the ctxstore session (the turn in progress is written).
//
// If the service is unreachable, the extension says so once and fails open: the context hook
// returns nothing (Pi keeps its own context), read falls back to Pi's own, and compaction is
// left to Pi. Pi's session file is never touched by ctxstore; it keeps the full transcript.
//
// Environment: CTXSTORE_SERVICE_URL (default http://127.0.0.1:7411), CTXSTORE_TOKEN (bearer
// token, when the server has tokens), CTXSTORE_TIMEOUT_MS (per request, default 30000).
// CTXSTORE_SERVICE_URL is not CTXSTORE_URL: that one names the store for the ctxstore CLI.

import type { ExtensionAPI, ExtensionContext } from "@earendil-works/pi-coding-agent";
import { createReadToolDefinition } from "@earendil-works/pi-coding-agent";
import { createHash, type Hash } from "node:crypto";

const BASE = (process.env.CTXSTORE_SERVICE_URL || "http://127.0.0.1:7411").replace(/\/+$/, "");
const TOKEN = process.env.CTXSTORE_TOKEN || "";
const TIMEOUT_MS = Number(process.env.CTXSTORE_TIMEOUT_MS || 30000);

/** The tools this extension answers through ctxstore (their calls are recorded by the service). */
const OWN_TOOLS = new Set<string>();

/** One of ctxstore's tools as GET /v1/tools defines it (context/tools: defined once, in Go). */
interface ToolDefinition {
  name: string;
  description: string;
  parameters: Record<string, unknown>; // a JSON Schema object
}

/** An error answer of the service: {code, message} with its HTTP status. */
class ServiceError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

interface OpenResponse {
  session_id: string;
  state: "created" | "resumed" | "open";
  system_prompt: string;
  calls: number;
}

interface ContextResponse {
  messages?: any[];
  keep: number;
  system_prompt: string;
  call: number;
  rebased: boolean;
}

interface ToolResponse {
  ok: boolean;
  message: string;
  id?: string;
  content?: string;
}

/** Sends a request; a string body is sent as it is (already JSON). */
async function request<T>(method: string, path: string, body?: unknown): Promise<T> {
  const headers: Record<string, string> = { "content-type": "application/json" };
  if (TOKEN) headers.authorization = `Bearer ${TOKEN}`;
  let res: Response;
  try {
    res = await fetch(BASE + path, {
      method,
      headers,
      body: body === undefined ? undefined : typeof body === "string" ? body : JSON.stringify(body),
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

/**
 * What the service holds of this session's log and of its last answer, so that each context
 * call sends only the messages that are new and gets back only the messages that changed
 * (docs/service.md, "deltas"). Pi hands the whole log to every context event; sending it whole
 * would make each call's HTTP and JSON cost grow with the session.
 */
class Deltas {
  private jsons: string[] = []; // the log of the last request, each message as sent
  private sums: string[] = []; // sums[i]: SHA-256 of jsons[0..i], each followed by "\n"
  private hash: Hash = createHash("sha256"); // the running hash behind sums
  private held?: { call: number; messages: any[] }; // the last answer, whole

  reset() {
    this.jsons = [];
    this.sums = [];
    this.hash = createHash("sha256");
    this.held = undefined;
  }

  /** The request body for Pi's messages, and the number of them the service already holds. */
  body(messages: any[], full = false): { body: string; jsons: string[]; base: number } {
    const jsons = messages.map((m) => JSON.stringify(m));
    let base = 0;
    if (!full) {
      const n = Math.min(jsons.length, this.jsons.length);
      while (base < n && jsons[base] === this.jsons[base]) base++;
    }
    const head = base > 0 ? `"base":${base},"base_sha256":"${this.sums[base - 1]}",` : "";
    const have = !full && this.held ? `"have_call":${this.held.call},` : "";
    return { body: `{${head}${have}"messages":[${jsons.slice(base).join(",")}]}`, jsons, base };
  }

  /** Records a successful call: the log sent, and the answer made whole. */
  answered(jsons: string[], base: number, r: ContextResponse): any[] {
    if (base < this.jsons.length) {
      this.hash = createHash("sha256");
      this.sums = [];
      for (const j of jsons.slice(0, base)) this.push(j);
    }
    this.jsons = jsons.slice(0, base);
    for (const j of jsons.slice(base)) {
      this.push(j);
      this.jsons.push(j);
    }
    const kept = r.keep > 0 && this.held ? this.held.messages.slice(0, r.keep) : [];
    const messages = kept.concat(r.messages ?? []);
    this.held = { call: r.call, messages };
    return messages;
  }

  private push(json: string) {
    this.hash.update(json + "\n");
    this.sums.push(this.hash.copy().digest("hex"));
  }
}

export default async function ctxstore(pi: ExtensionAPI) {
  let sid = "";
  const deltas = new Deltas();
  let opened: Promise<OpenResponse> | undefined;
  let systemPrompt = "";
  let healthy = false; // the last call to the service succeeded
  let warned = false; // the user has been told the service is down

  const tell = (ctx: ExtensionContext, msg: string, type: "info" | "warning" | "error" = "warning") => {
    if (ctx.hasUI) ctx.ui.notify(msg, type);
    else console.error(`[ctxstore] ${msg}`);
  };
  const ok = (ctx: ExtensionContext) => {
    if (!healthy && warned) tell(ctx, "ctxstore is reachable again; it manages the context", "info");
    healthy = true;
    warned = false;
  };
  const failed = (ctx: ExtensionContext, err: unknown) => {
    healthy = false;
    opened = undefined;
    if (!warned) {
      warned = true;
      tell(ctx, `${(err as Error)?.message ?? err}; Pi keeps its own context until ctxstore answers`);
    }
  };

  /** Opens (or resumes) the ctxstore session of Pi's current session, once. */
  const open = (ctx: ExtensionContext, prompt?: string): Promise<OpenResponse> => {
    const id = ctx.sessionManager.getSessionId();
    if (id !== sid) {
      sid = id;
      opened = undefined;
      deltas.reset();
    }
    if (!opened) {
      const active = new Set(pi.getActiveTools());
      const tools = pi
        .getAllTools()
        .filter((t) => active.has(t.name))
        .map((t) => ({ name: t.name, description: t.description, parameters: t.parameters }));
      opened = request<OpenResponse>("PUT", `/v1/sessions/${encodeURIComponent(sid)}`, {
        cwd: ctx.cwd,
        system_prompt: prompt ?? ctx.getSystemPrompt(),
        harness: "pi",
        tools,
      }).then((r) => {
        systemPrompt = r.system_prompt;
        return r;
      });
      opened.catch(() => (opened = undefined));
    }
    return opened;
  };

  /** Calls a session route, reopening once if the server lost the session (a restart). */
  const session = async <T>(ctx: ExtensionContext, path: string, body: unknown): Promise<T> => {
    await open(ctx);
    try {
      return await request<T>("POST", `/v1/sessions/${encodeURIComponent(sid)}${path}`, body);
    } catch (err) {
      if (!(err instanceof ServiceError) || err.code !== "session_not_open") throw err;
      opened = undefined;
      await open(ctx);
      return await request<T>("POST", `/v1/sessions/${encodeURIComponent(sid)}${path}`, body);
    }
  };

  pi.on("session_start", (_event, ctx) => {
    sid = ctx.sessionManager.getSessionId();
    opened = undefined;
    deltas.reset();
  });

  pi.on("before_agent_start", async (event, ctx) => {
    try {
      await open(ctx, event.systemPrompt);
      ok(ctx);
      return { systemPrompt };
    } catch (err) {
      failed(ctx, err);
      return undefined;
    }
  });

  pi.on("context", async (event, ctx) => {
    try {
      let req = deltas.body(event.messages);
      let r: ContextResponse;
      try {
        r = await session<ContextResponse>(ctx, "/context", req.body);
      } catch (err) {
        // The service lost what it held (a restart, another client): send everything.
        if (!(err instanceof ServiceError) || err.code !== "log_mismatch") throw err;
        deltas.reset();
        req = deltas.body(event.messages, true);
        r = await session<ContextResponse>(ctx, "/context", req.body);
      }
      const messages = deltas.answered(req.jsons, req.base, r);
      ok(ctx);
      return { messages };
    } catch (err) {
      deltas.reset();
      failed(ctx, err);
      return undefined; // fail open: Pi sends its own context
    }
  });

  pi.on("tool_result", async (event, ctx) => {
    if (OWN_TOOLS.has(event.toolName) || !healthy) return undefined;
    try {
      // The result's blocks as Pi gives them: the service's Pi converter makes the text (an
      // image gets the same note as in the context call).
      await session(ctx, "/observe", {
        tool_call_id: event.toolCallId,
        tool: event.toolName,
        args: event.input,
        content: event.content,
        is_error: event.isError,
      });
    } catch (err) {
      failed(ctx, err); // the next context call ingests the result from the log anyway
    }
    return undefined;
  });

  pi.on("session_before_compact", () => (healthy ? { cancel: true } : undefined));

  pi.on("session_shutdown", async (_event, ctx) => {
    if (!sid || !healthy) return;
    try {
      await request("POST", `/v1/sessions/${encodeURIComponent(sid)}/close`);
    } catch (err) {
      tell(ctx, `closing the ctxstore session: ${(err as Error).message}`);
    }
  });

  /** Runs one of ctxstore's tools; a failed tool throws, so Pi reports it as an error. */
  const runTool = async (ctx: ExtensionContext, tool: string, toolCallId: string, args: Record<string, unknown>) => {
    const r = await session<ToolResponse>(ctx, `/tools/${tool}`, { tool_call_id: toolCallId, args });
    ok(ctx);
    if (!r.ok) throw new Error(r.message);
    return r;
  };

  // ctxstore's tools are the service's (GET /v1/tools), read once when Pi loads the extension.
  // If the service is unreachable then, none is registered: Pi keeps its own read, as it keeps
  // its own context (fail open).
  let defs: ToolDefinition[] = [];
  try {
    defs = (await request<{ tools: ToolDefinition[] }>("GET", "/v1/tools")).tools;
  } catch (err) {
    console.error(`[ctxstore] ${(err as Error).message}; ctxstore's tools are not registered`);
  }
  for (const def of defs) {
    OWN_TOOLS.add(def.name);
    pi.registerTool({
      name: def.name,
      label: `${def.name} (ctxstore)`,
      description: def.description,
      parameters: def.parameters as any,
      async execute(toolCallId, params: any, signal, onUpdate, ctx) {
        if (def.name !== "read") {
          const r = await runTool(ctx, def.name, toolCallId, { id: params.id });
          return { content: [{ type: "text", text: r.message }], details: { ctxstore: { id: r.id } } };
        }
        let r: ToolResponse;
        try {
          r = await runTool(ctx, "read", toolCallId, { path: params.path });
        } catch (err) {
          if (!(err instanceof ServiceError)) throw err;
          failed(ctx, err); // fall back to Pi's own read
          return createReadToolDefinition(ctx.cwd).execute(toolCallId, params, signal, onUpdate, ctx);
        }
        const text = r.content === undefined ? r.message : `${r.message}\n\n${r.content}`;
        return { content: [{ type: "text", text }], details: { ctxstore: { id: r.id } } };
      },
    });
  }
}
