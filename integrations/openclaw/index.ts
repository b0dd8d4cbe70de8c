// ctxstore's OpenClaw plugin: a context engine ("ctxstore") over `ctxstore serve`
// (docs/service.md). Install: `openclaw plugins install -l /path/to/ctxstore/integrations/openclaw
// --force --accept-capabilities`, then select it with plugins.slots.contextEngine = "ctxstore"
// (docs/openclaw.md). Written against OpenClaw 2026.9.6; TypeScript, no build step.
//
// The engine stays thin, as the Pi extension does (integrations/pi/index.ts): OpenClaw's messages
// are pi-agent-core AgentMessages, the shape Pi sends, so they go through the one Pi converter of
// the service (harness/pi); the session is opened with harness "openclaw". It talks to the
// service through ctxstore's TypeScript client (../client: the HTTP client, its errors and the
// delta protocol, the Pi extension's too), imported by relative path: `plugins install -l` links
// the plugin where it lies in the checkout, so the sibling folder is there (docs/openclaw.md).
//
//   assemble     PUT /v1/sessions/{sid} once per process (cwd: the workspace; no system prompt of
//                its own; the head, below), then POST /v1/sessions/{sid}/context with the history
//                OpenClaw hands over, as a delta over the previous call's (the client's Deltas, as
//                the Pi extension sends it; the whole log after log_mismatch, a reopen after
//                session_not_open); the answer's messages, with the timestamps of the
//                transcript messages they were made from (OpenClaw dates user messages from
//                them), are the context, its system_prompt (fixed for the session, so
//                cache-stable: ctxstore's guide under the managed head, empty under the bare
//                one) the systemPromptAddition. A later assemble of the same run is handed the
//                previous answer; the log it was made from is sent instead. The service opens an
//                OpenClaw session with its user-first rendering, so what OpenClaw sent in a turn
//                comes back unchanged (docs/openclaw.md, "Byte-stable turns").
//   ingest       acknowledged: the next assemble sends the log, and the cursor ingests it.
//   commitTurn   answers "committed", or "duplicate" for an advancementKey seen before in this
//                process; it writes nothing: the transcript is OpenClaw's durable record, and the
//                next turn's assemble ingests the turn from it (docs/openclaw.md says why).
//   compact      declined (ownsCompaction: ctxstore collapses and rebases the context itself).
//   prepareSubagentSpawn, onSubagentEnded
//                a "fork" child's session is forked from the conversation commit of the parent's
//                last call (POST /v1/commits/{c}/fork), its inherited tool call ids made its own;
//                spawn and end are harness events of the parent's and the child's next calls.
//   tools        ctxstore's tools from GET /v1/tools, run through POST /v1/sessions/{sid}/tools/{tool}:
//                the recall tools (search, query_session) and, under the managed head, the
//                management tools (activate, ...). ctxstore's read (role read) is not registered: OpenClaw's own read keeps its name, and its
//                output is ingested from the log as any tool output (the service's ingester
//                knows a spill file by its path: read whole, it activates the output the file
//                holds; with offset/limit, those lines are the read's output).
//   session_end  (OpenClaw's hook: a session replaced under its key, reset, deleted or expired;
//                2026.9.6 reports it from the Gateway, never from `openclaw agent --local`) closes
//                the ctxstore session: the turn in progress is written and its spill files go.
//
// The head (docs/openclaw.md, "The head"): plugins.entries.ctxstore.config.head, else
// CTXSTORE_HEAD (the Pi extension's variable): bare or managed; lean is taken as managed, with a
// warning (OpenClaw gives a plugin no per-call seam onto the tool list). Unset, bare, unless
// OpenClaw's read cannot reach the service's spill directory for the agent (tools.fs.workspaceOnly
// or a sandbox in OpenClaw's config): managed, with a warning. Bare: OpenClaw's system prompt and
// tools only (never ctxstore's guide or its management tools); an output that collapses or enters
// as a preview is whole in a spill file the service writes, and the model loads it with
// OpenClaw's read. Managed: ctxstore's guide as the systemPromptAddition, and the management tools.
// A session keeps the head it was created with (the service's rule).
//
// Prompt-cache breakpoints stay OpenClaw's: it gives a context engine no seam onto the provider
// request (docs/openclaw.md).
//
// If the service is unreachable, assemble throws: OpenClaw quarantines the engine for the process
// and runs its legacy engine (its documented failure isolation). The plugin logs it once.
//
// Configuration: plugins.entries.ctxstore.config.serviceUrl / .token / .head, else
// CTXSTORE_SERVICE_URL (default http://127.0.0.1:7411), CTXSTORE_TOKEN and CTXSTORE_HEAD;
// CTXSTORE_TIMEOUT_MS per request (30000).

