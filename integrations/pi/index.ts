// ctxstore's Pi extension: `pi -e /path/to/ctxstore/integrations/pi/index.ts` (Pi, the package
// @earendil-works/pi-coding-agent; tested on 1.6.0; no build step).
//
// ctxstore decides what the model sees. The extension stays thin: it forwards Pi's events to
// `ctxstore serve` (docs/service.md) and applies the answers (docs/pi.md says which Pi events it
// uses and why).
//
// It talks to the service through ctxstore's TypeScript client (../client: the HTTP client, its
// errors and the delta protocol), imported by relative path: Pi loads the extension where it lies
// in the checkout, so the sibling folder is there (docs/pi.md, "Layout and type-checking").
//
//   before_agent_start   opens the ctxstore session (keyed to Pi's session id) with Pi's system
//                        prompt and a head (CTXSTORE_HEAD): bare by default (Pi's prompt and
//                        tools only, for good: an output that collapses or enters as a preview
//                        is read back from its spill file, which the service writes), managed
//                        (Pi's prompt followed by ctxstore's guide, and the management tools),
//                        or lean (managed from the first call whose context needs it);
//   context              one POST per LLM call with Pi's messages (and, once each, Pi's edits of
//                        tool results: context_edit events); the answer replaces them;
//   context_with_system  the request's system prompt is the one the service answered for this
//                        call (Pi's later system messages are folded: their tools are kept);
//   before_provider_request
//                        the tools the service withholds at this call are left out of the
//                        request (withheld_tools: a bare or lean head); and
//                        prompt-cache breakpoints (Anthropic's cache_control) are moved to the
//                        end of the prefix the service says is stable and to the end of its
//                        answer, never left on messages something appends per call; the system
//                        prompt's and the tools' ask for the hour once the session pauses
//                        (head_ttl_seconds); a request Pi sends again (its cache warming: the
//                        same prompt with a one-token cap) gets the same changes, so it reads
//                        the cache entry the first one wrote;
//   cache_warming_decision
//                        while the agent runs, ski rental: warm while this pause's warms cost
//                        no more than the rewrite they would save; while Pi waits for the user,
//                        Pi's own decision (Pi's limits apply in both);
//   after_provider_response
//                        a warm request answered: the next context call says when
//                        (cache_renewed_at), so a warmed pause is not taken for a cold cache;
//                        Pi's context edits (context_edit entries: a result replaced or omitted in
//                        future context) stand in the answer; the tools Pi runs (bash, edit, write,
//                        ls, find, grep, ...) reach the service only in the log, edits applied;
//   read                 replaced by ctxstore's read (the file joins the active content; offset and
//                        limit load lines of it; a spill file loads the output it holds);
//   activate, deactivate, pin, unpin, search, query_session
//                        (registered from the service's GET /v1/tools at load)
//                        ctxstore's context tools;
//   session_before_fork, session_start (reason "fork"), session_tree, session_compact
//                        recorded as harness events with the next context commit (docs/service.md,
//                        "Harness events"), so the commit history knows where a branch came from;
//   session_before_compact
//                        cancelled (ctxstore bounds the context), except on a provider overflow,
//                        which Pi compacts and ctxstore records;
//   session_shutdown     closes the ctxstore session (the turn in progress is written).
//
// If the service is unreachable or fails (a store that is locked, say), the extension says so
// once and fails open: Pi keeps its own context and prompt, read falls back to Pi's own, and
// compaction is left to Pi; when the service answers again it says so once. Pi's session file is
// never touched by ctxstore; it keeps the full transcript.
//
// Environment: CTXSTORE_SERVICE_URL (default http://127.0.0.1:7411), CTXSTORE_TOKEN (bearer
// token, when the server has tokens), CTXSTORE_TIMEOUT_MS (per request, default 30000);
// CTXSTORE_PRINCIPAL, CTXSTORE_TEMPLATE, CTXSTORE_TICKET, CTXSTORE_THREAD: provenance of the
// session's conversation commits (docs/commits.md). CTXSTORE_HEAD=bare|managed|lean: the head of
// new sessions (default bare; docs/pi.md, "The head"; CTXSTORE_LEAN_HEAD=1 is lean).
// CTXSTORE_SERVICE_URL is not CTXSTORE_URL: that one names the store for the ctxstore CLI.

