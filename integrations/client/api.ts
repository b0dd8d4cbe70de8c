// The bodies of ctxstore's HTTP API that the integrations send and read (docs/openapi.yaml).
// They are written by hand and compared with the types generated from the OpenAPI document
// by `make typecheck` (openapi-check.ts): a field added, removed or retyped on one side fails it.
//
// Harness messages (Pi's, OpenClaw's) are opaque here: the service converts them
// (harness/pi), and the integrations pass them through.

/** A message of the harness's log, or of the context the service answers, as JSON. */
export type Message = any;

/** An error answer: a stable code and a message for people. */
export interface ErrorBody {
  code:
    | "bad_request"
    | "unauthorized"
    | "forbidden"
    | "not_found"
    | "method_not_allowed"
    | "session_not_open"
    | "conflict"
    | "locked"
    | "log_mismatch"
    | "too_large"
    | "unsupported_media_type"
    | "unavailable"
    | "internal";
  message: string;
}

/** What a tool is to a harness (GET /v1/tools). */
export type ToolRole = "read" | "manage" | "recall";

/** One of ctxstore's tools as GET /v1/tools defines it (context/tools: defined once, in Go). */
export interface ToolDefinition {
  name: string;
  description: string;
  parameters: { [key: string]: unknown }; // a JSON Schema object
  /**
   * read stands in for the harness's own read; manage tools manage the context (a bare head
   * never offers them); recall tools search what ctxstore has seen.
   */
  role: ToolRole;
}

export interface ToolsResponse {
  tools: ToolDefinition[];
}

/** A tool of the harness, as the session's head lists it. */
export interface ToolSpec {
  name: string;
  description?: string;
  parameters?: { [key: string]: unknown };
}

/** PUT /v1/sessions/{sid}. */
export interface OpenRequest {
  cwd: string;
  system_prompt?: string;
  harness?: string;
  tools?: ToolSpec[];
  roots?: string[];
  lean_head?: boolean;
  bare_head?: boolean;
  provenance?: {
    template?: string;
    principal?: string;
    machine?: string;
    harness?: string;
    ticket?: string;
    thread?: string;
  };
}

export interface OpenResponse {
  session_id: string;
  state: "created" | "resumed" | "open";
  system_prompt: string;
  turn: number;
  calls: number;
  /** A bare head's spill directory; absent for other heads. */
  spill?: string;
}

export interface CloseResponse {
  session_id: string;
  closed: boolean;
}

/** GET /v1/sessions/{sid}. */
export interface SessionInfo {
  session_id: string;
  open: boolean;
  harness?: string;
  turn: number;
  tx: number;
  calls: number;
  system_prompt: string;
  index: string[];
  pool: string[];
  active: string[];
  pinned: string[];
}

/** A harness event recorded with the next context commit (docs/service.md, "Harness events"). */
export type HarnessEvent = { type: string } & { [key: string]: unknown };

/**
 * POST /v1/sessions/{sid}/context with the harness's messages. Deltas (deltas.ts) writes this
 * body itself, so that the messages the service already holds are never serialized again.
 */
export interface ContextRequest {
  messages?: Message[];
  base?: number;
  base_sha256?: string;
  have_call?: number;
  log?: Message[];
  events?: HarnessEvent[];
  cache_renewed_at?: string;
}

export interface IngestReport {
  applied: number;
  cursor: number;
  reset?: boolean;
  reset_at?: number;
  known?: number;
  skipped?: { [key: string]: number };
  problems?: string[];
  deactivated?: string[];
}

export interface Converted {
  unknown?: { [key: string]: number };
  skipped?: { [key: string]: number };
  aborted?: number;
  images?: number;
  problems?: { line: number; msg: string }[];
}

export interface ContextResponse {
  /** The messages after the first `keep` of the answer to call have_call. */
  messages?: Message[];
  keep: number;
  assembled?: Message[];
  system_prompt: string;
  withheld_tools?: string[];
  head_changed?: boolean;
  head_ttl_seconds?: number;
  call: number;
  commit_id: string;
  rebased: boolean;
  rebase_reason?: string;
  rebase_offset: number;
  stable: number;
  bytes: number;
  tokens: number;
  stale_tokens: number;
  head_tokens: number;
  ingested: IngestReport;
  converted?: Converted;
}

/** POST /v1/sessions/{sid}/tools/{tool}. */
export interface ToolRequest {
  tool_call_id?: string;
  args: {
    [key: string]: unknown;
    path?: string;
    id?: string;
    query?: string;
    session?: string;
    question?: string;
  };
}

export interface ToolResponse {
  tool: string;
  tool_call_id?: string;
  ok: boolean;
  message: string;
  id?: string;
  metadata?: string;
  content?: string;
  files?: string[];
  tx: number;
}

/** POST /v1/sessions/{sid}/observe: a tool the harness ran. */
export interface ObserveRequest {
  tool_call_id: string;
  tool: string;
  args?: { [key: string]: unknown };
  output?: string;
  content?: { [key: string]: unknown }[];
  is_error?: boolean;
}

export interface ObserveResponse {
  tool_call_id: string;
  metadata: string;
  files?: string[];
  tx: number;
}

/** GET /v1/objects/{id}. */
export interface ObjectResponse {
  id: string;
  doc: { [key: string]: unknown };
  tx_id: number;
  tx_time: string;
  valid_time: string;
  content_hash: string;
}

/** POST /v1/commits/{ctx}/fork. */
export interface ForkRequest {
  session?: string;
  format?: string;
  stop?: string;
  template?: string;
  principal?: string;
  machine?: string;
  ticket?: string;
  thread?: string;
  harness?: string;
}

/** The answer to a fork; of the commit and what it materializes, the integrations read the id. */
export interface ForkResponse {
  session: string;
  commit: { id: string; [key: string]: unknown };
  materialized: { [key: string]: unknown };
}