import type { OpenClawPluginApi } from "openclaw/plugin-sdk/plugin-entry";
import { Client, Deltas, reopening } from "../client/index.ts";
import type { HarnessEvent, Message, ToolDefinition } from "../client/index.ts";

/** A session's head (docs/openclaw.md, "The head"). */
type Head = "bare" | "managed";

/**
 * The head asked for: the plugin config's `head`, else CTXSTORE_HEAD; "" when neither names one.
 * lean (the Pi extension's third head, so only from CTXSTORE_HEAD: the config's schema takes bare
 * or managed, and OpenClaw refuses anything else there) is managed here: it needs the tool list
 * changed from one model call to the next, which OpenClaw lets no plugin do. An unknown value is
 * managed, as in the Pi extension. `warn` is told why, for either.
 */
function askedHead(configured: unknown, env: string | undefined, warn: (msg: string) => void): Head | "" {
  const from = typeof configured === "string" && configured.trim() !== "" ? "plugins.entries.ctxstore.config.head" : "CTXSTORE_HEAD";
  const v = (from === "CTXSTORE_HEAD" ? (env ?? "") : String(configured)).trim().toLowerCase();
  if (v === "" || v === "bare" || v === "managed") return v;
  if (v === "lean") {
    warn(`${from}=lean: OpenClaw lets no plugin change the tool list between model calls; using managed`);
    return "managed";
  }
  warn(`${from}=${v}: want bare or managed; using managed`);
  return "managed";
}

/**
 * Why OpenClaw's read cannot reach a file outside the agent's workspace (the service's spill
 * directory), from OpenClaw's config as the plugin gets it (api.config): the agent's
 * tools.fs.workspaceOnly, else the global one, or a sandbox (agents.list[].sandbox.mode, else
 * agents.defaults.sandbox.mode, not "off": the sandbox mounts the workspace only). "" when it
 * can. agentId "" reads the global and default settings only.
 */
function readConfined(config: any, agentId: string): string {
  const list: any[] = Array.isArray(config?.agents?.list) ? config.agents.list : [];
  const agent = agentId ? list.find((a) => typeof a?.id === "string" && a.id.trim().toLowerCase() === agentId) : undefined;
  const agentFs = agent?.tools?.fs?.workspaceOnly;
  if ((agentFs ?? config?.tools?.fs?.workspaceOnly) === true)
    return agentFs === true ? `agents.list[${agentId}].tools.fs.workspaceOnly` : "tools.fs.workspaceOnly";
  const mode = agent?.sandbox?.mode ?? config?.agents?.defaults?.sandbox?.mode;
  if (typeof mode === "string" && mode !== "off")
    return agent?.sandbox?.mode ? `agents.list[${agentId}].sandbox.mode=${mode}` : `agents.defaults.sandbox.mode=${mode}`;
  return "";
}

/**
 * Whether an answered message is one ctxstore appends after the tool results of a turn in
 * progress: a user message of text blocks (a note, a metadata line, an activated output's content
 * block). Never an assistant message or a tool result, which only OpenClaw's history holds.
 */
function appended(m: any): boolean {
  return m?.role === "user" && Array.isArray(m.content) && m.content.length > 0 && m.content.every((b: any) => b?.type === "text");
}

/**
 * The id ctxstore records a tool call under. OpenClaw runs a plugin tool the model asked for
 * through its `tool_call` under an id of its own, `tool_search_code:<the tool_call's id,
 * sanitized>:<tool>:<n>`; the log then holds the tool_call's result under the outer id. Recording
 * the run under that outer id lets the ingester recognize the result as ctxstore's own instead of
 * recording it a second time. Only the first run under one outer id is mapped (a code-mode script
 * may run several): the others keep OpenClaw's ids.
 */