import type { ExtensionAPI, ExtensionContext } from "@earendil-works/pi-coding-agent";
import { createReadToolDefinition, VERSION as PI_VERSION } from "@earendil-works/pi-coding-agent";
import { createHash } from "node:crypto";
import { closeSync, openSync, readSync } from "node:fs";
import { hostname, userInfo } from "node:os";
import { Client, Deltas, reopening, ServiceError } from "../client/index.ts";
import type { HarnessEvent, OpenResponse, ToolDefinition, ToolResponse } from "../client/index.ts";

/** A JSON object as the client's bodies type it (a tool's JSON Schema, a content block). */
type JSONObject = { [key: string]: unknown };

/** The user name, for the principal of conversation commits ("" when unknown). */
function userName(): string {
  try {
    return userInfo().username;
  } catch {
    return "";
  }
}

/** The session id in the header (first line) of a Pi session file, or "" if it cannot be read. */
function sessionIdOf(file: string | undefined): string {
  if (!file) return "";
  try {
    const fd = openSync(file, "r");
    try {
      const buf = Buffer.alloc(4096);
      const n = readSync(fd, buf, 0, buf.length, 0);
      const line = buf.subarray(0, n).toString("utf8").split("\n")[0];
      const header = JSON.parse(line);
      return header?.type === "session" && typeof header.id === "string" ? header.id : "";
    } finally {
      closeSync(fd);
    }
  } catch {
    return "";
  }
}

/**
 * The request's system messages folded into one leading message holding ctxstore's prompt and
 * the tools Pi's system messages declare now (toolsAdded and toolsRemoved replayed in order):
 * the prompt is the service's, the tool set stays Pi's.
 */
function withSystemPrompt(messages: any[], prompt: string): any[] {
  const tools = new Map<string, any>();
  let timestamp: number | undefined;
  const rest: any[] = [];
  for (const m of messages) {
    if (m?.role !== "system") {
      rest.push(m);
      continue;
    }
    timestamp ??= m.timestamp;
    for (const t of m.toolsAdded ?? []) tools.set(t.name, t);
    for (const r of m.toolsRemoved ?? []) tools.delete(typeof r === "string" ? r : r?.name);
  }
  const head: any = { role: "system", content: prompt, timestamp: timestamp ?? 0 };
  if (tools.size > 0) head.toolsAdded = [...tools.values()];
  return [head, ...rest];
}

/** What a block of the provider payload must match, for one block of a Pi message. */
type BlockKey = { type: "text"; text: string } | { type: "tool_use" | "tool_result"; id: string } | { type: "image" };

function keysOf(m: any): BlockKey[] {
  const blocks = typeof m.content === "string" ? [{ type: "text", text: m.content }] : (m.content ?? []);
  if (m.role === "toolResult") return [{ type: "tool_result", id: m.toolCallId }];
  const keys: BlockKey[] = [];
  for (const b of blocks) {
    if (b.type === "text" && b.text) keys.push({ type: "text", text: b.text });
    else if (b.type === "image") keys.push({ type: "image" });
    else if (b.type === "toolCall") keys.push({ type: "tool_use", id: b.id });
  }
  return keys;
}

/** Tool-call ids as pi-ai's Anthropic provider sends them. */
const anthropicId = (id: string) => String(id).replace(/[^a-zA-Z0-9_-]/g, "_").slice(0, 64);

function matches(block: any, key: BlockKey): boolean {
  if (!block || block.type !== key.type) return false;
  switch (key.type) {
    case "text":
      return block.text === key.text;
    case "tool_use":
      return block.id === anthropicId(key.id);
    case "tool_result":
      return block.tool_use_id === anthropicId(key.id);
    default:
      return true;
  }
}

