// Test-only Pi extension: an offline model "scripted/scripted-1" behind Anthropic's Messages API.
//
//   PI_SCRIPTED_URL  the base URL of the test's scripted Messages endpoint (tests/messages_helpers_test.go),
//                    which answers each request with the next step of its script and logs the request.
//
// Pi talks to it through pi-ai's own anthropic-messages provider, so the endpoint sees exactly what a real
// provider would be sent: system prompt, tools, messages and cache_control breakpoints.
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

export default function scriptedModel(pi: ExtensionAPI) {
  const baseUrl = process.env.PI_SCRIPTED_URL;
  if (!baseUrl) throw new Error("PI_SCRIPTED_URL is not set");
  pi.registerProvider("scripted", {
    baseUrl,
    apiKey: "offline",
    api: "anthropic-messages",
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
      {
        // As scripted-1, priced (dollars per million tokens) and with a 12-second prompt cache,
        // so Pi's cache warming runs within a test: it refreshes at 90% of the lifetime, keeping
        // ten seconds of margin, so every two seconds. A cache read is priced at 1 against a
        // write's 3.75, so the rewrite a pause's warms can save (2.75 per token) pays for two
        // warms and not a third (ctxstore's rule, integrations/pi/index.ts warmOrStop).
        id: "scripted-warm",
        name: "Scripted, priced, short cache (offline)",
        reasoning: false,
        input: ["text"],
        cost: { input: 3, output: 15, cacheRead: 1, cacheWrite: 3.75 },
        promptCache: { short: 12, long: 3600 },
        contextWindow: 200000,
        maxTokens: 4096,
      },
    ],
  });
  // Provider "scripted-threads": scripted-1 (the endpoint answers as that model) with Anthropic's
  // message threads, which pi-ai uses by default only on api.anthropic.com: after a reply, a request
  // whose messages extend the previous request's and that reply is sent as a `continue` of the
  // thread, with the new messages only.
  pi.registerProvider("scripted-threads", {
    baseUrl,
    apiKey: "offline",
    api: "anthropic-messages",
    models: [
      {
        id: "scripted-1",
        name: "Scripted, message threads (offline)",
        reasoning: false,
        input: ["text"],
        cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
        contextWindow: 200000,
        maxTokens: 4096,
        compat: { supportsMessageThreads: true },
      },
    ],
  });
}