function recordedId(inner: string, tool: string, mapped: Set<string>): string {
  const prefix = "tool_search_code:";
  const tail = /:\d+$/.exec(inner);
  if (!inner.startsWith(prefix) || !tail) return inner;
  const rest = inner.slice(prefix.length, tail.index);
  if (!rest.endsWith(`:${tool}`)) return inner;
  const outer = rest.slice(0, rest.length - tool.length - 1);
  if (outer === "" || outer === "direct" || mapped.has(outer)) return inner;
  mapped.add(outer);
  return outer;
}

/** The text of a message's content: a string, or its text blocks joined with `sep`. */
function textOf(content: unknown, sep: string): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return content
    .filter((b: any) => b?.type === "text" && typeof b.text === "string" && b.text !== "")
    .map((b: any) => b.text)
    .join(sep);
}

/** A message's timestamp when it is a real one (milliseconds, > 0), else undefined. */
function realTime(m: any): number | undefined {
  return typeof m?.timestamp === "number" && Number.isFinite(m.timestamp) && m.timestamp > 0 ? m.timestamp : undefined;
}

/**
 * The answer's messages with the timestamps of the log they were made from. The service answers
 * timestamp 0 (its context is a function of the assembled messages only), and OpenClaw stamps
 * every user message with a date envelope from its timestamp (`[Sun 2026-12-06 09:00 UTC] …`),
 * so a 0 dated the turn's prompt 1970-01-01 from the turn after the one it was sent in. Walking
 * the answer and the log in order: a tool result takes its result's time, an assistant message
 * the time of the log's assistant message with the same tool call or, after the last one matched,
 * the same text (else the next one); a user message the time of the next log message with its
 * text (the Pi converter joins a message's text blocks with a blank line; in renderings before
 * the service's user-first one, the prompt is one block of a message that may begin with notes).
 * A message ctxstore wrote (notes, metadata lines, content blocks) takes the time of the message
 * matched before it, else the log's first: the same every call, so the bytes OpenClaw makes of it
 * do not change from one call to the next. Never 0 while the log has a timestamp.
 */
function stamped(answer: Message[], log: any[]): Message[] {
  const first = log.map(realTime).find((t) => t !== undefined);
  if (first === undefined) return answer; // nothing to take a time from
  // Where each kind of log message is, in order: results by call id, assistant messages by a tool
  // call's id and by text, user (and other) messages by text.
  const byResult = new Map<string, number>();
  const byCall = new Map<string, number>();
  const byText = new Map<string, number[]>();
  const assistants: number[] = [];
  const at = (m: Map<string, number[]>, k: string, i: number) => {
    const is = m.get(k);
    if (is) is.push(i);
    else m.set(k, [i]);
  };
  log.forEach((m, i) => {
    switch (m?.role) {
      case "toolResult":
        if (typeof m.toolCallId === "string" && !byResult.has(m.toolCallId)) byResult.set(m.toolCallId, i);
        break;
      case "assistant":
        assistants.push(i);
        at(byText, "a\u0000" + textOf(m.content, "\n\n"), i);
        if (Array.isArray(m.content))
          for (const b of m.content) if (b?.type === "toolCall" && typeof b.id === "string" && !byCall.has(b.id)) byCall.set(b.id, i);
        break;
      default:
        at(byText, "u\u0000" + textOf(m?.content, "\n\n"), i);
    }
  });
  let last = -1; // the log message matched last
  let time = first;
  const take = (i: number | undefined) => {
    if (i === undefined) return false;
    last = Math.max(last, i);
    time = realTime(log[i]) ?? time;
    return true;
  };
  const after = (is: number[] | undefined) => is?.find((i) => i > last);
  return answer.map((m: any) => {
    switch (m?.role) {
      case "toolResult":
        take(byResult.get(m.toolCallId));
        break;
      case "assistant": {
        const call = Array.isArray(m.content) ? m.content.find((b: any) => b?.type === "toolCall") : undefined;
        if (call && take(byCall.get(call.id))) break;
        take(after(byText.get("a\u0000" + textOf(m.content, "\n\n"))) ?? after(assistants));
        break;
      }
      case "user": {
        const texts: string[] = Array.isArray(m.content) ? m.content.filter((b: any) => b?.type === "text").map((b: any) => b.text) : [textOf(m.content, "")];
        for (const t of texts) if (take(after(byText.get("u\u0000" + t)))) break;
        break;
      }
    }
    return { ...m, timestamp: time };
  });
}