/**
 * Places the prompt-cache breakpoints of an Anthropic Messages payload (cache_control on content
 * blocks) at the end of the first `stable` messages of ctxstore's answer and at the end of the
 * answer, and removes those the provider put on other messages (the last one, which another
 * extension may have appended for this call only). The system prompt's and the tools' breakpoints
 * stay: ctxstore keeps both fixed for the session. Returns undefined (the payload unchanged)
 * when the payload carries no cache_control (another API) or the answer cannot be found in it.
 */
export function placeBreakpoints(payload: any, answer: any[], stable: number): any | undefined {
  const msgs = payload?.messages;
  if (!Array.isArray(msgs) || answer.length === 0) return undefined;
  const flat: { mi: number; bi: number; block: any }[] = [];
  let cc: any;
  for (let mi = 0; mi < msgs.length; mi++) {
    const content = msgs[mi]?.content;
    const blocks = typeof content === "string" ? [{ type: "text", text: content }] : Array.isArray(content) ? content : [];
    for (let bi = 0; bi < blocks.length; bi++) {
      flat.push({ mi, bi, block: blocks[bi] });
      cc ??= blocks[bi]?.cache_control;
    }
  }
  if (!cc && Array.isArray(payload.system)) cc = payload.system.find((b: any) => b?.cache_control)?.cache_control;
  if (!cc) return undefined;
  // The end of each of ctxstore's messages in the payload, matched in order.
  const ends: number[] = [];
  let j = 0;
  for (const m of answer) {
    let end = -1;
    for (const key of keysOf(m)) {
      while (j < flat.length && !matches(flat[j].block, key)) j++;
      if (j === flat.length) return undefined;
      end = j++;
    }
    ends.push(end);
  }
  const at = new Set<number>();
  let last = ends.length - 1;
  while (last >= 0 && ends[last] < 0) last--;
  if (last < 0) return undefined;
  at.add(ends[last]);
  for (let k = Math.min(stable, ends.length) - 1; k >= 0; k--) {
    if (ends[k] >= 0) {
      at.add(ends[k]);
      break;
    }
  }
  for (const { block } of flat) if (block && typeof block === "object") delete block.cache_control;
  for (const i of at) {
    const { mi, bi, block } = flat[i];
    if (typeof msgs[mi].content === "string") msgs[mi].content = [{ ...block, cache_control: cc }];
    else msgs[mi].content[bi].cache_control = cc;
  }
  return payload;
}

/**
 * Asks an Anthropic Messages payload's head breakpoints (the system prompt's and the tools'
 * cache_control) for the hour when the service says so for this call (head_ttl_seconds: the
 * session pauses, so a head that outlives the pause is read after it instead of written again).
 * Anthropic takes "1h" only before the 5-minute breakpoints, and the head comes first; the
 * messages' breakpoints keep theirs. Returns undefined (the payload unchanged) when there is
 * nothing to do: a shorter lifetime, another API, or no head breakpoint.
 */
export function longHead(payload: any, ttlSeconds: number): any | undefined {
  if (!(ttlSeconds >= 3600)) return undefined;
  let changed = false;
  const lift = (blocks: any) => {
    if (!Array.isArray(blocks)) return;
    for (const b of blocks) {
      if (b?.cache_control && b.cache_control.ttl !== "1h") {
        b.cache_control = { ...b.cache_control, ttl: "1h" };
        changed = true;
      }
    }
  };
  lift(payload?.system);
  lift(payload?.tools);
  return changed ? payload : undefined;
}

/**
 * Leaves the tools named in `names` out of a provider payload (a lean head: ctxstore offers its
 * management tools only once the context has something to manage). Tools are found by name in
 * the shapes of the APIs Pi speaks: `tools[].name` (Anthropic, OpenAI Responses),
 * `tools[].function.name` (OpenAI Chat Completions) and `tools[].functionDeclarations[].name`
 * (Google). Returns undefined (the payload unchanged) when nothing is withheld or found.
 */
