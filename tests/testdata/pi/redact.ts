// Test-only Pi extension: edits future model context the way Pi 0.87 and later let extensions do it,
// with context_edit entries written at the end of a turn (turn_end's boundary entries), before the
// next model call. A tool output of this turn holding "SECRET=<value>" is replaced by the same
// output with the value redacted; one holding "NOISE-" is omitted. An output of an earlier turn
// holding "LATER=<value>" is redacted too: an edit of a result the model (and ctxstore) already saw.
// Pi's session file keeps the originals.
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

const textOf = (content: unknown): string =>
  Array.isArray(content) ? content.map((b) => (b?.type === "text" ? String(b.text) : "")).join("") : String(content ?? "");

export default function redact(pi: ExtensionAPI) {
  pi.on("turn_end", (event, ctx) => {
    const entries = [...event.entries];
    event.toolResults.forEach((result, i) => {
      const targetId = event.toolResultEntryIds[i];
      const text = textOf(result.content);
      if (!targetId) return;
      if (text.includes("NOISE-")) entries.push({ type: "context_edit", targetId, replacement: null });
      else if (text.includes("SECRET=")) {
        entries.push({ type: "context_edit", targetId, replacement: { content: text.replace(/SECRET=\S+/g, "SECRET=[redacted]") } });
      }
    });
    const branch = ctx.sessionManager.getBranch();
    const edited = new Set(branch.flatMap((e) => (e.type === "context_edit" ? [e.targetId] : [])));
    for (const e of branch) {
      if (e.type !== "message" || e.message.role !== "toolResult" || edited.has(e.id) || event.toolResultEntryIds.includes(e.id)) continue;
      const text = textOf(e.message.content);
      if (text.includes("LATER=")) {
        entries.push({ type: "context_edit", targetId: e.id, replacement: { content: text.replace(/LATER=\S+/g, "LATER=[redacted]") } });
      }
    }
    return { entries };
  });
}