/** The agent id of an OpenClaw session key ("agent:<id>:…"), lowercased; "" for another key. */
function agentOf(sessionKey: string | undefined): string {
  const m = /^agent:([^:]+):/i.exec(sessionKey ?? "");
  return m ? m[1].trim().toLowerCase() : "";
}


// Kept for the process, not by one registration or one load of this module: OpenClaw resolves a
// context engine of its own for a subagent spawn and for the subagent's end (loading the plugin
// into another registry), and the spawn's events must reach the parent's next context call.
const shared: {
  events: Map<string, HarnessEvent[]>; // harness events for a session's next call
  calls: Map<string, string>; // the context commit of each session's last call
  parents: Map<string, string>; // a subagent's session key -> its parent's session id
  forkedAt: Map<string, number>; // a forked subagent's session id -> when it was prepared (ms)
  heads: Map<string, Head>; // the head of each session opened by this process, as the service answered
  warned: Set<string>; // the warnings given once per process
  mapped: Set<string>; // the tool_call ids a ctxstore tool's run was recorded under (recordedId)
} = ((globalThis as any)[Symbol.for("ctxstore.openclaw")] ??= {
  events: new Map(),
  calls: new Map(),
  parents: new Map(),
  forkedAt: new Map(),
  heads: new Map(),
  warned: new Set(),
  mapped: new Set(),
});
shared.heads ??= new Map(); // a process that loaded an older copy of the plugin first
shared.warned ??= new Set();
shared.mapped ??= new Set();
const { events, calls, parents, heads } = shared;
const forkedAt = shared.forkedAt;

/**
 * A forked subagent's log opens with its parent's transcript, the parent's turn in progress
 * included (the spawn's own tool call, with the result OpenClaw inserts to repair the fork). Their
 * tool call ids are the parent's, and in ctxstore a tool call id names an object of one session:
 * the child's ingestion would take them from the parent ("the object belongs to another
 * session"). So the tool calls of assistant messages made before the spawn, and every result of
 * those calls (the repair is made later), get ids of the child's own: the id, "-f" and the child
 * session id's first 8 characters. The child's own tool calls keep theirs.
 */
function inheritedIds(messages: any[], child: string, at: number): any[] {
  const suffix = `-f${child.slice(0, 8)}`;
  const ids = new Set<string>();
  for (const m of messages) {
    if (m?.role !== "assistant" || typeof m.timestamp !== "number" || m.timestamp > at || !Array.isArray(m.content)) continue;
    for (const b of m.content) {
      if (b?.type !== "toolCall" || typeof b.id !== "string") continue;
      ids.add(b.id.endsWith(suffix) ? b.id.slice(0, -suffix.length) : b.id); // renamed by an earlier call
    }
  }
  if (ids.size === 0) return messages;
  return messages.map((m) => {
    if (m?.role === "toolResult" && ids.has(m.toolCallId)) return { ...m, toolCallId: m.toolCallId + suffix };
    if (m?.role === "assistant" && Array.isArray(m.content) && m.content.some((b: any) => b?.type === "toolCall" && ids.has(b.id)))
      return { ...m, content: m.content.map((b: any) => (b?.type === "toolCall" && ids.has(b.id) ? { ...b, id: b.id + suffix } : b)) };
    return m;
  });
}