export function withholdTools(payload: any, names: string[]): any | undefined {
  if (names.length === 0 || !Array.isArray(payload?.tools)) return undefined;
  const out = new Set(names);
  let changed = false;
  const tools: any[] = [];
  for (const t of payload.tools) {
    const name = t?.name ?? t?.function?.name;
    if (typeof name === "string" && out.has(name)) {
      changed = true;
      continue;
    }
    if (Array.isArray(t?.functionDeclarations)) {
      const decls = t.functionDeclarations.filter((d: any) => !out.has(d?.name));
      if (decls.length !== t.functionDeclarations.length) {
        changed = true;
        if (decls.length > 0) tools.push({ ...t, functionDeclarations: decls });
        continue;
      }
    }
    tools.push(t);
  }
  if (!changed) return undefined;
  payload.tools = tools;
  if (tools.length === 0) {
    delete payload.tools;
    delete payload.tool_choice;
  }
  return payload;
}

/**
 * Pi's context edits of tool results on the session's branch (context_edit entries, Pi 0.87 and
 * later: an extension's redaction, or Pi's own omission when it recovers from an overflow), the
 * last per target: the tool call id of the edited result, its original text, and its replacement
 * (the content blocks that take its place) or null (omitted from future context).
 */
export interface ResultEdit {
  /** The id of the context_edit entry (Pi's session file). */
  entryId: string;
  original: string;
  replacement: any[] | null;
}

/** The text of a message's content (a string, or its text blocks joined). */
const textOf = (content: any): string =>
  typeof content === "string"
    ? content
    : Array.isArray(content)
      ? content.map((b: any) => (b?.type === "text" && typeof b.text === "string" ? b.text : "")).join("")
      : "";

export function resultEdits(branch: any[]): Map<string, ResultEdit> {
  const byId = new Map<string, any>();
  const out = new Map<string, ResultEdit>();
  for (const e of branch) {
    if (e?.id) byId.set(e.id, e);
    if (e?.type !== "context_edit") continue;
    const target = byId.get(e.targetId);
    const m = target?.type === "message" ? target.message : undefined;
    if (m?.role !== "toolResult" || typeof m.toolCallId !== "string") continue;
    const r = e.replacement;
    const replacement =
      r === null || r === undefined
        ? null
        : typeof r.content === "string"
          ? [{ type: "text", text: r.content }]
          : Array.isArray(r.content)
            ? r.content
            : null;
    out.set(m.toolCallId, { entryId: String(e.id ?? ""), original: textOf(m.content), replacement });
  }
  return out;
}

/**
 * The harness events that tell the service about edits it has not been told of (their entry ids
 * not in `told`, which it extends): {"type": "context_edit", "entry_id", "tool_call_id",
 * "replacement": the result's text from now on, or null when it is left out}. The service
 * rewrites what it recorded of such a result (an edit made after it saw the output: the original
 * leaves its store; docs/pi.md, "Context edits"); an edit of a result it has not recorded yet
 * changes nothing there (the log it is sent carries the edit).
 */
export function editEvents(edits: Map<string, ResultEdit>, told: Set<string>): HarnessEvent[] {
  const out: HarnessEvent[] = [];
  for (const [toolCallId, ed] of edits) {
    const key = `${ed.entryId}\u0000${toolCallId}`;
    if (told.has(key)) continue;
    told.add(key);
    out.push({
      type: "context_edit",
      entry_id: ed.entryId,
      tool_call_id: toolCallId,
      replacement: ed.replacement === null ? null : textOf(ed.replacement),
    });
  }
  return out;
}

/** What an omitted output's text becomes where ctxstore's answer quotes it. */
export const OMITTED = "[output omitted from context]";

/**
 * ctxstore's answer with Pi's context edits of tool results applied, as Pi applies them to its own
 * context: an edited result is its replacement, an omitted one is left out (pi-ai then sends the
 * call with a synthetic empty result, as without ctxstore), and wherever the answer quotes an
 * edited output's original text (a content block, an activated output) it quotes the replacement
 * or OMITTED instead. The service only ever receives the edited log (the extension sends it no
 * tool output of its own), so this matters for an edit made after the service recorded the
 * output: an extension editing an older result. The answer is not changed in place (the delta
 * state holds it); without edits it is returned as it is.
 */
