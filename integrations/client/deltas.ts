// The client's half of the delta protocol of the context call (docs/service.md, "Deltas"; the
// server's half is package server/delta): a context call sends only the messages the harness's
// log gained since the previous call, and gets back only the messages of the answer that
// changed. Pi and OpenClaw hand their whole log to every context event; sending it whole would
// make each call's HTTP and JSON cost grow with the session.

import { createHash, type Hash } from "node:crypto";
import type { ContextResponse, HarnessEvent, Message } from "./api.ts";
import { isCode } from "./client.ts";

/** What a context call carries besides the log. */
export interface CallExtras {
  /** Harness events since the previous call, recorded with this call's commit. */
  events?: HarnessEvent[];
  /** When the harness last renewed the prompt-cache entry without a call (RFC 3339). */
  cacheRenewedAt?: string;
}

/** A request body and what answered() needs to record it. */
export interface DeltaRequest {
  body: string;
  jsons: string[];
  keys: string[];
  base: number;
}

/** How many messages before the delta's base are still compared whole (Deltas.body). */
export const recheck = 2;

/**
 * What identifies a message of the log without serializing it: its role, the creation time the
 * harness stamps on every message (ms; Pi and OpenClaw's pi-agent-core messages carry one) and
 * its tool call id. The log grows by appending, and a replaced or edited log (a branch switch, a
 * compaction) brings messages made at other times. A message without a positive numeric
 * timestamp (ctxstore's own answers carry 0) is keyed by its whole JSON. The risk, documented in
 * docs/service.md: a message changed in place, keeping its timestamp, further back than the
 * last `recheck` messages, would not be sent again.
 */
export function keyOf(m: Message): string {
  if (typeof m?.timestamp !== "number" || !(m.timestamp > 0)) return "json:" + JSON.stringify(m);
  return `${m.role}\u0000${m.timestamp}\u0000${m.toolCallId ?? ""}`;
}

/**
 * What the service holds of one session's log and of its last answer. The state lives in the
 * process: its first call sends the whole log.
 */
export class Deltas {
  private jsons: string[] = []; // the log of the last request, each message as sent
  private keys: string[] = []; // keys[i]: keyOf(message i) of that log
  private sums: string[] = []; // sums[i]: SHA-256 of jsons[0..i], each followed by "\n"
  private hash: Hash = createHash("sha256"); // the running hash behind sums
  private held?: { call: number; messages: Message[] }; // the last answer, whole

  /** Forgets the log and the answer: the next call sends the whole log and gets a whole answer. */
  reset() {
    this.forgetLog();
    this.held = undefined;
  }

  /** Forgets the log only: the next call sends the whole log, with the answer this client holds. */
  private forgetLog() {
    this.jsons = [];
    this.keys = [];
    this.sums = [];
    this.hash = createHash("sha256");
  }

  /**
   * The request body for the log, and the number of its messages the service already holds.
   * The base is found without serializing the whole log: messages are compared by key (keyOf),
   * and only the last `recheck` messages of the common part, the ones the harness could still
   * be changing, and the new ones are serialized. full sends the whole log and asks for a whole
   * answer.
   */
  body(messages: Message[], full = false, extras: CallExtras = {}): DeltaRequest {
    const keys = messages.map(keyOf);
    let base = 0;
    if (!full) {
      const n = Math.min(keys.length, this.keys.length);
      while (base < n && keys[base] === this.keys[base]) base++;
      for (let i = Math.max(0, base - recheck); i < base; i++) {
        if (JSON.stringify(messages[i]) !== this.jsons[i]) {
          base = i;
          break;
        }
      }
    }
    const jsons = this.jsons.slice(0, base);
    for (let i = base; i < messages.length; i++) jsons.push(JSON.stringify(messages[i]));
    const head = base > 0 ? `"base":${base},"base_sha256":"${this.sums[base - 1]}",` : "";
    const have = !full && this.held ? `"have_call":${this.held.call},` : "";
    const evs = extras.events && extras.events.length > 0 ? `"events":${JSON.stringify(extras.events)},` : "";
    const renewed = extras.cacheRenewedAt ? `"cache_renewed_at":${JSON.stringify(extras.cacheRenewedAt)},` : "";
    return { body: `{${head}${have}${evs}${renewed}"messages":[${jsons.slice(base).join(",")}]}`, jsons, keys, base };
  }

  /** Records a successful call: the log sent, and the answer made whole (returned). */
  answered(req: DeltaRequest, r: ContextResponse): Message[] {
    const { jsons, keys, base } = req;
    if (base < this.jsons.length) {
      this.hash = createHash("sha256");
      this.sums = [];
      for (const j of jsons.slice(0, base)) this.push(j);
    }
    this.keys = keys;
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

  /**
   * One context call: the log as a delta over the previous call's, sent with post; a base the
   * service does not hold (log_mismatch: it restarted, or the log was replaced) is followed by
   * the whole log, still naming the answer this client holds: the service keeps its last answer
   * when it drops the log, so the answer can stay a delta (a whole answer of a long session is
   * rebuilt from its commits). Returns the answer with its messages made whole. After any other
   * failure the state is forgotten, so the next call sends the whole log.
   */
  async call(messages: Message[], extras: CallExtras, post: (body: string) => Promise<ContextResponse>): Promise<ContextResponse> {
    let req = this.body(messages, false, extras);
    try {
      let r: ContextResponse;
      try {
        r = await post(req.body);
      } catch (err) {
        if (!isCode(err, "log_mismatch")) throw err;
        this.forgetLog();
        req = this.body(messages, false, extras);
        r = await post(req.body);
      }
      return { ...r, keep: 0, messages: this.answered(req, r) };
    } catch (err) {
      this.reset();
      throw err;
    }
  }

  private push(json: string) {
    this.hash.update(json + "\n");
    this.sums.push(this.hash.copy().digest("hex"));
  }
}