export default function register(api: OpenClawPluginApi) {
  const cfg = (api.pluginConfig ?? {}) as { serviceUrl?: string; token?: string; head?: string };
  const client = new Client({ baseUrl: cfg.serviceUrl, token: cfg.token });
  const log = api.logger ?? { info: console.error, warn: console.error, error: console.error };
  // OpenClaw loads the plugin into more than one registry per process: a warning is given once.
  const warnOnce = (msg: string) => {
    if (shared.warned.has(msg)) return;
    shared.warned.add(msg);
    log.warn(`[ctxstore] ${msg}`);
  };
  const asked = askedHead(cfg.head, process.env.CTXSTORE_HEAD, warnOnce);

  /**
   * The head new sessions of an agent are opened with: the one asked for, else bare unless
   * OpenClaw's read cannot reach the spill directory for that agent (then managed: the model
   * could not load a collapsed output back). An explicit bare is kept, with a warning: the
   * service's spill directory (serve --spill-dir) may lie inside the workspace.
   */
  const headFor = (agentId: string): Head => {
    const confined = readConfined(api.config, agentId);
    if (asked === "bare" && confined)
      warnOnce(`the bare head was asked for, but ${confined} confines OpenClaw's read: the model can load collapsed outputs only if serve --spill-dir lies inside the workspace`);
    if (asked) return asked;
    if (confined) {
      warnOnce(`${confined} keeps OpenClaw's read out of ctxstore's spill directory, so new sessions${agentId ? ` of agent ${agentId}` : ""} get the managed head (set head or CTXSTORE_HEAD to choose)`);
      return "managed";
    }
    return "bare";
  };

  let warned = false; // said once that the service is down
  const failed = (err: unknown) => {
    if (warned) return;
    warned = true;
    log.warn(`[ctxstore] ${(err as Error)?.message ?? err}; OpenClaw uses its legacy context engine for this run`);
  };


  // Sessions opened by this process, and the log last sent for each (commitTurn extends it).
  const opened = new Map<string, Promise<unknown>>();
  const last = new Map<string, { log: any[]; answer: any[]; answerJSON: string[] }>();
  const committed = new Set<string>();
  let cwd = process.cwd();

  // The agent of each session, from the session key OpenClaw gives assemble (its head).
  const agents = new Map<string, string>();

  /**
   * Opens (or resumes) a session with the head for its agent. A session keeps the head it was
   * created with: the answer's spill directory says whether it is bare, and the tools of its
   * later runs in this process follow (a session created under the other head is reported once).
   */
  const open = (sid: string) => {
    let p = opened.get(sid);
    if (!p) {
      const head = headFor(agents.get(sid) ?? "");
      p = client.open(sid, {
        cwd,
        system_prompt: "",
        harness: "openclaw",
        bare_head: head === "bare" || undefined,
      }).then((r) => {
        const has: Head = r.spill ? "bare" : "managed";
        heads.set(sid, has);
        // OpenClaw built this run's tools before the session opened, for the head its agent's
        // new sessions get: they match the session's from its next run in this process.
        if (has !== head)
          warnOnce(`session ${sid} keeps the ${has} head it was created with; new sessions get the ${head} head, and so do the tools of its first run in each process (set head or CTXSTORE_HEAD to ${has} for it)`);
        return r;
      });
      p.catch(() => opened.delete(sid));
      opened.set(sid, p);
    }
    return p;
  };

  /** Calls a session route, reopening once if the server lost the session (a restart). */
  const session = <T>(sid: string, call: () => Promise<T>): Promise<T> =>
    reopening((again) => {
      if (again) opened.delete(sid);
      return open(sid);
    }, call);

  // Per session: the deltas of its context calls, and harness events for its next call.
  const deltas = new Map<string, Deltas>();
  const queue = (sid: string, e: HarnessEvent) => events.set(sid, (events.get(sid) ?? []).concat(e));

  /**
   * A subagent spawned with context "fork" starts with its parent's transcript: its ctxstore
   * session is forked (POST /v1/commits/{c}/fork) from the conversation commit of the parent's
   * last context call, so the child's first commit is a branch of the parent's chain and its
   * ingester continues after the messages the branch holds. Every spawn (fork or isolated) is
   * also recorded as harness events: "subagent" on the child's first call (parent, mode, the
   * fork commit), "subagent_spawned" and later "subagent_ended" on the parent's next call.
   * Returns the fork commit's id, or "" when the spawn is not forked or the fork failed (an
   * old parent call, a token without commit rights): the child is then a session of its own.
   */
  const spawn = async (p: {
    parentSessionKey: string;
    childSessionKey: string;
    contextMode?: string;
    parentSessionId?: string;
    childSessionId?: string;
  }): Promise<string> => {
    const parent = p.parentSessionId;
    const child = p.childSessionId;
    if (!parent || !child) return "";
    parents.set(p.childSessionKey, parent);
    const mode = p.contextMode ?? "isolated";
    if (mode === "fork") forkedAt.set(child, Date.now());
    let fork = "";
    let from = "";
    if (mode === "fork") {
      try {
        // The parent's last context call: this process's, else the service's count of calls.
        let tip = calls.get(parent);
        if (!tip) {
          const info = await client.session(parent);
          if (info.calls > 0) tip = `ctx-${parent}-${info.calls}`;
        }
        if (!tip) throw new Error("the parent has made no context call");
        const obj = await client.object(tip);
        const conv = obj.doc?.conversation_commit;
        from = typeof conv === "string" ? conv : "";
        if (from) {
          const f = await client.fork(from, {
            session: child,
            harness: "openclaw",
          });
          fork = f.commit?.id ?? "";
        }
      } catch (err) {
        log.warn(`[ctxstore] forking ${parent} for subagent ${child}: ${(err as Error).message}; the subagent starts a session of its own`);
      }
    }
    queue(child, { type: "subagent", parent_session_id: parent, parent_session_key: p.parentSessionKey, child_session_key: p.childSessionKey, context_mode: mode, from_commit: from, fork_commit: fork });
    queue(parent, { type: "subagent_spawned", child_session_id: child, child_session_key: p.childSessionKey, context_mode: mode, fork_commit: fork });
    return fork;
  };

  /**
   * One context call. OpenClaw hands a later assemble of the same run the messages the previous
   * one answered (its agent state holds them); those are replaced by the log that answer was
   * made from, so the service sees the transcript, never its own output. OpenClaw may hand back
   * only the start of that answer: when the answer grew during the turn with a trailing note
   * (a ctxstore tool ran, or the bare head's note on spill files), its next assemble got the
   * answer without that last message (found with the bare head's test). A start of the previous
   * answer that lacks only such appended user messages stands for that answer's log too; a
   * history shorter by an assistant message or a tool result is OpenClaw's (a rewind) and goes as
   * it is. The log travels as a delta over the previous
   * call's; a base the service does not hold (it restarted) answers log_mismatch, and the whole
   * log is sent.
   */
  const context = async (sid: string, given: any[]) => {
    let messages = given;
    const prev = last.get(sid);
    // Shorter than the answer only by what ctxstore appended after the turn's tool results: a
    // history shorter by an assistant message or a tool result is OpenClaw's own (a rewind), sent
    // as it is.
    if (prev && given.length > 0 && (given.length >= prev.answer.length || prev.answer.slice(given.length).every(appended))) {
      const n = Math.min(given.length, prev.answer.length);
      const head = given.slice(0, n).map((m) => JSON.stringify(m));
      if (head.every((j, i) => j === prev.answerJSON[i])) messages = prev.log.concat(given.slice(n));
    }
    const at = forkedAt.get(sid);
    if (at !== undefined) messages = inheritedIds(messages, sid, at);
    let d = deltas.get(sid);
    if (!d) deltas.set(sid, (d = new Deltas()));
    const sending = events.get(sid) ?? [];
    const r = await d.call(messages, { events: sending }, (body) => session(sid, () => client.context(sid, body)));
    events.set(sid, (events.get(sid) ?? []).slice(sending.length));
    const answer: Message[] = stamped(r.messages ?? [], messages);
    last.set(sid, { log: messages, answer, answerJSON: answer.map((m) => JSON.stringify(m)) });
    calls.set(sid, r.commit_id);
    warned = false;
    return { ...r, messages: answer };
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

      async assemble(p: { sessionId: string; sessionKey?: string; messages: any[] }) {
        try {
          if (!agents.has(p.sessionId)) agents.set(p.sessionId, agentOf(p.sessionKey));
          const r = await context(p.sessionId, p.messages ?? []);
          return {
            messages: r.messages ?? [],
            estimatedTokens: r.tokens ?? 0,
            // The bare head's is empty: OpenClaw's own prompt only.
            systemPromptAddition: r.system_prompt || undefined,
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

      async prepareSubagentSpawn(p: {
        parentSessionKey: string;
        childSessionKey: string;
        contextMode?: "isolated" | "fork";
        parentSessionId?: string;
        childSessionId?: string;
      }) {
        await spawn(p);
        return {
          // The spawn failed after this: the child never runs; its events are dropped (a fork
          // commit already written stays, a branch nothing continues).
          async rollback() {
            if (p.childSessionId) events.delete(p.childSessionId);
            if (p.childSessionId) forkedAt.delete(p.childSessionId);
            if (p.parentSessionId) queue(p.parentSessionId, { type: "subagent_ended", child_session_key: p.childSessionKey, reason: "spawn_failed" });
          },
        };
      },

      async onSubagentEnded(p: { childSessionKey: string; reason: string }) {
        const parent = parents.get(p.childSessionKey);
        if (!parent) return;
        parents.delete(p.childSessionKey);
        queue(parent, { type: "subagent_ended", child_session_key: p.childSessionKey, reason: String(p.reason) });
      },
    };
  });

  // A session ends in OpenClaw (replaced under its key, reset, deleted, expired; reported by the
  // Gateway in 2026.9.6): its ctxstore session is closed, which writes the turn in progress and
  // removes its spill files. The process reporting the end may never have opened the session
  // (the Gateway, for a session whose turns ran under `openclaw agent --local`): it is closed
  // anyway, and a session the service does not hold answers closed: false.
  if (typeof api.on === "function") {
    api.on("session_end", async (e: { sessionId?: string }) => {
      const sid = e?.sessionId;
      if (!sid) return;
      opened.delete(sid);
      deltas.delete(sid);
      last.delete(sid);
      heads.delete(sid);
      agents.delete(sid);
      try {
        await client.close(sid);
      } catch (err) {
        log.warn(`[ctxstore] closing session ${sid}: ${(err as Error).message}`);
      }
    });
  }

  // ctxstore's tool definitions, names included, are the service's (GET /v1/tools). register is
  // synchronous, so they are read with one short child process (Client.toolsSync); if the
  // service is unreachable, no tool is registered (OpenClaw keeps its own tools). The tool whose
  // role is read is left out: OpenClaw's own read keeps its name. A management tool (role
  // manage) is left out of a run whose session is bare: the head the service answered for it in
  // this process, else the head its agent's new sessions get (OpenClaw builds a run's tools
  // before its first assemble). openclaw.plugin.json's contracts.tools must name the tools
  // registered here (OpenClaw reads it before loading the plugin); TestPluginPackages checks
  // it against the service's definitions.
  let defs: ToolDefinition[] = [];
  try {
    defs = client.toolsSync().filter((d) => d.role !== "read");
  } catch (err) {
    log.warn(`[ctxstore] reading ctxstore's tools from ${client.base}: ${(err as Error).message?.split("\n")[0]}; they are not registered`);
  }
  const bareRun = (tc: any) => (heads.get(tc?.sessionId) ?? headFor(String(tc?.agentId ?? "").trim().toLowerCase())) === "bare";
  for (const def of defs) {
    api.registerTool(
      (tc: any) => {
        if (def.role === "manage" && bareRun(tc)) return null;
        return {
          name: def.name,
          label: `${def.name} (ctxstore)`,
          description: def.description,
          parameters: def.parameters,
          async execute(toolCallId: string, params: any) {
            const sid = tc?.sessionId;
            if (!sid) throw new Error(`${def.name}: no OpenClaw session id for this run`);
            const r = await session(sid, () =>
              client.tool(sid, def.name, { tool_call_id: recordedId(toolCallId, def.name, shared.mapped), args: { ...params } }),
            );
            if (!r.ok) throw new Error(r.message);
            return { content: [{ type: "text", text: r.message }], details: { ctxstore: { id: r.id ?? null } } };
          },
        };
      },
      { name: def.name },
    );
  }
}