export function honourEdits(messages: any[], edits: Map<string, ResultEdit>): any[] {
  if (edits.size === 0) return messages;
  const quotes: [string, string][] = [];
  for (const ed of edits.values()) {
    // A short original (an empty output, "ok") would match unrelated text: it is not searched for.
    if (ed.original.trim().length >= 8) quotes.push([ed.original, ed.replacement === null ? OMITTED : textOf(ed.replacement)]);
  }
  const requote = (text: string) => quotes.reduce((t, [from, to]) => t.split(from).join(to), text);
  const out: any[] = [];
  for (const m of messages) {
    const ed = m?.role === "toolResult" ? edits.get(m.toolCallId) : undefined;
    if (ed) {
      if (ed.replacement !== null) out.push({ ...m, content: ed.replacement.map((b) => ({ ...b })) });
      continue;
    }
    if (quotes.length === 0 || !m) {
      out.push(m);
      continue;
    }
    if (typeof m.content === "string") {
      const t = requote(m.content);
      out.push(t === m.content ? m : { ...m, content: t });
      continue;
    }
    if (!Array.isArray(m.content)) {
      out.push(m);
      continue;
    }
    let changed = false;
    const content = m.content.map((b: any) => {
      if (b?.type !== "text" || typeof b.text !== "string") return b;
      const t = requote(b.text);
      if (t === b.text) return b;
      changed = true;
      return { ...b, text: t };
    });
    out.push(changed ? { ...m, content } : m);
  }
  return out;
}

/** ctxstore's answer to one context call, applied to the request it is sent in. */
interface Answer {
  messages: any[];
  stable: number;
  systemPrompt: string;
  withheld: string[];
  headTTL: number;
  /** The head's share of the context's tokens (ctxstore's count) when it is cached for longer. */
  headShare: number;
}

/** The fields of a payload that name how many tokens to answer with, in the APIs Pi speaks. */
const OUTPUT_CAPS = ["max_tokens", "max_output_tokens", "max_completion_tokens", "maxOutputTokens", "maxTokens"];

/**
 * The prompt of a provider payload as Pi built it (before any change of ours): everything but
 * the output cap, at the top level or in an object field of it (Google's `generationConfig`,
 * Bedrock's `inferenceConfig`, pi-messages' `options`), hashed. Two requests with the same key
 * send the same prompt: Pi's warm request differs from the one it keeps warm only in its
 * one-token cap. (A provider that derives another field from the cap, a thinking budget, gives
 * the warm request another key: it goes out as Pi built it, as before.)
 */
export function promptKey(payload: any): string {
  if (!payload || typeof payload !== "object") return "";
  const rest: any = { ...payload };
  for (const k of OUTPUT_CAPS) delete rest[k];
  for (const [k, v] of Object.entries(rest)) {
    if (v && typeof v === "object" && !Array.isArray(v) && OUTPUT_CAPS.some((c) => c in v)) {
      const inner: any = { ...v };
      for (const c of OUTPUT_CAPS) delete inner[c];
      rest[k] = inner;
    }
  }
  return createHash("sha256").update(JSON.stringify(rest)).digest("hex");
}

/**
 * ctxstore's answer to Pi's cache warming decision: "warm" while the `done` warms of this pause
 * plus this one cost no more than the extra price of rewriting the prompt (ski rental), "stop"
 * after; undefined when Pi could not price them (no prices or no prompt size).
 */
export function warmOrStop(done: number, warmCost: number, missCost: number): "warm" | "stop" | undefined {
  if (!(warmCost > 0) || !(missCost > 0)) return undefined;
  return (done + 1) * warmCost <= missCost ? "warm" : "stop";
}

/**
 * The rewrite a warm saves when the head (headShare of the prompt P) is cached for the hour: Pi's
 * missCost is what a cold next call costs beyond a warm one when it writes the whole prompt,
 * (w - r)·P; with the head read after the pause all the same, the cold call writes P - H and
 * reads H, so the saving is (w - r)·(P - H) = missCost·(1 - share) (package cachewarm's Budget,
 * which the replay and the Claude Code proxy use).
 */
