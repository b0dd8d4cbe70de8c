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
    ],
  });
}
