// Test-only Pi extension: an offline model "scripted/scripted-1" that answers each LLM call with
// the next step of a script, and logs every context it is given.
//
//   PI_SCRIPT       a JSON file: an array of steps, one per LLM call, in order:
//                   {"text": "..."} answers with text (the agent stops);
//                   {"tool": "name", "args": {...}, "id": "call_x"} calls a tool (id defaults to call_<n>).
//   PI_CONTEXT_LOG  a JSON Lines file; each LLM call appends
//                   {"call": n, "systemPrompt": "...", "messages": [...], "tools": ["read", ...]}:
//                   exactly what the provider would have been sent.
//
// It uses pi-ai's faux provider, registered under the api "ctxstore-scripted"; the stream function
// is captured at once, since Pi's model registry resets directly registered providers on refresh.
import type { ExtensionAPI } from "@mariozechner/pi-coding-agent";
import { fauxAssistantMessage, fauxText, fauxToolCall, getApiProvider, registerFauxProvider } from "@mariozechner/pi-ai";
import { appendFileSync, readFileSync } from "node:fs";

type Step = { text: string } | { tool: string; args?: Record<string, unknown>; id?: string };

export default function scriptedModel(pi: ExtensionAPI) {
  const script: Step[] = JSON.parse(readFileSync(process.env.PI_SCRIPT!, "utf8"));
  const logFile = process.env.PI_CONTEXT_LOG;
  const faux = registerFauxProvider({
    api: "ctxstore-scripted",
    provider: "scripted",
    models: [{ id: "scripted-1", contextWindow: 200000 }],
  });
  faux.setResponses(
    script.map((step, n) => (context: any) => {
      if (logFile) {
        const tools = (context.tools ?? []).map((t: any) => t.name);
        appendFileSync(logFile, JSON.stringify({ call: n, systemPrompt: context.systemPrompt ?? "", messages: context.messages, tools }) + "\n");
      }
      if ("tool" in step) {
        return fauxAssistantMessage([fauxToolCall(step.tool, step.args ?? {}, { id: step.id ?? `call_${n}` })], { stopReason: "toolUse" });
      }
      return fauxAssistantMessage(fauxText(step.text));
    }),
  );
  const stream = getApiProvider("ctxstore-scripted")!.streamSimple;
  pi.registerProvider("scripted", {
    baseUrl: "http://127.0.0.1:9",
    apiKey: "offline",
    api: "ctxstore-scripted",
    models: [
      {
        id: "scripted-1",
        name: "Scripted (offline)",
        reasoning: false,
        input: ["text"],
        cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
        contextWindow: 200000,
        maxTokens: 4096,
      },
    ],
    streamSimple: (model: any, context: any, options: any) => stream(model, context, options),
  });
}