export function missWithLongHead(missCost: number, headShare: number): number {
  if (!(headShare > 0)) return missCost;
  return Math.max(0, missCost * (1 - Math.min(1, headShare)));
}

/** Fork points seen by session_before_fork, by the session file forked from (this process). */
const forkPoints = new Map<string, { entry_id: string; position: string }>();

/**
 * The head new sessions are opened with: CTXSTORE_HEAD=bare (the default), managed or lean;
 * CTXSTORE_LEAN_HEAD=1 is lean, as before. An unknown value is reported, and managed used.
 */
function head(): "bare" | "managed" | "lean" {
  const v = (process.env.CTXSTORE_HEAD ?? "").trim().toLowerCase();
  if (v === "bare" || v === "managed" || v === "lean") return v;
  if (v !== "") {
    console.error(`[ctxstore] CTXSTORE_HEAD=${v}: want bare, managed or lean; using managed`);
    return "managed";
  }
  return process.env.CTXSTORE_LEAN_HEAD === "1" ? "lean" : "bare";
}

export default async function ctxstore(pi: ExtensionAPI) {
  const headMode = head();
  const client = new Client();
  let sid = "";
  const deltas = new Deltas();
  let opened: Promise<OpenResponse> | undefined;
  let healthy = false; // the last call to the service succeeded
  let events: HarnessEvent[] = []; // to send with the next context call
  let forkedSid = ""; // the session a fork event was queued for
  // The answer to the context call in progress: context_with_system and before_provider_request
  // of the same LLM call apply it, then it is dropped.
  let current: Answer | undefined;
  // The last request sent with an answer applied: its prompt key (promptKey of Pi's payload) and
  // the answer. Pi keeps a prompt's cache entry warm by sending the same request again with
  // a one-token output cap (its cache warming), through before_provider_request but with no
  // context call: that request gets the same answer applied, so it reads the entry the real
  // request wrote instead of writing another (docs/pi.md, "Cache warming").
  let sent: { key: string; answer: Answer } | undefined;
  let warms = 0; // warm requests Pi sent since the last request of its own
  let warming = false; // a warm request is in flight (its response renews the entry)
  let renewedAt = ""; // when a warm request last renewed the entry, for the next context call
  let warned = false; // the user has been told the service is down
  const told = new Set<string>(); // the context edits queued for the service (editEvents)

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
        .map((t) => ({ name: t.name, description: t.description, parameters: t.parameters as JSONObject }));
      opened = client.open(sid, {
        cwd: ctx.cwd,
        system_prompt: prompt ?? ctx.getSystemPrompt(),
        harness: "pi",
        tools,
        // The head (docs/pi.md, "The head"): bare by default (never ctxstore's guide or management
        // tools; outputs are read back from spill files), managed, or lean (the guide and the
        // management tools join once something collapses).
        bare_head: headMode === "bare" || undefined,
        lean_head: headMode === "lean" || undefined,
        // Recorded on the session's conversation commits (docs/commits.md).
        provenance: {
          principal: process.env.CTXSTORE_PRINCIPAL || userName(),
          machine: hostname(),
          harness: `pi ${PI_VERSION}`,
          template: process.env.CTXSTORE_TEMPLATE || undefined,
          ticket: process.env.CTXSTORE_TICKET || undefined,
          thread: process.env.CTXSTORE_THREAD || undefined,
        },
      });
      opened.catch(() => (opened = undefined));
    }
    return opened;
  };

  /** Calls a session route, reopening once if the server lost the session (a restart). */
  const session = <T>(ctx: ExtensionContext, call: () => Promise<T>): Promise<T> =>
    reopening((again) => {
      if (again) opened = undefined;
      return open(ctx);
    }, call);

  pi.on("session_start", (event, ctx) => {
    sid = ctx.sessionManager.getSessionId();
    opened = undefined;
    current = undefined;
    sent = undefined;
    warms = 0;
    renewedAt = "";
    deltas.reset();
    told.clear();
    // Pi 0.87's RPC mode starts a forked session twice (the runtime, then its rebinding): one event.
    if (event.reason === "fork" && forkedSid !== sid) {
      forkedSid = sid;
      // A new Pi session holding a branch of the previous one (Pi's /fork): the fork point was
      // seen by session_before_fork in the session forked from.
      const from = event.previousSessionFile;
      const point = from ? forkPoints.get(from) : undefined;
      if (from) forkPoints.delete(from);
      events.push({ type: "fork", parent_session_id: sessionIdOf(from), parent_session_file: from ?? "", ...point });
    }
  });

  pi.on("session_before_fork", (event, ctx) => {
    const file = ctx.sessionManager.getSessionFile();
    if (file) forkPoints.set(file, { entry_id: event.entryId, position: event.position });
    return undefined;
  });

  pi.on("session_tree", (event) => {
    // The leaf moved inside this session (Pi's /tree): the next log is another branch of it.
    events.push({
      type: "tree",
      old_leaf_id: event.oldLeafId,
      new_leaf_id: event.newLeafId,
      ...(event.summaryEntry ? { summary_entry_id: event.summaryEntry.id } : {}),
    });
  });

  pi.on("session_compact", (event) => {
    const e: any = event.compactionEntry;
    events.push({
      type: "compaction",
      reason: event.reason,
      entry_id: e?.id,
      first_kept_entry_id: e?.firstKeptEntryId,
      tokens_before: e?.tokensBefore,
      from_extension: event.fromExtension,
    });
  });

  pi.on("before_agent_start", async (event, ctx) => {
    try {
      await open(ctx, event.systemPrompt);
      ok(ctx);
    } catch (err) {
      failed(ctx, err);
    }
    return undefined; // the prompt is applied per call (context_with_system)
  });

  pi.on("context", async (event, ctx) => {
    current = undefined;
    // Pi's edits of tool results on this branch: the service is told of each once (it rewrites
    // what it recorded of an output edited after it saw it), and the answer honours them all.
    const edits = resultEdits(ctx.sessionManager.getBranch());
    events.push(...editEvents(edits, told));
    const sending = events.slice();
    const renewed = renewedAt;
    try {
      // A delta over the previous call's log; the whole log when the service lost what it held
      // (a restart, another client: log_mismatch).
      const r = await deltas.call(event.messages, { events: sending, cacheRenewedAt: renewed }, (body) =>
        session(ctx, () => client.context(sid, body)),
      );
      // Pi's context edits stand: what an extension or Pi itself took out of the context stays out.
      const messages = honourEdits(r.messages ?? [], edits);
      events = events.slice(sending.length);
      if (renewedAt === renewed) renewedAt = "";
      current = {
        messages,
        stable: r.stable ?? 0,
        systemPrompt: r.system_prompt,
        withheld: r.withheld_tools ?? [],
        headTTL: r.head_ttl_seconds ?? 0,
        headShare: r.head_ttl_seconds && r.tokens ? Math.min(1, (r.head_tokens ?? 0) / r.tokens) : 0,
      };
      ok(ctx);
      return { messages };
    } catch (err) {
      failed(ctx, err);
      return undefined; // fail open: Pi sends its own context (the events wait for the next call)
    }
  });

  pi.on("context_with_system", (event) => {
    if (!current) return undefined;
    return { messages: withSystemPrompt(event.messages, current.systemPrompt) };
  });

  pi.on("before_provider_request", (event) => {
    const key = promptKey(event.payload);
    let c: Answer | undefined;
    if (sent && key === sent.key) {
      // The last request again: a warm request, or a retry of the same log, whose answer in
      // progress, when the service gave the same messages again, is the fresher one.
      if (current && JSON.stringify(current.messages) === JSON.stringify(sent.answer.messages)) {
        sent.answer = current;
        current = undefined;
      }
      c = sent.answer;
      warming = true;
      warms++;
    } else {
      c = current;
      current = undefined;
      warming = false;
      warms = 0; // a new request: a new pause after it
      if (c) sent = { key, answer: c };
    }
    if (!c) return undefined;
    const lean = withholdTools(event.payload, c.withheld);
    const placed = placeBreakpoints(lean ?? event.payload, c.messages, c.stable) ?? lean;
    // After placing: placeBreakpoints may copy the system prompt's cache_control to the messages.
    return longHead(placed ?? event.payload, c.headTTL) ?? placed;
  });

  // Pi's cache warming asks before each warm request. Warming is decided once (docs/pi.md, "Cache
  // warming"): while the agent runs (a long tool, a slow model), ctxstore answers by ski rental:
  // warm while this pause's warms, this one included, cost no more than the rewrite they would
  // save (never more than twice the cost of the best choice in hindsight), where Pi's own rule
  // adds a $0.05 floor on the expected saving that turns warming off for prompts of the size
  // ctxstore keeps. While Pi waits for the user (its "idle" mode, the default since Pi 1.5.1),
  // Pi's own decision stands: ctxstore's bound would warm after every finished turn, and the
  // replay measured that to cost more than it saves. Pi's own limits (its mode, an hour while
  // running, 30 minutes idle) still apply; without prices Pi's decision stands. A head cached for
  // the hour is read after the pause all the same: only the rest is a rewrite, and a pause with
  // nothing else to save is not warmed in either phase.
  pi.on("cache_warming_decision", (event, ctx) => {
    const miss = missWithLongHead(event.missCost, sent?.answer.headShare ?? 0);
    if (event.missCost > 0 && !(miss > 0)) return { action: "stop" };
    if (ctx.isIdle() || event.continuationProbability < 1) return undefined;
    return { action: warmOrStop(warms, event.warmCost, miss) ?? event.action };
  });

  // A warm request answered: the entry lives on from now; the next context call says so
  // (cache_renewed_at), so ctxstore does not take the pause for a cold cache.
  pi.on("after_provider_response", (event) => {
    if (!warming) return;
    warming = false;
    if (event.status >= 200 && event.status < 300) renewedAt = new Date().toISOString();
  });

  // ctxstore bounds the context (collapses, rebases), so Pi's compaction is cancelled; a provider
  // overflow (the context did not fit after all) is left to Pi, and recorded (session_compact).
  pi.on("session_before_compact", (event) => (healthy && event.reason !== "overflow" ? { cancel: true } : undefined));

  pi.on("session_shutdown", async (_event, ctx) => {
    if (!sid || !healthy) return;
    try {
      await client.close(sid);
    } catch (err) {
      tell(ctx, `closing the ctxstore session: ${(err as Error).message}`);
    }
  });

  /** Runs one of ctxstore's tools; a failed tool throws, so Pi reports it as an error. */
  const runTool = async (ctx: ExtensionContext, tool: string, toolCallId: string, args: Record<string, unknown>) => {
    const r = await session(ctx, () => client.tool(sid, tool, { tool_call_id: toolCallId, args }));
    ok(ctx);
    if (!r.ok) throw new Error(r.message);
    return r;
  };

  // ctxstore's tools are the service's (GET /v1/tools), names included, read once when Pi loads
  // the extension. The one whose role is read stands in for Pi's own read (same name), and falls
  // back to it when the service fails. If the service is unreachable at load, none is
  // registered: Pi keeps its own read, as it keeps its own context (fail open).
  let defs: ToolDefinition[] = [];
  try {
    defs = await client.tools();
  } catch (err) {
    console.error(`[ctxstore] ${(err as Error).message}; ctxstore's tools are not registered`);
  }
  for (const def of defs) {
    pi.registerTool({
      name: def.name,
      label: `${def.name} (ctxstore)`,
      description: def.description,
      parameters: def.parameters as any,
      async execute(toolCallId, params: any, signal, onUpdate, ctx) {
        if (def.role !== "read") {
          const r = await runTool(ctx, def.name, toolCallId, { ...params });
          return { content: [{ type: "text", text: r.message }], details: { ctxstore: { id: r.id } } };
        }
        let r: ToolResponse;
        try {
          r = await runTool(ctx, def.name, toolCallId, { path: params.path, offset: params.offset, limit: params.limit });
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
