// The HTTP client of `ctxstore serve` (docs/service.md, docs/openapi.yaml) that the Pi extension
// (integrations/pi) and the OpenClaw plugin (integrations/openclaw) share: requests, the error
// answers, and one method per route they use. Each plugin imports it by relative path with its
// .ts extension; the harness loads TypeScript without a build step (docs/pi.md, docs/openclaw.md).

import { execFileSync } from "node:child_process";
import type {
  CloseResponse,
  ContextResponse,
  ForkRequest,
  ForkResponse,
  ObjectResponse,
  ObserveRequest,
  ObserveResponse,
  OpenRequest,
  OpenResponse,
  SessionInfo,
  ToolDefinition,
  ToolRequest,
  ToolResponse,
  ToolsResponse,
} from "./api.ts";

/**
 * An error answer of the service ({code, message} with its HTTP status), or a request that got
 * none: status 0 with code "unreachable" (no connection, a timeout), or "bad_response" (a body
 * that is not JSON).
 */
export class ServiceError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

/** Whether err is a service error answer with this code. */
export function isCode(err: unknown, code: string): boolean {
  return err instanceof ServiceError && err.code === code;
}

export interface ClientOptions {
  /** The service's URL; default CTXSTORE_SERVICE_URL, else http://127.0.0.1:7411. */
  baseUrl?: string;
  /** A bearer token, when the server has tokens; default CTXSTORE_TOKEN. */
  token?: string;
  /** Per request; default CTXSTORE_TIMEOUT_MS, else 30000. */
  timeoutMs?: number;
}

const path = (s: string) => encodeURIComponent(s);

export class Client {
  readonly base: string;
  readonly token: string;
  readonly timeoutMs: number;

  constructor(o: ClientOptions = {}) {
    this.base = (o.baseUrl || process.env.CTXSTORE_SERVICE_URL || "http://127.0.0.1:7411").replace(/\/+$/, "");
    this.token = o.token || process.env.CTXSTORE_TOKEN || "";
    this.timeoutMs = o.timeoutMs ?? Number(process.env.CTXSTORE_TIMEOUT_MS || 30000);
  }

  /** Sends a request; a string body is sent as it is (already JSON). Throws ServiceError. */
  async request<T>(method: string, route: string, body?: unknown): Promise<T> {
    const headers: Record<string, string> = { "content-type": "application/json" };
    if (this.token) headers.authorization = `Bearer ${this.token}`;
    let res: Response;
    try {
      res = await fetch(this.base + route, {
        method,
        headers,
        body: body === undefined ? undefined : typeof body === "string" ? body : JSON.stringify(body),
        signal: AbortSignal.timeout(this.timeoutMs),
      });
    } catch (err: any) {
      throw new ServiceError(0, "unreachable", `ctxstore at ${this.base} is unreachable: ${err?.cause?.code ?? err?.message ?? err}`);
    }
    const text = await res.text();
    let json: any;
    try {
      json = JSON.parse(text);
    } catch {
      throw new ServiceError(res.status, "bad_response", `ctxstore answered ${res.status} with a body that is not JSON`);
    }
    if (!res.ok) throw new ServiceError(res.status, json?.code ?? "error", json?.message ?? text);
    return json as T;
  }

  /** GET /v1/tools: ctxstore's tools, the only source of their names. */
  async tools(): Promise<ToolDefinition[]> {
    return (await this.request<ToolsResponse>("GET", "/v1/tools")).tools;
  }

  /**
   * GET /v1/tools, synchronously (a child Node process makes the request): for a harness whose
   * plugin registration cannot wait (OpenClaw's register). Throws an Error when it fails.
   */
  toolsSync(): ToolDefinition[] {
    const script =
      "const r=await fetch(process.argv[1]+'/v1/tools',{headers:process.argv[2]?{authorization:'Bearer '+process.argv[2]}:{}," +
      `signal:AbortSignal.timeout(${this.timeoutMs})});` +
      "if(!r.ok)throw new Error('GET /v1/tools: '+r.status);process.stdout.write(await r.text())";
    const out = execFileSync(process.execPath, ["--input-type=module", "-e", script, this.base, this.token], {
      encoding: "utf8",
      stdio: ["ignore", "pipe", "pipe"],
      timeout: this.timeoutMs + 5000,
    });
    return (JSON.parse(out) as ToolsResponse).tools;
  }

  /** PUT /v1/sessions/{sid}: opens the session, creating or resuming it. */
  open(sid: string, req: OpenRequest): Promise<OpenResponse> {
    return this.request<OpenResponse>("PUT", `/v1/sessions/${path(sid)}`, req);
  }

  /** GET /v1/sessions/{sid}. */
  session(sid: string): Promise<SessionInfo> {
    return this.request<SessionInfo>("GET", `/v1/sessions/${path(sid)}`);
  }

  /** POST /v1/sessions/{sid}/context with a body Deltas wrote (deltas.ts). */
  context(sid: string, body: string): Promise<ContextResponse> {
    return this.request<ContextResponse>("POST", `/v1/sessions/${path(sid)}/context`, body);
  }

  /** POST /v1/sessions/{sid}/tools/{tool}: runs one of ctxstore's tools. */
  tool(sid: string, tool: string, req: ToolRequest): Promise<ToolResponse> {
    return this.request<ToolResponse>("POST", `/v1/sessions/${path(sid)}/tools/${path(tool)}`, req);
  }

  /** POST /v1/sessions/{sid}/observe: a tool the harness ran. */
  observe(sid: string, req: ObserveRequest): Promise<ObserveResponse> {
    return this.request<ObserveResponse>("POST", `/v1/sessions/${path(sid)}/observe`, req);
  }

  /** POST /v1/sessions/{sid}/close: writes the turn in progress and forgets the session. */
  close(sid: string): Promise<CloseResponse> {
    return this.request<CloseResponse>("POST", `/v1/sessions/${path(sid)}/close`);
  }

  /** GET /v1/objects/{id}. */
  object(id: string): Promise<ObjectResponse> {
    return this.request<ObjectResponse>("GET", `/v1/objects/${path(id)}`);
  }

  /** POST /v1/commits/{ctx}/fork: a new session whose first commit continues commit ctx. */
  fork(commit: string, req: ForkRequest): Promise<ForkResponse> {
    return this.request<ForkResponse>("POST", `/v1/commits/${path(commit)}/fork`, req);
  }
}

/**
 * Runs call on a session that open opens (once; open is the caller's, memoized or not), and
 * when the service answers session_not_open (it restarted, or another server took the session
 * over) opens it again (open(true)) and retries once.
 */
export async function reopening<T>(open: (again: boolean) => Promise<unknown>, call: () => Promise<T>): Promise<T> {
  await open(false);
  try {
    return await call();
  } catch (err) {
    if (!isCode(err, "session_not_open")) throw err;
    await open(true);
    return await call();
  }
}
